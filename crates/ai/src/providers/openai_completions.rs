//! OpenAI Chat Completions (`openai-completions`): `POST {baseUrl}/chat/completions`, SSE of
//! `chat.completion.chunk` objects. Also the API of most OpenAI-compatible servers, whose quirks
//! are captured by [`Compat`] (detected from provider id and base URL, overridable per field
//! through `model.compat`).

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{
    cache_key, compat_value, final_headers, level_mapping, mapped_level, user_agent, CowStr, Halt,
    LevelMapping, Output, PreparedRequest, StreamParser, Transcript,
};
use crate::stream::sse::SseEvent;
use crate::stream::{CacheRetention, StreamOptions};
use crate::types::{Content, ContentBlock, Message, Model, StopReason, Tool, Usage};

/// How a server wants reasoning switched on and off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinkingFormat {
    OpenAi,
    OpenRouter,
    DeepSeek,
    Zai,
    Qwen,
    QwenChatTemplate,
    Together,
    StringThinking,
    AntLing,
}

impl ThinkingFormat {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "openai" => Self::OpenAi,
            "openrouter" => Self::OpenRouter,
            "deepseek" => Self::DeepSeek,
            "zai" => Self::Zai,
            "qwen" => Self::Qwen,
            "qwen-chat-template" => Self::QwenChatTemplate,
            "together" => Self::Together,
            "string-thinking" => Self::StringThinking,
            "ant-ling" => Self::AntLing,
            _ => return None,
        })
    }
}

/// Resolved server quirks (ai-layer §5.2).
#[derive(Debug, Clone, PartialEq)]
pub struct Compat {
    pub supports_store: bool,
    pub supports_developer_role: bool,
    pub supports_reasoning_effort: bool,
    pub supports_usage_in_streaming: bool,
    pub supports_finish_reason: bool,
    /// `max_tokens` or `max_completion_tokens`.
    pub max_tokens_field: String,
    pub requires_tool_result_name: bool,
    pub requires_assistant_after_tool_result: bool,
    pub requires_non_null_assistant_content: bool,
    pub requires_tools_with_tool_history: bool,
    pub requires_thinking_as_text: bool,
    pub requires_reasoning_content_on_assistant_messages: bool,
    pub thinking_format: ThinkingFormat,
    pub supports_strict_mode: bool,
    /// `anthropic` = OpenRouter-to-Claude cache markers.
    pub cache_control_anthropic: bool,
    pub send_session_affinity_headers: bool,
    pub session_affinity_format: String,
    pub supports_long_cache_retention: bool,
    /// `thinking_token_budget`-style field name, when the server takes a budget.
    pub thinking_token_budget_field: Option<String>,
    /// `auto` (default), `enabled`, `disabled`.
    pub prompt_cache_key_mode: String,
}

