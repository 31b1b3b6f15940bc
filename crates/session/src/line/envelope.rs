//! Cheap, partial views of one entry line.
//!
//! Opening a large session must not build the full `SessionEntry` for every line: the open only
//! needs the envelope (`type`, `id`, `parentId`, `timestamp`, `targetId`) plus the few fields that
//! feed the index (labels, names, compaction boundaries, usage for stats). Everything else is
//! skipped by the JSON tokenizer and parsed on demand. The nested probes are lenient: a field of
//! an unexpected shape is ignored rather than refusing the line, because payloads are validated
//! when an entry is actually read.

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;

/// Implements the visitor methods for JSON shapes a lenient probe does not care about: they
/// consume the value (nested ones too) and yield `$value`.
macro_rules! accept_other_shapes {
    ($value:expr; $($skip:ident),*) => {
        $(accept_other_shapes!(@one $skip, $value);)*
    };
    (@one bool, $value:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> { Ok($value) }
    };
    (@one i64, $value:expr) => {
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> { Ok($value) }
    };
    (@one u64, $value:expr) => {
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> { Ok($value) }
    };
    (@one f64, $value:expr) => {
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> { Ok($value) }
    };
    (@one str, $value:expr) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> { Ok($value) }
    };
    (@one unit, $value:expr) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> { Ok($value) }
    };
    (@one seq, $value:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
            while a.next_element::<IgnoredAny>()?.is_some() {}
            Ok($value)
        }
    };
    (@one map, $value:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
            while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($value)
        }
    };
}

/// The top-level fields of one entry line that the index needs.
#[derive(Deserialize)]
pub(crate) struct LineEnvelope<'a> {
    #[serde(rename = "type", borrow)]
    pub ty: Cow<'a, str>,
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    /// Outer `None` = key missing (refused), inner `None` = `null` (a root).
    #[serde(rename = "parentId", default, borrow, deserialize_with = "present")]
    pub parent_id: Option<Option<Cow<'a, str>>>,
    /// Checked to be a string; the index does not keep it.
    #[allow(dead_code)]
    #[serde(borrow)]
    pub timestamp: Cow<'a, str>,
    #[serde(rename = "targetId", default, borrow, deserialize_with = "present")]
    pub target_id: Option<Option<Cow<'a, str>>>,
    #[serde(default)]
    pub label: Lenient<String>,
    #[serde(default)]
    pub name: Lenient<String>,
    #[serde(rename = "firstKeptEntryId", default)]
    pub first_kept_entry_id: Lenient<String>,
    #[serde(rename = "retainedTail", default)]
    pub retained_tail: NonNull,
    #[serde(default)]
    pub message: MessageProbe,
    #[serde(default)]
    pub usage: UsageProbe,
}

fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// A value of type `T` when the JSON has that shape, `None` for anything else.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lenient<T>(pub Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Lenient(None)
    }
}

impl<'de> Deserialize<'de> for Lenient<String> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Lenient<String>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Lenient(Some(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Lenient(Some(v)))
            }
            accept_other_shapes!(Lenient(None); bool, i64, u64, f64, unit, seq, map);
        }
        d.deserialize_any(V)
    }
}

/// Whether a key holds something other than `null` (JavaScript truthiness of an array/object).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct NonNull(pub bool);

impl<'de> Deserialize<'de> for NonNull {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NonNull;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(NonNull(false))
            }
            accept_other_shapes!(NonNull(true); bool, i64, u64, f64, str, seq, map);
        }
        d.deserialize_any(V)
    }
}

/// `message.role` and `message.usage` of a `message` entry (content is skipped).
#[derive(Debug, Default, Clone)]
pub(crate) struct MessageProbe {
    pub role: Option<String>,
    pub usage: UsageProbe,
}

impl<'de> Deserialize<'de> for MessageProbe {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MessageProbe;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut out = MessageProbe::default();
                while let Some(key) = a.next_key::<Cow<'de, str>>()? {
                    match key.as_ref() {
                        "role" => out.role = a.next_value::<Lenient<String>>()?.0,
                        "usage" => out.usage = a.next_value::<UsageProbe>()?,
                        _ => {
                            a.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
            accept_other_shapes!(MessageProbe::default(); bool, i64, u64, f64, str, unit, seq);
        }
        d.deserialize_any(V)
    }
}

/// The usage numbers that session statistics sum. `valid` follows pi: a usage counts only when
/// `input`, `output`, `cacheRead`, `cacheWrite` and `cost.total` are all numbers.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct UsageProbe {
    pub present: bool,
    pub input: Option<f64>,
    pub output: Option<f64>,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
    pub cost_total: Option<f64>,
}

impl UsageProbe {
    /// `(cached, uncached, total, cost)` when the usage is complete.
    pub fn counted(&self) -> Option<(f64, f64, f64, f64)> {
        let (i, o, r, w, c) = (
            self.input?,
            self.output?,
            self.cache_read?,
            self.cache_write?,
            self.cost_total?,
        );
        Some((r, i + w, i + o + r + w, c))
    }
}

