//! The index-only read of one entry line (DECISIONS §25.20).
//!
//! Opening a session needs `type`, `id`, `parentId` and `timestamp` of every line, plus whether
//! a `message` entry is an assistant's. pi writes those keys first, so the skim reads top-level
//! keys until it has them and stops: the payload after that point is never tokenized. Anything
//! it is not sure about (an escape in a key or value it keeps, a duplicate key, an odd shape,
//! a type whose payload the index needs) makes it give up, and the caller falls back to the
//! full serde `LineEnvelope` probe, which also produces the precise error.
//! Payload errors past the stop point surface when the entry is read (file and line named).

/// Whether a `message` entry is an assistant's, as far as the skim could tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Assistant,
    /// A message whose role is something else, or a non-message entry.
    Other,
    /// The message's first key is not `role`: decided when the entry is read.
    Unknown,
}

/// The envelope facts of one line, borrowed from it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Skim<'a> {
    pub ty: &'a str,
    pub id: &'a str,
    /// `None` for `null` (a root).
    pub parent_id: Option<&'a str>,
    pub role: Role,
}

/// Entry types whose payload feeds the index (leaf targets, labels, names, compaction
/// boundaries): rare, so they are probed in full.
pub(crate) const FULL_TYPES: [&str; 4] = ["leaf", "label", "session_info", "compaction"];

/// The skim of `line`, or `None` when the full probe must decide.
pub(crate) fn skim(text: &str) -> Option<Skim<'_>> {
    let line = text.as_bytes();
    let last = line.iter().rposition(|b| !b.is_ascii_whitespace())?;
    if line.first() != Some(&b'{') || line[last] != b'}' {
        return None;
    }
    if let Some(fast) = canonical(text) {
        return Some(fast);
    }
    general(text)
}

/// The key order pi (and Arbor) write, read with literal compares (DECISIONS §25.110): every
/// line either written by a session manager takes this path, about a seventh of the general
/// scanner's instructions. Anything else, an escape or a space included, is `None` and goes to
/// [`general`], which gives the same answer wherever this one gives one (test
/// `canonical_agrees_with_the_general_skim`).
fn canonical(text: &str) -> Option<Skim<'_>> {
    let b = text.as_bytes();
    let mut i = lit(b, 0, b"{\"type\":\"")?;
    let (ty, at) = plain_at(text, i)?;
    if FULL_TYPES.contains(&ty) {
        return None;
    }
    i = lit(b, at, b",\"id\":\"")?;
    let (id, at) = plain_at(text, i)?;
    if id.is_empty() {
        return None;
    }
    i = lit(b, at, b",\"parentId\":")?;
    let parent_id = match lit(b, i, b"null") {
        Some(after) => {
            i = after;
            None
        }
        None => {
            let (p, after) = plain_at(text, lit(b, i, b"\"")?)?;
            i = after;
            Some(p)
        }
    };
    i = lit(b, i, b",\"timestamp\":\"")?;
    // The timestamp is not kept: any string without escapes or control bytes ends at its next
    // quote (the general skim takes control bytes too; this path leaves them to it).
    i = super::string_end::next_special(b, i)?;
    if b[i] != b'"' {
        return None;
    }
    i += 1;
    let role = if ty == "message" {
        let at = lit(b, i, b",\"message\":{\"role\":\"")?;
        let (role, _) = plain_at(text, at)?;
        if role == "assistant" {
            Role::Assistant
        } else {
            Role::Other
        }
    } else {
        // What follows the four keys is payload; the general skim stops here too.
        if !matches!(b.get(i), Some(b',' | b'}')) {
            return None;
        }
        Role::Other
    };
    Some(Skim {
        ty,
        id,
        parent_id,
        role,
    })
}

/// `at + word.len()` when `word` is at `at`.
#[inline]
fn lit(b: &[u8], at: usize, word: &[u8]) -> Option<usize> {
    b.get(at..at + word.len())
        .filter(|w| *w == word)
        .map(|_| at + word.len())
}

/// A string's contents from `at` (just past its opening quote) to its closing quote, with no
/// escape or control byte in between; returns them and the position after the quote.
#[inline]
fn plain_at(text: &str, at: usize) -> Option<(&str, usize)> {
    let b = text.as_bytes();
    let end = super::string_end::next_special(b, at)?;
    if b[end] != b'"' {
        return None;
    }
    Some((text.get(at..end)?, end + 1))
}