/// Detects the quirks of the server behind `model`, then applies `model.compat` overrides.
pub fn compat_for(model: &Model) -> Compat {
    let provider = model.provider.as_str();
    let url = model.base_url.as_str();
    let is_zai = matches!(provider, "zai" | "zai-coding-cn")
        || url.contains("api.z.ai")
        || url.contains("open.bigmodel.cn");
    let is_together = provider == "together"
        || url.contains("api.together.ai")
        || url.contains("api.together.xyz");
    let is_moonshot =
        matches!(provider, "moonshotai" | "moonshotai-cn") || url.contains("api.moonshot.");
    let is_openrouter = provider == "openrouter" || url.contains("openrouter.ai");
    let is_cf_workers = provider == "cloudflare-workers-ai" || url.contains("api.cloudflare.com");
    let is_cf_gateway =
        provider == "cloudflare-ai-gateway" || url.contains("gateway.ai.cloudflare.com");
    let is_nvidia = provider == "nvidia" || url.contains("integrate.api.nvidia.com");
    let is_ant_ling = provider == "ant-ling" || url.contains("api.ant-ling.com");
    let is_cerebras = provider == "cerebras" || url.contains("cerebras.ai");
    let is_deepseek = provider == "deepseek" || url.to_ascii_lowercase().contains("deepseek.com");
    let is_xai = provider == "xai" || url.contains("api.x.ai");
    let is_opencode = provider == "opencode" || url.contains("opencode.ai");
    let is_chutes = url.contains("chutes.ai");
    let is_openai = provider == "openai" || url.contains("api.openai.com");
    // Local servers (Arbor addition): llama.cpp, Ollama, LM Studio and vLLM take the classic
    // `max_tokens` and have no use for `store`.
    let is_ollama = provider == "ollama" || url.contains(":11434");
    let is_llama_cpp = matches!(provider, "llama.cpp" | "llamacpp" | "llama-cpp");
    let is_lmstudio = matches!(provider, "lmstudio" | "lm-studio") || url.contains(":1234/");
    let is_vllm = provider == "vllm";
    let is_local_server = is_ollama || is_llama_cpp || is_lmstudio || is_vllm;

    let non_standard = is_nvidia
        || is_cerebras
        || is_xai
        || is_together
        || is_chutes
        || is_deepseek
        || is_zai
        || is_moonshot
        || is_opencode
        || is_cf_workers
        || is_cf_gateway
        || is_ant_ling
        || is_local_server;
    let use_max_tokens = is_chutes
        || is_deepseek
        || is_moonshot
        || is_cf_gateway
        || is_together
        || is_nvidia
        || is_ant_ling
        || is_zai
        || is_ollama
        || is_llama_cpp
        || is_lmstudio;
    let thinking_format = if is_deepseek {
        ThinkingFormat::DeepSeek
    } else if is_zai {
        ThinkingFormat::Zai
    } else if is_together {
        ThinkingFormat::Together
    } else if is_ant_ling {
        ThinkingFormat::AntLing
    } else if is_openrouter {
        ThinkingFormat::OpenRouter
    } else {
        ThinkingFormat::OpenAi
    };
    let mut c = Compat {
        supports_store: !non_standard,
        supports_developer_role: is_openai,
        supports_reasoning_effort: !(is_xai
            || is_zai
            || is_moonshot
            || is_together
            || is_cf_gateway
            || is_nvidia
            || is_ant_ling),
        supports_usage_in_streaming: true,
        supports_finish_reason: true,
        max_tokens_field: if use_max_tokens {
            "max_tokens"
        } else {
            "max_completion_tokens"
        }
        .into(),
        requires_tool_result_name: false,
        requires_assistant_after_tool_result: false,
        requires_non_null_assistant_content: false,
        requires_tools_with_tool_history: false,
        requires_thinking_as_text: false,
        requires_reasoning_content_on_assistant_messages: is_deepseek,
        thinking_format,
        supports_strict_mode: false,
        cache_control_anthropic: provider == "openrouter" && model.id.starts_with("anthropic/"),
        send_session_affinity_headers: is_openrouter,
        session_affinity_format: if is_openrouter {
            "openrouter"
        } else {
            "openai"
        }
        .into(),
        supports_long_cache_retention: !(is_together
            || is_cf_workers
            || is_cf_gateway
            || is_nvidia
            || is_ant_ling),
        thinking_token_budget_field: None,
        prompt_cache_key_mode: "auto".into(),
    };
    // Explicit overrides, field by field.
    let b = |k: &str| compat_value(model, k).and_then(Value::as_bool);
    let s = |k: &str| {
        compat_value(model, k)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    macro_rules! over_bool {
        ($field:ident, $key:literal) => {
            if let Some(v) = b($key) {
                c.$field = v;
            }
        };
    }
    over_bool!(supports_store, "supportsStore");
    over_bool!(supports_developer_role, "supportsDeveloperRole");
    over_bool!(supports_reasoning_effort, "supportsReasoningEffort");
    over_bool!(supports_usage_in_streaming, "supportsUsageInStreaming");
    over_bool!(supports_finish_reason, "supportsFinishReason");
    over_bool!(requires_tool_result_name, "requiresToolResultName");
    over_bool!(
        requires_assistant_after_tool_result,
        "requiresAssistantAfterToolResult"
    );
    over_bool!(
        requires_non_null_assistant_content,
        "requiresNonNullAssistantContent"
    );
    over_bool!(
        requires_tools_with_tool_history,
        "requiresToolsWithToolHistory"
    );
    over_bool!(requires_thinking_as_text, "requiresThinkingAsText");
    over_bool!(
        requires_reasoning_content_on_assistant_messages,
        "requiresReasoningContentOnAssistantMessages"
    );
    over_bool!(supports_strict_mode, "supportsStrictMode");
    over_bool!(send_session_affinity_headers, "sendSessionAffinityHeaders");
    over_bool!(supports_long_cache_retention, "supportsLongCacheRetention");
    if let Some(v) = s("maxTokensField") {
        c.max_tokens_field = v;
    }
    if let Some(f) = s("thinkingFormat")
        .as_deref()
        .and_then(ThinkingFormat::parse)
    {
        c.thinking_format = f;
    }
    if let Some(v) = s("cacheControlFormat") {
        c.cache_control_anthropic = v == "anthropic";
    }
    if let Some(v) = s("sessionAffinityFormat") {
        c.session_affinity_format = v;
    }
    if let Some(v) = s("promptCacheKeyMode") {
        c.prompt_cache_key_mode = v;
    }
    c.thinking_token_budget_field = s("thinkingTokenBudgetField").or_else(|| {
        (b("supportsThinkingTokenBudget") == Some(true)).then(|| "thinking_token_budget".into())
    });
    c
}

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
) -> Result<PreparedRequest, String> {
    let compat = compat_for(model);
    let retention = options.resolved_cache_retention();
    let mut messages = convert_messages(model, transcript, &compat);

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
    if !transcript.tools.is_empty() {
        tools_value = Some(convert_tools(&transcript.tools, &compat));
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
    if let Some(tools) = tools_value {
        body.insert("tools".into(), Value::Array(tools));
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
    super::simple::merge_sampling_params(
        &mut body,
        model,
        options.openai.reasoning_effort.as_deref(),
        options.sampling_params.as_ref(),
    );
    Ok(PreparedRequest {
        url: format!("{}/chat/completions", model.base_url.trim_end_matches('/')),
        headers: final_headers(headers, model, options),
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

fn convert_tools(tools: &[Tool], compat: &Compat) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            let mut function = Map::new();
            function.insert("name".into(), json!(tool.name));
            function.insert("description".into(), json!(tool.description));
            function.insert("parameters".into(), tool.parameters.clone());
            if compat.supports_strict_mode {
                function.insert("strict".into(), json!(false));
            }
            json!({"type": "function", "function": function})
        })
        .collect()
}

fn image_url(mime: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}})
}

