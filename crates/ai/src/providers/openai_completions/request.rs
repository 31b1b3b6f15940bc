//! The Chat Completions request body: messages, tools, reasoning switches, cache markers.

use serde_json::{json, Map, Value};

use super::compat::{compat_for, Compat, ThinkingFormat};
use crate::options::{CacheRetention, StreamOptions};
use crate::providers::constrained::Refusal;
use crate::providers::{
    cache_key, compat_value, final_headers, level_mapping, mapped_level, user_agent, LevelMapping,
    PreparedRequest, Transcript,
};
use crate::types::{ContentBlock, Message, Model};

use super::convert::{convert_messages, convert_tools};

const DEFAULT_BUDGETS: [(&str, u64); 4] = [
    ("minimal", 1024),
    ("low", 2048),
    ("medium", 8192),
    ("high", 16384),
];

pub(crate) fn build_request(
    model: &Model,
    transcript: &Transcript,
    options: &StreamOptions,
    api_key: Option<&str>,
) -> Result<PreparedRequest, Refusal> {
    let compat = compat_for(model);
    let retention = options.resolved_cache_retention();
    let grammar_inputs = crate::providers::constrained::declared_grammar_inputs(model, transcript)?;
    // Kimi-style tool additions: the request-level list stops at the last removal or
    // redefinition; later additions are announced in place (DECISIONS §26.51).
    let additions = (transcript.in_place
        && crate::providers::compat_bool(model, "supportsMidConvoToolAdditions") == Some(true))
    .then(|| transcript.anchored_additions());
    let request_tools = additions
        .as_ref()
        .map_or(transcript.tools.as_slice(), |a| a.request_tools.as_slice());
    let mut messages = convert_messages(
        model,
        transcript,
        &compat,
        &grammar_inputs,
        additions.as_ref().map(|a| a.folded),
    )?;

    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("messages".into(), Value::Null); // placed here for key order, filled below
    body.insert("stream".into(), json!(true));
    let key_mode = compat.prompt_cache_key_mode.as_str();
    let supports_cache_key = key_mode == "enabled"
        || (key_mode == "auto"
            && (model.base_url.contains("api.openai.com")
                || (retention == CacheRetention::Long && compat.supports_long_cache_retention)));
    if retention != CacheRetention::None && supports_cache_key {
        if let Some(session) = &options.session_id {
            body.insert("prompt_cache_key".into(), json!(cache_key(session)));
        }
    }
    if retention == CacheRetention::Long && compat.supports_long_cache_retention {
        body.insert("prompt_cache_retention".into(), json!("24h"));
    }
    if compat.supports_usage_in_streaming {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if compat.supports_store {
        body.insert("store".into(), json!(false));
    }
    if let Some(max) = options.max_tokens.filter(|m| *m > 0) {
        body.insert(compat.max_tokens_field.clone(), json!(max));
    }
    if let Some(t) = options.temperature {
        body.insert("temperature".into(), json!(t));
    }
    let mut tools_value = None;
    if !request_tools.is_empty() {
        tools_value = Some(convert_tools(model, request_tools, &compat)?);
    } else if compat.requires_tools_with_tool_history && has_tool_history(&transcript.messages) {
        tools_value = Some(Vec::new());
    }
    if compat.cache_control_anthropic && retention != CacheRetention::None {
        let cc = if retention == CacheRetention::Long && compat.supports_long_cache_retention {
            json!({"type": "ephemeral", "ttl": "1h"})
        } else {
            json!({"type": "ephemeral"})
        };
        apply_anthropic_cache_control(&mut messages, tools_value.as_mut(), &cc);
    }
    body["messages"] = Value::Array(messages);
    let has_request_tools = !request_tools.is_empty();
    if let Some(tools) = tools_value {
        body.insert("tools".into(), Value::Array(tools));
    }
    if has_request_tools && compat.zai_tool_stream {
        body.insert("tool_stream".into(), json!(true));
    }
    if let Some(choice) = &options.tool_choice {
        body.insert("tool_choice".into(), choice.clone());
    }
    if let Some(p) = compat_value(model, "vllmPriority") {
        body.insert("priority".into(), p.clone());
    }

    let effort = options.openai.reasoning_effort.clone();
    if model.reasoning {
        apply_reasoning(model, &compat, effort.as_deref(), &mut body);
        if let (Some(field), Some(level)) = (&compat.thinking_token_budget_field, effort.as_deref())
        {
            let budget = options.openai.thinking_budget.unwrap_or_else(|| {
                let lookup = if matches!(level, "xhigh" | "max") {
                    "high"
                } else {
                    level
                };
                DEFAULT_BUDGETS
                    .iter()
                    .find(|(l, _)| *l == lookup)
                    .map_or(0, |(_, b)| *b)
            });
            let ceiling = body
                .get("max_tokens")
                .or_else(|| body.get("max_completion_tokens"))
                .and_then(Value::as_u64)
                .unwrap_or(model.max_tokens);
            let clamped = budget.min(ceiling.saturating_sub(1024));
            if clamped > 0 {
                body.insert(field.clone(), json!(clamped));
            }
        }
    }
    if let Some(routing) = compat_value(model, "openRouterRouting").filter(|v| v.is_object()) {
        body.insert("provider".into(), routing.clone());
    }

    // Headers.
    let mut headers: Vec<(String, String)> = vec![
        ("content-type".into(), "application/json".into()),
        ("accept".into(), "text/event-stream".into()),
        ("user-agent".into(), user_agent()),
    ];
    if let Some(key) = api_key {
        headers.push(("authorization".into(), format!("Bearer {key}")));
    }
    if let Some(session) = &options.session_id {
        if compat.send_session_affinity_headers && retention != CacheRetention::None {
            match compat.session_affinity_format.as_str() {
                "openrouter" => headers.push(("x-session-id".into(), session.clone())),
                "openai-nosession" => {
                    headers.push(("x-client-request-id".into(), session.clone()));
                    headers.push(("x-session-affinity".into(), session.clone()));
                }
                _ => {
                    headers.push(("session_id".into(), session.clone()));
                    headers.push(("x-client-request-id".into(), session.clone()));
                    headers.push(("x-session-affinity".into(), session.clone()));
                }
            }
        }
    }
    crate::providers::simple::merge_sampling_params(
        &mut body,
        model,
        options.openai.reasoning_effort.as_deref(),
        options.sampling_params.as_ref(),
    );
    Ok(PreparedRequest {
        url: format!("{}/chat/completions", model.base_url.trim_end_matches('/')),
        headers: final_headers(headers, model, transcript, options),
        body: Value::Object(body),
    })
}

/// Reasoning fields per `thinkingFormat` (only for reasoning models).
fn apply_reasoning(
    model: &Model,
    compat: &Compat,
    effort: Option<&str>,
    body: &mut Map<String, Value>,
) {
    let off = level_mapping(model, "off");
    let off_not_null = off != LevelMapping::Unsupported;
    let off_value = || match &off {
        LevelMapping::Value(v) => v.clone(),
        _ => "none".to_string(),
    };
    match compat.thinking_format {
        ThinkingFormat::Zai => {
            body.insert(
                "thinking".into(),
                if effort.is_some() {
                    json!({"type": "enabled", "clear_thinking": false})
                } else {
                    json!({"type": "disabled"})
                },
            );
            if let (Some(e), true) = (effort, compat.supports_reasoning_effort) {
                match level_mapping(model, e) {
                    LevelMapping::Value(v) => {
                        body.insert("reasoning_effort".into(), json!(v));
                    }
                    LevelMapping::Missing => {
                        body.insert("reasoning_effort".into(), json!(e));
                    }
                    LevelMapping::Unsupported => {}
                }
            }
        }
        ThinkingFormat::Qwen => {
            body.insert("enable_thinking".into(), json!(effort.is_some()));
            if let (Some(e), true) = (effort, compat.supports_reasoning_effort) {
                body.insert("reasoning_effort".into(), json!(mapped_level(model, e)));
            }
        }
        ThinkingFormat::QwenChatTemplate => {
            body.insert(
                "chat_template_kwargs".into(),
                json!({"enable_thinking": effort.is_some(), "preserve_thinking": true}),
            );
        }
        ThinkingFormat::DeepSeek => {
            if effort.is_some() {
                body.insert("thinking".into(), json!({"type": "enabled"}));
            } else if off_not_null {
                body.insert("thinking".into(), json!({"type": "disabled"}));
            }
            if let (Some(e), true) = (effort, compat.supports_reasoning_effort) {
                body.insert("reasoning_effort".into(), json!(mapped_level(model, e)));
            }
        }
        ThinkingFormat::OpenRouter => {
            if let Some(e) = effort {
                body.insert(
                    "reasoning".into(),
                    json!({"effort": mapped_level(model, e)}),
                );
            } else if off_not_null {
                body.insert("reasoning".into(), json!({"effort": off_value()}));
            }
        }
        ThinkingFormat::AntLing => {
            if let Some(LevelMapping::Value(v)) = effort.map(|e| level_mapping(model, e)) {
                body.insert("reasoning".into(), json!({"effort": v}));
            }
        }
        ThinkingFormat::Together => {
            body.insert("reasoning".into(), json!({"enabled": effort.is_some()}));
            if let (Some(e), true) = (effort, compat.supports_reasoning_effort) {
                body.insert("reasoning_effort".into(), json!(mapped_level(model, e)));
            }
        }
        ThinkingFormat::StringThinking => {
            if let Some(e) = effort {
                body.insert("thinking".into(), json!(mapped_level(model, e)));
            } else if off_not_null {
                body.insert("thinking".into(), json!(off_value()));
            }
        }
        ThinkingFormat::OpenAi => {
            if !compat.supports_reasoning_effort {
                return;
            }
            match effort {
                Some(e) => {
                    body.insert("reasoning_effort".into(), json!(mapped_level(model, e)));
                }
                None => {
                    if let LevelMapping::Value(v) = off {
                        body.insert("reasoning_effort".into(), json!(v));
                    }
                }
            }
        }
    }
}

fn has_tool_history(messages: &[Message]) -> bool {
    messages.iter().any(|m| match m {
        Message::ToolResult(_) => true,
        Message::Assistant(a) => a
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolCall(_))),
        _ => false,
    })
}

