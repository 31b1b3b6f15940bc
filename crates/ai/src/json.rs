//! JSON helpers shared by the wire types.
//!
//! Session files are written by JavaScript, where every number is a double and `JSON.stringify`
//! prints integral values without a fraction (`0`, not `0.0`). Fields we hold as `f64` (costs,
//! durations) use [`serialize_js_f64`] so that a file we rewrite compares equal to pi's.

use crate::error::AiError;
use std::cell::Cell;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serializer};
use serde_json::{Map, Value};

/// Serializes `inner`'s fields behind a leading `"type": tag`, for hand-written tagged unions
/// (the tag comes first, as in pi's output).
#[derive(Debug, serde::Serialize)]
pub struct TypeTagged<'a, T> {
    #[serde(rename = "type")]
    /// The `type` value.
    pub tag: &'a str,
    #[serde(flatten)]
    /// The value whose fields follow the tag.
    pub inner: &'a T,
}

/// Serializes `inner`'s fields behind a leading `"role": role` (messages).
#[derive(Debug, serde::Serialize)]
pub struct RoleTagged<'a, T> {
    /// The `role` value.
    pub role: &'a str,
    #[serde(flatten)]
    /// The value whose fields follow the role.
    pub inner: &'a T,
}

/// Largest integer a double represents exactly (2^53 - 1), JavaScript's `Number.MAX_SAFE_INTEGER`.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// Serializes an `f64` the way JavaScript's `JSON.stringify` would: integral values without a
/// fractional part, non-finite values as `null`.
pub fn serialize_js_f64<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    let v = *value;
    if !v.is_finite() {
        serializer.serialize_none()
    } else if v.fract() == 0.0 && v.abs() <= MAX_SAFE_INTEGER {
        // Exact: the value is integral and within i64's exactly representable range.
        let i = v as i64;
        serializer.serialize_i64(i)
    } else {
        serializer.serialize_f64(v)
    }
}

/// [`serialize_js_f64`] for optional fields (used together with `skip_serializing_if`).
pub fn serialize_js_f64_opt<S: Serializer>(
    value: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => serialize_js_f64(v, serializer),
        None => serializer.serialize_none(),
    }
}

/// Unix-millisecond timestamps: integers in practice, but written by JavaScript, so a file may
/// hold `1.7e12` or `1733234401000.0`. Accept any number that is integral.
pub fn deserialize_ms<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    let n = serde_json::Number::deserialize(deserializer)?;
    number_to_i64(&n)
        .ok_or_else(|| D::Error::custom(format!("expected integer milliseconds, found {n}")))
}

/// [`deserialize_ms`] for a [`Kept`](crate::kept::Kept) field: a field that is there is present.
pub fn deserialize_kept_ms<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<crate::kept::Kept<i64>, D::Error> {
    deserialize_ms(deserializer).map(crate::kept::Kept::new)
}

/// Token counts: non-negative integers; integral floats are accepted for the same reason.
pub fn deserialize_count<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let n = serde_json::Number::deserialize(deserializer)?;
    if let Some(u) = n.as_u64() {
        return Ok(u);
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER).contains(&f) =>
        {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Ok(f as u64)
        }
        _ => Err(D::Error::custom(format!(
            "expected a non-negative integer count, found {n}"
        ))),
    }
}

fn number_to_i64(n: &serde_json::Number) -> Option<i64> {
    if let Some(i) = n.as_i64() {
        return Some(i);
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER => Some(f as i64),
        _ => None,
    }
}

/// A short description of a JSON value's kind, for error messages ("found integer 42").
pub fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) if s.len() <= 40 => format!("string {s:?}"),
        Value::String(_) => "a string".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

/// Deserializes `T` from an owned JSON object, prefixing any error with the path of the failing
/// field (`content[1].text: invalid type ...`), so a bad value in a session file is named
/// precisely instead of surfacing as "data did not match any variant".
pub fn from_object<T: serde::de::DeserializeOwned>(map: Map<String, Value>) -> Result<T, AiError> {
    let value = Value::Object(map);
    if FAST_PATH.with(Cell::get) {
        return serde_json::from_value(value).map_err(|e| AiError::InvalidJson(e.to_string()));
    }
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let inner = AiError::InvalidJson(err.into_inner().to_string());
        if path == "." || path.is_empty() {
            inner
        } else {
            inner.within(path)
        }
    })
}