const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_text"];

/// A JSON array of OpenRouter-style reasoning details stored as a thinking signature.
fn parse_reasoning_details(signature: Option<&str>) -> Option<Vec<Value>> {
    let parsed: Value = serde_json::from_str(signature?).ok()?;
    let items = parsed.as_array()?;
    (!items.is_empty() && items.iter().all(is_reasoning_detail)).then(|| items.clone())
}

fn is_reasoning_detail(detail: &Value) -> bool {
    let Some(obj) = detail.as_object() else {
        return false;
    };
    let common_ok = obj.get("id").is_none_or(|v| v.is_null() || v.is_string())
        && obj.get("format").is_none_or(Value::is_string)
        && obj.get("index").is_none_or(Value::is_number);
    if !common_ok {
        return false;
    }
    match obj.get("type").and_then(Value::as_str) {
        Some("reasoning.summary") => obj.get("summary").is_some_and(Value::is_string),
        Some("reasoning.encrypted") => obj.get("data").is_some_and(Value::is_string),
        Some("reasoning.text") => {
            obj.get("text").is_some_and(Value::is_string)
                && obj
                    .get("signature")
                    .is_none_or(|v| v.is_null() || v.is_string())
        }
        _ => false,
    }
}

/// Legacy: an encrypted reasoning detail stored in a tool call's `thoughtSignature`.
fn legacy_reasoning_detail(signature: Option<&str>) -> Option<Value> {
    let parsed: Value = serde_json::from_str(signature?).ok()?;
    let ok = is_reasoning_detail(&parsed)
        && parsed.get("type").and_then(Value::as_str) == Some("reasoning.encrypted")
        && parsed
            .get("id")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
        && parsed
            .get("data")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty());
    ok.then_some(parsed)
}

