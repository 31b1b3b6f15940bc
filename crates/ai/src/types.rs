//! Provider-neutral message vocabulary, in pi's exact JSON shape.
//!
//! Every struct keeps the fields it does not know in `extra` (flattened), so a message read from a
//! session file and written back is unchanged: provider replay metadata that a newer pi adds must
//! survive an older Arbor. Tagged enums (`type` on blocks, `role` on messages) are parsed by hand
//! so that an unknown block type is kept verbatim and a bad field is named in the error.

use crate::error::AiError;
use crate::kept::Kept;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::json::{
    describe, deserialize_count, deserialize_kept_ms, from_object, serialize_js_f64, Num,
    RoleTagged, TypeTagged,
};

pub use crate::extra::Extra;

/// Splits the discriminator out of a tagged JSON object.
fn take_tag<E: serde::de::Error>(map: &Map<String, Value>, key: &str) -> Result<String, E> {
    match map.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(E::custom(format!(
            "{key}: expected a string, found {}",
            describe(other)
        ))),
        None => Err(E::custom(format!("missing field `{key}`"))),
    }
}

fn parse_variant<T, E>(mut map: Map<String, Value>, key: &str) -> Result<T, E>
where
    T: serde::de::DeserializeOwned,
    E: serde::de::Error,
{
    // `shift_remove`: the tag is usually the first key, and `remove` (a swap-remove under
    // preserve_order) would move the last key into its place and reorder `extra`
    // (DECISIONS §25.61).
    map.shift_remove(key);
    from_object(map).map_err(E::custom)
}

// ---------------------------------------------------------------------------------------------
// Content blocks

/// `{type:"text"}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_signature: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `{type:"thinking"}`: reasoning, with the provider's replay signature when it gave one.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingContent {
    pub thinking: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<bool>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `{type:"image"}`: base64 data with its MIME type.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    pub data: String,
    pub mime_type: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `{type:"toolCall"}`. `arguments` is a JSON object in every well-formed message; it is held as
/// a `Value` so that a malformed one still round-trips.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_error: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
            thought_signature: None,
            namespace: None,
            arguments_error: None,
            extra: Extra::new(),
        }
    }
}

/// One block of message content.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    Text(TextContent),
    Thinking(ThinkingContent),
    Image(ImageContent),
    ToolCall(ToolCall),
    /// A block type this version does not know, kept verbatim (including its `type`).
    Unknown(Map<String, Value>),
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent {
            text: text.into(),
            ..TextContent::default()
        })
    }

    /// The block's `type` discriminator.
    pub fn block_type(&self) -> &str {
        match self {
            ContentBlock::Text(_) => "text",
            ContentBlock::Thinking(_) => "thinking",
            ContentBlock::Image(_) => "image",
            ContentBlock::ToolCall(_) => "toolCall",
            ContentBlock::Unknown(map) => map.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let tag = self.block_type();
        match self {
            ContentBlock::Text(inner) => TypeTagged { tag, inner }.serialize(s),
            ContentBlock::Thinking(inner) => TypeTagged { tag, inner }.serialize(s),
            ContentBlock::Image(inner) => TypeTagged { tag, inner }.serialize(s),
            ContentBlock::ToolCall(inner) => TypeTagged { tag, inner }.serialize(s),
            // Unknown blocks carry their own `type`.
            ContentBlock::Unknown(map) => map.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        ContentBlock::from_map(map).map_err(D::Error::custom)
    }
}

impl ContentBlock {
    pub(crate) fn from_map(map: Map<String, Value>) -> Result<Self, AiError> {
        let tag: String = take_tag::<serde_json::Error>(&map, "type")
            .map_err(|e| AiError::InvalidJson(e.to_string()))?;
        let res: Result<Self, serde_json::Error> = match tag.as_str() {
            "text" => parse_variant(map, "type").map(ContentBlock::Text),
            "thinking" => parse_variant(map, "type").map(ContentBlock::Thinking),
            "image" => parse_variant(map, "type").map(ContentBlock::Image),
            "toolCall" => parse_variant(map, "type").map(ContentBlock::ToolCall),
            _ => Ok(ContentBlock::Unknown(map)),
        };
        res.map_err(|e| AiError::InvalidJson(format!("{tag} block: {e}")))
    }
}

/// Message content that may be a plain string or a list of blocks (user, toolResult, system and
/// custom messages). Missing or `null` content reads as an empty block list.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    Blocks(Vec<ContentBlock>),
}