thread_local! {
    /// Set while [`parse_then_explain`] makes its first, untracked attempt.
    static FAST_PATH: Cell<bool> = const { Cell::new(false) };
}

/// Runs `parse` once without field-path tracking (about a quarter of the cost of a typed
/// parse) and, only if it fails, once more with tracking so the error names the field. `parse`
/// must be repeatable (it re-reads its input).
pub fn parse_then_explain<T, E>(parse: impl Fn() -> Result<T, E>) -> Result<T, E> {
    let outer = FAST_PATH.with(|f| f.replace(true));
    let first = parse();
    FAST_PATH.with(|f| f.set(outer));
    match first {
        Ok(v) => Ok(v),
        // Nested inside another fast attempt: let the outermost caller explain.
        Err(e) if outer => Err(e),
        Err(_) => parse(),
    }
}

/// Takes a required string field out of `map`.
pub fn take_string(map: &mut Map<String, Value>, key: &str) -> Result<String, AiError> {
    match map.remove(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(AiError::InvalidJson(format!(
            "{key}: expected a string, found {}",
            describe(&other)
        ))),
        None => Err(AiError::InvalidJson(format!("missing field `{key}`"))),
    }
}

/// A JSON number held as `f64` that remembers how it was written.
///
/// Read from a file, it writes back exactly as read (`0` stays `0`, `0.0` stays `0.0`), so a
/// rewritten file compares equal to the original. Made in Rust ([`Num::new`], `From<f64>`), it
/// writes like JavaScript's `JSON.stringify`: integral values without a fraction.
#[derive(Debug, Clone, Copy, Default)]
pub struct Num {
    value: f64,
    /// Written with a fraction or exponent in the source, and so written back as a float.
    float_repr: bool,
}

impl Num {
    /// Zero, written as `0`.
    pub const ZERO: Num = Num {
        value: 0.0,
        float_repr: false,
    };

    /// A number written back as an integer when it is one.
    pub fn new(value: f64) -> Self {
        Num {
            value,
            float_repr: false,
        }
    }

    /// The value.
    pub fn get(self) -> f64 {
        self.value
    }
}

impl PartialEq for Num {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl From<f64> for Num {
    fn from(value: f64) -> Self {
        Num::new(value)
    }
}

impl From<Num> for f64 {
    fn from(n: Num) -> f64 {
        n.value
    }
}

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.value)
    }
}

impl serde::Serialize for Num {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.float_repr && self.value.is_finite() {
            serializer.serialize_f64(self.value)
        } else {
            serialize_js_f64(&self.value, serializer)
        }
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let n = serde_json::Number::deserialize(deserializer)?;
        let float_repr = n.is_f64();
        let value = n
            .as_f64()
            .ok_or_else(|| D::Error::custom(format!("number {n} is out of range")))?;
        Ok(Num { value, float_repr })
    }
}

/// An optional field that distinguishes "absent" from an explicit `null`, for fields where
/// writers use both (a label entry's `label`, `activeToolNames`): a rewrite keeps either form.
/// Use with `#[serde(default, skip_serializing_if = "Nullable::is_absent")]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Nullable<T> {
    #[default]
    /// The field was not in the JSON.
    Absent,
    /// The field was an explicit `null`.
    Null,
    /// The field had a value.
    Value(T),
}

impl<T> Nullable<T> {
    /// Whether the field was absent.
    pub fn is_absent(&self) -> bool {
        matches!(self, Nullable::Absent)
    }

    /// The value, treating absent and null alike.
    pub fn get(&self) -> Option<&T> {
        match self {
            Nullable::Value(v) => Some(v),
            _ => None,
        }
    }

    /// The value, treating absent and null alike.
    pub fn into_option(self) -> Option<T> {
        match self {
            Nullable::Value(v) => Some(v),
            _ => None,
        }
    }
}

impl<T> From<Option<T>> for Nullable<T> {
    fn from(o: Option<T>) -> Self {
        match o {
            Some(v) => Nullable::Value(v),
            None => Nullable::Absent,
        }
    }
}

impl<T: serde::Serialize> serde::Serialize for Nullable<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Nullable::Value(v) => v.serialize(serializer),
            _ => serializer.serialize_none(),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Nullable<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(deserializer)? {
            Some(v) => Nullable::Value(v),
            None => Nullable::Null,
        })
    }
}

