//! The byte scanner of row summaries (DECISIONS §25.90) against the serde view it stands in
//! for: wherever the scanner answers, the serde view gives the same summary, and where it
//! sends a line straight to the full parse, the serde view would have too. Fixture lines, a
//! generated property with escapes, non-ASCII text, odd key orders, unknown nested values and
//! mutated (broken) lines, and pinned cases.

use arbor_session::line::Scan;
use arbor_session::rows::{MessageRow, RowCaps, RowKind, RowSummary};
use arbor_session::SessionEntry;
use proptest::prelude::*;
use serde_json::{json, Value};

use super::v3_lines;

const SMALL: RowCaps = RowCaps {
    text: 10,
    tool_args: true,
};
const CLI: RowCaps = RowCaps {
    text: 80,
    tool_args: false,
};
const ALL_CAPS: [RowCaps; 4] = [RowCaps::TREE, RowCaps::SEARCH, SMALL, CLI];

/// The scanner's promise for one line and one cap; returns whether it answered.
fn agrees(line: &str, caps: RowCaps) -> Result<bool, String> {
    let serde = RowSummary::from_line_serde(line, caps);
    match RowSummary::scan_line(line, caps) {
        Scan::Row(row) => match serde {
            Some(s) if s == row => Ok(true),
            other => Err(format!(
                "scanner {row:?}\nserde   {other:?}\ncaps {caps:?}\nline {line}"
            )),
        },
        Scan::Full => match serde {
            None => Ok(false),
            Some(s) => Err(format!(
                "scanner sent to the full parse, serde read {s:?}\nline {line}"
            )),
        },
        Scan::Unsure => Ok(false),
    }
}

#[test]
fn the_scanner_agrees_with_the_serde_view_on_every_fixture_line() {
    let mut answered = 0;
    let mut lean = 0;
    for line in v3_lines() {
        for caps in ALL_CAPS {
            answered += usize::from(agrees(&line, caps).unwrap_or_else(|e| panic!("{e}")));
            lean += usize::from(RowSummary::from_line_serde(&line, caps).is_some());
        }
    }
    // The scanner must carry the common lines, not leave them all to serde.
    assert!(
        answered * 10 >= lean * 9,
        "the scanner answered {answered} of the {lean} lines the serde view reads"
    );
}

fn line(fields: &[(&str, Value)]) -> String {
    let mut s = String::from("{");
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&serde_json::to_string(k).unwrap());
        s.push(':');
        s.push_str(&serde_json::to_string(v).unwrap());
    }
    s.push('}');
    s
}

fn envelope(message: Value) -> Vec<(&'static str, Value)> {
    vec![
        ("type", json!("message")),
        ("id", json!("e1")),
        ("parentId", json!("p0")),
        ("timestamp", json!("2026-06-20T15:00:01.250Z")),
        ("message", message),
    ]
}

fn scanned(line: &str, caps: RowCaps) -> RowSummary {
    match RowSummary::scan_line(line, caps) {
        Scan::Row(row) => {
            agrees(line, caps).unwrap_or_else(|e| panic!("{e}"));
            row
        }
        other => panic!("not scanned ({other:?}): {line}"),
    }
}

fn user_text(row: &RowSummary) -> &str {
    match &row.kind {
        RowKind::Message(MessageRow::User { text }) => text.as_str(),
        other => panic!("not a user row: {other:?}"),
    }
}

#[test]
fn non_ascii_and_escaped_previews_decode_like_serde() {
    // Raw non-ASCII, \u escapes (BMP and a surrogate pair), escaped quotes and whitespace runs.
    let raw = r#"{"type":"message","id":"e1","parentId":null,"timestamp":"2026-06-20T15:00:01.000Z","message":{"role":"user","content":"caf\u00e9 \"日本語\"\n\n\t\ud83d\ude00  ok\\done"}}"#;
    let row = scanned(raw, CLI);
    assert_eq!(user_text(&row), "café \"日本語\" 😀 ok\\done");
    assert_eq!(row.parent_id, None);
    assert_eq!(row.time, 1_781_967_601_000);
    // Cut by characters, not bytes: 10 characters of a multi-byte text.
    let long = line(&envelope(
        json!({"role": "user", "content": "ééééé ééééé ééééé"}),
    ));
    assert_eq!(user_text(&scanned(&long, SMALL)), "ééééé éééé");
}

