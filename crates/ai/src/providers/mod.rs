//! Built-in provider clients and the machinery they share.
//!
//! A provider is two pure halves plus a shared driver:
//! * a request builder (`build_request`) turning model + context + options into a
//!   [`PreparedRequest`] (URL, headers, JSON body) — snapshot-tested byte for byte;
//! * a [`StreamParser`] turning decoded SSE events into content updates on an [`Output`] — the
//!   same code the benchmark feeds from memory;
//! * `run`, which sends the request (with optional retries), emits `start` once the headers
//!   are in, pumps body bytes through the SSE decoder into the parser, honours cancellation and
//!   turns every failure into the terminal `error` event.

pub mod anthropic;
pub mod google;
pub mod openai_completions;
pub mod openai_responses;
pub mod simple;

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::event::{AssistantMessageEvent, AssistantMessageEventStream};
use crate::json_stream::{parse_partial_json, parse_tool_arguments};
use crate::retry::{is_retryable_request_failure, request_retry_delay, RetryAfterHeaders};
use crate::stream::sse::{SseDecoder, SseEvent};
use crate::stream::{empty_message, lazy_event_stream, Emitter, StreamOptions, ABORTED_MESSAGE};
use crate::types::{
    AssistantMessage, Content, ContentBlock, Context, Message, Model, StopReason, TextContent,
    ThinkingContent, Tool, ToolCall, Usage,
};

/// The built-in API kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinApi {
    AnthropicMessages,
    OpenAiCompletions,
    OpenAiResponses,
    GoogleGenerativeAi,
}

pub(crate) fn builtin(api: &str) -> Option<BuiltinApi> {
    match api {
        "anthropic-messages" => Some(BuiltinApi::AnthropicMessages),
        "openai-completions" => Some(BuiltinApi::OpenAiCompletions),
        "openai-responses" => Some(BuiltinApi::OpenAiResponses),
        "google-generative-ai" => Some(BuiltinApi::GoogleGenerativeAi),
        _ => None,
    }
}

/// A fully built HTTP request.
#[derive(Clone, PartialEq)]
pub struct PreparedRequest {
    pub url: String,
    /// Final header list (names as sent). Contains credentials: never log it.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

/// Headers that carry credentials; their values never appear in `Debug` output.
const SECRET_HEADERS: [&str; 4] = [
    "authorization",
    "x-api-key",
    "x-goog-api-key",
    "cf-aig-authorization",
];

impl std::fmt::Debug for PreparedRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(n, v)| {
                let secret = SECRET_HEADERS.iter().any(|s| n.eq_ignore_ascii_case(s));
                (n.as_str(), if secret { "<redacted>" } else { v.as_str() })
            })
            .collect();
        f.debug_struct("PreparedRequest")
            .field("url", &self.url)
            .field("headers", &headers)
            .field("body", &self.body)
            .finish()
    }
}