/// OpenRouter → Claude: cache markers on the system prompt, the last tool and the last
/// conversation message with text.
fn apply_anthropic_cache_control(
    messages: &mut [Value],
    tools: Option<&mut Vec<Value>>,
    cc: &Value,
) {
    if let Some(system) = messages.iter_mut().find(|m| {
        matches!(
            m.get("role").and_then(Value::as_str),
            Some("system" | "developer")
        )
    }) {
        mark_last_text(system, cc);
    }
    if let Some(last) = messages.iter_mut().rev().find(|m| {
        matches!(
            m.get("role").and_then(Value::as_str),
            Some("user" | "assistant" | "tool")
        ) && has_text(m)
    }) {
        mark_last_text(last, cc);
    }
    if let Some(Value::Object(tool)) = tools.and_then(|t| t.last_mut()) {
        tool.insert("cache_control".into(), cc.clone());
    }
}

fn has_text(message: &Value) -> bool {
    match message.get("content") {
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(parts)) => parts
            .iter()
            .any(|p| p.get("type").and_then(Value::as_str) == Some("text")),
        _ => false,
    }
}

fn mark_last_text(message: &mut Value, cc: &Value) {
    if let Some(text) = message
        .get("content")
        .and_then(Value::as_str)
        .map(str::to_string)
    {
        message["content"] = json!([{"type": "text", "text": text, "cache_control": cc}]);
        return;
    }
    if let Some(parts) = message.get_mut("content").and_then(Value::as_array_mut) {
        if let Some(Value::Object(part)) = parts
            .iter_mut()
            .rev()
            .find(|p| p.get("type").and_then(Value::as_str) == Some("text"))
        {
            part.insert("cache_control".into(), cc.clone());
        }
    }
}