#[test]
fn a_lone_surrogate_anywhere_is_left_to_the_full_parse() {
    // After the cap too: serde refuses the line, and the full parse drops the surrogate
    // (DECISIONS §25.8), which the scanner must not pre-empt.
    let text = format!("{}\\ud83d tail", "word ".repeat(40));
    let l = format!(
        r#"{{"type":"message","id":"e1","parentId":null,"timestamp":"2026-06-20T15:00:01.000Z","message":{{"role":"user","content":"{text}"}}}}"#
    );
    assert!(matches!(RowSummary::scan_line(&l, CLI), Scan::Unsure));
    let full = RowSummary::from_line(&l, CLI).expect("the full parse reads it");
    assert!(user_text(&full).starts_with("word word"));
}

#[test]
fn broken_lines_are_never_answered_by_the_scanner() {
    let good = line(&envelope(json!({
        "role": "assistant",
        "content": [{"type": "text", "text": "hi"}, {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.rs", "n": [1, 2.5, -3e2]}}],
        "api": "a", "provider": "p", "model": "m",
        "usage": {"input": 1, "cost": {"total": 1.5e-7}},
        "stopReason": "toolUse",
    })));
    assert!(matches!(RowSummary::scan_line(&good, CLI), Scan::Row(_)));
    let broken = [
        good.replace("1.5e-7", "1.5e"), // number without exponent digits
        good.replace("\"input\":1", "\"input\":01"), // leading zero
        good.replace("\"input\":1", "\"input\":tru"), // bad literal
        good.replace("\"hi\"", "\"h\\qi\""), // invalid escape in a shown text
        good.replace("\"a.rs\"", "\"a\\u12\""), // short \u escape in a skipped value
        good.replace("\"a.rs\"", "\"a\u{1}rs\""), // raw control byte in a skipped string
        good.replace(",\"stopReason\"", ",,\"stopReason\""), // double comma
        good.replace("}]", "},]"),      // trailing comma in an array
        good[..good.len() - 1].to_owned(), // truncated
        format!("{good}x"),             // trailing bytes
        format!("[{good}]"),            // not an object
        good.replace("\"type\":\"text\"", "\"t\\u0079pe\":\"text\""), // escaped key
        good.replace("\"role\"", "\"role\":\"user\",\"role\""), // duplicate key
    ];
    for b in &broken {
        for caps in ALL_CAPS {
            assert!(
                !matches!(RowSummary::scan_line(b, caps), Scan::Row(_)),
                "answered a broken line: {b}"
            );
            agrees(b, caps).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    // A broken line stays an error for the row as a whole, with the full parse's words.
    assert!(RowSummary::from_line(&broken[8], CLI).is_err());
}

#[test]
fn other_types_and_roles_go_straight_to_the_full_parse() {
    let model = r#"{"type":"model_change","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","provider":"p","modelId":"m"}"#;
    assert!(matches!(RowSummary::scan_line(model, CLI), Scan::Full));
    let bash = line(&envelope(json!({"role": "bashExecution", "command": "ls"})));
    assert!(matches!(RowSummary::scan_line(&bash, CLI), Scan::Full));
    for l in [model.to_owned(), bash] {
        let entry = SessionEntry::from_json(&l).expect("parse");
        assert_eq!(
            RowSummary::from_line(&l, CLI).expect("row"),
            RowSummary::from_entry(&entry, CLI)
        );
    }
}

// ---- the generated property ---------------------------------------------------------------

fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("word".to_owned()),
        Just(" ".to_owned()),
        Just("\n\n".to_owned()),
        Just("\t ".to_owned()),
        Just("\"".to_owned()),
        Just("\\".to_owned()),
        Just("é".to_owned()),
        Just("日本".to_owned()),
        Just("😀".to_owned()),
        Just("\u{1}".to_owned()),
        Just("\u{7f}".to_owned()),
        Just("\u{2028}".to_owned()),
        Just("/".to_owned()),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e12f64..1e12).prop_map(|f| json!(f)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,5}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn block() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => text().prop_map(|t| json!({"type": "text", "text": t})),
        2 => (text(), value()).prop_map(|(n, a)| json!({"type": "toolCall", "id": "c1", "name": n, "arguments": a})),
        1 => text().prop_map(|t| json!({"type": "thinking", "thinking": t, "signature": "s"})),
        1 => Just(json!({"type": "image", "data": "AAAA", "mimeType": "image/png"})),
        1 => Just(json!({"type": "text"})),
        1 => Just(json!({"text": "untyped"})),
        1 => Just(json!({"type": "toolCall", "name": "x"})),
        1 => Just(json!({"type": null, "text": "x"})),
    ]
}

fn content() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => prop::collection::vec(block(), 0..4).prop_map(Value::Array),
        1 => text().prop_map(Value::String),
        1 => Just(Value::Null),
        1 => Just(json!(42)),
    ]
}

