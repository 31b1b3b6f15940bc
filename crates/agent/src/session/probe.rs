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

/// The top-level fields of one entry line that the index needs.
#[derive(Deserialize)]
pub(crate) struct Envelope<'a> {
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
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Lenient(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Lenient(None))
            }
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
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(NonNull(true))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(NonNull(true))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(NonNull(true))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(NonNull(true))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(NonNull(true))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(NonNull(true))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(NonNull(true))
            }
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
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MessageProbe::default())
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(MessageProbe::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MessageProbe::default())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MessageProbe::default())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MessageProbe::default())
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MessageProbe::default())
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(MessageProbe::default())
            }
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
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Num(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Num(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Num(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Num(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Num(None))
            }
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
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(UsageProbe::default())
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(UsageProbe::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(UsageProbe::default())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(UsageProbe::default())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(UsageProbe::default())
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(UsageProbe::default())
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(UsageProbe::default())
            }
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
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(CostProbe(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(CostProbe(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(CostProbe(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(CostProbe(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(CostProbe(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(CostProbe(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(CostProbe(None))
            }
        }
        d.deserialize_any(V)
    }
}