impl PreparedRequest {
    /// Header value by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Builds the request for a built-in API without sending it (for inspection and tests).
pub fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<PreparedRequest, String> {
    let api = builtin(&model.api)
        .ok_or_else(|| format!("No API provider registered for api: {}", model.api))?;
    let api_key = resolve_api_key(model, options)?;
    let transcript = Transcript::from_context(model, context);
    match api {
        BuiltinApi::AnthropicMessages => {
            anthropic::build_request(model, &transcript, options, api_key.as_deref())
        }
        BuiltinApi::OpenAiCompletions => {
            openai_completions::build_request(model, &transcript, options, api_key.as_deref())
        }
        BuiltinApi::OpenAiResponses => {
            openai_responses::build_request(model, &transcript, options, api_key.as_deref())
        }
        BuiltinApi::GoogleGenerativeAi => {
            google::build_request(model, &transcript, options, api_key.as_deref())
        }
    }
}

/// Creates the stream parser of a built-in API (used by the client and the benchmark).
pub fn new_parser(api: BuiltinApi, model: &Model) -> Box<dyn StreamParser> {
    match api {
        BuiltinApi::AnthropicMessages => Box::new(anthropic::Parser::new(model)),
        BuiltinApi::OpenAiCompletions => Box::new(openai_completions::Parser::new(model)),
        BuiltinApi::OpenAiResponses => Box::new(openai_responses::Parser::new(model)),
        BuiltinApi::GoogleGenerativeAi => Box::new(google::Parser::new(model)),
    }
}

pub(crate) fn stream_builtin(
    api: BuiltinApi,
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> AssistantMessageEventStream {
    let model = model.clone();
    let request = build_request(&model, context, &options);
    // Only the tool list matters to the parsers (OAuth name mapping).
    let context_for_parser = Context {
        system_prompt: None,
        messages: context
            .messages
            .iter()
            .filter(|m| matches!(m, Message::System(_)))
            .cloned()
            .collect(),
        tools: context.tools.clone(),
    };
    lazy_event_stream(empty_message(&model), move |mut emitter| async move {
        let request = match request {
            Ok(request) => request,
            Err(message) => {
                let mut msg = empty_message(&model);
                msg.error_message = Some(message);
                emitter.error(msg, StopReason::Error);
                return;
            }
        };
        let mut parser: Box<dyn StreamParser> = match api {
            // OAuth requests rename tools to Claude Code casing; map them back on the way in.
            BuiltinApi::AnthropicMessages
                if request
                    .header("authorization")
                    .is_some_and(|v| v.contains("sk-ant-oat")) =>
            {
                let tools = Transcript::from_context(&model, &context_for_parser).tools;
                Box::new(anthropic::Parser::new(&model).with_oauth_tools(&tools))
            }
            // Responses usage is priced with the requested tier when the response names none.
            BuiltinApi::OpenAiResponses => Box::new(
                openai_responses::Parser::new(&model)
                    .with_service_tier(options.openai.service_tier.clone()),
            ),
            _ => new_parser(api, &model),
        };
        run(
            &mut emitter,
            &model,
            &options,
            request,
            parser.as_mut(),
            api,
        )
        .await;
    })
}

/// A JSON string borrowed from the event data when it has no escapes, owned otherwise.
///
/// serde only borrows a bare `Cow<str>` field; inside `Option` it always allocates. Wrapping
/// the `Cow` keeps the hot delta fields allocation-free.
#[derive(Debug)]
pub(crate) struct CowStr<'a>(pub std::borrow::Cow<'a, str>);

impl std::ops::Deref for CowStr<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for CowStr<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = CowStr<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(CowStr(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(CowStr(std::borrow::Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(CowStr(std::borrow::Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(Visit(std::marker::PhantomData))
    }
}

/// Why the SSE callback stopped early.
pub enum Halt {
    /// The provider signalled the end of the stream (`data: [DONE]`).
    Stop,
    /// A fatal error; the text becomes `errorMessage`.
    Fail(String),
}

impl From<String> for Halt {
    fn from(message: String) -> Self {
        Halt::Fail(message)
    }
}

/// Turns one provider's SSE events into content updates.
pub trait StreamParser: Send {
    /// Handles one event.
    fn on_event(&mut self, event: SseEvent<'_>, out: &mut Output) -> Result<(), Halt>;
    /// The body ended (or `[DONE]` arrived): close open blocks and settle the stop reason.
    /// `Err` = the stream is incomplete or ended in a provider-reported error.
    fn finish(&mut self, out: &mut Output) -> Result<(), String>;
    /// The stream failed or was aborted: give partial tool calls their best-effort arguments.
    fn on_failure(&mut self, _out: &mut Output) {}
    /// The error for a body that ends inside an unterminated event, when the API's client
    /// refuses such a tail instead of flushing it (`None`: flush it as an event).
    fn unterminated_tail_error(&self) -> Option<String> {
        None
    }
    /// Whether error messages quote raw SSE lines (keeps the decoder's raw-line copy).
    fn wants_raw_lines(&self) -> bool {
        false
    }
}

/// The message being built plus the events not yet handed to the consumer.
pub struct Output {
    pub message: AssistantMessage,
    pub events: Vec<AssistantMessageEvent>,
    model: Model,
}

impl Output {
    pub fn new(model: &Model) -> Self {
        Self {
            message: empty_message(model),
            events: Vec::new(),
            model: model.clone(),
        }
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    pub fn text_start(&mut self, text: String) -> usize {
        let index = self.message.content.len();
        self.message.content.push(ContentBlock::Text(TextContent {
            text,
            text_signature: None,
            extra: Map::new(),
        }));
        self.events.push(AssistantMessageEvent::TextStart {
            content_index: index,
        });
        index
    }

    pub fn text_delta(&mut self, index: usize, delta: &str) {
        if let Some(ContentBlock::Text(t)) = self.message.content.get_mut(index) {
            t.text.push_str(delta);
            self.events.push(AssistantMessageEvent::TextDelta {
                content_index: index,
                delta: delta.to_string(),
            });
        }
    }

    pub fn text_end(&mut self, index: usize) {
        if let Some(ContentBlock::Text(t)) = self.message.content.get(index) {
            let content = t.text.clone();
            self.events.push(AssistantMessageEvent::TextEnd {
                content_index: index,
                content,
            });
        }
    }

    pub fn text_mut(&mut self, index: usize) -> Option<&mut TextContent> {
        match self.message.content.get_mut(index) {
            Some(ContentBlock::Text(t)) => Some(t),
            _ => None,
        }
    }

    pub fn thinking_start(
        &mut self,
        thinking: String,
        signature: Option<String>,
        redacted: bool,
    ) -> usize {
        let index = self.message.content.len();
        self.message
            .content
            .push(ContentBlock::Thinking(ThinkingContent {
                thinking,
                thinking_signature: signature,
                redacted: redacted.then_some(true),
                extra: Map::new(),
            }));
        self.events.push(AssistantMessageEvent::ThinkingStart {
            content_index: index,
        });
        index
    }

    pub fn thinking_delta(&mut self, index: usize, delta: &str) {
        if let Some(ContentBlock::Thinking(t)) = self.message.content.get_mut(index) {
            t.thinking.push_str(delta);
            self.events.push(AssistantMessageEvent::ThinkingDelta {
                content_index: index,
                delta: delta.to_string(),
            });
        }
    }

    pub fn thinking_end(&mut self, index: usize) {
        if let Some(ContentBlock::Thinking(t)) = self.message.content.get(index) {
            let content = t.thinking.clone();
            self.events.push(AssistantMessageEvent::ThinkingEnd {
                content_index: index,
                content,
            });
        }
    }

    pub fn thinking_mut(&mut self, index: usize) -> Option<&mut ThinkingContent> {
        match self.message.content.get_mut(index) {
            Some(ContentBlock::Thinking(t)) => Some(t),
            _ => None,
        }
    }

    pub fn toolcall_start(&mut self, id: String, name: String, arguments: Value) -> usize {
        let index = self.message.content.len();
        self.message.content.push(ContentBlock::ToolCall(ToolCall {
            id,
            name,
            arguments,
            thought_signature: None,
            namespace: None,
            arguments_error: None,
            extra: Map::new(),
        }));
        self.events.push(AssistantMessageEvent::ToolcallStart {
            content_index: index,
        });
        index
    }

    /// Emits a raw argument fragment (the accumulated text is kept by the parser).
    pub fn toolcall_delta(&mut self, index: usize, delta: &str) {
        self.events.push(AssistantMessageEvent::ToolcallDelta {
            content_index: index,
            delta: delta.to_string(),
        });
    }

    /// Parses the complete argument text strictly and emits `toolcall_end`.
    pub fn toolcall_end(&mut self, index: usize, arguments_text: &str) {
        let parsed = parse_tool_arguments(arguments_text);
        if let Some(ContentBlock::ToolCall(call)) = self.message.content.get_mut(index) {
            call.arguments = parsed.arguments;
            call.arguments_error = parsed.arguments_error;
            let tool_call = call.clone();
            self.events.push(AssistantMessageEvent::ToolcallEnd {
                content_index: index,
                tool_call,
            });
        }
    }

    /// Emits `toolcall_end` for a call whose arguments are already final.
    pub fn toolcall_end_with(&mut self, index: usize) {
        if let Some(ContentBlock::ToolCall(call)) = self.message.content.get(index) {
            let tool_call = call.clone();
            self.events.push(AssistantMessageEvent::ToolcallEnd {
                content_index: index,
                tool_call,
            });
        }
    }

    /// Best-effort arguments for an unfinished call (failure paths).
    pub fn set_partial_arguments(&mut self, index: usize, arguments_text: &str) {
        if let Some(ContentBlock::ToolCall(call)) = self.message.content.get_mut(index) {
            call.arguments = parse_partial_json(arguments_text);
        }
    }

    pub fn toolcall_mut(&mut self, index: usize) -> Option<&mut ToolCall> {
        match self.message.content.get_mut(index) {
            Some(ContentBlock::ToolCall(t)) => Some(t),
            _ => None,
        }
    }

    pub fn has_tool_calls(&self) -> bool {
        self.message
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolCall(_)))
    }

    /// Records the provider's raw stop reason (pi's `rawStopReason`).
    pub fn set_raw_stop_reason(&mut self, raw: &str) {
        self.message
            .extra
            .insert("rawStopReason".into(), Value::String(raw.to_string()));
    }

    /// Sets the token counts and recomputes the cost.
    pub fn set_usage(&mut self, usage: Usage) {
        self.message.usage = usage;
        compute_cost(&self.model, &mut self.message.usage);
    }
}

// ---------------------------------------------------------------------------------------------
// The model catalogue, the history transform and the key table live in `models`,
// `transform` and `thinking`; providers only call them.

pub(crate) fn compute_cost(model: &Model, usage: &mut Usage) {
    crate::models::calculate_cost(model, usage);
}

/// Messages as the provider should see them: foreign thinking dropped, tool-call ids
/// normalized for `model.api`, orphaned calls answered (see [`crate::transform`]).
pub(crate) fn prepare_messages(messages: Vec<Message>, model: &Model) -> Vec<Message> {
    crate::transform::transform_messages(&messages, model)
}

/// API key from the options, else the provider's environment variable. Callers holding a
/// `models::ModelRegistry` pass `registry.api_key(..)` (models.json keys) as `options.api_key`.
fn resolve_api_key(model: &Model, options: &StreamOptions) -> Result<Option<String>, String> {
    if let Some(key) = options.api_key.as_ref().filter(|k| !k.is_empty()) {
        return Ok(Some(key.clone()));
    }
    if let Some(key) = env_api_key(&model.provider) {
        return Ok(Some(key));
    }
    // Local OpenAI-compatible servers (llama.cpp, vLLM, Ollama, LM Studio) usually need no key,
    // and a caller-supplied authorization header replaces the key.
    let has_auth_header = options.headers.iter().any(|(n, v)| {
        v.is_some()
            && (n.eq_ignore_ascii_case("authorization")
                || n.eq_ignore_ascii_case("x-api-key")
                || n.eq_ignore_ascii_case("x-goog-api-key")
                || n.eq_ignore_ascii_case("cf-aig-authorization"))
    });
    if has_auth_header || is_local_url(&model.base_url) || anthropic_auth_token(model).is_some() {
        return Ok(None);
    }
    Err(format!("No API key for provider: {}", model.provider))
}

/// The provider's key from the environment (pi's variable table in [`crate::models`]).
fn env_api_key(provider: &str) -> Option<String> {
    crate::models::env_api_key(provider).map(|k| k.expose().to_string())
}

/// `ANTHROPIC_AUTH_TOKEN`: a bearer token for Anthropic (gateways, proxies), used when no API
/// key is given; not an API key, so the key table skips it.
pub(crate) fn anthropic_auth_token(model: &Model) -> Option<String> {
    if model.api != "anthropic-messages" || model.provider != "anthropic" {
        return None;
    }
    std::env::var("ANTHROPIC_AUTH_TOKEN")
        .ok()
        .filter(|t| !t.is_empty())
}

fn is_local_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once(':').map_or(host, |(h, p)| {
        if p.chars().all(|c| c.is_ascii_digit()) {
            h
        } else {
            host
        }
    });
    matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "0.0.0.0")
}

// ---------------------------------------------------------------------------------------------
// Transcript: system messages collapsed into one prompt + the current tool set.

/// The context as every built-in provider consumes it: one rendered system prompt, the current
/// tools, and the conversation (system messages removed, transform applied).
#[derive(Debug, Clone)]
pub struct Transcript {
    pub system_prompt: String,
    pub tools: Vec<Tool>,
    pub messages: Vec<Message>,
}

impl Transcript {
    /// Collapses `systemPrompt`, `tools` and every system message: contents are joined with
    /// blank lines, named sections are patched (`null` deletes) and rendered after the content,
    /// tool changes are replayed (removals, then additions, by name).
    pub fn from_context(model: &Model, context: &Context) -> Self {
        let mut contents: Vec<String> = Vec::new();
        if let Some(prompt) = context.system_prompt.as_ref().filter(|p| !p.is_empty()) {
            contents.push(prompt.clone());
        }
        let mut sections: Vec<(String, String)> = Vec::new();
        let mut tools: Vec<Tool> = context.tools.clone().unwrap_or_default();
        let mut messages = Vec::with_capacity(context.messages.len());
        for message in &context.messages {
            let Message::System(system) = message else {
                messages.push(message.clone());
                continue;
            };
            let text = content_text(&system.content, "\n");
            if !text.is_empty() {
                contents.push(text);
            }
            // Sections and tools behave like insertion-ordered maps (pi's `Map`): an update keeps
            // the entry's position, a deletion followed by a re-add moves it to the end. A stable
            // tool order keeps the prompt cache warm.
            if let Some(patch) = &system.sections {
                for (name, value) in patch {
                    match value.as_str() {
                        None => sections.retain(|(n, _)| n != name),
                        Some(text) => match sections.iter_mut().find(|(n, _)| n == name) {
                            Some(slot) => slot.1 = text.to_string(),
                            None => sections.push((name.clone(), text.to_string())),
                        },
                    }
                }
            }
            for removed in system.tools_removed.iter().flatten() {
                if let Some(name) = removed.get("name").and_then(Value::as_str) {
                    tools.retain(|t| t.name != name);
                }
            }
            for added in system.tools_added.iter().flatten() {
                match tools.iter_mut().find(|t| t.name == added.name) {
                    Some(slot) => *slot = added.clone(),
                    None => tools.push(added.clone()),
                }
            }
        }
        let mut parts = contents;
        parts.extend(
            sections
                .into_iter()
                .map(|(_, v)| v)
                .filter(|s| !s.is_empty()),
        );
        Self {
            system_prompt: parts.join("\n\n"),
            tools,
            messages: prepare_messages(messages, model),
        }
    }
}

/// The text blocks of a content joined with `sep` (images and other blocks skipped).
pub(crate) fn content_text(content: &Content, sep: &str) -> String {
    match content {
        Content::Text(s) => s.clone(),
        Content::Blocks(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect();
            texts.join(sep)
        }
    }
}

/// Content as a list of blocks (a string becomes one text block).
pub(crate) fn content_blocks(content: &Content) -> Vec<ContentBlock> {
    match content {
        Content::Text(s) => vec![ContentBlock::Text(TextContent {
            text: s.clone(),
            text_signature: None,
            extra: Map::new(),
        })],
        Content::Blocks(blocks) => blocks.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// Compat flags and thinking-level helpers shared by the builders.

/// `model.compat[key]` as a bool.
pub(crate) fn compat_bool(model: &Model, key: &str) -> Option<bool> {
    model.compat.as_ref()?.get(key)?.as_bool()
}

pub(crate) fn compat_str<'a>(model: &'a Model, key: &str) -> Option<&'a str> {
    model.compat.as_ref()?.get(key)?.as_str()
}

pub(crate) fn compat_value<'a>(model: &'a Model, key: &str) -> Option<&'a Value> {
    model.compat.as_ref()?.get(key)
}

/// What `thinkingLevelMap[level]` says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LevelMapping {
    /// No entry: provider default.
    Missing,
    /// `null`: level unsupported.
    Unsupported,
    /// The provider-native value.
    Value(String),
}