impl Default for Content {
    fn default() -> Self {
        Content::Blocks(Vec::new())
    }
}

impl Content {
    pub fn text(s: impl Into<String>) -> Self {
        Content::Text(s.into())
    }

    /// The content as blocks: a string becomes one text block.
    pub fn to_blocks(&self) -> Vec<ContentBlock> {
        match self {
            Content::Text(s) => vec![ContentBlock::text(s.clone())],
            Content::Blocks(b) => b.clone(),
        }
    }

    /// Concatenated text of all text parts (string content counts as one part).
    pub fn joined_text(&self, separator: &str) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Blocks(b) => b
                .iter()
                .filter_map(ContentBlock::as_text)
                .collect::<Vec<_>>()
                .join(separator),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            Content::Text(s) => s.is_empty(),
            Content::Blocks(b) => b.is_empty(),
        }
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::Text(s.to_owned())
    }
}

impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::Text(s)
    }
}

impl From<Vec<ContentBlock>> for Content {
    fn from(b: Vec<ContentBlock>) -> Self {
        Content::Blocks(b)
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Content::Text(t) => s.serialize_str(t),
            Content::Blocks(b) => b.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) => Ok(Content::Text(s)),
            Value::Null => Ok(Content::Blocks(Vec::new())),
            Value::Array(items) => parse_blocks(items)
                .map(Content::Blocks)
                .map_err(D::Error::custom),
            other => Err(D::Error::custom(format!(
                "expected a string or an array of content blocks, found {}",
                describe(&other)
            ))),
        }
    }
}

fn parse_blocks(items: Vec<Value>) -> Result<Vec<ContentBlock>, AiError> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::Object(map) => {
                ContentBlock::from_map(map).map_err(|e| e.within(format!("[{i}]")))
            }
            other => Err(AiError::InvalidJson(format!(
                "[{i}]: expected a content block object, found {}",
                describe(&other)
            ))),
        })
        .collect()
}

/// Assistant content is always a block list; `null` or a missing field reads as empty.
fn deserialize_blocks<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ContentBlock>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => parse_blocks(items).map_err(D::Error::custom),
        other => Err(D::Error::custom(format!(
            "expected an array of content blocks, found {}",
            describe(&other)
        ))),
    }
}

// ---------------------------------------------------------------------------------------------
// Usage and stop reasons

/// Dollar cost of one response, computed from the model's per-million prices.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    pub input: Num,
    pub output: Num,
    pub cache_read: Num,
    pub cache_write: Num,
    pub total: Num,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_from_provider: Option<bool>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Token usage of one response. `input` excludes cache reads and writes in every adapter.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[serde(deserialize_with = "deserialize_count")]
    pub input: u64,
    #[serde(deserialize_with = "deserialize_count")]
    pub output: u64,
    #[serde(deserialize_with = "deserialize_count")]
    pub cache_read: u64,
    #[serde(deserialize_with = "deserialize_count")]
    pub cache_write: u64,
    #[serde(
        default,
        rename = "cacheWrite1h",
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_write_1h: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
    /// Absent in files from before pi recorded it; see [`Usage::total`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    #[serde(default)]
    pub cost: Cost,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Usage {
    /// pi's initial usage of a response: every count zero, `totalTokens` 0, zero cost.
    pub fn zero() -> Self {
        Usage {
            total_tokens: Some(0),
            ..Usage::default()
        }
    }

    /// `totalTokens`, or the sum of the parts when an old file did not record it.
    pub fn total(&self) -> u64 {
        self.total_tokens
            .unwrap_or(self.input + self.output + self.cache_read + self.cache_write)
    }
}

/// Why generation stopped. `Pending` exists only on a live partial message; `Error` and
/// `Aborted` only on failed ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    #[default]
    Pending,
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
    Deferred,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Pending => "pending",
            StopReason::Stop => "stop",
            StopReason::Length => "length",
            StopReason::ToolUse => "toolUse",
            StopReason::Error => "error",
            StopReason::Aborted => "aborted",
            StopReason::Deferred => "deferred",
        }
    }
}

/// The unified reasoning effort, mapped to each provider's parameters by the clients.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    #[default]
    Off,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