fn convert_messages(model: &Model, transcript: &Transcript, compat: &Compat) -> Vec<Value> {
    let mut params: Vec<Value> = Vec::new();
    let instruction_role = if model.reasoning && compat.supports_developer_role {
        "developer"
    } else {
        "system"
    };
    if !transcript.system_prompt.is_empty() {
        params.push(json!({"role": instruction_role, "content": transcript.system_prompt}));
    }
    let bridge = || json!({"role": "assistant", "content": "I have processed the tool results."});
    let messages = &transcript.messages;
    let mut last_role: Option<&str> = None;
    let mut i = 0;
    while i < messages.len() {
        let message = &messages[i];
        if compat.requires_assistant_after_tool_result
            && last_role == Some("toolResult")
            && matches!(message, Message::User(_))
        {
            params.push(bridge());
        }
        match message {
            Message::User(user) => match &user.content {
                Content::Text(text) => params.push(json!({"role": "user", "content": text})),
                Content::Blocks(blocks) => {
                    let parts: Vec<Value> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) if !t.text.is_empty() => {
                                Some(json!({"type": "text", "text": t.text}))
                            }
                            ContentBlock::Image(img) => Some(image_url(&img.mime_type, &img.data)),
                            _ => None,
                        })
                        .collect();
                    if parts.is_empty() {
                        i += 1;
                        continue;
                    }
                    params.push(json!({"role": "user", "content": parts}));
                }
            },
            Message::Assistant(assistant) => {
                let mut msg = Map::new();
                msg.insert("role".into(), json!("assistant"));
                let null_content = !(compat.requires_assistant_after_tool_result
                    || compat.requires_non_null_assistant_content);
                msg.insert(
                    "content".into(),
                    if null_content { Value::Null } else { json!("") },
                );
                let text_parts: Vec<&str> = assistant
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) if !t.text.trim().is_empty() => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect();
                let text = text_parts.concat();
                let thinking: Vec<&crate::types::ThinkingContent> = assistant
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Thinking(t) => Some(t),
                        _ => None,
                    })
                    .collect();
                let calls: Vec<&crate::types::ToolCall> = assistant
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::ToolCall(c) => Some(c),
                        _ => None,
                    })
                    .collect();
                let signed_details = thinking
                    .iter()
                    .find_map(|t| parse_reasoning_details(t.thinking_signature.as_deref()));
                let legacy: Vec<Value> = calls
                    .iter()
                    .filter_map(|c| legacy_reasoning_detail(c.thought_signature.as_deref()))
                    .collect();
                let preserved = signed_details.or((!legacy.is_empty()).then_some(legacy));
                let non_empty_thinking: Vec<&&crate::types::ThinkingContent> = thinking
                    .iter()
                    .filter(|t| !t.thinking.trim().is_empty())
                    .collect();
                if !non_empty_thinking.is_empty() {
                    if compat.requires_thinking_as_text {
                        let joined: Vec<&str> = non_empty_thinking
                            .iter()
                            .map(|t| t.thinking.as_str())
                            .collect();
                        let mut parts = vec![json!({"type": "text", "text": joined.join("\n\n")})];
                        parts.extend(
                            text_parts
                                .iter()
                                .map(|t| json!({"type": "text", "text": t})),
                        );
                        msg.insert("content".into(), Value::Array(parts));
                    } else {
                        if !text.is_empty() {
                            msg.insert("content".into(), json!(text));
                        }
                        if preserved.is_none() {
                            let mut signature = non_empty_thinking[0].thinking_signature.clone();
                            if model.provider == "opencode-go"
                                && signature.as_deref() == Some("reasoning")
                            {
                                signature = Some("reasoning_content".into());
                            }
                            if let Some(field) =
                                signature.filter(|s| REASONING_FIELDS.contains(&s.as_str()))
                            {
                                let joined: Vec<&str> = non_empty_thinking
                                    .iter()
                                    .map(|t| t.thinking.as_str())
                                    .collect();
                                msg.insert(field, json!(joined.join("\n")));
                            }
                        }
                    }
                } else if !text.is_empty() {
                    msg.insert("content".into(), json!(text));
                }
                if !calls.is_empty() {
                    let tool_calls: Vec<Value> = calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments.to_string()}
                            })
                        })
                        .collect();
                    msg.insert("tool_calls".into(), Value::Array(tool_calls));
                }
                if let Some(details) = preserved {
                    msg.insert("reasoning_details".into(), Value::Array(details));
                }
                if compat.requires_reasoning_content_on_assistant_messages
                    && model.reasoning
                    && !msg.contains_key("reasoning_content")
                {
                    msg.insert("reasoning_content".into(), json!(""));
                }
                let has_content = match msg.get("content") {
                    Some(Value::String(s)) => !s.is_empty(),
                    Some(Value::Array(a)) => !a.is_empty(),
                    _ => false,
                };
                if !has_content && !msg.contains_key("tool_calls") {
                    i += 1;
                    continue;
                }
                params.push(Value::Object(msg));
            }
            Message::ToolResult(_) => {
                let mut images = Vec::new();
                while let Some(Message::ToolResult(result)) = messages.get(i) {
                    let blocks = super::content_blocks(&result.content);
                    let texts: Vec<&str> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(t.text.as_str()),
                            _ => None,
                        })
                        .collect();
                    let text = texts.join("\n");
                    let has_images = blocks.iter().any(|b| matches!(b, ContentBlock::Image(_)));
                    let content = if !text.trim().is_empty() {
                        text
                    } else if has_images {
                        "(see attached image)".to_string()
                    } else {
                        "(no tool output)".to_string()
                    };
                    let mut tool_msg = Map::new();
                    tool_msg.insert("role".into(), json!("tool"));
                    tool_msg.insert("content".into(), json!(content));
                    tool_msg.insert("tool_call_id".into(), json!(result.tool_call_id));
                    if compat.requires_tool_result_name && !result.tool_name.is_empty() {
                        tool_msg.insert("name".into(), json!(result.tool_name));
                    }
                    params.push(Value::Object(tool_msg));
                    if has_images && model.input.iter().any(|i| i == "image") {
                        for b in &blocks {
                            if let ContentBlock::Image(img) = b {
                                images.push(image_url(&img.mime_type, &img.data));
                            }
                        }
                    }
                    i += 1;
                }
                if images.is_empty() {
                    last_role = Some("toolResult");
                } else {
                    if compat.requires_assistant_after_tool_result {
                        params.push(bridge());
                    }
                    let mut parts = vec![
                        json!({"type": "text", "text": "Attached image(s) from tool result:"}),
                    ];
                    parts.extend(images);
                    params.push(json!({"role": "user", "content": parts}));
                    last_role = Some("user");
                }
                continue;
            }
            Message::System(_) => {}
        }
        last_role = Some(match message {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
            Message::System(_) => "system",
        });
        i += 1;
    }
    params
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

