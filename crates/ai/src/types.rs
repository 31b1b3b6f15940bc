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

use crate::json::{describe, deserialize_kept_ms, from_object, Num, RoleTagged, TypeTagged};

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
    /// The text.
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Provider signature for replaying the block (OpenAI Responses message id and phase).
    pub text_signature: Option<String>,
    #[serde(flatten)]
    /// Fields this version does not know, kept for round-trips.
    pub extra: Extra,
}

/// `{type:"thinking"}`: reasoning, with the provider's replay signature when it gave one.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingContent {
    /// The reasoning text (empty when redacted).
    pub thinking: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Provider signature that lets the block be replayed to the same provider.
    pub thinking_signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// `true` when the provider returned only an encrypted form (the signature holds it).
    pub redacted: Option<bool>,
    #[serde(flatten)]
    /// Fields this version does not know, kept for round-trips.
    pub extra: Extra,
}

/// `{type:"image"}`: base64 data with its MIME type.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded image bytes.
    pub data: String,
    /// MIME type, e.g. `image/png`.
    pub mime_type: String,
    #[serde(flatten)]
    /// Fields this version does not know, kept for round-trips.
    pub extra: Extra,
}

/// `{type:"toolCall"}`. `arguments` is a JSON object in every well-formed message; it is held as
/// a `Value` so that a malformed one still round-trips.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The provider's call id; a tool result answers it by `tool_call_id`.
    pub id: String,
    /// The tool's name.
    pub name: String,
    #[serde(default = "empty_object")]
    /// The parsed arguments (a JSON object when well formed).
    pub arguments: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Google's signature for replaying the call.
    pub thought_signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The tool namespace when the provider groups tools (OpenAI Responses).
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Why the streamed argument text did not parse, when it did not.
    pub arguments_error: Option<String>,
    #[serde(flatten)]
    /// Fields this version does not know, kept for round-trips.
    pub extra: Extra,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

impl ToolCall {
    /// A call with these arguments and no signature.
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
    /// `{type:"text"}`.
    Text(TextContent),
    /// `{type:"thinking"}`.
    Thinking(ThinkingContent),
    /// `{type:"image"}`.
    Image(ImageContent),
    /// `{type:"toolCall"}`.
    ToolCall(ToolCall),
    /// A block type this version does not know, kept verbatim (including its `type`).
    Unknown(Map<String, Value>),
}

impl ContentBlock {
    /// A text block.
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

    /// The text of a text block; `None` for other kinds.
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
    /// A plain string (pi's shorthand for one text block).
    Text(String),
    /// A list of content blocks.
    Blocks(Vec<ContentBlock>),
}

impl Default for Content {
    fn default() -> Self {
        Content::Blocks(Vec::new())
    }
}

impl Content {
    /// Plain-string content.
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

    /// Whether there is no text and no block at all.
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

pub use crate::usage::{Cost, Usage};

/// Why generation stopped. `Pending` exists only on a live partial message; `Error` and
/// `Aborted` only on failed ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    #[default]
    /// Not finished yet (a message still streaming).
    Pending,
    /// The model ended its turn.
    Stop,
    /// The output token limit was reached.
    Length,
    /// The model asks for tool calls.
    ToolUse,
    /// The request or stream failed (`errorMessage` says why).
    Error,
    /// The caller cancelled.
    Aborted,
    /// The provider deferred the reply (pi's `deferred`).
    Deferred,
}

impl StopReason {
    /// pi's JSON name (`stop`, `toolUse`, ...).
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
    /// No reasoning.
    Off,
    /// The least reasoning the model offers.
    Minimal,
    /// Low effort.
    Low,
    /// Medium effort.
    Medium,
    /// High effort.
    High,
    /// Extra-high effort (only models that map it).
    Xhigh,
    /// The most the model offers (only models that map it).
    Max,
}

impl ThinkingLevel {
    /// Every level, weakest first.
    pub const ALL: [ThinkingLevel; 7] = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
        ThinkingLevel::Xhigh,
        ThinkingLevel::Max,
    ];

    /// pi's name of the level (`off`, `minimal`, ..., `max`).
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

    /// Reads pi's name of a level; `None` for anything else.
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
    /// Text or content blocks.
    pub content: Content,
    #[serde(
        default = "Kept::absent",
        deserialize_with = "deserialize_kept_ms",
        skip_serializing_if = "Kept::is_absent"
    )]
    /// Unix milliseconds; kept absent when the source had none.
    pub timestamp: Kept<i64>,
    #[serde(flatten)]
    /// Fields this version does not know, kept for round-trips.
    pub extra: Extra,
}