impl ThinkingLevel {
    pub const ALL: [ThinkingLevel; 7] = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
        ThinkingLevel::Xhigh,
        ThinkingLevel::Max,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Xhigh => "xhigh",
            ThinkingLevel::Max => "max",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

impl std::fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

// ---------------------------------------------------------------------------------------------
// Messages

/// `role:"user"`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UserMessage {
    #[serde(default)]
    pub content: Content,
    #[serde(
        default = "Kept::absent",
        deserialize_with = "deserialize_kept_ms",
        skip_serializing_if = "Kept::is_absent"
    )]
    pub timestamp: Kept<i64>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `role:"assistant"`: one model response, as streamed and finalized by a provider client.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    #[serde(default, deserialize_with = "deserialize_blocks")]
    pub content: Vec<ContentBlock>,
    pub api: String,
    pub provider: String,
    pub model: String,
    #[serde(default = "Kept::absent", skip_serializing_if = "Kept::is_absent")]
    pub usage: Kept<Usage>,
    pub stop_reason: StopReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(
        default = "Kept::absent",
        deserialize_with = "deserialize_kept_ms",
        skip_serializing_if = "Kept::is_absent"
    )]
    pub timestamp: Kept<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// Set only when the server reports a model other than the one requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<Num>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl AssistantMessage {
    /// The tool calls this response asks for, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolCall(tc) => Some(tc),
            _ => None,
        })
    }

    /// All text blocks joined (thinking and tool calls excluded).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join("")
    }
}

/// `role:"toolResult"`: what a tool returned for one tool call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    #[serde(default)]
    pub content: Content,
    /// Tool-specific data for UIs; never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default)]
    pub is_error: bool,
    /// Milliseconds the tool ran (pi-agent-core measures a call that was executed; results
    /// settled without running, and older transcripts, have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<Num>,
    #[serde(
        default = "Kept::absent",
        deserialize_with = "deserialize_kept_ms",
        skip_serializing_if = "Kept::is_absent"
    )]
    pub timestamp: Kept<i64>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `role:"system"` (pi 1.6 transcripts): the first one is the system prompt; later ones patch
/// prompt sections and the tool list.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemMessage {
    /// Missing or `null` content reads as `""` (pi's normalization for system messages; an
    /// explicit `[]` stays a block list).
    #[serde(
        default = "empty_text_content",
        deserialize_with = "deserialize_system_content"
    )]
    pub content: Content,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_added: Option<Vec<Tool>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_removed: Option<Vec<Value>>,
    #[serde(
        default = "Kept::absent",
        deserialize_with = "deserialize_kept_ms",
        skip_serializing_if = "Kept::is_absent"
    )]
    pub timestamp: Kept<i64>,
    #[serde(flatten)]
    pub extra: Extra,
}

fn empty_text_content() -> Content {
    Content::Text(String::new())
}

fn deserialize_system_content<'de, D: Deserializer<'de>>(d: D) -> Result<Content, D::Error> {
    match Option::<Content>::deserialize(d)? {
        Some(c) => Ok(c),
        None => Ok(empty_text_content()),
    }
}

/// An LLM message: what providers accept and produce.
// Messages are built and matched far more often than moved; boxing would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
    System(SystemMessage),
}

