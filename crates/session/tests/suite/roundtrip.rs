//! Lossless JSON: every entry of every v3 fixture parses into the typed model and serializes
//! back to the same JSON value (unknown entry types, unknown fields and integer-ness included).

use arbor_ai::types::{ContentBlock, Message};
use arbor_session::AgentMessage;
use arbor_session::{EntryKind, SessionEntry, SessionHeader};
use serde_json::Value;

use super::fixture_files;

fn v3_files() -> Vec<std::path::PathBuf> {
    let mut files = fixture_files("generated/sessions");
    files.extend(fixture_files("pi-sessions"));
    files
        .into_iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).expect("read fixture");
            let first = text.lines().next().unwrap_or_default();
            SessionHeader::from_json(first)
                .map(|h| h.format_version() == 3)
                .unwrap_or(false)
        })
        .collect()
}

#[test]
fn every_v3_fixture_entry_round_trips_exactly() {
    let files = v3_files();
    assert!(
        files.len() >= 80,
        "expected the generated sessions plus pi's v3 files, got {}",
        files.len()
    );
    let mut entries = 0usize;
    let mut kinds = std::collections::BTreeSet::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read fixture");
        let mut lines = text.lines();
        let header_line = lines.next().expect("header");
        let header = SessionHeader::from_json(header_line).expect("header parses");
        let header_back: Value = serde_json::from_str(&header.to_json()).expect("json");
        let header_in: Value = serde_json::from_str(header_line).expect("json");
        assert_eq!(header_back, header_in, "{}: header", path.display());
        for (n, line) in lines.enumerate() {
            let original: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), n + 2));
            let entry = SessionEntry::from_json(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), n + 2));
            kinds.insert(entry.entry_type().to_owned());
            let back: Value = serde_json::from_str(&entry.to_json()).expect("json");
            assert_eq!(
                back,
                original,
                "{}:{} does not round-trip",
                path.display(),
                n + 2
            );
            entries += 1;
        }
    }
    assert!(entries > 5000, "only {entries} entries checked");
    for expected in [
        "message",
        "compaction",
        "branch_summary",
        "leaf",
        "context_edit",
        "usage",
        "future_kind",
    ] {
        assert!(
            kinds.contains(expected),
            "no {expected} entry in the fixtures: {kinds:?}"
        );
    }
}

#[test]
fn output_key_order_follows_pi() {
    let line = r#"{"type":"custom","customType":"x","data":{"b":1,"a":2},"id":"a1b2c3d4","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z","zz":1}"#;
    let entry = SessionEntry::from_json(line).unwrap();
    assert_eq!(
        entry.to_json(),
        r#"{"type":"custom","id":"a1b2c3d4","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z","customType":"x","data":{"b":1,"a":2},"zz":1}"#
    );
}

#[test]
fn numbers_keep_integerness_and_unknown_fields_survive() {
    let line = r#"{"type":"message","id":"e1","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi","future":true}],"api":"openai-completions","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0.000125,"cacheRead":0,"cacheWrite":0,"total":0.000125}},"stopReason":"stop","timestamp":1733234401000,"responseId":"r-1","durationMs":1234}}"#;
    let entry = SessionEntry::from_json(line).unwrap();
    assert_eq!(entry.to_json(), line);
}

#[test]
fn unknown_block_types_and_roles_are_kept_verbatim() {
    let line = r#"{"type":"message","id":"e1","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"audio","data":"AAA","x":[1,2]},{"type":"text","text":"hi"}],"timestamp":1}}"#;
    let entry = SessionEntry::from_json(line).unwrap();
    let Some(AgentMessage::Llm(Message::User(user))) = entry.message() else {
        panic!("expected a user message: {entry:?}")
    };
    let arbor_ai::types::Content::Blocks(blocks) = &user.content else {
        panic!()
    };
    assert!(matches!(&blocks[0], ContentBlock::Unknown(m) if m["type"] == "audio"));
    assert_eq!(entry.to_json(), line);

    let line = r#"{"type":"message","id":"e2","parentId":"e1","timestamp":"t","message":{"role":"developer","content":"x","timestamp":1}}"#;
    let entry = SessionEntry::from_json(line).unwrap();
    assert!(matches!(entry.message(), Some(AgentMessage::Other(_))));
    assert_eq!(entry.to_json(), line);

    let line =
        r#"{"type":"brand_new","id":"e3","parentId":"e2","timestamp":"t","payload":{"n":1.5}}"#;
    let entry = SessionEntry::from_json(line).unwrap();
    assert!(
        matches!(&entry.kind, EntryKind::Other { entry_type, .. } if entry_type == "brand_new")
    );
    assert_eq!(entry.to_json(), line);
}

#[test]
fn malformed_values_name_the_field() {
    let cases = [
        (
            r#"{"type":"message","id":"e1","parentId":null,"timestamp":"t","message":{"role":"user","content":42,"timestamp":1}}"#,
            &["e1", "content", "number 42"][..],
        ),
        (
            r#"{"type":"message","id":"e2","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":7}],"timestamp":1}}"#,
            &["e2", "content", "[0]", "text"][..],
        ),
        (
            r#"{"type":"message","id":"e3","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"text":"no type"}],"timestamp":1}}"#,
            &["e3", "[0]", "type"][..],
        ),
        (
            r#"{"type":"message","id":"e4","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":"many","output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1}}"#,
            &["e4", "usage.input"][..],
        ),
        (
            r#"{"type":"label","id":"e5","parentId":null,"timestamp":"t"}"#,
            &["e5", "targetId"][..],
        ),
        (
            r#"{"type":"message","id":"","parentId":null,"timestamp":"t"}"#,
            &["empty `id`"][..],
        ),
        (
            r#"{"type":"message","id":"e6","parentId":5,"timestamp":"t"}"#,
            &["e6", "parentId"][..],
        ),
        (
            r#"{"type":"message","id":"e7","timestamp":"t"}"#,
            &["e7", "parentId"][..],
        ),
        (r#"[1,2]"#, &["JSON object"][..]),
        (
            r#"{"type":"message","id":"e8","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","stopReason":"sleeping","timestamp":1}}"#,
            &["e8", "stopReason", "sleeping"][..],
        ),
    ];
    for (line, needles) in cases {
        let err = SessionEntry::from_json(line).expect_err(line).to_string();
        for needle in needles {
            assert!(
                err.contains(needle),
                "error {err:?} for {line} should mention {needle:?}"
            );
        }
    }
}

#[test]
fn header_errors_are_clear() {
    assert!(SessionHeader::from_json(r#"{"type":"message","id":"x"}"#)
        .unwrap_err()
        .to_string()
        .contains("session header"));
    assert!(SessionHeader::from_json("not json")
        .unwrap_err()
        .to_string()
        .contains("invalid JSON"));
    let h = SessionHeader::from_json(r#"{"type":"session","id":"s","timestamp":"t","cwd":"/x"}"#)
        .unwrap();
    assert_eq!(h.format_version(), 1);
}