pub(crate) fn level_mapping(model: &Model, level: &str) -> LevelMapping {
    match model.thinking_level_map.as_ref().and_then(|m| m.get(level)) {
        None => LevelMapping::Missing,
        Some(Value::Null) => LevelMapping::Unsupported,
        Some(Value::String(s)) => LevelMapping::Value(s.clone()),
        Some(other) => LevelMapping::Value(other.to_string()),
    }
}

/// `map[level] ?? level`.
pub(crate) fn mapped_level(model: &Model, level: &str) -> String {
    match level_mapping(model, level) {
        LevelMapping::Value(v) => v,
        _ => level.to_string(),
    }
}

/// Applies header overrides case-insensitively: a later value replaces an earlier header of the
/// same name; `None` removes it.
pub(crate) fn merge_headers(
    headers: &mut Vec<(String, String)>,
    overrides: impl IntoIterator<Item = (String, Option<String>)>,
) {
    for (name, value) in overrides {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
        if let Some(value) = value {
            headers.push((name, value));
        }
    }
}

/// Model headers then option headers over `defaults`.
pub(crate) fn final_headers(
    mut defaults: Vec<(String, String)>,
    model: &Model,
    options: &StreamOptions,
) -> Vec<(String, String)> {
    if let Some(model_headers) = &model.headers {
        merge_headers(
            &mut defaults,
            model_headers.iter().map(|(k, v)| {
                let value = match v {
                    Value::Null => None,
                    Value::String(s) => Some(s.clone()),
                    other => Some(other.to_string()),
                };
                (k.clone(), value)
            }),
        );
    }
    merge_headers(&mut defaults, options.headers.iter().cloned());
    defaults
}

