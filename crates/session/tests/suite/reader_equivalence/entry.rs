//! The direct typed entry reader agrees with the `Value` path (DECISIONS §25.60): on every
//! fixture line and on generated lines, `SessionEntry::from_json` (direct first, `Value` path as
//! fallback) gives the same entry, the same re-serialized bytes and the same error text as
//! `SessionEntry::from_json_via_value`, and whatever the direct reader accepts on its own the
//! `Value` path accepts with the same result.

use arbor_session::SessionEntry;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// Checks one line; returns whether the direct reader accepted it.
fn check(line: &str) -> bool {
    let slow = SessionEntry::from_json_via_value(line);
    let both = SessionEntry::from_json(line);
    match (&both, &slow) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "{line}");
            assert_eq!(a.to_json(), b.to_json(), "{line}");
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{line}"),
        _ => panic!("one path failed: {both:?} vs {slow:?}\n{line}"),
    }
    match SessionEntry::from_json_direct(line) {
        Some(direct) => {
            let slow = slow.unwrap_or_else(|e| panic!("direct accepted, Value path: {e}\n{line}"));
            assert_eq!(direct, slow, "{line}");
            assert_eq!(direct.to_json(), slow.to_json(), "{line}");
            true
        }
        None => false,
    }
}

#[test]
fn every_fixture_line_parses_the_same_by_both_paths() {
    let files = super::all_fixture_files();
    assert!(files.len() >= 80, "found {} fixture files", files.len());
    let (mut lines, mut entries, mut direct) = (0usize, 0usize, 0usize);
    let mut refused = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read fixture");
        for line in text.lines() {
            lines += 1;
            let accepted = check(line);
            if SessionEntry::from_json_via_value(line).is_ok() {
                entries += 1;
                if accepted {
                    direct += 1;
                } else {
                    refused.push(format!("{}: {line:.200}", path.display()));
                }
            } else {
                assert!(!accepted);
            }
        }
    }
    assert!(entries > 1000, "{entries} entries in {lines} lines");
    // Every well-formed fixture entry is pi-shaped (`type` first, no duplicate keys), so the
    // direct reader must take all of them; a refusal here is a missing or wrong field reader.
    assert!(
        refused.is_empty(),
        "direct reader refused {} of {entries} entries, e.g.:\n{}",
        refused.len(),
        refused
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(direct, entries);
}

#[test]
fn unusual_lines_fall_back_to_the_value_path() {
    let cases = [
        // `type` not first: the `Value` path reads it (the direct reader refuses).
        r#"{"id":"a","type":"label","parentId":null,"timestamp":"t","targetId":"x","label":"l"}"#,
        // duplicate keys: the `Value` path keeps the last value at the first position.
        r#"{"type":"label","id":"a","parentId":null,"timestamp":"t","targetId":"x","label":"1","label":"2"}"#,
        r#"{"type":"custom","id":"a","parentId":null,"timestamp":"t","customType":"k","z":1,"z":2}"#,
        r#"{"type":"label","id":"a","id":"b","parentId":null,"timestamp":"t","targetId":"x"}"#,
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"future","type":1,"type":2}}"#,
        // errors: every one keeps the `Value` path's text.
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":5}}"#,
        r#"{"type":"message","id":"","parentId":null,"timestamp":"t","message":{"role":"user"}}"#,
        r#"{"type":"label","id":"a","parentId":null,"timestamp":"t"}"#,
        r#"{"type":"label","id":"a","parentId":null,"timestamp":"t","targetId":"x"} x"#,
        r#"{"type":"compaction","id":"a","parentId":null,"timestamp":"t","summary":"s","tokensBefore":1.5}"#,
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"cut \ud83d"}}"#,
        r#"[1,2]"#,
        r#"{"type":7}"#,
        "not json",
    ];
    for line in cases {
        assert!(!check(line), "the direct reader should refuse {line}");
    }
    // A message or block whose tag is not its first key is read into a map and handed to the
    // `Value` path's `from_map`: accepted, with that path's result.
    for line in [
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"content":"hi","role":"user","x":1}}"#,
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"text":"hi","type":"text","q":1}]}}"#,
    ] {
        assert!(check(line), "{line}");
    }
    // …and the first two refused lines still parse, to the `Value` path's entry.
    let dup = SessionEntry::from_json(cases[1]).unwrap();
    assert_eq!(
        dup.to_json(),
        r#"{"type":"label","id":"a","parentId":null,"timestamp":"t","targetId":"x","label":"2"}"#
    );
}