impl Message {
    pub fn role(&self) -> &'static str {
        match self {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
            Message::System(_) => "system",
        }
    }

    pub fn timestamp(&self) -> i64 {
        match self {
            Message::User(m) => m.timestamp.get(),
            Message::Assistant(m) => m.timestamp.get(),
            Message::ToolResult(m) => m.timestamp.get(),
            Message::System(m) => m.timestamp.get(),
        }
    }

    /// A user message with string content.
    pub fn user(text: impl Into<String>, timestamp: i64) -> Self {
        Message::User(UserMessage {
            content: Content::Text(text.into()),
            timestamp: timestamp.into(),
            extra: Extra::new(),
        })
    }

    /// Parses a message from a JSON object whose `role` is one of the four LLM roles. Returns the
    /// map back unchanged when the role is not an LLM role, so callers with more roles can go on.
    pub fn from_map(map: Map<String, Value>) -> Result<Result<Self, Map<String, Value>>, AiError> {
        let role: String = take_tag::<serde_json::Error>(&map, "role")
            .map_err(|e| AiError::InvalidJson(e.to_string()))?;
        let res: Result<Message, serde_json::Error> = match role.as_str() {
            "user" => parse_variant(map, "role").map(Message::User),
            "assistant" => parse_variant(map, "role").map(Message::Assistant),
            "toolResult" => parse_variant(map, "role").map(Message::ToolResult),
            "system" => parse_variant(map, "role").map(Message::System),
            _ => return Ok(Err(map)),
        };
        res.map(Ok)
            .map_err(|e| AiError::InvalidJson(format!("{role} message: {e}")))
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let role = self.role();
        match self {
            Message::User(inner) => RoleTagged { role, inner }.serialize(s),
            Message::Assistant(inner) => RoleTagged { role, inner }.serialize(s),
            Message::ToolResult(inner) => RoleTagged { role, inner }.serialize(s),
            Message::System(inner) => RoleTagged { role, inner }.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        match Message::from_map(map).map_err(D::Error::custom)? {
            Ok(m) => Ok(m),
            Err(map) => Err(D::Error::custom(format!(
                "unknown message role {:?}",
                map.get("role").and_then(Value::as_str).unwrap_or("")
            ))),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tools, context, models

/// A tool the model may call; `parameters` is a JSON Schema object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "empty_object")]
    pub parameters: Value,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The public input to a provider call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    pub messages: MessageList,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
}

pub use crate::message_list::MessageList;

/// One price tier: applies when the request's input exceeds `input_tokens_above`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CostTier {
    pub input_tokens_above: u64,
    #[serde(serialize_with = "serialize_js_f64")]
    pub input: f64,
    #[serde(serialize_with = "serialize_js_f64")]
    pub output: f64,
    #[serde(default, serialize_with = "serialize_js_f64")]
    pub cache_read: f64,
    #[serde(default, serialize_with = "serialize_js_f64")]
    pub cache_write: f64,
}

/// Prices in USD per million tokens.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCost {
    #[serde(default, serialize_with = "serialize_js_f64")]
    pub input: f64,
    #[serde(default, serialize_with = "serialize_js_f64")]
    pub output: f64,
    #[serde(default, serialize_with = "serialize_js_f64")]
    pub cache_read: f64,
    #[serde(default, serialize_with = "serialize_js_f64")]
    pub cache_write: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<CostTier>>,
}

/// A chat model as the catalogue and `models.json` describe it.
///
/// `Debug` prints header names but never their values: `models.json` may put a literal API key
/// in a header, and models end up in logs.
#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    pub id: String,
    #[serde(default)]
    pub name: String,
    /// Wire protocol: `anthropic-messages`, `openai-completions`, `openai-responses`,
    /// `google-generative-ai`, ...
    pub api: String,
    pub provider: String,
    #[serde(default)]
    pub base_url: String,
    #[serde(default)]
    pub reasoning: bool,
    /// Input modalities: `"text"`, `"image"`.
    #[serde(default = "text_only")]
    pub input: Vec<String>,
    #[serde(default)]
    pub cost: ModelCost,
    #[serde(default)]
    pub context_window: u64,
    #[serde(default)]
    pub max_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Map<String, Value>>,
    /// Level → provider-native value; `null` marks a level unsupported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level_map: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

fn text_only() -> Vec<String> {
    vec!["text".to_owned()]
}

impl Model {
    pub fn supports_images(&self) -> bool {
        self.input.iter().any(|m| m == "image")
    }
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Option<Vec<&String>> = self.headers.as_ref().map(|h| h.keys().collect());
        f.debug_struct("Model")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("api", &self.api)
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("reasoning", &self.reasoning)
            .field("input", &self.input)
            .field("cost", &self.cost)
            .field("context_window", &self.context_window)
            .field("max_tokens", &self.max_tokens)
            .field(
                "headers",
                &header_names.map(|names| format!("{names:?} (values hidden)")),
            )
            .field("thinking_level_map", &self.thinking_level_map)
            .field("compat", &self.compat)
            .field("extra", &self.extra)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_debug_hides_header_values() {
        let mut headers = Map::new();
        headers.insert(
            "x-api-key".to_owned(),
            Value::String("sk-secret-123".to_owned()),
        );
        let model = Model {
            id: "m".to_owned(),
            headers: Some(headers),
            ..Model::default()
        };
        let shown = format!("{model:?}");
        assert!(shown.contains("x-api-key"), "{shown}");
        assert!(!shown.contains("sk-secret-123"), "{shown}");
    }
}
