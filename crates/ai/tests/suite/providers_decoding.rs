//! Properties of the SSE decoder and the tool-argument JSON helpers.

use arbor_ai::json_stream::{parse_partial_json, parse_tool_arguments, StreamingJson};
use arbor_ai::stream::sse::SseDecoder;
use proptest::prelude::*;
use serde_json::Value;

fn decode(chunks: &[&[u8]]) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    let mut dec = SseDecoder::without_raw();
    let mut push = |e: arbor_ai::stream::sse::SseEvent<'_>| -> Result<(), ()> {
        out.push((e.event.map(str::to_string), e.data.to_string()));
        Ok(())
    };
    for c in chunks {
        dec.feed(c, &mut push).unwrap();
    }
    dec.finish(&mut push).unwrap();
    out
}

fn arb_event() -> impl Strategy<Value = (Option<String>, String)> {
    (proptest::option::of("[a-z_]{1,12}"), "[ -~éü日本😀]{0,40}")
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        (-1000.0f64..1000.0).prop_map(|f| serde_json::json!(f)),
        "[ -~é日\\n\\t\"\\\\]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// However the bytes are cut (inside CRLF pairs or multibyte characters), the decoded
    /// events are the same.
    #[test]
    fn sse_chunking_does_not_change_events(
        events in proptest::collection::vec(arb_event(), 1..8),
        crlf in any::<bool>(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let nl = if crlf { "\r\n" } else { "\n" };
        let mut body = String::new();
        for (name, data) in &events {
            if let Some(name) = name {
                body.push_str(&format!("event: {name}{nl}"));
            }
            body.push_str(&format!("data: {data}{nl}{nl}"));
        }
        let bytes = body.as_bytes();
        let mut offsets: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        offsets.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for o in offsets {
            chunks.push(&bytes[start..o]);
            start = o;
        }
        chunks.push(&bytes[start..]);
        let whole = decode(&[bytes]);
        prop_assert_eq!(decode(&chunks), whole.clone());
        let expected: Vec<(Option<String>, String)> = events.clone();
        prop_assert_eq!(whole, expected);
    }

    /// Every prefix of a serialized object yields an object showing a prefix of the final
    /// members, all but the last of them already final; the full text yields the value, and
    /// the strict parser agrees.
    #[test]
    fn partial_json_prefixes(map in proptest::collection::btree_map("[a-z]{1,6}", arb_json(), 0..5)) {
        let text = Value::Object(map.into_iter().collect()).to_string();
        // Compare with serde's own reading of the text (floats need not round-trip exactly).
        let value: Value = serde_json::from_str(&text).unwrap();
        let mut streaming = StreamingJson::new();
        for (i, ch) in text.char_indices() {
            let partial = parse_partial_json(&text[..i]);
            let (Value::Object(partial), Value::Object(full)) = (&partial, &value) else {
                return Err(TestCaseError::fail(format!("not an object: {partial}")));
            };
            let shown: Vec<&String> = partial.keys().collect();
            let expected: Vec<&String> = full.keys().take(shown.len()).collect();
            prop_assert_eq!(&shown, &expected, "members of {:?} are a prefix", &text[..i]);
            for key in shown.iter().take(shown.len().saturating_sub(1)) {
                prop_assert_eq!(&partial[key.as_str()], &full[key.as_str()], "member {} of {:?} is final", key, &text[..i]);
            }
            streaming.push(ch.encode_utf8(&mut [0; 4]));
        }
        prop_assert_eq!(parse_partial_json(&text), value.clone());
        prop_assert_eq!(streaming.value().clone(), value.clone());
        let parsed = parse_tool_arguments(&text);
        prop_assert_eq!(parsed.arguments, value);
        prop_assert_eq!(parsed.arguments_error, None);
    }
}
