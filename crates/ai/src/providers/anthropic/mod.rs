//! Anthropic Messages API (`anthropic-messages`): `POST {baseUrl}/v1/messages?beta=true` (the SDK endpoint pi uses), SSE response.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::error::AiError;
use crate::json_stream::repair_json;
use crate::options::{CacheRetention, StreamOptions};
use crate::providers::api_client::{ApiClient, BuiltRequest};
use crate::providers::http_error::anthropic_error_text;
use crate::providers::sse::SseEvent;
use crate::providers::threads::ThreadSession;
use crate::providers::{
    compat_bool, compat_str, final_headers, user_agent, CowStr, Halt, Output, PreparedRequest,
    StreamParser, Transcript,
};
use crate::types::{
    AssistantMessage, Content, ContentBlock, ImageContent, Message, Model, StopReason, Tool,
    ToolResultMessage, Usage,
};

const ANTHROPIC_VERSION: &str = "2023-06-01";
const BETA_INTERLEAVED_THINKING: &str = "interleaved-thinking-2025-05-14";
const BETA_FINE_GRAINED_TOOLS: &str = "fine-grained-tool-streaming-2025-05-14";
const OAUTH_BETAS: [&str; 2] = ["claude-code-20250219", "oauth-2025-04-20"];
const BETA_SERVER_SIDE_FALLBACK: &str = "server-side-fallback-2026-07-01";
const BETA_MID_CONVERSATION_OUTPUT_CONFIG: &str = "mid-conversation-output-config-2026-07-01";
const BETA_THINKING_BINDING_CONTROLS: &str = "thinking-binding-controls-2026-08-01";
const BETA_INLINE_TOOLS: &str = "inline-tools-2026-09-15";
const BETA_MESSAGE_THREADS: &str = "message-threads-2026-08-12";
/// Efforts an assistant turn may carry as `providerThinkingLevel` to be replayed.
const EFFORTS: [&str; 5] = ["low", "medium", "high", "xhigh", "max"];
/// Declared last whenever tool changes are native (DECISIONS §26.22): Anthropic adds hidden
/// scaffolding for mid-conversation tool changes, and a deferred tool present from the first
/// request keeps that scaffolding inside the cached prefix. It is never activated.
const DEFERRED_PLACEHOLDER_NAME: &str = "__pi_deferred_placeholder__";
const DEFERRED_PLACEHOLDER_DESCRIPTION: &str =
    "Reserved placeholder. Never available. Never call this.";
const OAUTH_IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";
const ERROR_IMAGE_PLACEHOLDER: &str = "(image attached after the tool results)";

/// Tool names Claude Code uses; OAuth requests send matching tools in this casing.
const CLAUDE_CODE_TOOLS: [&str; 17] = [
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
];

fn to_claude_code_name(name: &str) -> String {
    CLAUDE_CODE_TOOLS
        .iter()
        .find(|t| t.eq_ignore_ascii_case(name))
        .map_or_else(|| name.to_string(), |t| (*t).to_string())
}

fn is_oauth_token(key: Option<&str>) -> bool {
    key.is_some_and(|k| k.contains("sk-ant-oat"))
}

/// `cache_control` for the resolved retention (`None` = no markers).
fn cache_control(model: &Model, options: &StreamOptions) -> Option<Value> {
    match options.resolved_cache_retention() {
        CacheRetention::None => None,
        CacheRetention::Short => Some(json!({"type": "ephemeral"})),
        CacheRetention::Long => {
            if compat_bool(model, "supportsLongCacheRetention") == Some(false) {
                Some(json!({"type": "ephemeral"}))
            } else {
                Some(json!({"type": "ephemeral", "ttl": "1h"}))
            }
        }
    }
}

fn is_openrouter(model: &Model) -> bool {
    model.provider == "openrouter" || model.base_url.contains("openrouter.ai")
}

/// Which of the 1.6.0 mid-conversation features a request uses (DECISIONS §26.20–§26.24).
struct Features {
    /// Tool changes are sent as `tool_addition`/`tool_removal` blocks against a fixed tool
    /// list (`compat.supportsMidConvoToolChanges` with in-place system messages and initial tools).
    native_tool_changes: bool,
    /// Effort markers as system messages (`compat.supportsMidConvoEffort`, thinking not off).
    effort_messages: bool,
    /// The request opens a server-side message thread (`sessionId`, caching on,
    /// `compat.supportsMessageThreads`, by default only on `api.anthropic.com`).
    message_threads: bool,
    /// `compat.allowedFallbackModels` is non-empty.
    fallbacks: Vec<Value>,
}

fn features(model: &Model, transcript: &Transcript, options: &StreamOptions) -> Features {
    let in_place = transcript.in_place;
    let thinking_disabled = model.reasoning
        && options.anthropic.thinking_enabled == Some(false)
        && !matches!(
            model.thinking_level_map.as_ref().and_then(|m| m.get("off")),
            Some(Value::Null)
        );
    let threads = compat_bool(model, "supportsMessageThreads")
        .unwrap_or_else(|| model.base_url.contains("api.anthropic.com"));
    let fallbacks = crate::providers::compat_value(model, "allowedFallbackModels")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|f| f.get("model").cloned())
                .map(|m| json!({"model": m}))
                .collect()
        })
        .unwrap_or_default();
    Features {
        native_tool_changes: in_place
            && compat_bool(model, "supportsMidConvoToolChanges") == Some(true)
            && !transcript.initial_tools.is_empty(),
        effort_messages: compat_bool(model, "supportsMidConvoEffort") == Some(true)
            && !thinking_disabled,
        message_threads: threads
            && options.session_id.is_some()
            && options.resolved_cache_retention() != CacheRetention::None,
        fallbacks,
    }
}