pub(crate) fn user_agent() -> String {
    format!("arbor/{}", env!("CARGO_PKG_VERSION"))
}

/// `sessionId` truncated to 64 characters (prompt cache keys).
pub(crate) fn cache_key(session_id: &str) -> String {
    session_id.chars().take(64).collect()
}

// ---------------------------------------------------------------------------------------------
// The driver.

fn shared_client() -> reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .build()
                .unwrap_or_else(|_| reqwest::Client::new())
        })
        .clone()
}

/// How an API formats HTTP error responses into `errorMessage`.
pub(crate) fn format_http_error(
    api: BuiltinApi,
    model: &Model,
    status: u16,
    content_type: Option<&str>,
    body: &str,
) -> String {
    let trimmed = body.trim();
    let parsed: Option<Value> = serde_json::from_str(trimmed).ok();
    match api {
        // The Anthropic SDK's message: `<status> <body.message | JSON body | raw text>`.
        BuiltinApi::AnthropicMessages => sdk_message(status, parsed.as_ref(), trimmed, false),
        // OpenAI SDK + pi's normalization: `<status>: <JSON of the error member>`.
        BuiltinApi::OpenAiCompletions => openai_error(status, parsed.as_ref(), trimmed, None),
        BuiltinApi::OpenAiResponses => {
            let prefix = if model.provider == "openai" {
                "OpenAI API error".to_string()
            } else {
                format!("{} API error", model.provider)
            };
            openai_error(status, parsed.as_ref(), trimmed, Some(&prefix))
        }
        // @google/genai: the JSON body (or a synthesized error object for non-JSON bodies).
        BuiltinApi::GoogleGenerativeAi => {
            let is_json = content_type.is_some_and(|c| c.contains("application/json"));
            match parsed {
                Some(v) if is_json => v.to_string(),
                _ => serde_json::json!({
                    "error": {"message": body, "code": status, "status": reason_phrase(status)}
                })
                .to_string(),
            }
        }
    }
}