/// The skim of any key order, whitespace and extra keys before the envelope's.
fn general(text: &str) -> Option<Skim<'_>> {
    let line = text.as_bytes();
    let mut s = Scanner {
        text,
        b: line,
        i: 1,
    };
    let (mut ty, mut id, mut parent, mut ts) = (None, None, None::<Option<&str>>, false);
    let mut role = None;
    loop {
        s.ws();
        if s.peek()? == b'}' {
            break;
        }
        let key = s.plain_bytes()?;
        s.ws();
        s.eat(b':')?;
        s.ws();
        match key {
            b"type" if ty.is_none() => {
                let t = s.plain_string()?;
                if FULL_TYPES.contains(&t) {
                    return None;
                }
                ty = Some(t);
            }
            b"id" if id.is_none() => id = Some(s.plain_string()?),
            b"parentId" if parent.is_none() => {
                parent = Some(if s.peek()? == b'n' {
                    s.literal(b"null")?;
                    None
                } else {
                    Some(s.plain_string()?)
                });
            }
            b"timestamp" if !ts => {
                s.any_string()?;
                ts = true;
            }
            b"type" | b"id" | b"parentId" | b"timestamp" => return None,
            b"message" if role.is_none() && s.peek()? == b'{' => {
                s.i += 1;
                s.ws();
                role = Some(if s.peek()? == b'"' && s.rest().starts_with(b"\"role\"") {
                    s.i += 6;
                    s.ws();
                    s.eat(b':')?;
                    s.ws();
                    match s.any_string()? {
                        b"assistant" => Role::Assistant,
                        _ => Role::Other,
                    }
                } else {
                    Role::Unknown
                });
                // Past the message's first key: the rest of the line is payload.
                return done(ty?, id?, parent?, ts, role?);
            }
            _ => s.skip_value()?,
        }
        if let (Some(t), Some(i), Some(p), true) = (ty, id, parent, ts) {
            if t != "message" {
                return done(t, i, p, ts, Role::Other);
            }
        }
        s.ws();
        match s.peek()? {
            b',' => s.i += 1,
            b'}' => break,
            _ => return None,
        }
    }
    // The whole object was read: a message without a `message` key is not an assistant's.
    done(ty?, id?, parent?, ts, role.unwrap_or(Role::Other))
}

fn done<'a>(
    ty: &'a str,
    id: &'a str,
    parent_id: Option<&'a str>,
    ts: bool,
    role: Role,
) -> Option<Skim<'a>> {
    // Empty ids and missing timestamps are errors the full probe words.
    if !ts || id.is_empty() {
        return None;
    }
    let role = if ty == "message" { role } else { Role::Other };
    Some(Skim {
        ty,
        id,
        parent_id,
        role,
    })
}