/// The effort this request runs at, as recorded on the reply (`providerThinkingLevel`) when
/// effort is managed by markers (DECISIONS §26.21); `None` otherwise.
pub(crate) fn managed_effort(model: &Model, options: &StreamOptions) -> Option<String> {
    let managed = compat_bool(model, "supportsMidConvoEffort") == Some(true);
    let thinking_disabled = model.reasoning
        && options.anthropic.thinking_enabled == Some(false)
        && !matches!(
            model.thinking_level_map.as_ref().and_then(|m| m.get("off")),
            Some(Value::Null)
        );
    (managed && !thinking_disabled).then(|| {
        options
            .anthropic
            .effort
            .clone()
            .unwrap_or_else(|| "high".into())
    })
}

/// The Anthropic Messages client.
pub(crate) struct AnthropicMessages;

impl ApiClient for AnthropicMessages {
    fn build_request(
        &self,
        model: &Model,
        transcript: &Transcript,
        options: &StreamOptions,
        api_key: Option<&str>,
        disable_preferred: Option<bool>,
    ) -> Result<BuiltRequest, AiError> {
        let disable = disable_preferred.unwrap_or_else(|| {
            crate::providers::strict_limits::exceeded(options.session_id.as_deref())
        });
        build_request_with(model, transcript, options, api_key, disable)
            .map(|(request, strict_prefer)| BuiltRequest {
                request,
                strict_prefer,
            })
            .map_err(AiError::InvalidRequest)
    }

    fn parser(&self, model: &Model) -> Box<dyn StreamParser> {
        Box::new(Parser::new(model))
    }

    fn request_parser(
        &self,
        model: &Model,
        options: &StreamOptions,
        transcript: &Transcript,
        request: &PreparedRequest,
    ) -> Box<dyn StreamParser> {
        let parser = Parser::new(model);
        // OAuth requests rename tools to Claude Code casing; map them back on the way in.
        let parser = if sent_with_oauth(request) {
            parser.with_oauth_tools(&transcript.tools)
        } else {
            parser
        };
        Box::new(parser.with_thinking_level(managed_effort(model, options)))
    }

    fn thread_session(
        &self,
        model: &Model,
        options: &StreamOptions,
        request: &PreparedRequest,
    ) -> Option<ThreadSession> {
        // A request built with `thread` belongs to a session that may continue its thread
        // (DECISIONS §26.23, §26.40).
        let session = options.session_id.as_ref()?;
        request.body.get("thread")?;
        Some(ThreadSession {
            session: session.clone(),
            oauth: model.provider != "github-copilot" && sent_with_oauth(request),
        })
    }

    fn http_error(
        &self,
        _model: &Model,
        status: u16,
        _content_type: Option<&str>,
        body: &str,
    ) -> String {
        anthropic_error_text(status, body)
    }
}

/// The request went out with a Claude OAuth token.
fn sent_with_oauth(request: &PreparedRequest) -> bool {
    request
        .header("authorization")
        .is_some_and(|v| v.contains("sk-ant-oat"))
}