/// The official SDKs' `<status> <message>` text.
fn sdk_message(status: u16, parsed: Option<&Value>, raw: &str, error_member: bool) -> String {
    let error = if error_member {
        parsed.and_then(|v| v.get("error"))
    } else {
        parsed
    };
    let msg = match error {
        Some(e) => match e.get("message") {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(m) if !m.is_null() && m != &Value::Bool(false) => Some(m.to_string()),
            _ => Some(e.to_string()),
        },
        None if parsed.is_none() && !raw.is_empty() => Some(raw.to_string()),
        None => None,
    };
    match msg {
        Some(m) => format!("{status} {m}"),
        None => format!("{status} status code (no body)"),
    }
}

fn openai_error(status: u16, parsed: Option<&Value>, raw: &str, prefix: Option<&str>) -> String {
    let body = match parsed {
        Some(v) => match v.get("error") {
            Some(e @ Value::Object(m)) if !m.is_empty() => Some(truncate_body(&e.to_string())),
            // Decision: a JSON body without an `error` member is shown as is (the SDK would
            // say "status code (no body)").
            Some(_) | None => Some(truncate_body(&v.to_string())),
        },
        None => None,
    };
    match (body, prefix) {
        (Some(body), Some(prefix)) => format!("{prefix} ({status}): {body}"),
        (Some(body), None) => format!("{status}: {body}"),
        (None, prefix) => {
            let message = if raw.is_empty() {
                format!("{status} status code (no body)")
            } else {
                format!("{status} {}", truncate_body(raw))
            };
            match prefix {
                Some(prefix) => format!("{prefix} ({status}): {message}"),
                None => message,
            }
        }
    }
}