struct Scanner<'a> {
    /// The line; `b` is its bytes. Kept values are sliced from it at `"` positions, which are
    /// always char boundaries, so nothing is re-validated.
    text: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn rest(&self) -> &'a [u8] {
        &self.b[self.i.min(self.b.len())..]
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.rest().starts_with(word).then(|| self.i += word.len())
    }

    /// A string without escapes or control characters, as bytes (keys are compared as such).
    /// (Keys and kept values are short: a byte loop beats a SIMD search's set-up here.)
    fn plain_bytes(&mut self) -> Option<&'a [u8]> {
        self.plain_range().map(|(a, b)| &self.b[a..b])
    }

    fn plain_range(&mut self) -> Option<(usize, usize)> {
        self.eat(b'"')?;
        let start = self.i;
        let len = self
            .rest()
            .iter()
            .position(|c| *c == b'"' || *c == b'\\' || *c < 0x20)?;
        if self.b[start + len] != b'"' {
            return None;
        }
        self.i += len + 1;
        Some((start, start + len))
    }

    /// [`Scanner::plain_bytes`] as `&str` (for the values the index keeps).
    fn plain_string(&mut self) -> Option<&'a str> {
        let (a, b) = self.plain_range()?;
        self.text.get(a..b)
    }

    /// Any string; returns its raw (still escaped) bytes.
    fn any_string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.i;
        loop {
            let end = memchr::memchr2(b'"', b'\\', self.rest())?;
            if self.rest()[end] == b'\\' {
                self.i += end + 2;
            } else {
                self.i += end + 1;
                return Some(&self.b[start..self.i - 1]);
            }
        }
    }

    /// Steps over one value without interpreting it (containers by bracket depth, strings
    /// honoured); validation is left to the full parse when the entry is read.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.any_string().map(drop),
            open @ (b'{' | b'[') => {
                let close = if open == b'{' { b'}' } else { b']' };
                let mut depth = 0usize;
                loop {
                    let at = memchr::memchr3(b'"', open, close, self.rest())?;
                    let c = self.rest()[at];
                    self.i += at;
                    if c == b'"' {
                        self.any_string()?;
                        continue;
                    }
                    self.i += 1;
                    if c == open {
                        depth += 1;
                    } else {
                        depth -= 1;
                        if depth == 0 {
                            return Some(());
                        }
                    }
                }
            }
            _ => {
                let rest = self.rest();
                let n = rest
                    .iter()
                    .position(|c| matches!(c, b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n'))?;
                if n == 0 {
                    return None;
                }
                self.i += n;
                Some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sk(line: &str) -> Option<Skim<'_>> {
        skim(line)
    }

    #[test]
    fn stops_after_the_envelope_of_a_message() {
        // The payload after `role` is not valid JSON: the skim never looks at it.
        let s = sk(r#"{"type":"message","id":"a1","parentId":"p","timestamp":"t","message":{"role":"assistant","content":[oops}"#)
            .expect("skim");
        assert_eq!(
            s,
            Skim {
                ty: "message",
                id: "a1",
                parent_id: Some("p"),
                role: Role::Assistant
            }
        );
        let s = sk(r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"content":"x","role":"user"}}"#)
            .expect("skim");
        assert_eq!((s.parent_id, s.role), (None, Role::Unknown));
    }

    #[test]
    fn other_types_stop_at_the_last_envelope_key() {
        let s = sk(r#"{"type":"custom","customType":"x","data":{"a":[1,{"b":"}"}]},"id":"c","parentId":"p","timestamp":"t","more":!!}"#)
            .expect("skim");
        assert_eq!((s.ty, s.id, s.role), ("custom", "c", Role::Other));
    }

    #[test]
    fn gives_up_when_the_full_probe_must_decide() {
        for line in [
            r#"{"type":"leaf","id":"a","parentId":null,"timestamp":"t","targetId":"b"}"#,
            r#"{"type":"label","id":"a","parentId":null,"timestamp":"t"}"#,
            r#"{"type":"m\u0061","id":"a","parentId":null,"timestamp":"t"}"#,
            r#"{"type":"m","id":"a","id":"b","parentId":null,"timestamp":"t"}"#,
            r#"{"type":"m","id":"","parentId":null,"timestamp":"t"}"#,
            r#"{"type":"m","id":"a","timestamp":"t"}"#,
            r#"{"type":"m","id":"a","parentId":null,"timestamp":5}"#,
            r#"{"type":"m","id":"a","parentId":null,"timestamp":"t""#,
            r#"["type"]"#,
            r#" {"type":"m","id":"a","parentId":null,"timestamp":"t"}"#,
        ] {
            assert_eq!(sk(line), None, "{line}");
        }
    }

    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            "[a-z{}\\[\\]\"\\\\, :\u{e9}\u{1F600}\n]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z\"{}]{1,6}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever the skim accepts, the full probe reads the same way.
        #[test]
        fn agrees_with_the_full_probe(
            ty in prop_oneof![Just("message"), Just("custom"), Just("model_change"), Just("leaf")],
            id in "[a-z0-9\"]{0,6}",
            parent in proptest::option::of("[a-z0-9]{1,6}"),
            role in prop_oneof![Just("assistant"), Just("user"), Just("toolResult")],
            role_first in any::<bool>(),
            extras in prop::collection::vec(("[a-zA-Z]{1,8}", value()), 0..4),
            order in prop::collection::vec(0usize..8, 8),
        ) {
            let mut message = serde_json::Map::new();
            if role_first {
                message.insert("role".into(), json!(role));
            }
            message.insert("content".into(), json!([{"type": "text", "text": "x"}]));
            if !role_first {
                message.insert("role".into(), json!(role));
            }
            let mut fields: Vec<(String, Value)> = vec![
                ("type".into(), json!(ty)),
                ("id".into(), json!(id)),
                ("parentId".into(), json!(parent)),
                ("timestamp".into(), json!("2026-01-01T00:00:00Z")),
                ("message".into(), Value::Object(message)),
            ];
            // Extra keys are distinct and never one the probe knows (a duplicate key past the
            // skim's stop point is found when the entry is read, DECISIONS §25.21).
            const KNOWN: [&str; 11] = [
                "type", "id", "parentId", "timestamp", "message", "targetId", "label", "name",
                "firstKeptEntryId", "retainedTail", "usage",
            ];
            let mut seen = std::collections::HashSet::new();
            fields.extend(
                extras
                    .into_iter()
                    .filter(|(k, _)| !KNOWN.contains(&k.as_str()) && seen.insert(k.clone())),
            );
            // Shuffle by the drawn order (stable for ties).
            let mut keyed: Vec<(usize, (String, Value))> = fields
                .into_iter()
                .enumerate()
                .map(|(i, f)| (order.get(i).copied().unwrap_or(i), f))
                .collect();
            keyed.sort_by_key(|(k, _)| *k);
            let mut line = String::from("{");
            for (i, (_, (k, v))) in keyed.iter().enumerate() {
                if i > 0 {
                    line.push(',');
                }
                line.push_str(&serde_json::to_string(k).unwrap());
                line.push(':');
                line.push_str(&serde_json::to_string(v).unwrap());
            }
            line.push('}');
            let probed = serde_json::from_str::<crate::line::envelope::LineEnvelope<'_>>(&line);
            if let Some(s) = skim(&line) {
                let env = probed.expect("the skim accepted a line the probe refuses");
                prop_assert_eq!(s.ty, env.ty.as_ref());
                prop_assert_eq!(s.id, env.id.as_ref());
                let parent = env.parent_id.clone().flatten();
                prop_assert_eq!(s.parent_id, parent.as_deref());
                let assistant = env.ty == "message" && env.message.role.as_deref() == Some("assistant");
                match s.role {
                    Role::Assistant => prop_assert!(assistant),
                    Role::Other => prop_assert!(!assistant),
                    Role::Unknown => prop_assert_eq!(s.ty, "message"),
                }
                prop_assert!(!FULL_TYPES.contains(&s.ty));
            }
        }
    }

    /// A string drawn to hit the literal reader's refusals: escapes, control bytes, quotes.
    fn tricky() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9]{0,9}",
            "[a-z0-9\"\\\\ \u{1}\u{e9}]{0,6}",
            Just("assistant".to_owned()),
        ]
    }

    proptest! {
        /// Wherever the literal reader answers, the general scanner gives the same answer; on
        /// lines in pi's own layout it always answers.
        #[test]
        fn canonical_agrees_with_the_general_skim(
            ty in prop_oneof![Just("message".to_owned()), Just("custom".to_owned()), Just("leaf".to_owned()), tricky()],
            id in tricky(),
            parent in proptest::option::of(tricky()),
            ts in tricky(),
            role in tricky(),
            spaced in any::<bool>(),
            tail in prop_oneof![Just("}".to_owned()), Just(",\"x\":1}".to_owned()), Just(" }".to_owned()), Just("x}".to_owned())],
        ) {
            let q = |s: &str| format!("\"{s}\"");
            let sep = if spaced { ", " } else { "," };
            let parent = parent.as_deref().map_or("null".to_owned(), q);
            let mut line = format!(
                "{{\"type\":{}{sep}\"id\":{}{sep}\"parentId\":{parent}{sep}\"timestamp\":{}",
                q(&ty), q(&id), q(&ts)
            );
            if ty == "message" {
                line.push_str(&format!(",\"message\":{{\"role\":{},\"content\":[]}}", q(&role)));
            }
            line.push_str(&tail);
            let general = general(&line);
            if let Some(c) = canonical(&line) {
                prop_assert_eq!(Some(c), general.clone(), "{}", line);
            }
            let plain = |s: &str| s.bytes().all(|c| c != b'"' && c != b'\\' && c >= 0x20);
            let layout = !spaced && [&ty, &id, &ts, &role].iter().all(|s| plain(s))
                && parent.bytes().all(|c| c != b'\\' && c >= 0x20)
                && !id.is_empty() && !FULL_TYPES.contains(&ty.as_str())
                && !(ty != "message" && (tail.starts_with('x') || tail.starts_with(' ')));
            if layout && general.is_some() {
                prop_assert!(canonical(&line).is_some(), "{}", line);
            }
        }
    }

    #[test]
    fn escapes_in_skipped_values_are_stepped_over() {
        let s =
            sk(r#"{"note":"a \"}\\","type":"x","id":"i","parentId":"p","timestamp":"2\u0030"}"#)
                .expect("skim");
        assert_eq!((s.ty, s.id, s.parent_id), ("x", "i", Some("p")));
    }
}