/// The request, and whether a `prefer` tool went out strict (then a strict-limits rejection
/// is answered by resending with `disable_preferred_strict`, DECISIONS §26.25).
pub(crate) fn build_request_with(
    model: &Model,
    transcript: &Transcript,
    options: &StreamOptions,
    api_key: Option<&str>,
    disable_preferred_strict: bool,
) -> Result<(PreparedRequest, bool), String> {
    // pi checks for Copilot before OAuth: a Copilot token is never sent the Claude Code way.
    let oauth = model.provider != "github-copilot" && is_oauth_token(api_key);
    let cache = cache_control(model, options);
    let force_adaptive = compat_bool(model, "forceAdaptiveThinking") == Some(true);
    let thinking_enabled = options.anthropic.thinking_enabled == Some(true);
    let features = features(model, transcript, options);
    let mode = ToolMode {
        oauth,
        eager: compat_bool(model, "supportsEagerToolInputStreaming") != Some(false),
        supports_strict: compat_bool(model, "supportsStrictTools") == Some(true),
        disable_preferred: disable_preferred_strict,
        preferred_sent: std::cell::Cell::new(false),
    };
    let tool_cache = if compat_bool(model, "supportsCacheControlOnTools") == Some(false) {
        None
    } else {
        cache.clone()
    };

    let native_tools = |tools: &[Tool]| convert_tools(tools, &mode, None);
    let converted = convert_messages(
        &transcript.messages,
        &ConvertOptions {
            oauth,
            cache: cache.as_ref(),
            allow_empty_signature: compat_bool(model, "allowEmptySignature") == Some(true),
            managed_provider: features.effort_messages.then_some(model.provider.as_str()),
            native_tools: features
                .native_tool_changes
                .then_some(&native_tools as NativeTools<'_>),
        },
    )?;
    let active_effort = options.anthropic.effort.as_deref().unwrap_or("high");
    let messages = if features.effort_messages {
        insert_effort_messages(converted, active_effort)
    } else {
        converted.messages
    };

    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("messages".into(), Value::Array(messages));
    body.insert(
        "max_tokens".into(),
        json!(options.max_tokens.unwrap_or(model.max_tokens)),
    );
    body.insert("stream".into(), json!(true));

    let mut system = Vec::new();
    let text_block = |text: &str| {
        let mut block = json!({"type": "text", "text": text});
        if let (Some(cc), Some(obj)) = (&cache, block.as_object_mut()) {
            obj.insert("cache_control".into(), cc.clone());
        }
        block
    };
    if oauth {
        system.push(text_block(OAUTH_IDENTITY));
    }
    if !transcript.system_prompt.is_empty() {
        system.push(text_block(&transcript.system_prompt));
    }
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }

    if let Some(t) = options.temperature {
        if !thinking_enabled
            && compat_bool(model, "supportsMidConvoEffort") != Some(true)
            && compat_bool(model, "supportsTemperature") != Some(false)
        {
            body.insert("temperature".into(), json!(t));
        }
    }

    if features.native_tool_changes {
        // The list never changes: later tools arrive as `tool_addition` blocks.
        let mut tools = convert_tools(&transcript.initial_tools, &mode, tool_cache)?;
        tools.push(json!({
            "name": DEFERRED_PLACEHOLDER_NAME,
            "description": DEFERRED_PLACEHOLDER_DESCRIPTION,
            "input_schema": {"type": "object", "properties": {}, "required": []},
            "defer_loading": true,
        }));
        body.insert("tools".into(), Value::Array(tools));
    } else if !transcript.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(convert_tools(&transcript.tools, &mode, tool_cache)?),
        );
    }

    let off_supported = !matches!(
        model.thinking_level_map.as_ref().and_then(|m| m.get("off")),
        Some(Value::Null)
    );
    if model.reasoning && options.anthropic.thinking_enabled == Some(false) && off_supported {
        body.insert("thinking".into(), json!({"type": "disabled"}));
    } else if features.effort_messages {
        // Adaptive thinking lets a prefix mismatch drop the block instead of failing; the
        // top-level effort stays fixed ("low": organisations may cap effort) because it is
        // part of the cached prompt, and the markers set each reply's level.
        let display = options
            .anthropic
            .thinking_display
            .clone()
            .unwrap_or_else(|| "summarized".into());
        body.insert(
            "thinking".into(),
            json!({"type": "adaptive", "display": display,
                "block_binding": {"prefix_mismatch_behavior": "drop_block"}}),
        );
        body.insert("output_config".into(), json!({"effort": "low"}));
    } else if model.reasoning && thinking_enabled {
        let display = options
            .anthropic
            .thinking_display
            .clone()
            .unwrap_or_else(|| "summarized".into());
        if force_adaptive {
            body.insert(
                "thinking".into(),
                json!({"type": "adaptive", "display": display}),
            );
            if let Some(effort) = &options.anthropic.effort {
                body.insert("output_config".into(), json!({"effort": effort}));
            }
        } else {
            let budget = options
                .anthropic
                .thinking_budget_tokens
                .filter(|b| *b > 0)
                .unwrap_or(1024);
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget, "display": display}),
            );
        }
    }

    if let Some(user_id) = options
        .metadata
        .as_ref()
        .and_then(|m| m.get("user_id"))
        .and_then(Value::as_str)
    {
        body.insert("metadata".into(), json!({"user_id": user_id}));
    }

    match &options.tool_choice {
        Some(Value::String(s)) => {
            body.insert("tool_choice".into(), json!({"type": s}));
        }
        Some(v @ Value::Object(_)) => {
            body.insert("tool_choice".into(), v.clone());
        }
        _ => {}
    }
    if !features.fallbacks.is_empty() {
        body.insert("fallbacks".into(), Value::Array(features.fallbacks.clone()));
    }
    if features.message_threads {
        // The complete request opens a thread; the driver turns it into a `continue` when
        // the session's last reply can be continued (DECISIONS §26.40, `threads`).
        body.insert("thread".into(), json!({"type": "create"}));
    }

    // Headers.
    let mut headers: Vec<(String, String)> = vec![
        ("content-type".into(), "application/json".into()),
        ("accept".into(), "text/event-stream".into()),
        ("anthropic-version".into(), ANTHROPIC_VERSION.into()),
    ];
    if oauth {
        if let Some(key) = api_key {
            headers.push(("authorization".into(), format!("Bearer {key}")));
        }
        headers.push(("user-agent".into(), "claude-cli/2.1.322".into()));
        headers.push(("x-app".into(), "cli".into()));
    } else if model.provider == "github-copilot" {
        // Copilot's Anthropic endpoint takes its token as a bearer token (DECISIONS §26.13).
        if let Some(key) = api_key {
            headers.push(("authorization".into(), format!("Bearer {key}")));
        }
        headers.push(("user-agent".into(), user_agent()));
    } else {
        if let Some(key) = api_key {
            headers.push(("x-api-key".into(), key.to_string()));
        } else if let Some(token) = crate::providers::anthropic_auth_token(model) {
            headers.push(("authorization".into(), format!("Bearer {token}")));
        }
        headers.push(("user-agent".into(), user_agent()));
    }
    let mut betas: Vec<&str> = Vec::new();
    if oauth {
        betas.extend(OAUTH_BETAS);
    }
    if !transcript.tools.is_empty()
        && compat_bool(model, "supportsEagerToolInputStreaming") == Some(false)
    {
        betas.push(BETA_FINE_GRAINED_TOOLS);
    }
    if model.reasoning
        && thinking_enabled
        && options.anthropic.interleaved_thinking != Some(false)
        && !force_adaptive
    {
        betas.push(BETA_INTERLEAVED_THINKING);
    }
    if !features.fallbacks.is_empty() {
        betas.push(BETA_SERVER_SIDE_FALLBACK);
    }
    if compat_bool(model, "supportsMidConvoEffort") == Some(true) {
        betas.extend([
            BETA_MID_CONVERSATION_OUTPUT_CONFIG,
            BETA_THINKING_BINDING_CONTROLS,
        ]);
    }
    if features.native_tool_changes {
        betas.push(BETA_INLINE_TOOLS);
    }
    if features.message_threads {
        betas.push(BETA_MESSAGE_THREADS);
    }
    if !betas.is_empty() {
        headers.push(("anthropic-beta".into(), betas.join(",")));
    }
    if let Some(session) = &options.session_id {
        let send = compat_bool(model, "sendSessionAffinityHeaders").unwrap_or(is_openrouter(model));
        if send && options.resolved_cache_retention() != CacheRetention::None {
            let format = compat_str(model, "sessionAffinityFormat")
                .map(str::to_string)
                .unwrap_or_else(|| {
                    if is_openrouter(model) {
                        "openrouter".into()
                    } else {
                        String::new()
                    }
                });
            let name = if format == "openrouter" {
                "x-session-id"
            } else {
                "x-session-affinity"
            };
            headers.push((name.into(), session.clone()));
        }
    }
    let mut headers = final_headers(headers, model, transcript, options);
    normalize_beta_header(&mut headers);

    Ok((
        PreparedRequest {
            url: format!(
                "{}/v1/messages?beta=true",
                model.base_url.trim_end_matches('/')
            ),
            headers,
            body: Value::Object(body),
        },
        mode.preferred_sent.get(),
    ))
}