const MAX_ERROR_BODY_CHARS: usize = 4000;

fn truncate_body(text: &str) -> String {
    let count = text.chars().count();
    if count <= MAX_ERROR_BODY_CHARS {
        return text.to_string();
    }
    let kept: String = text.chars().take(MAX_ERROR_BODY_CHARS).collect();
    format!("{kept}… [truncated {} chars]", count - MAX_ERROR_BODY_CHARS)
}

fn reason_phrase(status: u16) -> &'static str {
    reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
}

/// `Connection error.: <deepest cause>` for transport failures (matches the retry classifier).
fn transport_error_text(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        return "Request timed out.".to_string();
    }
    let mut deepest: Option<String> = None;
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        deepest = Some(s.to_string());
        source = s.source();
    }
    match deepest {
        Some(cause) => format!("Connection error.: {cause}"),
        None => format!("Connection error.: {err}"),
    }
}

enum SendOutcome {
    Response(reqwest::Response),
    Failed(String),
    Aborted,
}

/// Sends the request, retrying per ai-layer §6.3 when `max_retries > 0`.
async fn send_with_retries(
    client: &reqwest::Client,
    api: BuiltinApi,
    model: &Model,
    options: &StreamOptions,
    request: &PreparedRequest,
) -> SendOutcome {
    let body = match serde_json::to_vec(&request.body) {
        Ok(body) => body,
        Err(err) => return SendOutcome::Failed(format!("Could not serialize request: {err}")),
    };
    let cancel = options.cancel.clone().unwrap_or_default();
    let mut attempt: u32 = 0;
    loop {
        let mut builder = client.post(&request.url).body(body.clone());
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let send = builder.send();
        let result = tokio::select! {
            biased;
            _ = cancel.cancelled() => return SendOutcome::Aborted,
            result = with_timeout(options.timeout, send) => result,
        };
        let (message, retryable, retry_headers) = match result {
            Ok(Ok(response)) if response.status().is_success() => {
                return SendOutcome::Response(response)
            }
            Ok(Ok(response)) => {
                let status = response.status().as_u16();
                let headers = response.headers().clone();
                let content_type = headers
                    .get(reqwest::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                let text = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return SendOutcome::Aborted,
                    text = response.text() => text.unwrap_or_default(),
                };
                let message = format_http_error(api, model, status, content_type.as_deref(), &text);
                let should_retry = headers.get("x-should-retry").and_then(|v| v.to_str().ok());
                let retryable = is_retryable_request_failure(Some(status), should_retry);
                (message, retryable, Some(headers))
            }
            Ok(Err(err)) => (transport_error_text(&err), true, None),
            Err(()) => ("Request timed out.".to_string(), true, None),
        };
        if !retryable || attempt >= options.max_retries {
            return SendOutcome::Failed(message);
        }
        let header = |name: &str| {
            retry_headers
                .as_ref()
                .and_then(|h| h.get(name))
                .and_then(|v| v.to_str().ok())
        };
        let delay = request_retry_delay(
            attempt,
            &RetryAfterHeaders {
                retry_after_ms: header("retry-after-ms"),
                retry_after: header("retry-after"),
            },
            options.max_retry_delay.map(|d| d.as_millis() as u64),
            crate::stream::now_ms(),
            rand::random::<f64>(),
            &message,
        );
        let delay = match delay {
            Ok(delay) => delay,
            Err(too_long) => return SendOutcome::Failed(too_long.message),
        };
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return SendOutcome::Aborted,
            _ = tokio::time::sleep(delay) => {}
        }
        attempt += 1;
    }
}

