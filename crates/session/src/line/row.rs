//! The borrowed serde read of one message line into a row (the row tier's second reader).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::row_scan::{scan, Scan};
use crate::entry::SessionEntry;
use crate::error::Result;
use crate::rows::{
    boxed, cap_strings, time_of, CallSummary, MessageRow, Preview, RowCaps, RowKind, RowSummary,
    Squash, Stop,
};

impl RowSummary {
    /// The summary of a stored entry line: the common message entries are read lean, the rest
    /// parsed in full (see the module docs). Fails as `SessionEntry::from_json` fails.
    /// The byte scanner answers the common lines; what it is unsure of goes to the serde view,
    /// and what neither reads to the full parse (DECISIONS §25.90).
    pub fn from_line(line: &str, caps: RowCaps) -> Result<RowSummary> {
        match scan(line, caps) {
            Scan::Row(row) => return Ok(row),
            Scan::Unsure => {
                if let Some(row) = lean(line, caps) {
                    return Ok(row);
                }
            }
            Scan::Full => {}
        }
        let entry = SessionEntry::from_json(line)?;
        Ok(RowSummary::from_entry(&entry, caps))
    }

    /// The byte scanner alone (for tests: it must agree with the serde view).
    #[doc(hidden)]
    #[cfg(feature = "internals")]
    pub fn scan_line(line: &str, caps: RowCaps) -> Scan {
        scan(line, caps)
    }

    /// The serde view alone (for tests; `None` sends the line to the full parse).
    #[doc(hidden)]
    #[cfg(feature = "internals")]
    pub fn from_line_serde(line: &str, caps: RowCaps) -> Option<RowSummary> {
        lean(line, caps)
    }
}

// ---- the lean read of message lines ---------------------------------------------------------

/// A string borrowed from the line when it has no escapes (also inside `Option` and `Vec`,
/// where serde's `Cow` would always copy).
struct Str<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(
                self,
                v: &'de str,
            ) -> std::result::Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> std::result::Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

#[derive(Deserialize)]
struct LeanLine<'a> {
    #[serde(rename = "type", borrow)]
    ty: Str<'a>,
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(rename = "parentId", default, borrow)]
    parent_id: Option<Str<'a>>,
    #[serde(borrow)]
    timestamp: Str<'a>,
    #[serde(default, borrow)]
    message: Option<LeanMessage<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeanMessage<'a> {
    #[serde(borrow)]
    role: Str<'a>,
    #[serde(default, borrow)]
    content: Option<LeanContent<'a>>,
    #[serde(default, borrow)]
    stop_reason: Option<Str<'a>>,
    #[serde(default, borrow)]
    error_message: Option<Str<'a>>,
    #[serde(default, borrow)]
    tool_call_id: Option<Str<'a>>,
    #[serde(default, borrow)]
    tool_name: Option<Str<'a>>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(default)]
    api: Option<IgnoredAny>,
    #[serde(default)]
    provider: Option<IgnoredAny>,
    #[serde(default)]
    model: Option<IgnoredAny>,
}