/// Removes `\uXXXX` escapes of unpaired UTF-16 surrogates from JSON text; `None` when there
/// are none. JavaScript writes them (a string cut in the middle of an emoji, e.g. truncated
/// tool output) and serde_json refuses them; pi removes them before sending (its
/// `sanitizeSurrogates`), so dropping them on load sends what pi sends (DECISIONS §25.8).
/// Meant for failure paths only: callers try the plain parse first.
pub fn strip_lone_surrogates(json: &str) -> Option<String> {
    fix_lone_surrogates(json, "")
}

/// Replaces `\uXXXX` escapes of unpaired UTF-16 surrogates in JSON text with `\ufffd` (the
/// replacement character, written as an escape of the same length, so error positions stay
/// put); `None` when there are none. For provider stream payloads (DECISIONS §9.19): the text
/// the user saw cut shows where it was cut. Failure paths only, like [`strip_lone_surrogates`].
pub fn replace_lone_surrogates(json: &str) -> Option<String> {
    fix_lone_surrogates(json, "\\ufffd")
}

fn fix_lone_surrogates(json: &str, replacement: &str) -> Option<String> {
    fn escape_at(b: &[u8], i: usize) -> Option<u16> {
        let hex = b.get(i..i + 6)?;
        if hex[0] != b'\\' || hex[1] != b'u' {
            return None;
        }
        let s = std::str::from_utf8(&hex[2..]).ok()?;
        u16::from_str_radix(s, 16).ok()
    }
    let b = json.as_bytes();
    let is_high = |u: u16| (0xD800..0xDC00).contains(&u);
    let is_low = |u: u16| (0xDC00..0xE000).contains(&u);
    let mut out: Option<String> = None;
    let mut copied = 0usize;
    let mut i = 0usize;
    while let Some(off) = memchr_backslash(&b[i..]) {
        let at = i + off;
        match escape_at(b, at) {
            Some(u) if is_high(u) && escape_at(b, at + 6).is_some_and(is_low) => i = at + 12,
            Some(u) if is_high(u) || is_low(u) => {
                let o = out.get_or_insert_with(|| String::with_capacity(json.len()));
                o.push_str(&json[copied..at]);
                o.push_str(replacement);
                copied = at + 6;
                i = at + 6;
            }
            Some(_) => i = at + 6,
            // `\\`, `\"`, `\n`…: skip the escaped character (so `\\u…` is not an escape).
            None => i = at + 2,
        }
        if i >= b.len() {
            break;
        }
    }
    let mut o = out?;
    o.push_str(json.get(copied..).unwrap_or(""));
    Some(o)
}

fn memchr_backslash(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\\')
}

#[cfg(test)]
mod surrogate_tests {
    use super::strip_lone_surrogates as strip;

    #[test]
    fn lone_surrogates_go_and_pairs_stay() {
        assert_eq!(strip(r#"{"t":"ok \ud83d\ude00"}"#), None);
        assert_eq!(
            strip(r#"{"t":"cut \ud83d"}"#).as_deref(),
            Some(r#"{"t":"cut "}"#)
        );
        assert_eq!(strip(r#"{"t":"\uDE00x"}"#).as_deref(), Some(r#"{"t":"x"}"#));
        assert_eq!(
            strip(r#"{"t":"\ud83d\ud83d\ude00"}"#).as_deref(),
            Some(r#"{"t":"\ud83d\ude00"}"#)
        );
        assert_eq!(
            strip(r#"{"t":"\\ud83d"}"#),
            None,
            "an escaped backslash, not an escape"
        );
        assert_eq!(strip(r#"{"t":"\n\u0041"}"#), None);
        let fixed = strip(r#"{"t":"a\ud83d","u":"\udc00b"}"#).unwrap();
        assert!(serde_json::from_str::<serde_json::Value>(&fixed).is_ok());
    }

    #[test]
    fn lone_surrogates_become_the_replacement_character() {
        use super::replace_lone_surrogates as replace;
        assert_eq!(replace(r#"{"t":"ok \ud83d\ude00"}"#), None);
        let fixed = replace(r#"{"t":"cut \ud83d","u":"\uDE00x","v":"\\ud800"}"#).unwrap();
        assert_eq!(fixed, r#"{"t":"cut \ufffd","u":"\ufffdx","v":"\\ud800"}"#);
        let v: serde_json::Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(v["t"], "cut \u{FFFD}");
        assert_eq!(v["u"], "\u{FFFD}x");
        assert_eq!(v["v"], "\\ud800");
    }
}