#[test]
fn unknown_fields_of_messages_and_blocks_keep_file_order() {
    // The `Value` path used to remove the tag with a swap-remove, which moved the last key into
    // the tag's place: `a,b` came back as `b,a` (DECISIONS §25.61).
    let line = r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"x","p":1,"q":2}],"timestamp":1,"a":1,"b":2}}"#;
    let custom = r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"custom","customType":"k","content":"c","display":false,"a":1,"b":2}}"#;
    for l in [line, custom] {
        assert_eq!(SessionEntry::from_json_via_value(l).unwrap().to_json(), l);
        assert_eq!(SessionEntry::from_json_direct(l).unwrap().to_json(), l);
    }
}

// ---------------------------------------------------------------------------------------------
// Generated entries

/// A small deterministic generator driven by one proptest seed.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
    fn string(&mut self) -> Value {
        const POOL: [&str; 8] = [
            "",
            "a",
            "héllo wörld",
            "emoji 😀 here",
            "tab\t\"quoted\" \\ back",
            "line\nbreak",
            "LONE marker",
            "plain ascii text that is a little longer than forty bytes",
        ];
        Value::String(POOL[self.below(POOL.len() as u64) as usize].to_owned())
    }
    fn count(&mut self) -> Value {
        match self.below(6) {
            0 => json!(12.0),
            1 => json!(0),
            2 if self.chance(4) => json!(1.5),
            _ => json!(self.below(100_000)),
        }
    }
    fn ms(&mut self) -> Value {
        if self.chance(4) {
            json!(1_733_234_401_000.0)
        } else {
            json!(1_733_234_401_000_u64 + self.below(1000))
        }
    }
    fn num(&mut self) -> Value {
        match self.below(3) {
            0 => json!(0),
            1 => json!(0.0),
            _ => json!(0.000_123),
        }
    }
    fn any(&mut self, depth: u32) -> Value {
        match self.below(if depth > 1 { 5 } else { 7 }) {
            0 => Value::Null,
            1 => Value::Bool(self.chance(2)),
            2 => self.count(),
            3 => json!(-3.25),
            4 => self.string(),
            5 => Value::Array((0..self.below(3)).map(|_| self.any(depth + 1)).collect()),
            _ => {
                let mut m = Map::new();
                for i in 0..self.below(3) {
                    m.insert(format!("k{i}"), self.any(depth + 1));
                }
                Value::Object(m)
            }
        }
    }
    /// Adds 0–2 unknown keys, then maybe shuffles (moving the tag, the first field, in one case
    /// of `tag_moves_one_in`; 0: there is no tag) and maybe breaks one value.
    fn finish(&mut self, mut fields: Vec<(String, Value)>, tag_moves_one_in: u64) -> Value {
        let keep_first = tag_moves_one_in > 0 && !self.chance(tag_moves_one_in);
        for i in 0..self.below(3) {
            let key = if self.chance(3) {
                format!("ünknown{i}")
            } else {
                format!("x{i}")
            };
            let v = self.any(0);
            fields.push((key, v));
        }
        if self.chance(6) && fields.len() > 1 {
            // Any order, tag included: the direct reader must not depend on pi's order.
            let start = usize::from(keep_first);
            for i in (start + 1..fields.len()).rev() {
                let j = start + self.below((i - start + 1) as u64) as usize;
                fields.swap(i, j);
            }
        }
        if self.chance(12) && !fields.is_empty() {
            let i = self.below(fields.len() as u64) as usize;
            fields[i].1 = self.any(0);
        }
        let mut m = Map::new();
        for (k, v) in fields {
            m.insert(k, v);
        }
        Value::Object(m)
    }
    /// Pushes `key` with `value` unless the generator decides the optional field is absent.
    fn opt(&mut self, fields: &mut Vec<(String, Value)>, key: &str, value: Value) {
        if self.chance(2) {
            fields.push((key.to_owned(), value));
        }
    }
    fn block(&mut self) -> Value {
        let mut f = Vec::new();
        match self.below(5) {
            0 => {
                f.push(("type".into(), json!("text")));
                f.push(("text".into(), self.string()));
                let s = self.string();
                self.opt(&mut f, "textSignature", s);
            }
            1 => {
                f.push(("type".into(), json!("thinking")));
                f.push(("thinking".into(), self.string()));
                let s = self.string();
                self.opt(&mut f, "thinkingSignature", s);
                self.opt(&mut f, "redacted", json!(true));
            }
            2 => {
                f.push(("type".into(), json!("image")));
                f.push(("data".into(), json!("aGk=")));
                f.push(("mimeType".into(), json!("image/png")));
            }
            3 => {
                f.push(("type".into(), json!("toolCall")));
                f.push(("id".into(), json!("call_1")));
                f.push(("name".into(), json!("bash")));
                let a = json!({"command": self.string(), "n": self.count()});
                self.opt(&mut f, "arguments", a);
                self.opt(&mut f, "thoughtSignature", json!("sig"));
                self.opt(&mut f, "namespace", Value::Null);
                self.opt(&mut f, "argumentsError", json!("bad"));
            }
            _ => {
                f.push(("type".into(), json!("future_block")));
                f.push(("payload".into(), self.any(0)));
            }
        }
        self.finish(f, 8)
    }
    fn content(&mut self, f: &mut Vec<(String, Value)>) {
        let c = match self.below(4) {
            0 => self.string(),
            1 => Value::Null,
            _ => Value::Array((0..self.below(4)).map(|_| self.block()).collect()),
        };
        self.opt(f, "content", c);
    }
    fn usage(&mut self) -> Value {
        let mut f = vec![
            ("input".into(), self.count()),
            ("output".into(), self.count()),
            ("cacheRead".into(), self.count()),
            ("cacheWrite".into(), self.count()),
        ];
        let n = json!(self.below(50));
        self.opt(&mut f, "cacheWrite1h", n);
        let n = json!(self.below(50));
        self.opt(&mut f, "totalTokens", n);
        let cost = json!({"input": self.num(), "output": self.num(), "cacheRead": self.num(),
            "cacheWrite": self.num(), "total": self.num()});
        self.opt(&mut f, "cost", cost);
        self.finish(f, 0)
    }
    fn message(&mut self) -> Value {
        let mut f = Vec::new();
        match self.below(9) {
            0 => {
                f.push(("role".into(), json!("user")));
                self.content(&mut f);
            }
            1 | 2 => {
                f.push(("role".into(), json!("assistant")));
                let blocks = Value::Array((0..self.below(4)).map(|_| self.block()).collect());
                self.opt(&mut f, "content", blocks);
                f.push(("api".into(), json!("anthropic-messages")));
                f.push(("provider".into(), json!("anthropic")));
                f.push(("model".into(), self.string()));
                let u = self.usage();
                self.opt(&mut f, "usage", u);
                let stop = ["stop", "toolUse", "length", "error"][self.below(4) as usize];
                f.push(("stopReason".into(), json!(stop)));
                let s = self.string();
                self.opt(&mut f, "errorMessage", s);
                self.opt(&mut f, "responseId", json!("r1"));
                let d = self.num();
                self.opt(&mut f, "durationMs", d);
            }
            3 => {
                f.push(("role".into(), json!("toolResult")));
                f.push(("toolCallId".into(), json!("call_1")));
                f.push(("toolName".into(), json!("bash")));
                self.content(&mut f);
                let d = self.any(0);
                self.opt(&mut f, "details", d);
                self.opt(&mut f, "isError", json!(false));
            }
            4 => {
                f.push(("role".into(), json!("system")));
                self.content(&mut f);
                self.opt(&mut f, "sections", json!({"a": "b"}));
                let tools = json!([{"name": "t", "description": "d", "parameters": {}, "x": 1}]);
                self.opt(&mut f, "toolsAdded", tools);
                self.opt(&mut f, "toolsRemoved", json!(["t"]));
            }
            5 => {
                f.push(("role".into(), json!("custom")));
                f.push(("customType".into(), json!("ext")));
                self.content(&mut f);
                self.opt(&mut f, "display", json!(true));
                let d = self.any(0);
                self.opt(&mut f, "details", d);
            }
            6 => {
                f.push(("role".into(), json!("bashExecution")));
                f.push(("command".into(), self.string()));
                let s = self.string();
                self.opt(&mut f, "output", s);
                self.opt(&mut f, "exitCode", json!(1));
                self.opt(&mut f, "cancelled", json!(false));
                self.opt(&mut f, "truncated", json!(true));
                self.opt(&mut f, "fullOutputPath", json!("/tmp/x"));
                self.opt(&mut f, "excludeFromContext", json!(true));
            }
            7 => {
                f.push(("role".into(), json!("compactionSummary")));
                f.push(("summary".into(), self.string()));
                let c = self.count();
                self.opt(&mut f, "tokensBefore", c);
            }
            _ => {
                f.push(("role".into(), json!("futureRole")));
                f.push(("stuff".into(), self.any(0)));
            }
        }
        let ts = self.ms();
        self.opt(&mut f, "timestamp", ts);
        self.finish(f, 8)
    }
    fn entry(&mut self) -> Value {
        let parent = if self.chance(4) {
            Value::Null
        } else {
            json!("p1")
        };
        let mut f: Vec<(String, Value)> = vec![
            ("id".into(), json!(format!("e{}", self.below(1000)))),
            ("parentId".into(), parent),
            ("timestamp".into(), json!("2026-12-01T21:00:00.000Z")),
        ];
        let ty = match self.below(14) {
            0..=2 => {
                let m = self.message();
                f.push(("message".into(), m));
                "message"
            }
            3 => {
                f.push(("thinkingLevel".into(), json!("high")));
                "thinking_level_change"
            }
            4 => {
                f.push(("provider".into(), json!("anthropic")));
                f.push(("modelId".into(), self.string()));
                "model_change"
            }
            5 => {
                let names = if self.chance(2) {
                    Value::Null
                } else {
                    json!(["read", "bash"])
                };
                self.opt(&mut f, "activeToolNames", names);
                "active_tools_change"
            }
            6 => {
                f.push(("summary".into(), self.string()));
                self.opt(&mut f, "firstKeptEntryId", json!("e1"));
                let c = self.count();
                self.opt(&mut f, "tokensBefore", c);
                let tail = Value::Array((0..self.below(3)).map(|_| self.message()).collect());
                self.opt(&mut f, "retainedTail", tail);
                let sys = self.message();
                self.opt(&mut f, "systemMessage", sys);
                let u = self.usage();
                self.opt(&mut f, "usage", u);
                self.opt(&mut f, "fromHook", json!(false));
                "compaction"
            }
            7 => {
                f.push(("fromId".into(), json!("root")));
                f.push(("summary".into(), self.string()));
                let d = self.any(0);
                self.opt(&mut f, "details", d);
                "branch_summary"
            }
            8 => {
                f.push(("customType".into(), json!("state")));
                let d = self.any(0);
                self.opt(&mut f, "data", d);
                "custom"
            }
            9 => {
                f.push(("customType".into(), json!("note")));
                self.content(&mut f);
                self.opt(&mut f, "display", json!(true));
                "custom_message"
            }
            10 => {
                f.push(("targetId".into(), json!("e1")));
                let l = if self.chance(3) {
                    Value::Null
                } else {
                    self.string()
                };
                self.opt(&mut f, "label", l);
                "label"
            }
            11 => {
                let t = if self.chance(3) {
                    Value::Null
                } else {
                    json!("e2")
                };
                self.opt(&mut f, "targetId", t);
                "leaf"
            }
            12 => {
                let u = self.usage();
                self.opt(&mut f, "usage", u);
                self.opt(&mut f, "kind", json!("warm"));
                "usage"
            }
            _ => {
                f.push(("anything".into(), self.any(0)));
                "future_entry"
            }
        };
        f.insert(0, ("type".into(), json!(ty)));
        self.finish(f, 10)
    }
}