/// An `anthropic-beta` value given through model/option headers replaces the computed list;
/// it is split, trimmed and de-duplicated.
fn normalize_beta_header(headers: &mut [(String, String)]) {
    for (name, value) in headers.iter_mut() {
        if name.eq_ignore_ascii_case("anthropic-beta") {
            let mut seen: Vec<&str> = Vec::new();
            for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                if !seen.contains(&part) {
                    seen.push(part);
                }
            }
            *value = seen.join(",");
        }
    }
}

/// How tools are converted, and whether a `prefer` tool went out strict.
struct ToolMode {
    oauth: bool,
    eager: bool,
    supports_strict: bool,
    /// After a strict-limits rejection: `prefer` tools go out non-strict (DECISIONS §26.25).
    disable_preferred: bool,
    preferred_sent: std::cell::Cell<bool>,
}

/// Tool definitions; tools asking for `constrainedSampling` are sent strict where the model
/// allows it (`compat.supportsStrictTools`), with pi's refusal for an unmet `require`.
fn convert_tools(
    tools: &[Tool],
    mode: &ToolMode,
    cache: Option<Value>,
) -> Result<Vec<Value>, String> {
    let ToolMode { oauth, eager, .. } = *mode;
    let last = tools.len().saturating_sub(1);
    let mut out_tools = Vec::with_capacity(tools.len());
    for (i, tool) in tools.iter().enumerate() {
        let prefers = crate::providers::constrained::prefers_strict(tool);
        let strict = if mode.disable_preferred && prefers {
            None
        } else {
            crate::providers::constrained::resolve(
                tool,
                mode.supports_strict,
                Some(crate::providers::constrained::anthropic_rule),
            )?
        };
        if strict.is_some() && prefers {
            mode.preferred_sent.set(true);
        }
        let schema = strict.as_ref().unwrap_or(&tool.parameters);
        // Anthropic rejects root `anyOf`/`oneOf`/`allOf`: only these root keywords are kept
        // (a strict schema keeps all of its own, these overriding in place).
        let mut input_schema = match &strict {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        input_schema.insert("type".into(), json!("object"));
        input_schema.insert(
            "properties".into(),
            schema
                .get("properties")
                .cloned()
                .unwrap_or_else(|| json!({})),
        );
        input_schema.insert(
            "required".into(),
            schema.get("required").cloned().unwrap_or_else(|| json!([])),
        );
        for key in ["additionalProperties", "$defs", "definitions"] {
            if let Some(v) = schema.get(key) {
                input_schema.insert(key.into(), v.clone());
            }
        }
        let mut out = Map::new();
        let name = if oauth {
            to_claude_code_name(&tool.name)
        } else {
            tool.name.clone()
        };
        out.insert("name".into(), json!(name));
        out.insert("description".into(), json!(tool.description));
        if eager {
            out.insert("eager_input_streaming".into(), json!(true));
        }
        if strict.is_some() {
            out.insert("strict".into(), json!(true));
        }
        out.insert("input_schema".into(), Value::Object(input_schema));
        if let (Some(cc), true) = (&cache, i == last) {
            out.insert("cache_control".into(), cc.clone());
        }
        out_tools.push(Value::Object(out));
    }
    Ok(out_tools)
}

fn image_block(image: &ImageContent) -> Value {
    json!({
        "type": "image",
        "source": {"type": "base64", "media_type": image.mime_type, "data": image.data}
    })
}

/// Converts the tools a system message adds (native tool changes).
type NativeTools<'a> = &'a dyn Fn(&[Tool]) -> Result<Vec<Value>, String>;

/// How [`convert_messages`] renders the conversation.
struct ConvertOptions<'a> {
    oauth: bool,
    cache: Option<&'a Value>,
    allow_empty_signature: bool,
    /// With effort markers: replayed turns of this provider keep their recorded effort.
    managed_provider: Option<&'a str>,
    /// With native tool changes: converts the tools a system message adds.
    native_tools: Option<NativeTools<'a>>,
}

/// The converted messages plus, per assistant message index, the effort it was produced at.
struct Converted {
    messages: Vec<Value>,
    assistant_levels: Vec<(usize, String)>,
}

/// A later system message (in place): its update text, then the native tool changes.
fn system_blocks(
    system: &crate::types::SystemMessage,
    opts: &ConvertOptions<'_>,
) -> Result<Vec<Value>, String> {
    let mut blocks = Vec::new();
    let text = crate::providers::transcript::system_update_text(system);
    if !text.is_empty() {
        blocks.push(json!({"type": "text", "text": text}));
    }
    if let Some(convert) = opts.native_tools {
        let added = system.tools_added.as_deref().unwrap_or(&[]);
        for removed in system.tools_removed.iter().flatten() {
            let Some(name) = removed.get("name").and_then(Value::as_str) else {
                continue;
            };
            // A new definition under the same name replaces the old one by itself.
            if added.iter().any(|t| t.name == name) {
                continue;
            }
            let name = if opts.oauth {
                to_claude_code_name(name)
            } else {
                name.to_string()
            };
            blocks.push(json!({"type": "tool_removal",
                "tool": {"type": "tool_reference", "name": name}}));
        }
        for definition in convert(added)? {
            blocks.push(json!({"type": "tool_addition",
                "tool": {"type": "tool_definition", "definition": definition}}));
        }
    }
    Ok(blocks)
}

