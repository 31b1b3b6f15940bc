//! Direct typed parsing of messages, content blocks and usage: each known field is read from the
//! JSON text straight into its Rust type, with no `serde_json::Value` tree in between and no
//! serde `flatten` buffering. Only unknown keys (kept in `extra`) and fields that are `Value`s
//! in the types become `Value`s.
//!
//! This is the session loader's fast path (DECISIONS §25.60). It accepts a subset of what the
//! `Value` path accepts and, where it accepts, yields exactly the same values (same `extra` key
//! order). Its errors are not meant for people: a caller that gets one re-parses the input with
//! the `Value` path, which produces the error text users see. It therefore refuses anything
//! unusual instead of handling it: a duplicate key, a tagged object whose tag (`type`, `role`)
//! is not its first key (those are handed to the `Value` path's `from_map`), any type mismatch.
#![doc(hidden)]

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::json::{deserialize_count, deserialize_kept_ms, Num};
use crate::kept::Kept;
use crate::types::{
    AssistantMessage, ContentBlock, Cost, ImageContent, Message, StopReason, SystemMessage,
    TextContent, ThinkingContent, Tool, ToolCall, ToolResultMessage, Usage, UserMessage,
};
use crate::Content;

/// An object key: borrowed from the input when it has no escapes.
#[derive(Debug)]
pub enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    pub fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }

    pub fn into_string(self) -> String {
        match self {
            Key::Borrowed(s) => s.to_owned(),
            Key::Owned(s) => s,
        }
    }
}

/// Reads an object key as a [`Key`].
#[derive(Debug)]
pub struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key<'de>, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key::Borrowed(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v))
    }
}

/// Reads the value of `key` into `extra`; a key seen twice is refused (the `Value` path decides
/// what a duplicate means).
pub fn push_extra<'de, A: MapAccess<'de>>(
    extra: &mut Map<String, Value>,
    key: Key<'de>,
    map: &mut A,
) -> Result<(), A::Error> {
    let value: Value = map.next_value()?;
    if extra.contains_key(key.as_str()) {
        return Err(de::Error::custom("duplicate key"));
    }
    extra.insert(key.into_string(), value);
    Ok(())
}

/// Reads every remaining entry of `map` into `extra`.
pub fn rest_into<'de, A: MapAccess<'de>>(
    extra: &mut Map<String, Value>,
    map: &mut A,
) -> Result<(), A::Error> {
    while let Some(key) = map.next_key_seed(KeySeed)? {
        push_extra(extra, key, map)?;
    }
    Ok(())
}

/// Reads the rest of an object into a struct: `Type { field: "jsonKey" => Reader | missing }`.
/// `Reader` is deserialized and converted with `Into` into the field's type; `missing` is the
/// field's value when the key is absent (`return Err(..)` for required fields). Unknown keys go
/// into `extra` in input order; a duplicate key is an error.
#[macro_export]
#[doc(hidden)]
macro_rules! typed_struct {
    ($map:ident, $Ty:path { $($field:ident : $key:literal => $R:ty | $missing:expr),* $(,)? }) => {{
        $( let mut $field: Option<$R> = None; )*
        let mut extra = $crate::types::Extra::new();
        while let Some(key) = $map.next_key_seed($crate::typed_json::KeySeed)? {
            match key.as_str() {
                $( $key => {
                    if $field.is_some() {
                        return Err(serde::de::Error::duplicate_field($key));
                    }
                    $field = Some($map.next_value::<$R>()?);
                } )*
                _ => $crate::typed_json::push_extra(&mut extra, key, &mut $map)?,
            }
        }
        $Ty {
            $( $field: match $field { Some(v) => v.into(), None => $missing }, )*
            extra,
        }
    }};
}

/// The error for a missing required field.
pub fn missing<E: de::Error>(field: &'static str) -> E {
    E::missing_field(field)
}

/// A token count ([`deserialize_count`]: integral floats accepted).
#[derive(Debug)]
pub struct Count(pub u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_count(d).map(Count)
    }
}

impl From<Count> for u64 {
    fn from(c: Count) -> u64 {
        c.0
    }
}

/// A present millisecond timestamp ([`deserialize_kept_ms`]).
#[derive(Debug)]
pub struct KeptMs(pub Kept<i64>);

impl<'de> Deserialize<'de> for KeptMs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_kept_ms(d).map(KeptMs)
    }
}

impl From<KeptMs> for Kept<i64> {
    fn from(k: KeptMs) -> Kept<i64> {
        k.0
    }
}

/// [`Content`]: a string, `null` (no blocks) or an array of blocks.
#[derive(Debug)]
pub struct FastContent(pub Content);

impl<'de> Deserialize<'de> for FastContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ContentVisitor {
            null: NullContent::NoBlocks,
        })
        .map(FastContent)
    }
}

impl From<FastContent> for Content {
    fn from(c: FastContent) -> Content {
        c.0
    }
}

/// A system message's content: `null` reads as `""`.
#[derive(Debug)]
pub struct SystemContent(pub Content);

impl<'de> Deserialize<'de> for SystemContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ContentVisitor {
            null: NullContent::EmptyText,
        })
        .map(SystemContent)
    }
}