struct Num(Option<f64>);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Num(Some(v as f64)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Num(Some(v as f64)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Num(Some(v)))
            }
            accept_other_shapes!(Num(None); bool, str, unit, seq, map);
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for UsageProbe {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = UsageProbe;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut out = UsageProbe {
                    present: true,
                    ..UsageProbe::default()
                };
                while let Some(key) = a.next_key::<Cow<'de, str>>()? {
                    match key.as_ref() {
                        "input" => out.input = a.next_value::<Num>()?.0,
                        "output" => out.output = a.next_value::<Num>()?.0,
                        "cacheRead" => out.cache_read = a.next_value::<Num>()?.0,
                        "cacheWrite" => out.cache_write = a.next_value::<Num>()?.0,
                        "cost" => out.cost_total = a.next_value::<CostProbe>()?.0,
                        _ => {
                            a.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
            accept_other_shapes!(UsageProbe::default(); bool, i64, u64, f64, str, unit, seq);
        }
        d.deserialize_any(V)
    }
}

struct CostProbe(Option<f64>);

impl<'de> Deserialize<'de> for CostProbe {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CostProbe;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut total = None;
                while let Some(key) = a.next_key::<Cow<'de, str>>()? {
                    if key == "total" {
                        total = a.next_value::<Num>()?.0;
                    } else {
                        a.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(CostProbe(total))
            }
            accept_other_shapes!(CostProbe(None); bool, i64, u64, f64, str, unit, seq);
        }
        d.deserialize_any(V)
    }
}

/// Why a line has no envelope: what [`probe`] and [`probe_bytes`] refuse.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EnvelopeError {
    #[error("the line is not a JSON object")]
    NotAnObject,
    #[error("invalid JSON: {0}")]
    InvalidJson(#[source] serde_json::Error),
    /// A JSON object without the envelope's fields (or with fields of the wrong type).
    #[error(transparent)]
    Fields(serde_json::Error),
}

/// Reads the envelope facts of one line (which must hold a JSON object).
pub(crate) fn probe(line: &str) -> Result<LineEnvelope<'_>, EnvelopeError> {
    if !line.trim_start().starts_with('{') {
        return Err(match serde_json::from_str::<IgnoredAny>(line) {
            Ok(_) => EnvelopeError::NotAnObject,
            Err(e) => EnvelopeError::InvalidJson(e),
        });
    }
    serde_json::from_str::<LineEnvelope<'_>>(line).map_err(EnvelopeError::Fields)
}

/// [`probe`] over raw bytes (strings the envelope keeps are UTF-8-checked by the parser).
pub(crate) fn probe_bytes(line: &[u8]) -> Result<LineEnvelope<'_>, EnvelopeError> {
    let first = line.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return Err(match serde_json::from_slice::<IgnoredAny>(line) {
            Ok(_) => EnvelopeError::NotAnObject,
            Err(e) => EnvelopeError::InvalidJson(e),
        });
    }
    serde_json::from_slice::<LineEnvelope<'_>>(line).map_err(EnvelopeError::Fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(line: &str) -> LineEnvelope<'_> {
        serde_json::from_str(line).expect("envelope")
    }

    #[test]
    fn odd_payload_shapes_never_refuse_a_line() {
        let e = env(
            r#"{"type":"x","id":"a","parentId":null,"timestamp":"t","message":"text","usage":[1,2],"label":5,"name":{"n":1},"retainedTail":null,"firstKeptEntryId":false}"#,
        );
        assert_eq!(e.message.role, None);
        assert!(!e.usage.present);
        assert_eq!(e.label, Lenient(None));
        assert_eq!(e.name, Lenient(None));
        assert!(!e.retained_tail.0);
        assert_eq!(e.first_kept_entry_id, Lenient(None));
        assert_eq!(e.target_id, None);
        assert_eq!(e.parent_id, Some(None));
    }

    #[test]
    fn assistant_usage_is_read_from_the_nested_message() {
        let e = env(
            r#"{"type":"message","message":{"content":[{"type":"text","text":"u"}],"role":"assistant","usage":{"input":10,"output":5.0,"cacheRead":3,"cacheWrite":2,"cost":{"total":0.5,"input":1}}},"id":"a","parentId":"p","timestamp":"t","retainedTail":[]}"#,
        );
        assert_eq!(e.message.role.as_deref(), Some("assistant"));
        assert_eq!(e.message.usage.counted(), Some((3.0, 12.0, 20.0, 0.5)));
        assert!(e.retained_tail.0);
        assert_eq!(e.parent_id.flatten().as_deref(), Some("p"));
    }

    #[test]
    fn incomplete_usage_does_not_count() {
        let e = env(
            r#"{"type":"usage","id":"a","parentId":null,"timestamp":"t","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":"0","cost":{"total":1}}}"#,
        );
        assert!(e.usage.present);
        assert_eq!(e.usage.counted(), None);
    }

    #[test]
    fn envelope_field_types_are_strict() {
        for bad in [
            r#"{"type":1,"id":"a","parentId":null,"timestamp":"t"}"#,
            r#"{"type":"m","id":["a"],"parentId":null,"timestamp":"t"}"#,
            r#"{"type":"m","id":"a","parentId":null,"timestamp":0}"#,
            r#"{"type":"m","id":"a","id":"b","parentId":null,"timestamp":"t"}"#,
        ] {
            assert!(
                serde_json::from_str::<LineEnvelope<'_>>(bad).is_err(),
                "{bad}"
            );
        }
    }
}
