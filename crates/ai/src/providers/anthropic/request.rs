//! The Messages request: system blocks, tools (strict where allowed), thinking and effort
//! switches, cache markers, beta and affinity headers.

use serde_json::{json, Map, Value};

use crate::options::{CacheRetention, StreamOptions};
use crate::providers::constrained::Refusal;
use crate::providers::{
    compat_bool, compat_str, final_headers, user_agent, PreparedRequest, Transcript,
};
use crate::types::{Model, Tool};

use super::convert::{convert_messages, insert_effort_messages, ConvertOptions, NativeTools};
use super::oauth::{is_oauth_token, to_claude_code_name};

const ANTHROPIC_VERSION: &str = "2023-06-01";
const BETA_INTERLEAVED_THINKING: &str = "interleaved-thinking-2025-05-14";
const BETA_FINE_GRAINED_TOOLS: &str = "fine-grained-tool-streaming-2025-05-14";
const OAUTH_BETAS: [&str; 2] = ["claude-code-20250219", "oauth-2025-04-20"];
const BETA_SERVER_SIDE_FALLBACK: &str = "server-side-fallback-2026-07-01";
const BETA_MID_CONVERSATION_OUTPUT_CONFIG: &str = "mid-conversation-output-config-2026-07-01";
const BETA_THINKING_BINDING_CONTROLS: &str = "thinking-binding-controls-2026-08-01";
const BETA_INLINE_TOOLS: &str = "inline-tools-2026-09-15";
const BETA_MESSAGE_THREADS: &str = "message-threads-2026-08-12";
/// Declared last whenever tool changes are native (DECISIONS §26.22): Anthropic adds hidden
/// scaffolding for mid-conversation tool changes, and a deferred tool present from the first
/// request keeps that scaffolding inside the cached prefix. It is never activated.
const DEFERRED_PLACEHOLDER_NAME: &str = "__pi_deferred_placeholder__";
const DEFERRED_PLACEHOLDER_DESCRIPTION: &str =
    "Reserved placeholder. Never available. Never call this.";
const OAUTH_IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";

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

/// The request, and whether a `prefer` tool went out strict (then a strict-limits rejection
/// is answered by resending with `disable_preferred_strict`, DECISIONS §26.25).
pub(crate) fn build_request_with(
    model: &Model,
    transcript: &Transcript,
    options: &StreamOptions,
    api_key: Option<&str>,
    disable_preferred_strict: bool,
) -> Result<(PreparedRequest, bool), Refusal> {
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
) -> Result<Vec<Value>, Refusal> {
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