impl From<SystemContent> for Content {
    fn from(c: SystemContent) -> Content {
        c.0
    }
}

#[derive(Clone, Copy)]
enum NullContent {
    NoBlocks,
    EmptyText,
}

struct ContentVisitor {
    null: NullContent,
}

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = Content;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string or an array of content blocks")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Content, E> {
        Ok(Content::Text(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Content, E> {
        Ok(Content::Text(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Content, E> {
        Ok(match self.null {
            NullContent::NoBlocks => Content::Blocks(Vec::new()),
            NullContent::EmptyText => Content::Text(String::new()),
        })
    }
    fn visit_none<E: de::Error>(self) -> Result<Content, E> {
        self.visit_unit()
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Content, A::Error> {
        blocks(seq).map(Content::Blocks)
    }
}

fn blocks<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Vec<ContentBlock>, A::Error> {
    let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
    while let Some(FastBlock(b)) = seq.next_element()? {
        out.push(b);
    }
    Ok(out)
}

/// An assistant message's content: an array of blocks, `null` for none.
#[derive(Debug)]
pub struct FastBlocks(pub Vec<ContentBlock>);

impl<'de> Deserialize<'de> for FastBlocks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<ContentBlock>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of content blocks")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Vec::new())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                blocks(seq)
            }
        }
        d.deserialize_any(V).map(FastBlocks)
    }
}

impl From<FastBlocks> for Vec<ContentBlock> {
    fn from(b: FastBlocks) -> Self {
        b.0
    }
}

/// One content block.
#[derive(Debug)]
pub struct FastBlock(pub ContentBlock);

impl<'de> Deserialize<'de> for FastBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(BlockVisitor).map(FastBlock)
    }
}

struct BlockVisitor;

impl<'de> Visitor<'de> for BlockVisitor {
    type Value = ContentBlock;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a content block object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ContentBlock, A::Error> {
        let tag = match first_tag(&mut map, "type")? {
            Tagged::Tag(tag) => tag,
            Tagged::Buffered(all) => {
                return ContentBlock::from_map(all).map_err(de::Error::custom);
            }
        };
        Ok(match tag.as_str() {
            "text" => ContentBlock::Text(typed_struct!(map, TextContent {
                text: "text" => String | return Err(missing("text")),
                text_signature: "textSignature" => Option<String> | None,
            })),
            "thinking" => ContentBlock::Thinking(typed_struct!(map, ThinkingContent {
                thinking: "thinking" => String | return Err(missing("thinking")),
                thinking_signature: "thinkingSignature" => Option<String> | None,
                redacted: "redacted" => Option<bool> | None,
            })),
            "image" => ContentBlock::Image(typed_struct!(map, ImageContent {
                data: "data" => String | return Err(missing("data")),
                mime_type: "mimeType" => String | return Err(missing("mimeType")),
            })),
            "toolCall" => ContentBlock::ToolCall(typed_struct!(map, ToolCall {
                id: "id" => String | return Err(missing("id")),
                name: "name" => String | return Err(missing("name")),
                arguments: "arguments" => Value | Value::Object(Map::new()),
                thought_signature: "thoughtSignature" => Option<String> | None,
                namespace: "namespace" => Option<String> | None,
                arguments_error: "argumentsError" => Option<String> | None,
            })),
            _ => {
                let mut all = Map::new();
                all.insert("type".to_owned(), Value::String(tag.into_string()));
                rest_into(&mut all, &mut map)?;
                ContentBlock::Unknown(all)
            }
        })
    }
}

/// What the first key of a tagged object gave.
#[derive(Debug)]
pub enum Tagged<'de> {
    /// The first key was the tag, with this string value (borrowed from the input when it has
    /// no escapes: no allocation per message or block); the rest of the map is unread.
    Tag(Key<'de>),
    /// The first key was something else: the whole object, read into a map for the `Value`
    /// path (which finds the tag wherever it is).
    Buffered(Map<String, Value>),
}

/// Reads the first key of an object; see [`Tagged`]. A tag that is not a string is an error.
pub fn first_tag<'de, A: MapAccess<'de>>(map: &mut A, tag: &str) -> Result<Tagged<'de>, A::Error> {
    let mut all = Map::new();
    match map.next_key_seed(KeySeed)? {
        Some(key) if key.as_str() == tag => return Ok(Tagged::Tag(map.next_value_seed(KeySeed)?)),
        Some(key) => push_extra(&mut all, key, map)?,
        None => {}
    }
    rest_into(&mut all, map)?;
    Ok(Tagged::Buffered(all))
}

/// [`Cost`].
#[derive(Debug)]
pub struct FastCost(pub Cost);

impl<'de> Deserialize<'de> for FastCost {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Cost;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a cost object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Cost, A::Error> {
                Ok(typed_struct!(map, Cost {
                    input: "input" => Num | return Err(missing("input")),
                    output: "output" => Num | return Err(missing("output")),
                    cache_read: "cacheRead" => Num | return Err(missing("cacheRead")),
                    cache_write: "cacheWrite" => Num | return Err(missing("cacheWrite")),
                    total: "total" => Num | return Err(missing("total")),
                    total_from_provider: "totalFromProvider" => Option<bool> | None,
                }))
            }
        }
        d.deserialize_map(V).map(FastCost)
    }
}