/// A message line of a common role, fields drawn, optional, null or shuffled, with unknown
/// keys, serialized by serde_json (so escapes are its own).
fn message_line() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just("user"),
            Just("assistant"),
            Just("toolResult"),
            Just("custom")
        ],
        content(),
        prop::option::of(prop_oneof![
            Just(json!("stop")),
            Just(json!("error")),
            Just(json!("aborted")),
            Just(Value::Null),
        ]),
        prop::option::of(prop_oneof![
            text().prop_map(Value::String),
            Just(Value::Null)
        ]),
        prop::option::of(prop_oneof![
            Just(json!(true)),
            Just(json!(false)),
            Just(Value::Null),
            Just(json!(1))
        ]),
        any::<bool>(),
        prop::collection::vec(("[a-z]{1,6}", value()), 0..3),
        prop::collection::vec(0usize..16, 16),
        any::<bool>(),
    )
        .prop_map(
            |(role, content, stop, error, is_error, full, extras, order, root)| {
                let mut m: Vec<(String, Value)> = vec![("role".into(), json!(role))];
                m.push(("content".into(), content));
                if let Some(s) = stop {
                    m.push(("stopReason".into(), s));
                }
                if let Some(e) = error {
                    m.push(("errorMessage".into(), e));
                }
                if let Some(e) = is_error {
                    m.push(("isError".into(), e));
                }
                if full {
                    for (k, v) in [
                        ("api", json!("anthropic-messages")),
                        ("provider", json!("anthropic")),
                        ("model", json!("m")),
                        ("toolCallId", json!("c1")),
                        ("toolName", json!("read")),
                        (
                            "usage",
                            json!({"input": 1, "output": 2, "cost": {"total": 0.25}}),
                        ),
                    ] {
                        m.push((k.into(), v));
                    }
                }
                for (k, v) in extras {
                    if !m.iter().any(|(mk, _)| *mk == k) {
                        m.push((k, v));
                    }
                }
                let mut keyed: Vec<(usize, (String, Value))> = m
                    .into_iter()
                    .enumerate()
                    .map(|(i, f)| (order.get(i).copied().unwrap_or(i), f))
                    .collect();
                keyed.sort_by_key(|(k, _)| *k);
                let message = Value::Object(keyed.into_iter().map(|(_, f)| f).collect());
                let mut fields = envelope(message);
                if root {
                    fields[2].1 = Value::Null;
                }
                line(&fields)
            },
        )
}

/// A byte-level change: cut, insert or delete at a char boundary.
fn mutate(line: &str, kind: u8, at: usize, with: char) -> String {
    let mut at = at % (line.len() + 1);
    while !line.is_char_boundary(at) {
        at -= 1;
    }
    match kind % 4 {
        0 => line[..at].to_owned(),
        1 => format!("{}{with}{}", &line[..at], &line[at..]),
        2 => {
            let mut s = line.to_owned();
            if at < s.len() {
                s.remove(at);
            }
            s
        }
        _ => line.to_owned(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn generated_and_mutated_lines_agree(
        l in message_line(),
        kind in any::<u8>(),
        at in any::<usize>(),
        with in prop_oneof![
            Just('"'), Just('\\'), Just(','), Just('}'), Just(']'), Just('{'), Just('['),
            Just(':'), Just('x'), Just(' '), Just('\u{1}'), Just('0'), Just('e'), Just('-'),
        ],
    ) {
        let l = mutate(&l, kind, at, with);
        for caps in ALL_CAPS {
            if let Err(e) = agrees(&l, caps) {
                prop_assert!(false, "{}", e);
            }
        }
    }
}