// ---------------------------------------------------------------------------------------------
// Stream parsing.

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    id: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    model: Option<CowStr<'a>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(borrow, default)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<CowStr<'a>>,
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    reasoning_content: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    reasoning: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    reasoning_text: Option<CowStr<'a>>,
    #[serde(default)]
    reasoning_details: Option<Value>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    id: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(borrow, default)]
    name: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    arguments: Option<CowStr<'a>>,
}

struct ToolState {
    content_index: usize,
    stream_index: Option<u64>,
    id: String,
    arguments: String,
}

pub struct Parser {
    text_index: Option<usize>,
    thinking_index: Option<usize>,
    tools: Vec<ToolState>,
    /// Position in `tools` by stream index and by id.
    by_index: HashMap<u64, usize>,
    by_id: HashMap<String, usize>,
    reasoning_details: Option<Vec<Value>>,
    has_finish_reason: bool,
    supports_finish_reason: bool,
    opencode_go: bool,
}

impl Parser {
    pub fn new(model: &Model) -> Self {
        Self {
            text_index: None,
            thinking_index: None,
            tools: Vec::new(),
            by_index: HashMap::new(),
            by_id: HashMap::new(),
            reasoning_details: None,
            has_finish_reason: false,
            supports_finish_reason: compat_for(model).supports_finish_reason,
            opencode_go: model.provider == "opencode-go",
        }
    }