/// Writes some non-ASCII characters as `\u` escapes (valid wherever they stand, since they
/// only occur inside strings) and sometimes plants a lone surrogate.
fn escape(text: String, g: &mut Gen) -> String {
    let mut t = text;
    if g.chance(2) {
        t = t.replace('é', "\\u00e9").replace('😀', "\\ud83d\\ude00");
    }
    if g.chance(2) {
        t = t.replace('ü', "\\u00fc");
    }
    if g.chance(3) {
        t = t.replace("LONE", "\\ud83d");
    }
    t
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn generated_entries_parse_the_same_by_both_paths(seed in any::<u64>()) {
        let mut g = Gen(seed | 1);
        let entry = g.entry();
        let line = escape(serde_json::to_string(&entry).unwrap(), &mut g);
        check(&line);
    }
}

#[test]
fn the_generator_mostly_produces_lines_the_direct_reader_takes() {
    // Guards the property above against a generator (or reader) that only ever falls back.
    let mut taken = 0;
    for seed in 1..=500u64 {
        let mut g = Gen(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let entry = g.entry();
        let line = escape(serde_json::to_string(&entry).unwrap(), &mut g);
        if check(&line) {
            taken += 1;
        }
    }
    assert!(taken > 250, "direct reader took only {taken} of 500 lines");
}