async fn with_timeout<F: std::future::Future>(
    timeout: Option<Duration>,
    fut: F,
) -> Result<F::Output, ()> {
    match timeout {
        Some(t) => tokio::time::timeout(t, fut).await.map_err(|_| ()),
        None => Ok(fut.await),
    }
}

/// Runs one request to its terminal event.
pub(crate) async fn run(
    emitter: &mut Emitter,
    model: &Model,
    options: &StreamOptions,
    request: PreparedRequest,
    parser: &mut dyn StreamParser,
    api: BuiltinApi,
) {
    let mut out = Output::new(model);
    if options.is_cancelled() {
        return emitter.error(out.message, StopReason::Aborted);
    }
    let client = options.client.clone().unwrap_or_else(shared_client);
    let mut response = match send_with_retries(&client, api, model, options, &request).await {
        SendOutcome::Response(r) => r,
        SendOutcome::Failed(message) => {
            out.message.error_message = Some(message);
            return emitter.error(out.message, StopReason::Error);
        }
        SendOutcome::Aborted => {
            out.message.error_message = Some(ABORTED_MESSAGE.to_string());
            return emitter.error(out.message, StopReason::Aborted);
        }
    };
    emitter.push(AssistantMessageEvent::Start {
        partial: out.message.clone(),
    });
    let cancel = options.cancel.clone().unwrap_or_default();
    let mut decoder = new_decoder(parser);
    let outcome: Result<(), Halt> = loop {
        let chunk = tokio::select! {
            biased;
            _ = cancel.cancelled() => break Err(Halt::Fail(String::new())),
            chunk = response.chunk() => chunk,
        };
        match chunk {
            Ok(Some(bytes)) => {
                let fed = decoder.feed(&bytes, &mut |event| parser.on_event(event, &mut out));
                drain(emitter, &mut out);
                if let Err(halt) = fed {
                    break Err(halt);
                }
            }
            // A connection dropped mid-body ends the stream like an early end of the body: the
            // parser then reports the incomplete stream in pi's words ("… ended before
            // message_stop", "… without finish_reason"), which the retry classifier accepts,
            // and closes open blocks as it does at a clean end (DECISIONS §26.3).
            Ok(None) | Err(_) => {
                if decoder.has_unterminated_event() {
                    if let Some(message) = parser.unterminated_tail_error() {
                        break Err(Halt::Fail(message));
                    }
                }
                let fed = decoder.finish(&mut |event| parser.on_event(event, &mut out));
                drain(emitter, &mut out);
                break fed;
            }
        }
    };
    // Close the connection before reporting (matters for aborts and early `[DONE]`).
    drop(response);
    if cancel.is_cancelled() {
        parser.on_failure(&mut out);
        drain(emitter, &mut out);
        out.message.error_message = Some(ABORTED_MESSAGE.to_string());
        return emitter.error(out.message, StopReason::Aborted);
    }
    let finished = match outcome {
        Ok(()) | Err(Halt::Stop) => parser.finish(&mut out),
        Err(Halt::Fail(message)) => Err(message),
    };
    drain(emitter, &mut out);
    match finished {
        Ok(()) => emitter.done(out.message),
        Err(message) => {
            parser.on_failure(&mut out);
            drain(emitter, &mut out);
            out.message.error_message = Some(message);
            emitter.error(out.message, StopReason::Error);
        }
    }
}