    fn ensure_thinking(&mut self, out: &mut Output, signature: &str) -> usize {
        *self.thinking_index.get_or_insert_with(|| {
            out.thinking_start(String::new(), Some(signature.to_string()), false)
        })
    }

    fn apply_reasoning_details(&self, out: &mut Output) {
        if let (Some(details), Some(index)) = (&self.reasoning_details, self.thinking_index) {
            if let Some(t) = out.thinking_mut(index) {
                t.thinking_signature = Some(Value::Array(details.clone()).to_string());
            }
        }
    }

    fn chunk(&mut self, chunk: Chunk<'_>, out: &mut Output) {
        if out.message.response_id.is_none() {
            if let Some(id) = chunk.id.as_deref().filter(|s| !s.is_empty()) {
                out.message.response_id = Some(id.to_string());
            }
        }
        if let Some(m) = chunk.model.as_deref().filter(|m| !m.is_empty()) {
            if m != out.model().id && out.message.response_model.is_none() {
                out.message.response_model = Some(m.to_string());
            }
        }
        if let Some(usage) = chunk.usage.as_ref().filter(|u| u.is_object()) {
            self.usage(usage, out);
        }
        let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) else {
            return;
        };
        if chunk.usage.as_ref().is_none_or(Value::is_null) {
            if let Some(usage) = choice.usage.as_ref().filter(|u| u.is_object()) {
                self.usage(usage, out);
            }
        }
        if let Some(reason) = choice.finish_reason.as_deref() {
            out.set_raw_stop_reason(reason);
            let (stop, message) = map_finish_reason(reason);
            out.message.stop_reason = stop;
            if message.is_some() {
                out.message.error_message = message;
            }
            self.has_finish_reason = true;
        }
        let Some(delta) = choice.delta else {
            return;
        };
        let reasoning = [
            ("reasoning_content", &delta.reasoning_content),
            ("reasoning", &delta.reasoning),
            ("reasoning_text", &delta.reasoning_text),
        ]
        .into_iter()
        .find_map(|(field, v)| v.as_deref().filter(|s| !s.is_empty()).map(|s| (field, s)));
        if let Some((field, text)) = reasoning {
            let signature = if self.opencode_go && field == "reasoning" {
                "reasoning_content"
            } else {
                field
            };
            let index = self.ensure_thinking(out, signature);
            out.thinking_delta(index, text);
        }
        if let Some(Value::Array(details)) = &delta.reasoning_details {
            for detail in details.iter().filter(|d| is_reasoning_detail(d)) {
                self.ensure_thinking(out, "");
                append_reasoning_detail(
                    self.reasoning_details.get_or_insert_with(Vec::new),
                    detail,
                );
            }
        }
        if let Some(content) = delta.content.as_deref().filter(|s| !s.is_empty()) {
            let index = *self
                .text_index
                .get_or_insert_with(|| out.text_start(String::new()));
            out.text_delta(index, content);
        }
        for call in delta.tool_calls.into_iter().flatten() {
            let name = call
                .function
                .as_ref()
                .and_then(|f| f.name.as_deref())
                .unwrap_or("");
            let id = call.id.as_deref().unwrap_or("");
            let pos = call
                .index
                .and_then(|i| self.by_index.get(&i).copied())
                .or_else(|| self.by_id.get(id).copied().filter(|_| !id.is_empty()));
            let pos = match pos {
                Some(p) => p,
                None => {
                    let content_index =
                        out.toolcall_start(id.to_string(), name.to_string(), json!({}));
                    self.tools.push(ToolState {
                        content_index,
                        stream_index: call.index,
                        id: id.to_string(),
                        arguments: String::new(),
                    });
                    self.tools.len() - 1
                }
            };
            if let Some(i) = call.index {
                self.by_index.entry(i).or_insert(pos);
            }
            if !id.is_empty() {
                self.by_id.insert(id.to_string(), pos);
            }
            let state = &mut self.tools[pos];
            if state.stream_index.is_none() {
                state.stream_index = call.index;
            }
            if let Some(tc) = out.toolcall_mut(state.content_index) {
                if tc.id.is_empty() && !id.is_empty() {
                    tc.id = id.to_string();
                    state.id = id.to_string();
                }
                if tc.name.is_empty() && !name.is_empty() {
                    tc.name = name.to_string();
                }
            }
            let fragment = call
                .function
                .as_ref()
                .and_then(|f| f.arguments.as_deref())
                .unwrap_or("");
            state.arguments.push_str(fragment);
            out.toolcall_delta(state.content_index, fragment);
        }
    }

    fn usage(&self, raw: &Value, out: &mut Output) {
        let n = |p: &str| raw.pointer(p).and_then(Value::as_u64);
        let prompt = n("/prompt_tokens").unwrap_or(0);
        let cache_read = n("/prompt_tokens_details/cached_tokens")
            .or_else(|| n("/prompt_cache_hit_tokens"))
            .or_else(|| n("/cached_tokens"))
            .unwrap_or(0);
        let cache_write = n("/prompt_tokens_details/cache_write_tokens").unwrap_or(0);
        let output = n("/completion_tokens").unwrap_or(0);
        let input = prompt.saturating_sub(cache_read + cache_write);
        let mut usage: Usage = out.message.usage.clone();
        usage.input = input;
        usage.output = output;
        usage.cache_read = cache_read;
        usage.cache_write = cache_write;
        usage.cache_write_1h = None;
        usage.reasoning = Some(
            n("/completion_tokens_details/reasoning_tokens")
                .filter(|v| *v > 0)
                .or_else(|| n("/reasoning_tokens"))
                .unwrap_or(0),
        );
        usage.total_tokens = Some(input + output + cache_read + cache_write);
        out.set_usage(usage);
        // OpenRouter reports what it billed.
        if let Some(billed) = raw.get("cost").and_then(Value::as_f64) {
            let upstream = if raw.get("is_byok").and_then(Value::as_bool) == Some(true) {
                raw.pointer("/cost_details/upstream_inference_cost")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0)
            } else {
                0.0
            };
            out.message.usage.cost.total = crate::json::Num::new(billed + upstream);
            out.message.usage.cost.total_from_provider = Some(true);
        }
    }
}