fn convert_messages(messages: &[Message], opts: &ConvertOptions<'_>) -> Result<Converted, String> {
    let oauth = opts.oauth;
    let mut params: Vec<Value> = Vec::new();
    let mut assistant_levels = Vec::new();
    // Later system messages wait for the next assistant message that is sent (or the end):
    // a system message between a `tool_use` and its `tool_result` is rejected, and waiting
    // past assistant turns that convert to nothing keeps an update from landing before a
    // user message. So an update placed before a user message arrives after it.
    let mut pending_system: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            Message::User(user) => match &user.content {
                Content::Text(text) => {
                    if !text.trim().is_empty() {
                        params.push(json!({"role": "user", "content": text}));
                    }
                }
                Content::Blocks(blocks) => {
                    let converted: Vec<Value> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                                Some(json!({"type": "text", "text": t.text}))
                            }
                            ContentBlock::Image(img) => Some(image_block(img)),
                            _ => None,
                        })
                        .collect();
                    if !converted.is_empty() {
                        params.push(json!({"role": "user", "content": converted}));
                    }
                }
            },
            Message::Assistant(assistant) => {
                let mut blocks = Vec::new();
                for block in &assistant.content {
                    match block {
                        ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                            blocks.push(json!({"type": "text", "text": t.text}));
                        }
                        ContentBlock::Thinking(t) => {
                            if t.redacted == Some(true) {
                                blocks.push(json!({
                                    "type": "redacted_thinking",
                                    "data": t.thinking_signature.clone().unwrap_or_default()
                                }));
                                continue;
                            }
                            let signature = t
                                .thinking_signature
                                .as_deref()
                                .filter(|s| !s.trim().is_empty());
                            match signature {
                                Some(sig) => blocks.push(json!({
                                    "type": "thinking", "thinking": t.thinking, "signature": sig
                                })),
                                None if t.thinking.trim().is_empty() => {}
                                // Unsigned thinking (e.g. from an aborted stream) is replayed
                                // as text: the API rejects unsigned thinking blocks. Servers
                                // marked `allowEmptySignature` (Fireworks, Vercel) take it as
                                // thinking with an empty signature.
                                None if opts.allow_empty_signature => blocks.push(json!({
                                    "type": "thinking", "thinking": t.thinking, "signature": ""
                                })),
                                None => blocks.push(json!({"type": "text", "text": t.thinking})),
                            }
                        }
                        ContentBlock::ToolCall(call) => {
                            let name = if oauth {
                                to_claude_code_name(&call.name)
                            } else {
                                call.name.clone()
                            };
                            let input = if call.arguments.is_object() {
                                call.arguments.clone()
                            } else {
                                json!({})
                            };
                            blocks.push(json!({
                                "type": "tool_use", "id": call.id, "name": name, "input": input
                            }));
                        }
                        _ => {}
                    }
                }
                if !blocks.is_empty() {
                    params.append(&mut pending_system);
                    if let Some(level) = opts
                        .managed_provider
                        .filter(|p| {
                            assistant.api == "anthropic-messages" && assistant.provider == *p
                        })
                        .and_then(|_| assistant.extra.get("providerThinkingLevel"))
                        .and_then(Value::as_str)
                        .filter(|l| EFFORTS.contains(l))
                    {
                        assistant_levels.push((params.len(), level.to_string()));
                    }
                    params.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            Message::ToolResult(_) => {
                let mut results = Vec::new();
                let mut error_images = Vec::new();
                while let Some(Message::ToolResult(result)) = messages.get(i) {
                    results.push(convert_tool_result(result, &mut error_images));
                    i += 1;
                }
                results.extend(error_images);
                params.push(json!({"role": "user", "content": results}));
                continue;
            }
            // Only present when sent in place (DECISIONS §26.20).
            Message::System(system) => {
                let blocks = system_blocks(system, opts)?;
                if !blocks.is_empty() {
                    pending_system.push(json!({"role": "system", "content": blocks}));
                }
            }
        }
        i += 1;
    }
    params.append(&mut pending_system);

    // Cache breakpoint on the conversation: the last block of a trailing user or system message.
    if let Some(cc) = opts.cache {
        if let Some(last) = params.last_mut() {
            if matches!(
                last.get("role").and_then(Value::as_str),
                Some("user" | "system")
            ) {
                if let Some(text) = last
                    .get("content")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                {
                    last["content"] = json!([{"type": "text", "text": text, "cache_control": cc}]);
                } else if let Some(Value::Object(block)) = last
                    .get_mut("content")
                    .and_then(Value::as_array_mut)
                    .and_then(|a| a.last_mut())
                {
                    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
                    if matches!(
                        kind,
                        "text" | "image" | "tool_result" | "tool_addition" | "tool_removal"
                    ) {
                        block.insert("cache_control".into(), cc.clone());
                    }
                }
            }
        }
    }
    Ok(Converted {
        messages: params,
        assistant_levels,
    })
}

/// `reply` converted as the next request will replay it, assistant message only: the
/// messages a thread holds after its reply (DECISIONS §26.23, §26.40). No cache markers, effort
/// markers or tool changes: those are not part of the assistant message.
pub(crate) fn thread_reply(
    model: &Model,
    reply: &AssistantMessage,
    oauth: bool,
) -> Result<Vec<Value>, String> {
    let messages = crate::providers::transcript::prepare_messages(
        vec![Message::Assistant(reply.clone())],
        model,
    );
    let converted = convert_messages(
        &messages,
        &ConvertOptions {
            oauth,
            cache: None,
            allow_empty_signature: compat_bool(model, "allowEmptySignature") == Some(true),
            managed_provider: None,
            native_tools: None,
        },
    )?;
    Ok(converted
        .messages
        .into_iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .collect())
}