fn new_decoder(parser: &dyn StreamParser) -> SseDecoder {
    if parser.wants_raw_lines() {
        SseDecoder::new()
    } else {
        SseDecoder::without_raw()
    }
}

fn drain(emitter: &mut Emitter, out: &mut Output) {
    for event in out.events.drain(..) {
        emitter.push(event);
    }
}

/// Feeds a complete recorded body through the SSE decoder and a parser — the client's code
/// path without the network. Returns the final message (`stopReason` error on failure) and
/// the number of events produced. Used by the benchmark.
pub fn parse_recorded(
    api: BuiltinApi,
    model: &Model,
    body: &[u8],
    chunk_size: usize,
) -> (AssistantMessage, usize) {
    let mut parser = new_parser(api, model);
    let mut out = Output::new(model);
    let mut decoder = new_decoder(parser.as_ref());
    let mut events = 0usize;
    let mut result: Result<(), Halt> = Ok(());
    for chunk in body.chunks(chunk_size.max(1)) {
        result = decoder.feed(chunk, &mut |event| parser.on_event(event, &mut out));
        events += out.events.len();
        out.events.clear();
        if result.is_err() {
            break;
        }
    }
    if result.is_ok() {
        result = decoder.finish(&mut |event| parser.on_event(event, &mut out));
    }
    let finished = match result {
        Ok(()) | Err(Halt::Stop) => parser.finish(&mut out),
        Err(Halt::Fail(m)) => Err(m),
    };
    events += out.events.len();
    if let Err(message) = finished {
        out.message.stop_reason = StopReason::Error;
        out.message.error_message = Some(message);
    }
    (out.message, events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_credentials() {
        let request = PreparedRequest {
            url: "https://x".into(),
            headers: vec![
                ("Authorization".into(), "Bearer sk-secret".into()),
                ("x-api-key".into(), "sk-ant-secret".into()),
                ("accept".into(), "text/event-stream".into()),
            ],
            body: Value::Null,
        };
        let text = format!("{request:?}");
        assert!(!text.contains("secret"), "{text}");
        assert!(text.contains("text/event-stream"));
    }

    #[test]
    fn local_urls() {
        assert!(is_local_url("http://127.0.0.1:8080/v1"));
        assert!(is_local_url("http://localhost/v1"));
        assert!(!is_local_url("https://api.openai.com/v1"));
    }

    #[test]
    fn sdk_messages() {
        let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let v: Value = serde_json::from_str(body).ok().unwrap_or_default();
        assert_eq!(
            sdk_message(529, Some(&v), body, false),
            format!("529 {body}")
        );
        assert_eq!(
            sdk_message(502, None, "bad gateway", false),
            "502 bad gateway"
        );
        assert_eq!(
            sdk_message(500, None, "", false),
            "500 status code (no body)"
        );
    }
}