enum LeanContent<'a> {
    Text(Str<'a>),
    Blocks(Vec<LeanBlock<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for LeanContent<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LeanContent<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_borrowed_str<E: de::Error>(
                self,
                v: &'de str,
            ) -> std::result::Result<Self::Value, E> {
                Ok(LeanContent::Text(Str(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Self::Value, E> {
                Ok(LeanContent::Text(Str(Cow::Owned(v.to_owned()))))
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
                Ok(LeanContent::Blocks(Vec::new()))
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(2));
                while let Some(b) = seq.next_element::<LeanBlock<'de>>()? {
                    blocks.push(b);
                }
                Ok(LeanContent::Blocks(blocks))
            }
        }
        d.deserialize_any(V)
    }
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

#[derive(Deserialize)]
struct LeanBlock<'a> {
    #[serde(rename = "type", default, borrow)]
    ty: Option<Str<'a>>,
    #[serde(default, borrow)]
    text: Option<Str<'a>>,
    #[serde(default, borrow)]
    id: Option<Str<'a>>,
    #[serde(default, borrow)]
    name: Option<Str<'a>>,
    #[serde(default = "empty_object")]
    arguments: Value,
}

/// Text blocks joined by a space, as a preview; `None` when a text block has no text (the full
/// parse decides what that is).
fn lean_blocks(blocks: &[LeanBlock<'_>], cap: usize) -> Option<(Preview, bool)> {
    let mut s = Squash::new(cap);
    let mut has_text = false;
    for b in blocks {
        if b.ty.as_ref().map(|t| &*t.0) == Some("text") {
            let text = &b.text.as_ref()?.0;
            has_text |= !text.trim().is_empty();
            s.separator();
            s.push(text);
        }
    }
    Some((s.finish(), has_text))
}

fn lean_content(content: &Option<LeanContent<'_>>, cap: usize) -> Option<Preview> {
    match content {
        None => Some(Preview::default()),
        Some(LeanContent::Text(t)) => Some(Preview::of(&t.0, cap)),
        Some(LeanContent::Blocks(blocks)) => lean_blocks(blocks, cap).map(|(p, _)| p),
    }
}

/// The lean read; `None` sends the line to the full parse.
fn lean(line: &str, caps: RowCaps) -> Option<RowSummary> {
    let parsed: LeanLine<'_> = serde_json::from_str(line).ok()?;
    if &*parsed.ty.0 != "message" || parsed.id.0.is_empty() {
        return None;
    }
    let m = parsed.message?;
    let cap = caps.text;
    // Every block must have a known-good shape for the roles read here; anything else is the
    // full parse's to judge.
    if let Some(LeanContent::Blocks(blocks)) = &m.content {
        if blocks.iter().any(|b| b.ty.is_none()) {
            return None;
        }
    }
    let row = match &*m.role.0 {
        "user" => MessageRow::User {
            text: lean_content(&m.content, cap)?,
        },
        "toolResult" => MessageRow::ToolResult {
            call_id: boxed(&m.tool_call_id?.0),
            tool_name: boxed(&m.tool_name?.0),
            is_error: m.is_error.unwrap_or(false),
            text: lean_content(&m.content, cap)?,
        },
        "assistant" => {
            m.api.as_ref()?;
            m.provider.as_ref()?;
            m.model.as_ref()?;
            let blocks = match &m.content {
                None => &[][..],
                Some(LeanContent::Blocks(b)) => &b[..],
                Some(LeanContent::Text(_)) => return None,
            };
            let (text, has_text) = lean_blocks(blocks, cap)?;
            let mut calls = Vec::new();
            let mut thinking = false;
            for b in blocks {
                match b.ty.as_ref().map(|t| &*t.0) {
                    Some("toolCall") => calls.push(CallSummary {
                        id: boxed(&b.id.as_ref()?.0),
                        name: boxed(&b.name.as_ref()?.0),
                        args: caps.tool_args.then(|| cap_strings(&b.arguments, cap)),
                    }),
                    Some("thinking") => thinking = true,
                    _ => {}
                }
            }
            let stop = match &*m.stop_reason?.0 {
                "error" => Stop::Error,
                "aborted" => Stop::Aborted,
                _ => Stop::Other,
            };
            MessageRow::Assistant {
                text,
                has_text,
                calls,
                thinking,
                stop,
                error: m.error_message.map(|e| Preview::of(&e.0, cap)),
            }
        }
        _ => return None,
    };
    Some(RowSummary {
        id: boxed(&parsed.id.0),
        parent_id: parsed.parent_id.map(|p| boxed(&p.0)),
        time: time_of(&parsed.timestamp.0),
        kind: RowKind::Message(row),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lean_read_gives_up_on_what_it_does_not_know() {
        let caps = RowCaps::TREE;
        // Not a message, an unknown role, a block without a type, a text block without text.
        for line in [
            r#"{"type":"model_change","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","provider":"p","modelId":"m"}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"bashExecution","command":"ls"}}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"text":"x"}]}}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text"}]}}"#,
        ] {
            assert!(lean(line, caps).is_none(), "{line}");
        }
        let user = r#"{"type":"message","id":"a","parentId":"p","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi  there\nyou","extra":{"x":[1,2]}}}"#;
        let row = lean(user, caps).map(|r| r.kind);
        assert_eq!(
            row,
            Some(RowKind::Message(MessageRow::User {
                text: Preview("hi there you".into())
            }))
        );
    }
}