/// Effort markers: each replayed turn with a recorded effort is preceded by a system message
/// setting it, and a last one sets this request's effort (DECISIONS §26.21).
fn insert_effort_messages(converted: Converted, active: &str) -> Vec<Value> {
    let marker = |effort: &str| json!({"role": "system", "content": [], "output_config": {"effort": effort}});
    let mut out =
        Vec::with_capacity(converted.messages.len() + converted.assistant_levels.len() + 1);
    let mut levels = converted.assistant_levels.into_iter().peekable();
    for (index, message) in converted.messages.into_iter().enumerate() {
        if let Some((_, level)) = levels.next_if(|(at, _)| *at == index) {
            out.push(marker(&level));
        }
        out.push(message);
    }
    out.push(marker(active));
    out
}

/// One `tool_result` block. Error results may not carry images: those are replaced by a
/// placeholder and appended (with a caption) after all results of the turn.
fn convert_tool_result(result: &ToolResultMessage, error_images: &mut Vec<Value>) -> Value {
    let blocks = Content::to_blocks(&result.content);
    let images: Vec<&ImageContent> = blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Image(img) => Some(img),
            _ => None,
        })
        .collect();
    let mut texts_and_images: Vec<&ContentBlock> = blocks
        .iter()
        .filter(|b| matches!(b, ContentBlock::Text(_) | ContentBlock::Image(_)))
        .collect();
    let placeholder_blocks;
    if result.is_error && !images.is_empty() {
        error_images.push(json!({
            "type": "text",
            "text": format!(
                "Images from the error result of tool call {} ({}):",
                result.tool_call_id, result.tool_name
            )
        }));
        error_images.extend(images.iter().map(|img| image_block(img)));
        placeholder_blocks = replace_images(&texts_and_images);
        texts_and_images = placeholder_blocks.iter().collect();
    }
    let has_images = texts_and_images
        .iter()
        .any(|b| matches!(b, ContentBlock::Image(_)));
    let content = if !has_images {
        let texts: Vec<&str> = texts_and_images
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        Value::String(texts.join("\n"))
    } else {
        let mut out: Vec<Value> = texts_and_images
            .iter()
            .map(|b| match b {
                ContentBlock::Text(t) => json!({"type": "text", "text": t.text}),
                ContentBlock::Image(img) => image_block(img),
                _ => Value::Null,
            })
            .collect();
        if !texts_and_images
            .iter()
            .any(|b| matches!(b, ContentBlock::Text(_)))
        {
            out.insert(0, json!({"type": "text", "text": "(see attached image)"}));
        }
        Value::Array(out)
    };
    json!({
        "type": "tool_result",
        "tool_use_id": result.tool_call_id,
        "content": content,
        "is_error": result.is_error
    })
}

fn replace_images(blocks: &[&ContentBlock]) -> Vec<ContentBlock> {
    let mut out = Vec::new();
    let mut previous_was_placeholder = false;
    for block in blocks {
        match block {
            ContentBlock::Image(_) => {
                if !previous_was_placeholder {
                    out.push(ContentBlock::Text(crate::types::TextContent {
                        text: ERROR_IMAGE_PLACEHOLDER.into(),
                        text_signature: None,
                        extra: Default::default(),
                    }));
                }
                previous_was_placeholder = true;
            }
            ContentBlock::Text(t) => {
                previous_was_placeholder = t.text == ERROR_IMAGE_PLACEHOLDER;
                out.push((*block).clone());
            }
            _ => {}
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Stream parsing.

#[derive(Deserialize)]
struct BlockDelta<'a> {
    index: u64,
    #[serde(borrow)]
    delta: DeltaBody<'a>,
}

#[derive(Deserialize)]
struct DeltaBody<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    thinking: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    partial_json: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    signature: Option<CowStr<'a>>,
}

#[derive(Deserialize)]
struct BlockStart {
    index: u64,
    content_block: Value,
}

#[derive(Deserialize)]
struct BlockStop {
    index: u64,
}

/// Strict JSON parse of an event payload, retried on the repaired text.
pub(crate) fn parse_repaired<'a, T: Deserialize<'a>>(
    data: &'a str,
    slot: &'a mut Option<String>,
) -> Result<T, serde_json::Error> {
    match serde_json::from_str::<T>(data) {
        Ok(v) => Ok(v),
        Err(err) => match repair_json(data) {
            Cow::Owned(repaired) => {
                let repaired: &'a str = slot.insert(repaired);
                serde_json::from_str(repaired)
            }
            Cow::Borrowed(_) => Err(err),
        },
    }
}

#[derive(Deserialize)]
struct TypeOnly<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
}

enum HandleError {
    /// The event's JSON did not parse (the message is JavaScript's, rebuilt from the data).
    Parse,
    Fail(String),
}

impl HandleError {
    fn parse(_: serde_json::Error) -> Self {
        HandleError::Parse
    }
}

struct OpenBlock {
    content_index: usize,
    /// Argument text of a tool call (None for text/thinking).
    arguments: Option<String>,
}

pub struct Parser {
    blocks: HashMap<u64, OpenBlock>,
    saw_message_start: bool,
    saw_message_stop: bool,
    /// Caller-side tool names, to map Claude Code casing back (OAuth).
    tool_names: Vec<String>,
    oauth: bool,
    /// `compat.allowedFallbackModels` of the model's provider that carry their own prices.
    fallback_prices: Vec<(String, crate::types::ModelCost)>,
    /// The managed effort the request ran at, recorded as `providerThinkingLevel`.
    thinking_level: Option<String>,
}