fn append_reasoning_detail(details: &mut Vec<Value>, detail: &Value) {
    let kind = detail.get("type").and_then(Value::as_str);
    if let Some(last) = details.last_mut() {
        let last_kind = last.get("type").and_then(Value::as_str).map(str::to_string);
        let field = match (kind, last_kind.as_deref()) {
            (Some("reasoning.text"), Some("reasoning.text")) => Some("text"),
            (Some("reasoning.summary"), Some("reasoning.summary")) => Some("summary"),
            _ => None,
        };
        if let (Some(field), Some(obj)) = (field, last.as_object_mut()) {
            let addition = detail.get(field).and_then(Value::as_str).unwrap_or("");
            let merged = format!(
                "{}{addition}",
                obj.get(field).and_then(Value::as_str).unwrap_or("")
            );
            obj.insert(field.into(), json!(merged));
            if field == "text" {
                let empty = obj
                    .get("signature")
                    .is_none_or(|s| s.is_null() || s.as_str() == Some(""));
                if empty {
                    if let Some(sig) = detail.get("signature").filter(|s| !s.is_null()) {
                        obj.insert("signature".into(), sig.clone());
                    }
                }
            }
            for key in ["id", "format", "index"] {
                let missing = obj
                    .get(key)
                    .is_none_or(|v| v.is_null() || v.as_str() == Some(""));
                if missing {
                    if let Some(v) = detail.get(key) {
                        obj.insert(key.into(), v.clone());
                    }
                }
            }
            return;
        }
    }
    details.push(detail.clone());
}