impl From<FastCost> for Cost {
    fn from(c: FastCost) -> Cost {
        c.0
    }
}

/// [`Usage`].
#[derive(Debug)]
pub struct FastUsage(pub Usage);

impl<'de> Deserialize<'de> for FastUsage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Usage;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a usage object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Usage, A::Error> {
                Ok(typed_struct!(map, Usage {
                    input: "input" => Count | return Err(missing("input")),
                    output: "output" => Count | return Err(missing("output")),
                    cache_read: "cacheRead" => Count | return Err(missing("cacheRead")),
                    cache_write: "cacheWrite" => Count | return Err(missing("cacheWrite")),
                    cache_write_1h: "cacheWrite1h" => Option<u64> | None,
                    reasoning: "reasoning" => Option<u64> | None,
                    total_tokens: "totalTokens" => Option<u64> | None,
                    cost: "cost" => FastCost | Cost::default(),
                }))
            }
        }
        d.deserialize_map(V).map(FastUsage)
    }
}

impl From<FastUsage> for Usage {
    fn from(u: FastUsage) -> Usage {
        u.0
    }
}

impl From<FastUsage> for Kept<Usage> {
    fn from(u: FastUsage) -> Kept<Usage> {
        Kept::new(u.0)
    }
}

/// An optional [`Usage`] (`null` reads as absent, as `Option` does).
#[derive(Debug)]
pub struct OptUsage(pub Option<Usage>);

impl<'de> Deserialize<'de> for OptUsage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Option::<FastUsage>::deserialize(d).map(|u| OptUsage(u.map(|u| u.0)))
    }
}

impl From<OptUsage> for Option<Usage> {
    fn from(u: OptUsage) -> Option<Usage> {
        u.0
    }
}

/// The rest of a `role:"user"` object (the role already read).
pub fn user_rest<'de, A: MapAccess<'de>>(mut map: A) -> Result<UserMessage, A::Error> {
    Ok(typed_struct!(map, UserMessage {
        content: "content" => FastContent | Content::default(),
        timestamp: "timestamp" => KeptMs | Kept::absent(),
    }))
}

/// The rest of a `role:"assistant"` object.
pub fn assistant_rest<'de, A: MapAccess<'de>>(mut map: A) -> Result<AssistantMessage, A::Error> {
    Ok(typed_struct!(map, AssistantMessage {
        content: "content" => FastBlocks | Vec::new(),
        api: "api" => String | return Err(missing("api")),
        provider: "provider" => String | return Err(missing("provider")),
        model: "model" => String | return Err(missing("model")),
        usage: "usage" => FastUsage | Kept::absent(),
        stop_reason: "stopReason" => StopReason | return Err(missing("stopReason")),
        error_message: "errorMessage" => Option<String> | None,
        timestamp: "timestamp" => KeptMs | Kept::absent(),
        response_id: "responseId" => Option<String> | None,
        response_model: "responseModel" => Option<String> | None,
        duration_ms: "durationMs" => Option<Num> | None,
    }))
}

/// The rest of a `role:"toolResult"` object.
pub fn tool_result_rest<'de, A: MapAccess<'de>>(mut map: A) -> Result<ToolResultMessage, A::Error> {
    Ok(typed_struct!(map, ToolResultMessage {
        tool_call_id: "toolCallId" => String | return Err(missing("toolCallId")),
        tool_name: "toolName" => String | return Err(missing("toolName")),
        content: "content" => FastContent | Content::default(),
        details: "details" => Option<Value> | None,
        is_error: "isError" => bool | false,
        duration_ms: "durationMs" => Option<Num> | None,
        timestamp: "timestamp" => KeptMs | Kept::absent(),
    }))
}

/// The rest of a `role:"system"` object.
pub fn system_rest<'de, A: MapAccess<'de>>(mut map: A) -> Result<SystemMessage, A::Error> {
    Ok(typed_struct!(map, SystemMessage {
        content: "content" => SystemContent | Content::Text(String::new()),
        sections: "sections" => Option<Map<String, Value>> | None,
        tools_added: "toolsAdded" => Option<Vec<Tool>> | None,
        tools_removed: "toolsRemoved" => Option<Vec<Value>> | None,
        timestamp: "timestamp" => KeptMs | Kept::absent(),
    }))
}

/// The rest of an LLM message whose `role` was `role`; `Ok(None)` (nothing read) when `role` is
/// not one of the four LLM roles.
pub fn message_rest<'de, A: MapAccess<'de>>(
    role: &str,
    map: A,
) -> Result<Result<Message, A>, A::Error> {
    Ok(Ok(match role {
        "user" => Message::User(user_rest(map)?),
        "assistant" => Message::Assistant(assistant_rest(map)?),
        "toolResult" => Message::ToolResult(tool_result_rest(map)?),
        "system" => Message::System(system_rest(map)?),
        _ => return Ok(Err(map)),
    }))
}
