//! JSON helpers for streamed tool-call arguments.
//!
//! Providers stream tool arguments as raw JSON text fragments. While the text is incomplete a
//! UI still wants a best-effort view ([`parse_partial_json`], [`StreamingJson`]); once the call is
//! complete the text is parsed strictly, after a light repair of the mistakes models commonly make
//! inside strings ([`parse_tool_arguments`]).

use std::borrow::Cow;

use serde_json::{Map, Value};

/// Text prefixed to the raw arguments in `argumentsError`.
const RECEIVED_ARGUMENTS: &str = "\n\nReceived arguments:\n";

/// Repairs what models most often get wrong inside JSON strings: raw control characters are
/// escaped and backslashes that do not start a valid escape are doubled. Text outside strings is
/// left alone. Returns the input unchanged (borrowed) when nothing needed repair.
pub fn repair_json(text: &str) -> Cow<'_, str> {
    if !needs_repair(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_string = false;
    let mut chars = text.char_indices().peekable();
    while let Some((index, ch)) = chars.next() {
        if !in_string {
            out.push(ch);
            if ch == '"' {
                in_string = true;
            }
            continue;
        }
        match ch {
            '"' => {
                out.push('"');
                in_string = false;
            }
            '\\' => match chars.peek().map(|&(_, next)| next) {
                None => out.push_str("\\\\"),
                Some('u') if is_hex4(&text[index + 2..]) => {
                    out.push_str(&text[index..index + 6]);
                    // Skip `u` and the four hex digits (all ASCII).
                    for _ in 0..5 {
                        chars.next();
                    }
                }
                Some(next @ ('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't')) => {
                    out.push('\\');
                    out.push(next);
                    chars.next();
                }
                Some(_) => out.push_str("\\\\"),
            },
            c if (c as u32) < 0x20 => push_escaped_control(&mut out, c),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Cheap pre-scan: only strings with a backslash or a raw control character can need repair.
fn needs_repair(text: &str) -> bool {
    text.bytes().any(|b| b == b'\\' || b < 0x20)
}

fn is_hex4(rest: &str) -> bool {
    rest.len() >= 4 && rest.as_bytes()[..4].iter().all(u8::is_ascii_hexdigit)
}

fn push_escaped_control(out: &mut String, c: char) {
    match c {
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        other => out.push_str(&format!("\\u{:04x}", other as u32)),
    }
}

/// Strict JSON parse; on failure retries once on the repaired text (if repair changed it).
pub fn parse_json_with_repair(text: &str) -> Result<Value, serde_json::Error> {
    match serde_json::from_str(text) {
        Ok(value) => Ok(value),
        Err(err) => match repair_json(text) {
            Cow::Owned(repaired) => serde_json::from_str(&repaired),
            Cow::Borrowed(_) => Err(err),
        },
    }
}

/// pi's error text for `text` that failed [`parse_json_with_repair`]: JavaScript's `JSON.parse`
/// message for the repaired text when repair changed it, else for the text itself.
pub fn js_parse_error_with_repair(text: &str) -> String {
    let repaired = repair_json(text);
    crate::json_error::js_json_parse_error(&repaired)
        .unwrap_or_else(|| "Unexpected end of JSON input".to_string())
}

/// Final tool-call arguments parsed from the complete argument text.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedArguments {
    /// Always a JSON object (`{}` when the text was blank or invalid).
    pub arguments: Value,
    /// Set when the text was not a JSON object: `<reason>\n\nReceived arguments:\n<text>`.
    pub arguments_error: Option<String>,
}

/// Parses the complete argument text of a tool call: blank → `{}`; otherwise strict parse with
/// repair, and anything that is not an object becomes `{}` plus an `argumentsError`.
pub fn parse_tool_arguments(text: &str) -> ParsedArguments {
    if text.trim().is_empty() {
        return ParsedArguments {
            arguments: Value::Object(Map::new()),
            arguments_error: None,
        };
    }
    // Lone surrogate escapes (JavaScript accepts them) read as U+FFFD, as in stream payloads
    // (DECISIONS §9.19); the scan runs only when the plain parse failed.
    let parsed =
        parse_json_with_repair(text).or_else(|e| {
            match crate::json::replace_lone_surrogates(text) {
                Some(fixed) => parse_json_with_repair(&fixed),
                None => Err(e),
            }
        });
    let reason = match parsed {
        Ok(value @ Value::Object(_)) => {
            return ParsedArguments {
                arguments: value,
                arguments_error: None,
            }
        }
        Ok(_) => "Tool arguments must be a JSON object".to_string(),
        Err(_) => js_parse_error_with_repair(text),
    };
    ParsedArguments {
        arguments: Value::Object(Map::new()),
        arguments_error: Some(format!("{reason}{RECEIVED_ARGUMENTS}{text}")),
    }
}

/// Best-effort view of possibly incomplete JSON text, for display while arguments stream.
///
/// Unterminated strings show what was read so far, unterminated containers show their completed
/// members, a member whose value has not started is omitted, an unfinished number or literal is
/// shown when it already means something (`12.` → 12, `tr` → true), text after the root value is
/// ignored. Only objects are exposed: any other root yields `{}`.
pub fn parse_partial_json(text: &str) -> Value {
    if let Ok(value @ Value::Object(_)) = parse_json_with_repair(text) {
        return value;
    }
    let mut parser = PartialParser {
        src: text.as_bytes(),
        text,
        pos: 0,
    };
    parser.skip_ws();
    match parser.value() {
        (Some(value @ Value::Object(_)), _) => value,
        _ => Value::Object(Map::new()),
    }
}

/// Accumulates streamed argument text and parses it on demand.
///
/// Appending is O(fragment); [`StreamingJson::value`] re-parses only when text arrived since the
/// last call, so a UI that renders at frame rate does not pay per delta.
#[derive(Debug, Default, Clone)]
pub struct StreamingJson {
    text: String,
    cached: Option<Value>,
}

impl StreamingJson {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, fragment: &str) {
        if !fragment.is_empty() {
            self.text.push_str(fragment);
            self.cached = None;
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The best-effort partial object for the text so far.
    pub fn value(&mut self) -> &Value {
        let text = &self.text;
        self.cached.get_or_insert_with(|| parse_partial_json(text))
    }

    /// Strict final parse (see [`parse_tool_arguments`]).
    pub fn finish(&self) -> ParsedArguments {
        parse_tool_arguments(&self.text)
    }
}

/// Recursive-descent parser that stops gracefully at the end of input.
struct PartialParser<'a> {
    src: &'a [u8],
    text: &'a str,
    pos: usize,
}

/// Containers nested deeper than this are cut off (protects the stack from hostile input).
const MAX_DEPTH: usize = 256;

impl PartialParser<'_> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.src.get(self.pos) {
            self.pos += 1;
        }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.src.len()
    }

    /// Returns the value (if it means anything yet) and whether it was complete.
    fn value(&mut self) -> (Option<Value>, bool) {
        self.value_at(0)
    }

    fn value_at(&mut self, depth: usize) -> (Option<Value>, bool) {
        if depth > MAX_DEPTH {
            return (None, false);
        }
        match self.src.get(self.pos) {
            None => (None, false),
            Some(b'{') => {
                self.pos += 1;
                self.object(depth)
            }
            Some(b'[') => {
                self.pos += 1;
                self.array(depth)
            }
            Some(b'"') => {
                self.pos += 1;
                let (s, complete) = self.string();
                (Some(Value::String(s)), complete)
            }
            Some(_) => self.scalar(),
        }
    }

    fn object(&mut self, depth: usize) -> (Option<Value>, bool) {
        let mut map = Map::new();
        loop {
            self.skip_ws();
            match self.src.get(self.pos) {
                None => return (Some(Value::Object(map)), false),
                Some(b'}') => {
                    self.pos += 1;
                    return (Some(Value::Object(map)), true);
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                Some(b'"') => self.pos += 1,
                // Malformed: show what we have.
                Some(_) => return (Some(Value::Object(map)), false),
            }
            let (key, key_complete) = self.string();
            if !key_complete {
                return (Some(Value::Object(map)), false);
            }
            self.skip_ws();
            if self.src.get(self.pos) != Some(&b':') {
                return (Some(Value::Object(map)), false);
            }
            self.pos += 1;
            self.skip_ws();
            let (value, complete) = self.value_at(depth + 1);
            if let Some(value) = value {
                map.insert(key, value);
            }
            if !complete {
                return (Some(Value::Object(map)), false);
            }
        }
    }

    fn array(&mut self, depth: usize) -> (Option<Value>, bool) {
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            match self.src.get(self.pos) {
                None => return (Some(Value::Array(items)), false),
                Some(b']') => {
                    self.pos += 1;
                    return (Some(Value::Array(items)), true);
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                Some(_) => {}
            }
            let (value, complete) = self.value_at(depth + 1);
            if let Some(value) = value {
                items.push(value);
            }
            if !complete {
                return (Some(Value::Array(items)), false);
            }
        }
    }

    /// Reads a string body (opening quote consumed). Incomplete escapes at the end are dropped.
    fn string(&mut self) -> (String, bool) {
        let mut out = String::new();
        loop {
            let start = self.pos;
            while let Some(&b) = self.src.get(self.pos) {
                if b == b'"' || b == b'\\' {
                    break;
                }
                self.pos += 1;
            }
            // `start..pos` ends at an ASCII byte or the end, so it is a char boundary.
            out.push_str(&self.text[start..self.pos]);
            match self.src.get(self.pos) {
                None => return (out, false),
                Some(b'"') => {
                    self.pos += 1;
                    return (out, true);
                }
                _ => {}
            }
            // Backslash.
            self.pos += 1;
            let Some(&esc) = self.src.get(self.pos) else {
                return (out, false);
            };
            self.pos += 1;
            match esc {
                b'n' => out.push('\n'),
                b't' => out.push('\t'),
                b'r' => out.push('\r'),
                b'b' => out.push('\u{8}'),
                b'f' => out.push('\u{c}'),
                b'u' => match self.hex4() {
                    None => return (out, false),
                    Some(high @ 0xD800..=0xDBFF) => {
                        if self.src.get(self.pos) == Some(&b'\\')
                            && self.src.get(self.pos + 1) == Some(&b'u')
                        {
                            let save = self.pos;
                            self.pos += 2;
                            match self.hex4() {
                                Some(low @ 0xDC00..=0xDFFF) => {
                                    let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                                    if let Some(c) = char::from_u32(code) {
                                        out.push(c);
                                    }
                                }
                                None => return (out, false),
                                // Lone high surrogate: dropped; re-read the next escape.
                                Some(_) => self.pos = save,
                            }
                        } else if self.at_end() {
                            return (out, false);
                        }
                    }
                    Some(code) => {
                        if let Some(c) = char::from_u32(code) {
                            out.push(c);
                        }
                    }
                },
                // `"`, `\`, `/` and (tolerantly) any other ASCII character stand for themselves.
                other if other.is_ascii() => out.push(other as char),
                _ => {
                    // A multibyte character after a backslash: keep it whole.
                    self.pos -= 1;
                }
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.src.get(self.pos..self.pos + 4)?;
        let text = std::str::from_utf8(digits).ok()?;
        let code = u32::from_str_radix(text, 16).ok()?;
        self.pos += 4;
        Some(code)
    }

    fn scalar(&mut self) -> (Option<Value>, bool) {
        let start = self.pos;
        while let Some(&b) = self.src.get(self.pos) {
            if matches!(
                b,
                b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r' | b':' | b'"'
            ) {
                break;
            }
            self.pos += 1;
        }
        let token = &self.text[start..self.pos];
        let complete = !self.at_end();
        for (literal, value) in [
            ("true", Value::Bool(true)),
            ("false", Value::Bool(false)),
            ("null", Value::Null),
        ] {
            if token == literal || (!complete && !token.is_empty() && literal.starts_with(token)) {
                return (Some(value), token == literal || complete);
            }
        }
        if let Ok(value) = serde_json::from_str::<Value>(token) {
            if value.is_number() {
                return (Some(value), complete);
            }
        }
        if !complete {
            // An unfinished number such as `12.` or `1e`: show the meaningful prefix.
            let trimmed = token.trim_end_matches(['.', 'e', 'E', '+', '-']);
            if let Ok(value @ Value::Number(_)) = serde_json::from_str::<Value>(trimmed) {
                return (Some(value), false);
            }
        }
        (None, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn repair_escapes_controls_and_bad_backslashes() {
        assert_eq!(repair_json("{\"a\":\"x\ny\"}"), "{\"a\":\"x\\ny\"}");
        assert_eq!(repair_json(r#"{"p":"C:\dir"}"#), r#"{"p":"C:\\dir"}"#);
        assert_eq!(
            repair_json(r#"{"u":"\u00e9\uZZ"}"#),
            r#"{"u":"\u00e9\\uZZ"}"#
        );
        assert_eq!(repair_json("{\"t\":\"\u{1}\"}"), "{\"t\":\"\\u0001\"}");
        assert!(matches!(repair_json("{\"ok\":1}"), Cow::Borrowed(_)));
        // Outside strings nothing changes.
        assert_eq!(repair_json("{\n\"a\": 1}"), "{\n\"a\": 1}");
        // A trailing lone backslash inside a string is doubled.
        assert_eq!(repair_json("\"abc\\"), "\"abc\\\\");
    }

    #[test]
    fn tool_arguments_strict_with_repair() {
        let ok = parse_tool_arguments(r#"{"path":"C:\temp\x"}"#);
        assert_eq!(ok.arguments, json!({"path": "C:\temp\\x"}));
        assert_eq!(ok.arguments_error, None);
        assert_eq!(parse_tool_arguments("  ").arguments, json!({}));
        let arr = parse_tool_arguments("[1,2]");
        assert_eq!(arr.arguments, json!({}));
        assert_eq!(
            arr.arguments_error.as_deref(),
            Some("Tool arguments must be a JSON object\n\nReceived arguments:\n[1,2]")
        );
        let bad = parse_tool_arguments("{\"a\":");
        let err = bad.arguments_error.unwrap_or_default();
        // JavaScript's wording, as pi reports it (DECISIONS §26.6).
        assert!(err.starts_with("Unexpected end of JSON input"), "{err}");
        assert!(err.ends_with("\n\nReceived arguments:\n{\"a\":"), "{err}");
    }

    #[test]
    fn partial_shapes() {
        let cases: &[(&str, Value)] = &[
            ("", json!({})),
            ("{", json!({})),
            ("{\"pa", json!({})),
            ("{\"path\"", json!({})),
            ("{\"path\":", json!({})),
            ("{\"path\": \"/tm", json!({"path": "/tm"})),
            ("{\"path\": \"a\\", json!({"path": "a"})),
            ("{\"path\": \"a\\u00", json!({"path": "a"})),
            ("{\"n\": 12.", json!({"n": 12})),
            ("{\"n\": -", json!({})),
            ("{\"b\": tr", json!({"b": true})),
            ("{\"b\": nu", json!({"b": null})),
            (
                "{\"l\": [1, 2, {\"x\": \"y",
                json!({"l": [1, 2, {"x": "y"}]}),
            ),
            ("{\"a\": 1} trailing", json!({"a": 1})),
            ("[1,2", json!({})),
            ("\"str", json!({})),
            ("{\"e\": \"\\ud83d\\ude00\"", json!({"e": "😀"})),
            ("{\"e\": \"\\ud83d", json!({"e": ""})),
            ("{\"k\": \"é", json!({"k": "é"})),
        ];
        for (text, expected) in cases {
            assert_eq!(&parse_partial_json(text), expected, "input {text:?}");
        }
    }

    #[test]
    fn streaming_json_caches_until_new_text() {
        let mut s = StreamingJson::new();
        s.push("{\"a\":");
        assert_eq!(s.value(), &json!({}));
        s.push(" \"hi");
        assert_eq!(s.value(), &json!({"a": "hi"}));
        s.push("\"}");
        assert_eq!(s.finish().arguments, json!({"a": "hi"}));
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        // 10 000 unterminated levels: the parser stops at MAX_DEPTH instead of recursing on,
        // and shows the levels it kept.
        let text = "{\"a\":".repeat(10_000);
        let value = parse_partial_json(&text);
        let mut depth = 0;
        let mut node = &value;
        while let Some(inner) = node.get("a") {
            depth += 1;
            node = inner;
        }
        assert_eq!(
            node,
            &Value::Object(Map::new()),
            "the innermost kept level is empty"
        );
        assert_eq!(
            depth, MAX_DEPTH,
            "levels kept: exactly MAX_DEPTH below the root"
        );
    }
}