fn map_finish_reason(reason: &str) -> (StopReason, Option<String>) {
    match reason {
        "stop" | "end" => (StopReason::Stop, None),
        "length" => (StopReason::Length, None),
        "tool_calls" | "function_call" => (StopReason::ToolUse, None),
        other => (
            StopReason::Error,
            Some(format!("Provider finish_reason: {other}")),
        ),
    }
}

/// The message of an in-stream error object (`error.message`, else its JSON).
fn stream_error_text(error: &Value) -> String {
    match error.get("message") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => error.to_string(),
    }
}

impl StreamParser for Parser {
    fn on_event(&mut self, event: SseEvent<'_>, out: &mut Output) -> Result<(), Halt> {
        if event.data == "[DONE]" {
            return Err(Halt::Stop);
        }
        let chunk: Chunk<'_> = serde_json::from_str(event.data).map_err(|_| {
            Halt::Fail("Error reading response: malformed server-sent event JSON.".to_string())
        })?;
        if event.event == Some("error") {
            let err = chunk
                .error
                .clone()
                .unwrap_or_else(|| serde_json::from_str(event.data).unwrap_or(Value::Null));
            return Err(Halt::Fail(stream_error_text(&err)));
        }
        if let Some(err) = chunk
            .error
            .as_ref()
            .filter(|e| !e.is_null() && e != &&Value::Bool(false))
        {
            let mut text = stream_error_text(err);
            if let Some(raw) = err.pointer("/metadata/raw") {
                let raw = raw.as_str().map_or_else(|| raw.to_string(), str::to_string);
                if !text.contains(&raw) {
                    text.push('\n');
                    text.push_str(&raw);
                }
            }
            return Err(Halt::Fail(text));
        }
        self.chunk(chunk, out);
        Ok(())
    }

    fn finish(&mut self, out: &mut Output) -> Result<(), String> {
        // All blocks end after the stream, in content order.
        self.apply_reasoning_details(out);
        // Tool states are in content order: one forward walk pairs them with their blocks.
        let mut tools = self.tools.iter().peekable();
        for index in 0..out.message.content.len() {
            match &out.message.content[index] {
                ContentBlock::Text(_) => out.text_end(index),
                ContentBlock::Thinking(_) => out.thinking_end(index),
                ContentBlock::ToolCall(_) => {
                    if let Some(state) = tools.next_if(|t| t.content_index == index) {
                        out.toolcall_end(index, &state.arguments);
                    }
                }
                _ => {}
            }
        }
        if !self.has_finish_reason && !self.supports_finish_reason {
            out.message.stop_reason = if out.has_tool_calls() {
                StopReason::ToolUse
            } else {
                StopReason::Stop
            };
        }
        if out.message.stop_reason == StopReason::Error {
            return Err(out
                .message
                .error_message
                .clone()
                .unwrap_or_else(|| "Provider returned an error stop reason".into()));
        }
        if (self.supports_finish_reason && !self.has_finish_reason)
            || out.message.stop_reason == StopReason::Pending
        {
            return Err("Stream ended without finish_reason".into());
        }
        Ok(())
    }

    fn on_failure(&mut self, out: &mut Output) {
        self.apply_reasoning_details(out);
        for state in &self.tools {
            if !state.arguments.trim().is_empty() {
                out.set_partial_arguments(state.content_index, &state.arguments);
            }
        }
    }
}