/// `role:"assistant"`: one model response, as streamed and finalized by a provider client.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    #[serde(default, deserialize_with = "deserialize_blocks")]
    /// Text, thinking and tool-call blocks, in order.
    pub content: Vec<ContentBlock>,
    /// The wire API that produced it (`anthropic-messages`, ...).
    pub api: String,
    /// The provider id (`anthropic`, `openrouter`, ...).
    pub provider: String,
    /// The model id.
    pub model: String,
    #[serde(default = "Kept::absent", skip_serializing_if = "Kept::is_absent")]
    /// Token usage and cost; kept absent when the source had none.
    pub usage: Kept<Usage>,
    /// Why the response ended.
    pub stop_reason: StopReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The failure text, with stop reason `error` or `aborted`.
    pub error_message: Option<String>,
    #[serde(
        default = "Kept::absent",
        deserialize_with = "deserialize_kept_ms",
        skip_serializing_if = "Kept::is_absent"
    )]
    /// Unix milliseconds; kept absent when the source had none.
    pub timestamp: Kept<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The provider's response id, when it gave one.
    pub response_id: Option<String>,
    /// Set only when the server reports a model other than the one requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Wall-clock duration of the request, in milliseconds.
    pub duration_ms: Option<Num>,
    #[serde(flatten)]
    /// Fields this version does not know, kept for round-trips.
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
    /// The id of the tool call this answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    #[serde(default)]
    /// What the tool returned to the model (text and images).
    pub content: Content,
    /// Tool-specific data for UIs; never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default)]
    /// Whether the tool failed.
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
    /// Unix milliseconds; kept absent when the source had none.
    pub timestamp: Kept<i64>,
    #[serde(flatten)]
    /// Fields this version does not know, kept for round-trips.
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
    /// The system text (or blocks).
    pub content: Content,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Named prompt sections this message sets (a `null` value removes one).
    pub sections: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Tools this message adds (or redefines).
    pub tools_added: Option<Vec<Tool>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Tools this message removes (names or descriptors, as pi writes them).
    pub tools_removed: Option<Vec<Value>>,
    #[serde(
        default = "Kept::absent",
        deserialize_with = "deserialize_kept_ms",
        skip_serializing_if = "Kept::is_absent"
    )]
    /// Unix milliseconds; kept absent when the source had none.
    pub timestamp: Kept<i64>,
    #[serde(flatten)]
    /// Fields this version does not know, kept for round-trips.
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
    /// `role:"user"`.
    User(UserMessage),
    /// `role:"assistant"`.
    Assistant(AssistantMessage),
    /// `role:"toolResult"`.
    ToolResult(ToolResultMessage),
    /// `role:"system"`.
    System(SystemMessage),
}

impl Message {
    /// pi's role name (`user`, `assistant`, `toolResult`, `system`).
    pub fn role(&self) -> &'static str {
        match self {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
            Message::System(_) => "system",
        }
    }

    /// Unix milliseconds, 0 when the message has none.
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
    /// The name the model calls it by.
    pub name: String,
    #[serde(default)]
    /// What the tool does, for the model.
    pub description: String,
    #[serde(default = "empty_object")]
    /// JSON Schema of the arguments (an object schema).
    pub parameters: Value,
    #[serde(flatten)]
    /// Fields this version does not know (e.g. pi's constrained-sampling settings), kept.
    pub extra: Extra,
}

/// The public input to a provider call: system prompt, messages and tools, in pi's JSON shape.
///
/// ```
/// use arbor_ai::{Context, Message, Tool};
/// use serde_json::json;
///
/// let context = Context {
///     system_prompt: Some("You are a careful assistant.".into()),
///     messages: vec![Message::user("List the files.", 1_700_000_000_000)].into(),
///     tools: Some(vec![Tool {
///         name: "ls".into(),
///         description: "List a directory".into(),
///         parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
///         extra: Default::default(),
///     }]),
/// };
/// let wire = serde_json::to_value(&context)?;
/// assert_eq!(wire["systemPrompt"], "You are a careful assistant.");
/// assert_eq!(wire["messages"][0]["role"], "user");
/// let back: Context = serde_json::from_value(wire)?;
/// assert_eq!(back, context);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The system prompt, when there is one.
    pub system_prompt: Option<String>,
    /// The conversation, oldest first (cheap to clone and share).
    pub messages: MessageList,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The tools the model may call; `None` sends no tool list.
    pub tools: Option<Vec<Tool>>,
}

impl Context {
    /// Reads a context from pi's JSON text (what a JavaScript caller or an RPC client hands
    /// over). A JavaScript string may hold a lone UTF-16 surrogate (text cut inside an emoji),
    /// which `JSON.stringify` writes as a `\ud83d` escape and a Rust string cannot hold: such
    /// escapes are dropped, as pi-ai drops lone surrogates from every request it sends
    /// (DECISIONS §26.57). Any other fault is an [`AiError::InvalidJson`] naming the field.
    ///
    /// ```
    /// let context = arbor_ai::Context::from_json_str(
    ///     r#"{"messages": [{"role": "user", "content": "cut \ud83d here", "timestamp": 0}]}"#,
    /// )?;
    /// assert_eq!(context.messages[0], arbor_ai::Message::user("cut  here", 0));
    /// # Ok::<(), arbor_ai::AiError>(())
    /// ```
    pub fn from_json_str(text: &str) -> Result<Context, AiError> {
        let value: Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(first) => crate::json::strip_lone_surrogates(text)
                .and_then(|clean| serde_json::from_str(&clean).ok())
                .ok_or_else(|| AiError::InvalidJson(format!("context: {first}")))?,
        };
        match value {
            Value::Object(map) => from_object(map).map_err(|e| e.within("context")),
            other => Err(AiError::InvalidJson(format!(
                "context: expected an object, found {}",
                describe(&other)
            ))),
        }
    }
}

pub use crate::message_list::MessageList;

pub use crate::model::{CostTier, Model, ModelCost};