impl Parser {
    pub fn new(model: &Model) -> Self {
        let fallback_prices = crate::providers::compat_value(model, "allowedFallbackModels")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter(|f| f.get("provider").and_then(Value::as_str) == Some(&model.provider))
                    .filter_map(|f| {
                        let id = f.get("model")?.as_str()?.to_string();
                        let cost = serde_json::from_value(f.get("cost")?.clone()).ok()?;
                        Some((id, cost))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self {
            blocks: HashMap::new(),
            saw_message_start: false,
            saw_message_stop: false,
            tool_names: Vec::new(),
            oauth: false,
            fallback_prices,
            thinking_level: None,
        }
    }

    /// Records `level` as the reply's `providerThinkingLevel` (managed effort, DECISIONS §26.21).
    pub fn with_thinking_level(mut self, level: Option<String>) -> Self {
        self.thinking_level = level;
        self
    }

    /// Enables mapping Claude Code tool names back to the caller's names.
    pub fn with_oauth_tools(mut self, tools: &[Tool]) -> Self {
        self.oauth = true;
        self.tool_names = tools.iter().map(|t| t.name.clone()).collect();
        self
    }

    /// `Err(Ok(parse error))` for payloads that are not JSON, `Err(Err(message))` for protocol
    /// failures.
    fn handle(&mut self, name: &str, data: &str, out: &mut Output) -> Result<(), HandleError> {
        let mut slot = None;
        match name {
            "content_block_delta" => {
                let ev: BlockDelta<'_> =
                    parse_repaired(data, &mut slot).map_err(HandleError::parse)?;
                let Some(open) = self.blocks.get_mut(&ev.index) else {
                    return Ok(());
                };
                let index = open.content_index;
                let d = ev.delta;
                match d.kind.as_ref() {
                    "text_delta" => {
                        if let Some(text) = d.text {
                            out.text_delta(index, &text);
                        }
                    }
                    "thinking_delta" => {
                        if let Some(thinking) = d.thinking {
                            out.thinking_delta(index, &thinking);
                        }
                    }
                    "input_json_delta" => {
                        if let (Some(args), Some(fragment)) =
                            (open.arguments.as_mut(), d.partial_json)
                        {
                            args.push_str(&fragment);
                            out.toolcall_delta(index, &fragment);
                        }
                    }
                    "signature_delta" => {
                        if let (Some(t), Some(sig)) = (out.thinking_mut(index), d.signature) {
                            t.thinking_signature
                                .get_or_insert_with(String::new)
                                .push_str(&sig);
                        }
                    }
                    _ => {}
                }
            }
            "content_block_start" => {
                let ev: BlockStart = parse_repaired(data, &mut slot).map_err(HandleError::parse)?;
                let block = &ev.content_block;
                let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
                let str_field = |k: &str| {
                    block
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                let (content_index, arguments) = match kind {
                    "text" => (out.text_start(str_field("text")), None),
                    "thinking" => (
                        out.thinking_start(
                            str_field("thinking"),
                            Some(str_field("signature")),
                            false,
                        ),
                        None,
                    ),
                    "redacted_thinking" => (
                        out.thinking_start(
                            "[Reasoning redacted]".into(),
                            Some(str_field("data")),
                            true,
                        ),
                        None,
                    ),
                    "tool_use" => {
                        let mut name = str_field("name");
                        if self.oauth {
                            if let Some(n) = self
                                .tool_names
                                .iter()
                                .find(|t| t.eq_ignore_ascii_case(&name))
                            {
                                name = n.clone();
                            }
                        }
                        let input = match block.get("input") {
                            Some(v @ Value::Object(_)) => v.clone(),
                            _ => json!({}),
                        };
                        (
                            out.toolcall_start(str_field("id"), name, input),
                            Some(String::new()),
                        )
                    }
                    "fallback" => {
                        if !out.message.content.is_empty() {
                            return Err(HandleError::Fail(
                                "Anthropic performed an unsupported mid-output model fallback"
                                    .into(),
                            ));
                        }
                        return Ok(());
                    }
                    _ => return Ok(()),
                };
                self.blocks.insert(
                    ev.index,
                    OpenBlock {
                        content_index,
                        arguments,
                    },
                );
            }
            "content_block_stop" => {
                let ev: BlockStop = parse_repaired(data, &mut slot).map_err(HandleError::parse)?;
                if let Some(open) = self.blocks.remove(&ev.index) {
                    match (&open.arguments, out.message.content.get(open.content_index)) {
                        (_, Some(ContentBlock::Text(_))) => out.text_end(open.content_index),
                        (_, Some(ContentBlock::Thinking(_))) => {
                            out.thinking_end(open.content_index)
                        }
                        (Some(args), Some(ContentBlock::ToolCall(_))) => {
                            // Decision: a tool_use that carried its full `input` at start and
                            // got no deltas keeps that input (pi would reset it to {}).
                            if args.trim().is_empty() {
                                out.toolcall_end_with(open.content_index);
                            } else {
                                out.toolcall_end(open.content_index, args);
                            }
                        }
                        _ => {}
                    }
                }
            }
            "message_start" => {
                self.saw_message_start = true;
                let ev: Value = parse_repaired(data, &mut slot).map_err(HandleError::parse)?;
                let message = ev.get("message").cloned().unwrap_or(Value::Null);
                if let Some(id) = message.get("id").and_then(Value::as_str) {
                    out.message.response_id = Some(id.to_string());
                }
                if let Some(m) = message.get("model").and_then(Value::as_str) {
                    if m != out.model().id {
                        out.message.response_model = Some(m.to_string());
                        // A fallback model that answered is priced at its own rates when the
                        // catalogue lists them (DECISIONS §26.24).
                        if let Some((id, cost)) =
                            self.fallback_prices.iter().find(|(id, _)| id == m)
                        {
                            out.price_as(id, cost.clone());
                        }
                    }
                }
                let u = message.get("usage").cloned().unwrap_or(Value::Null);
                let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                let mut usage: Usage = Usage::clone(&out.message.usage);
                usage.input = n("input_tokens");
                usage.output = n("output_tokens");
                usage.cache_read = n("cache_read_input_tokens");
                usage.cache_write = n("cache_creation_input_tokens");
                usage.cache_write_1h = Some(
                    u.pointer("/cache_creation/ephemeral_1h_input_tokens")
                        .and_then(Value::as_u64)
                        .unwrap_or(0),
                );
                usage.total_tokens =
                    Some(usage.input + usage.output + usage.cache_read + usage.cache_write);
                out.set_usage(usage);
            }
            "message_delta" => {
                let ev: Value = parse_repaired(data, &mut slot).map_err(HandleError::parse)?;
                if let Some(reason) = ev.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    out.set_raw_stop_reason(reason);
                    let (stop, message) =
                        map_stop_reason(reason, ev.pointer("/delta/stop_details"))
                            .map_err(HandleError::Fail)?;
                    out.message.stop_reason = stop;
                    if message.is_some() {
                        out.message.error_message = message;
                    }
                }
                let mut usage: Usage = Usage::clone(&out.message.usage);
                if let Some(u) = ev.get("usage").filter(|u| u.is_object()) {
                    let n = |k: &str| u.get(k).and_then(Value::as_u64);
                    if let Some(v) = n("input_tokens") {
                        usage.input = v;
                    }
                    if let Some(v) = n("output_tokens") {
                        usage.output = v;
                    }
                    if let Some(v) = n("cache_read_input_tokens") {
                        usage.cache_read = v;
                    }
                    if let Some(v) = n("cache_creation_input_tokens") {
                        usage.cache_write = v;
                    }
                    if let Some(v) = u
                        .pointer("/cache_creation/ephemeral_1h_input_tokens")
                        .and_then(Value::as_u64)
                    {
                        usage.cache_write_1h = Some(v);
                    }
                    if let Some(v) = u
                        .pointer("/output_tokens_details/thinking_tokens")
                        .and_then(Value::as_u64)
                    {
                        usage.reasoning = Some(v);
                    }
                }
                usage.total_tokens =
                    Some(usage.input + usage.output + usage.cache_read + usage.cache_write);
                out.set_usage(usage);
            }
            "message_stop" => {
                self.saw_message_stop = true;
            }
            _ => {}
        }
        Ok(())
    }
}

fn map_stop_reason(
    reason: &str,
    details: Option<&Value>,
) -> Result<(StopReason, Option<String>), String> {
    Ok(match reason {
        "end_turn" | "pause_turn" | "stop_sequence" => (StopReason::Stop, None),
        "max_tokens" => (StopReason::Length, None),
        "tool_use" => (StopReason::ToolUse, None),
        "refusal" => (
            StopReason::Error,
            Some(
                details
                    .and_then(|d| d.get("explanation"))
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .unwrap_or("The model refused to complete the request")
                    .to_string(),
            ),
        ),
        "sensitive" => (
            StopReason::Error,
            Some("Provider stopped with: sensitive".to_string()),
        ),
        other => return Err(format!("Unhandled stop reason: {other}")),
    })
}

const MESSAGE_EVENTS: [&str; 6] = [
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
];

impl StreamParser for Parser {
    fn init_output(&self, out: &mut Output) {
        if let Some(level) = &self.thinking_level {
            out.message
                .extra
                .insert("providerThinkingLevel".into(), Value::String(level.clone()));
        }
    }

    fn on_event(&mut self, event: SseEvent<'_>, out: &mut Output) -> Result<(), Halt> {
        // Decision: a gateway that drops `event:` lines still sends the `type` in the data;
        // fall back to it instead of silently ignoring the whole stream.
        let fallback;
        let name = match event.event {
            Some(name) => name,
            None => {
                fallback = serde_json::from_str::<TypeOnly<'_>>(event.data)
                    .map(|t| t.kind)
                    .unwrap_or_default();
                fallback.as_ref()
            }
        };
        if name == "error" {
            return Err(Halt::Fail(event.data.to_string()));
        }
        if !MESSAGE_EVENTS.contains(&name) {
            return Ok(());
        }
        self.handle(name, event.data, out).map_err(|err| match err {
            // pi quotes JavaScript's parser message (serde's differs in wording).
            HandleError::Parse => Halt::Fail(format!(
                "Could not parse Anthropic SSE event {name}: {}; data={}; raw={}",
                crate::json_stream::js_parse_error_with_repair(event.data),
                event.data,
                event.raw
            )),
            HandleError::Fail(message) => Halt::Fail(message),
        })
    }

    fn finish(&mut self, out: &mut Output) -> Result<(), String> {
        if self.saw_message_start && !self.saw_message_stop {
            return Err("Anthropic stream ended before message_stop".into());
        }
        match out.message.stop_reason {
            StopReason::Pending => Err("Anthropic stream ended without a stop reason".into()),
            StopReason::Error | StopReason::Aborted => Err(out
                .message
                .error_message
                .clone()
                .unwrap_or_else(|| "An unknown error occurred".into())),
            _ => Ok(()),
        }
    }

    fn wants_raw_lines(&self) -> bool {
        true
    }

    fn on_failure(&mut self, out: &mut Output) {
        for open in self.blocks.values() {
            if let Some(args) = &open.arguments {
                if !args.trim().is_empty() {
                    out.set_partial_arguments(open.content_index, args);
                }
            }
        }
    }
}
