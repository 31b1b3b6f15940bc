//! OpenAI Responses API (`openai-responses`): `POST {baseUrl}/responses`, SSE of typed
//! `response.*` events keyed by `output_index`.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::error::AiError;
use crate::options::{CacheRetention, StreamOptions};
use crate::providers::api_client::{ApiClient, BuiltRequest};
use crate::providers::constrained::declared_grammar_inputs;
use crate::providers::http_error::openai_error_text;
use crate::providers::keys::resolve_api_key;
use crate::providers::sse::SseEvent;
use crate::providers::{
    cache_key, compat_bool, compat_str, final_headers, level_mapping, mapped_level, user_agent,
    CowStr, Halt, LevelMapping, Output, PreparedRequest, StreamParser, Transcript,
};
use crate::types::{Content, ContentBlock, Message, Model, StopReason, Tool, Usage};

const MIN_OUTPUT_TOKENS: u64 = 16;

use crate::transform::short_hash;

/// `reasoning.effort` of a request whose effort is set by `configuration_update` items.
const CONFIGURATION_UPDATE_REQUEST_EFFORT: &str = "medium";

/// OpenAI keys start with `sk-`; anything else sent to OpenAI itself is a "Sign in with
/// ChatGPT" access token, which rejects a few fields and `configuration_update` items.
fn chatgpt_sign_in(model: &Model, api_key: Option<&str>) -> bool {
    model.provider == "openai"
        && model.base_url.trim_end_matches('/') == "https://api.openai.com/v1"
        && api_key.is_some_and(|k| !k.starts_with("sk-"))
}

/// The effort sent in `configuration_update` input items instead of `reasoning.effort`
/// (`compat.supportsMidConvoEffort` and a reasoning effort, DECISIONS §26.55): the level as
/// the model names it. The reply records it as `providerThinkingLevel`.
pub(crate) fn configuration_effort(
    model: &Model,
    options: &StreamOptions,
    api_key: Option<&str>,
) -> Option<String> {
    if compat_bool(model, "supportsMidConvoEffort") != Some(true) || chatgpt_sign_in(model, api_key)
    {
        return None;
    }
    options
        .openai
        .reasoning_effort
        .as_deref()
        .filter(|e| !e.is_empty())
        .map(|e| mapped_level(model, e))
}

fn configuration_update(effort: Value) -> Value {
    json!({"type": "configuration_update", "reasoning": {"effort": effort}})
}

fn is_openrouter(model: &Model) -> bool {
    model.provider == "openrouter" || model.base_url.contains("openrouter.ai")
}

/// The OpenAI Responses client.
pub(crate) struct OpenAiResponses;

impl ApiClient for OpenAiResponses {
    fn build_request(
        &self,
        model: &Model,
        transcript: &Transcript,
        options: &StreamOptions,
        api_key: Option<&str>,
        _disable_preferred: Option<bool>,
    ) -> Result<BuiltRequest, AiError> {
        build_request(model, transcript, options, api_key)
            .map(BuiltRequest::from)
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
        _request: &PreparedRequest,
    ) -> Box<dyn StreamParser> {
        // Responses usage is priced with the requested tier when the response names none.
        // Grammar tools' custom input maps to their one string property.
        let api_key = resolve_api_key(model, options).ok().flatten();
        Box::new(
            Parser::new(model)
                .with_thinking_level(configuration_effort(model, options, api_key.as_deref()))
                .with_service_tier(options.openai.service_tier.clone())
                .with_grammar_inputs(
                    declared_grammar_inputs(model, transcript).unwrap_or_default(),
                ),
        )
    }

    fn http_error(
        &self,
        model: &Model,
        status: u16,
        _content_type: Option<&str>,
        body: &str,
    ) -> String {
        let prefix = if model.provider == "openai" {
            "OpenAI API error".to_string()
        } else {
            format!("{} API error", model.provider)
        };
        openai_error_text(status, body, Some(&prefix))
    }
}

pub(crate) fn build_request(
    model: &Model,
    transcript: &Transcript,
    options: &StreamOptions,
    api_key: Option<&str>,
) -> Result<PreparedRequest, String> {
    let retention = options.resolved_cache_retention();
    let long_supported = compat_bool(model, "supportsLongCacheRetention") != Some(false);
    let explicit_cache = compat_bool(model, "supportsExplicitPromptCacheMode") == Some(true);
    let key_mode = compat_str(model, "promptCacheKeyMode").unwrap_or("auto");
    // "Sign in with ChatGPT" tokens reject a few fields.
    let chatgpt_sign_in = chatgpt_sign_in(model, api_key);
    let effort_update = configuration_effort(model, options, api_key);

    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert(
        "input".into(),
        Value::Array(convert_input(model, transcript, effort_update.as_deref())?),
    );
    body.insert("stream".into(), json!(true));
    if retention != CacheRetention::None && key_mode != "disabled" {
        if let Some(session) = &options.session_id {
            body.insert("prompt_cache_key".into(), json!(cache_key(session)));
        }
    }
    if !chatgpt_sign_in {
        if retention == CacheRetention::Long && long_supported && !explicit_cache {
            body.insert("prompt_cache_retention".into(), json!("24h"));
        }
        if explicit_cache {
            match retention {
                CacheRetention::None => {
                    body.insert("prompt_cache_options".into(), json!({"mode": "explicit"}));
                }
                CacheRetention::Long if long_supported => {
                    body.insert("prompt_cache_options".into(), json!({"ttl": "30m"}));
                }
                _ => {}
            }
        }
    }
    body.insert("store".into(), json!(false));
    if let Some(max) = options.max_tokens.filter(|m| *m > 0) {
        if compat_bool(model, "supportsMaxOutputTokens") != Some(false) && !chatgpt_sign_in {
            body.insert(
                "max_output_tokens".into(),
                json!(max.max(MIN_OUTPUT_TOKENS)),
            );
        }
    }
    if let Some(t) = options.temperature.filter(|_| !chatgpt_sign_in) {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(tier) = &options.openai.service_tier {
        body.insert("service_tier".into(), json!(tier));
    }
    // With native tool changes every tool is declared in `additional_tools` input items; with
    // client tool search the list is the tools in force before the first announced addition.
    let request_tools = match tool_support(model, transcript) {
        ToolSupport::Changes => Cow::Owned(Vec::new()),
        ToolSupport::Additions => Cow::Owned(transcript.anchored_additions().request_tools),
        ToolSupport::Current => Cow::Borrowed(transcript.tools.as_slice()),
    };
    if !request_tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(convert_tools(model, &request_tools, false)?),
        );
    }
    if let Some(choice) = &options.tool_choice {
        body.insert("tool_choice".into(), choice.clone());
    }
    if model.reasoning {
        let summary = options.openai.reasoning_summary.clone();
        let effort = match (&options.openai.reasoning_effort, &summary) {
            // With managed effort the request-level effort is fixed (DECISIONS §26.55).
            (Some(_), _) if effort_update.is_some() => {
                Some(CONFIGURATION_UPDATE_REQUEST_EFFORT.to_string())
            }
            (Some(e), _) => Some(mapped_level(model, e)),
            (None, Some(_)) => Some("medium".to_string()),
            (None, None) => None,
        };
        if let Some(effort) = effort {
            body.insert(
                "reasoning".into(),
                json!({"effort": effort, "summary": summary.unwrap_or_else(|| "auto".into())}),
            );
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        } else if model.provider != "github-copilot" {
            match level_mapping(model, "off") {
                LevelMapping::Unsupported => {}
                LevelMapping::Value(v) => {
                    body.insert("reasoning".into(), json!({"effort": v}));
                }
                LevelMapping::Missing => {
                    body.insert("reasoning".into(), json!({"effort": "none"}));
                }
            }
        }
        if model.provider == "xai" {
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
    }

    let mut headers: Vec<(String, String)> = vec![
        ("content-type".into(), "application/json".into()),
        ("accept".into(), "text/event-stream".into()),
        ("user-agent".into(), user_agent()),
    ];
    if let Some(key) = api_key {
        headers.push(("authorization".into(), format!("Bearer {key}")));
    }
    if let Some(session) = options
        .session_id
        .as_ref()
        .filter(|_| retention != CacheRetention::None)
    {
        let format =
            compat_str(model, "sessionAffinityFormat").unwrap_or(if is_openrouter(model) {
                "openrouter"
            } else {
                "openai"
            });
        match format {
            "openrouter" => headers.push(("x-session-id".into(), session.clone())),
            "openai-nosession" => headers.push(("x-client-request-id".into(), session.clone())),
            _ => {
                headers.push(("session-id".into(), session.clone()));
                headers.push(("x-client-request-id".into(), session.clone()));
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
        url: format!("{}/responses", model.base_url.trim_end_matches('/')),
        headers: final_headers(headers, model, transcript, options),
        body: Value::Object(body),
    })
}

/// Function tools; `constrainedSampling` tools are sent strict where `compat.supportsStrictMode`
/// allows (DECISIONS §26.12). `deferred` marks tools returned by a client tool search
/// (`defer_loading: true`, DECISIONS §26.50).
fn convert_tools(model: &Model, tools: &[Tool], deferred: bool) -> Result<Vec<Value>, String> {
    let supports_strict = compat_bool(model, "supportsStrictMode") == Some(true);
    let supports_grammar = compat_bool(model, "supportsOpenAIGrammarTools") == Some(true);
    let mut out = Vec::with_capacity(tools.len());
    for tool in tools {
        if let Some(g) = crate::providers::constrained::grammar(tool, supports_grammar)? {
            let mut t = json!({"type": "custom", "name": tool.name, "description": tool.description,
                "format": {"type": "grammar", "syntax": g.syntax, "definition": g.definition}});
            if deferred {
                t["defer_loading"] = json!(true);
            }
            out.push(t);
            continue;
        }
        let strict = crate::providers::constrained::resolve(tool, supports_strict, None)?;
        let is_strict = strict.is_some();
        let mut t = Map::new();
        t.insert("type".into(), json!("function"));
        t.insert("name".into(), json!(tool.name));
        t.insert("description".into(), json!(tool.description));
        t.insert(
            "parameters".into(),
            strict.unwrap_or_else(|| tool.parameters.clone()),
        );
        if deferred {
            t.insert("defer_loading".into(), json!(true));
        }
        if supports_strict {
            t.insert("strict".into(), json!(is_strict));
        }
        out.push(Value::Object(t));
    }
    Ok(out)
}

/// How the request expresses the tool changes of later system messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolSupport {
    /// The request-level list is the current tool set (collapsed transcript, or no compat).
    Current,
    /// Every tool is declared in `additional_tools` input items (`compat.supportsAdditionalTools`
    /// with system messages in place, DECISIONS §26.22).
    Changes,
    /// Additions are announced as a completed client tool search (`compat.supportsToolSearch`
    /// with system messages in place and no `additional_tools`, DECISIONS §26.50).
    Additions,
}

fn tool_support(model: &Model, transcript: &Transcript) -> ToolSupport {
    if !transcript.in_place {
        ToolSupport::Current
    } else if compat_bool(model, "supportsAdditionalTools") == Some(true) {
        ToolSupport::Changes
    } else if compat_bool(model, "supportsToolSearch") == Some(true) {
        ToolSupport::Additions
    } else {
        ToolSupport::Current
    }
}

/// A later system message's additions as a client tool search that already ran: a
/// `tool_search_call` for their names and its `tool_search_output` with the tools deferred
/// (DECISIONS §26.50). The call id is derived from the message's position and the names, so
/// the same transcript always yields the same bytes (the prompt cache depends on it).
fn push_tool_search(
    model: &Model,
    tools: &[Tool],
    msg_index: usize,
    items: &mut Vec<Value>,
) -> Result<(), String> {
    if tools.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let call_id = format!(
        "pi_tool_load_{}",
        short_hash(&format!("system:{msg_index}:{}", names.join(",")))
    );
    items.push(
        json!({"type": "tool_search_call", "call_id": call_id, "execution": "client",
        "status": "completed", "arguments": {"query": names.join(" "), "limit": names.len()}}),
    );
    items.push(
        json!({"type": "tool_search_output", "call_id": call_id, "execution": "client",
        "status": "completed", "tools": convert_tools(model, tools, true)?}),
    );
    Ok(())
}

/// `additional_tools` items can add and redefine tools but not remove one, so removals are
/// announced as text and every later item is framed as incremental (pi's wording, which the
/// request must repeat byte for byte to keep the prompt cache shared, DECISIONS §26.22).
#[derive(Default)]
struct ToolDeclarations {
    declared: bool,
    /// Announced as removed and not declared again, in announcement order.
    unavailable: Vec<String>,
}

impl ToolDeclarations {
    fn add(
        &mut self,
        model: &Model,
        tools: &[Tool],
        instruction_role: &str,
        items: &mut Vec<Value>,
    ) -> Result<(), String> {
        self.unavailable
            .retain(|name| !tools.iter().any(|t| &t.name == name));
        if tools.is_empty() {
            return Ok(());
        }
        if self.declared {
            let mut notice = String::from(
                "This is an incremental tools update. Previously declared tools remain available unless explicitly marked unavailable. A tool declared again here is available again, and its latest definition replaces the earlier one.",
            );
            if !self.unavailable.is_empty() {
                notice.push_str(&format!(
                    "\nStill unavailable: {}.",
                    self.unavailable.join(", ")
                ));
            }
            items.push(json!({"role": instruction_role, "content": notice}));
        }
        self.declared = true;
        items.push(json!({"type": "additional_tools", "role": "developer",
            "tools": convert_tools(model, tools, false)?}));
        Ok(())
    }

    /// The removal notice for `system` (names re-added by the same message are redefinitions,
    /// not removals); the names stay unavailable until declared again.
    fn removal_notice(&mut self, system: &crate::types::SystemMessage) -> Option<String> {
        let added = system.tools_added.as_deref().unwrap_or(&[]);
        let removed: Vec<&str> = system
            .tools_removed
            .iter()
            .flatten()
            .filter_map(|t| t.get("name").and_then(Value::as_str))
            .filter(|name| !added.iter().any(|t| t.name == *name))
            .collect();
        if removed.is_empty() {
            return None;
        }
        let mut notice =
            String::from("The following tools are no longer available. Do not call them:");
        for name in &removed {
            notice.push_str(&format!("\n- {name}"));
            if !self.unavailable.iter().any(|n| n == name) {
                self.unavailable.push((*name).to_string());
            }
        }
        Some(notice)
    }
}

/// `{"v":1,"id":…,"phase"?}` or a legacy plain id.
fn parse_text_signature(signature: Option<&str>) -> Option<(String, Option<String>)> {
    let signature = signature.filter(|s| !s.is_empty())?;
    if signature.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<Value>(signature) {
            if v.get("v").and_then(Value::as_u64) == Some(1) {
                if let Some(id) = v.get("id").and_then(Value::as_str) {
                    let phase = v
                        .get("phase")
                        .and_then(Value::as_str)
                        .filter(|p| matches!(*p, "commentary" | "final_answer"))
                        .map(str::to_string);
                    return Some((id.to_string(), phase));
                }
            }
        }
    }
    Some((signature.to_string(), None))
}

/// `effort_update`: the request's managed effort (DECISIONS §26.55); replayed turns of this
/// model that recorded a `providerThinkingLevel` are preceded by a `configuration_update` with
/// it, and one with this request's effort ends the input.
fn convert_input(
    model: &Model,
    transcript: &Transcript,
    effort_update: Option<&str>,
) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    let instruction_role =
        if model.reasoning && compat_bool(model, "supportsDeveloperRole") != Some(false) {
            "developer"
        } else {
            "system"
        };
    let grammar_inputs = crate::providers::constrained::declared_grammar_inputs(model, transcript)?;
    let grammar_property = |name: &str| {
        grammar_inputs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.as_str())
    };
    let support = tool_support(model, transcript);
    let mut declarations = (support == ToolSupport::Changes).then(ToolDeclarations::default);
    // Later system messages after this many announce their additions as a tool search.
    let searched_after = match support {
        ToolSupport::Additions => Some(transcript.anchored_additions().folded),
        _ => None,
    };
    let mut system_index = 0usize;
    if let Some(declarations) = &mut declarations {
        declarations.add(
            model,
            &transcript.initial_tools,
            instruction_role,
            &mut items,
        )?;
    }
    if !transcript.system_prompt.is_empty() {
        items.push(json!({"role": instruction_role, "content": transcript.system_prompt}));
    }
    let supports_images = model.input.iter().any(|i| i == "image");
    // `msg_pi_<n>` ids number only the messages that produce input items (pi's `msgIndex`).
    let mut msg_index = 0usize;
    for message in &transcript.messages {
        let items_before = items.len();
        match message {
            Message::User(user) => {
                let content: Vec<Value> = match &user.content {
                    Content::Text(text) => vec![json!({"type": "input_text", "text": text})],
                    Content::Blocks(blocks) => blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => {
                                Some(json!({"type": "input_text", "text": t.text}))
                            }
                            ContentBlock::Image(img) => Some(json!({
                                "type": "input_image",
                                "detail": "auto",
                                "image_url": format!("data:{};base64,{}", img.mime_type, img.data)
                            })),
                            _ => None,
                        })
                        .collect(),
                };
                if content.is_empty() {
                    continue;
                }
                items.push(json!({"role": "user", "content": content}));
            }
            Message::Assistant(assistant) => {
                let same_provider_api =
                    assistant.provider == model.provider && assistant.api == model.api;
                let same_model = same_provider_api && assistant.model == model.id;
                let different_model = same_provider_api && assistant.model != model.id;
                let mut text_index = 0usize;
                for block in &assistant.content {
                    match block {
                        ContentBlock::Thinking(t) => {
                            if let Some(item) = t
                                .thinking_signature
                                .as_deref()
                                .filter(|s| !s.is_empty())
                                .and_then(|s| serde_json::from_str::<Value>(s).ok())
                            {
                                items.push(item);
                            }
                        }
                        ContentBlock::Text(t) => {
                            let parsed = parse_text_signature(t.text_signature.as_deref());
                            let fallback = if text_index == 0 {
                                format!("msg_pi_{msg_index}")
                            } else {
                                format!("msg_pi_{msg_index}_{text_index}")
                            };
                            text_index += 1;
                            let (id, phase) = match parsed {
                                Some((id, phase)) if id.chars().count() > 64 => {
                                    (format!("msg_{}", short_hash(&id)), phase)
                                }
                                Some((id, phase)) => (id, phase),
                                None => (fallback, None),
                            };
                            let mut item = Map::new();
                            item.insert("type".into(), json!("message"));
                            item.insert("role".into(), json!("assistant"));
                            item.insert(
                                "content".into(),
                                json!([{"type": "output_text", "text": t.text, "annotations": []}]),
                            );
                            item.insert("status".into(), json!("completed"));
                            item.insert("id".into(), json!(id));
                            if let Some(phase) = phase {
                                item.insert("phase".into(), json!(phase));
                            }
                            items.push(Value::Object(item));
                        }
                        ContentBlock::ToolCall(call) => {
                            let (call_id, item_id) = match call.id.split_once('|') {
                                Some((c, i)) => (c, Some(i)),
                                None => (call.id.as_str(), None),
                            };
                            // Ids must match the item type (`fc_` function calls, `ctc_`
                            // custom calls): a call may change type when grammar support does.
                            let grammar = grammar_property(&call.name);
                            let prefix = if grammar.is_some() { "ctc_" } else { "fc_" };
                            let item_id =
                                item_id.filter(|i| !different_model && i.starts_with(prefix));
                            let mut item = Map::new();
                            item.insert(
                                "type".into(),
                                json!(if grammar.is_some() {
                                    "custom_tool_call"
                                } else {
                                    "function_call"
                                }),
                            );
                            if let Some(id) = item_id {
                                item.insert("id".into(), json!(id));
                            }
                            item.insert("call_id".into(), json!(call_id));
                            item.insert("name".into(), json!(call.name));
                            match grammar {
                                Some(property) => {
                                    let input = crate::providers::constrained::grammar_call_input(
                                        &call.name,
                                        &call.arguments,
                                        property,
                                    )?;
                                    item.insert("input".into(), json!(input));
                                }
                                None => {
                                    item.insert(
                                        "arguments".into(),
                                        json!(call.arguments.to_string()),
                                    );
                                }
                            }
                            if let (true, Some(ns)) = (same_model, &call.namespace) {
                                item.insert("namespace".into(), json!(ns));
                            }
                            items.push(Value::Object(item));
                        }
                        _ => {}
                    }
                }
                // The effort this turn ran at, before its items (only for turns that have any).
                if let (Some(_), true, Some(level)) = (
                    effort_update,
                    same_model && items.len() > items_before,
                    assistant.extra.get("providerThinkingLevel"),
                ) {
                    items.insert(items_before, configuration_update(level.clone()));
                }
            }
            Message::ToolResult(result) => {
                let call_id = result.tool_call_id.split('|').next().unwrap_or("");
                let blocks = Content::to_blocks(&result.content);
                let texts: Vec<&str> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect();
                let text = texts.join("\n");
                let has_images = blocks.iter().any(|b| matches!(b, ContentBlock::Image(_)));
                let output = if has_images && supports_images {
                    // pi's shape: the joined text first (when not blank), then every image.
                    let mut parts: Vec<Value> = Vec::new();
                    if !text.trim().is_empty() {
                        parts.push(json!({"type": "input_text", "text": text}));
                    }
                    parts.extend(blocks.iter().filter_map(|b| match b {
                        ContentBlock::Image(img) => Some(json!({
                            "type": "input_image",
                            "detail": "auto",
                            "image_url": format!("data:{};base64,{}", img.mime_type, img.data)
                        })),
                        _ => None,
                    }));
                    Value::Array(parts)
                } else if !text.trim().is_empty() {
                    json!(text)
                } else if has_images {
                    json!("(see attached image)")
                } else {
                    json!("(no tool output)")
                };
                let kind = if grammar_property(&result.tool_name).is_some() {
                    "custom_tool_call_output"
                } else {
                    "function_call_output"
                };
                items.push(json!({"type": kind, "call_id": call_id, "output": output}));
            }
            Message::System(system) => {
                // Only kept here when sent in place (DECISIONS §26.20); pi numbers it even
                // when it renders to nothing.
                let mut text = crate::providers::transcript::system_update_text(system);
                if searched_after.is_some_and(|folded| system_index >= folded) {
                    let added = system.tools_added.as_deref().unwrap_or(&[]);
                    push_tool_search(model, added, msg_index, &mut items)?;
                }
                system_index += 1;
                if let Some(declarations) = &mut declarations {
                    let added = system.tools_added.as_deref().unwrap_or(&[]);
                    declarations.add(model, added, instruction_role, &mut items)?;
                    if let Some(notice) = declarations.removal_notice(system) {
                        if !text.is_empty() {
                            text.push_str("\n\n");
                        }
                        text.push_str(&notice);
                    }
                }
                if !text.is_empty() {
                    items.push(json!({"role": instruction_role, "content": text}));
                }
                msg_index += 1;
                continue;
            }
        }
        if items.len() > items_before {
            msg_index += 1;
        }
    }
    if let Some(effort) = effort_update {
        items.push(configuration_update(json!(effort)));
    }
    Ok(items)
}

// ---------------------------------------------------------------------------------------------
// Stream parsing.

/// The hot delta events: `{"type":…,"output_index":…,"delta":…}`.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(borrow, default)]
    delta: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    arguments: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    input: Option<CowStr<'a>>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(borrow, default)]
    message: Option<CowStr<'a>>,
}

enum SlotKind {
    Thinking,
    Text,
    ToolCall {
        arguments: String,
    },
    /// A grammar tool's free-form input (DECISIONS §26.26).
    CustomCall(crate::providers::constrained::GrammarInput),
}

struct Slot {
    kind: SlotKind,
    content_index: usize,
}

pub struct Parser {
    slots: HashMap<u64, Slot>,
    saw_terminal: bool,
    unfinished_calls: Vec<usize>,
    reasoning_by_id: HashMap<String, usize>,
    service_tier: Option<String>,
    /// Input property of each grammar tool (others map custom input to `input`).
    grammar_inputs: Vec<(String, String)>,
    /// The managed effort the request ran at, recorded as `providerThinkingLevel`.
    thinking_level: Option<String>,
}

impl Parser {
    pub fn new(_model: &Model) -> Self {
        Self {
            slots: HashMap::new(),
            saw_terminal: false,
            unfinished_calls: Vec::new(),
            reasoning_by_id: HashMap::new(),
            service_tier: None,
            grammar_inputs: Vec::new(),
            thinking_level: None,
        }
    }

    /// Records `level` as the reply's `providerThinkingLevel` (managed effort, DECISIONS §26.55).
    pub(crate) fn with_thinking_level(mut self, level: Option<String>) -> Self {
        self.thinking_level = level;
        self
    }

    /// Names the property each grammar tool's custom input fills.
    pub(crate) fn with_grammar_inputs(mut self, inputs: Vec<(String, String)>) -> Self {
        self.grammar_inputs = inputs;
        self
    }

    /// Prices the usage with this service tier when the response does not name one.
    pub fn with_service_tier(mut self, tier: Option<String>) -> Self {
        self.service_tier = tier;
        self
    }

    fn create_slot(&mut self, output_index: u64, item: &Value, out: &mut Output) {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        let slot = match kind {
            "reasoning" => Slot {
                kind: SlotKind::Thinking,
                content_index: out.thinking_start(String::new(), None, false),
            },
            "message" => {
                if item.get("phase").and_then(Value::as_str) == Some("final_answer") {
                    out.message.stop_reason = StopReason::Stop;
                }
                Slot {
                    kind: SlotKind::Text,
                    content_index: out.text_start(String::new()),
                }
            }
            "function_call" => {
                let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
                let args = s("arguments").to_string();
                let index = out.toolcall_start(
                    format!("{}|{}", s("call_id"), s("id")),
                    s("name").to_string(),
                    json!({}),
                );
                if let (Some(ns), Some(call)) = (
                    item.get("namespace").and_then(Value::as_str),
                    out.toolcall_mut(index),
                ) {
                    call.namespace = Some(ns.to_string());
                }
                self.unfinished_calls.push(index);
                Slot {
                    kind: SlotKind::ToolCall { arguments: args },
                    content_index: index,
                }
            }
            "custom_tool_call" => {
                let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
                let property = self
                    .grammar_inputs
                    .iter()
                    .find(|(n, _)| n == s("name"))
                    .map_or("input", |(_, p)| p.as_str());
                let input = crate::providers::constrained::GrammarInput::new(property, s("input"));
                let index = out.toolcall_start(
                    format!("{}|{}", s("call_id"), s("id")),
                    s("name").to_string(),
                    input.arguments(),
                );
                if let (Some(ns), Some(call)) = (
                    item.get("namespace").and_then(Value::as_str),
                    out.toolcall_mut(index),
                ) {
                    call.namespace = Some(ns.to_string());
                }
                self.unfinished_calls.push(index);
                Slot {
                    kind: SlotKind::CustomCall(input),
                    content_index: index,
                }
            }
            _ => return,
        };
        self.slots.insert(output_index, slot);
    }

    /// Applies a custom input step: the call's arguments follow the input, and the JSON text
    /// piece (if any) goes out as a `toolcall_delta`.
    fn custom_step(
        &mut self,
        output_index: u64,
        out: &mut Output,
        step: impl FnOnce(
            &mut crate::providers::constrained::GrammarInput,
        ) -> Result<Option<String>, String>,
    ) -> Result<(), Halt> {
        let Some(Slot {
            kind: SlotKind::CustomCall(input),
            content_index,
        }) = self.slots.get_mut(&output_index)
        else {
            return Ok(());
        };
        let piece = step(input).map_err(Halt::Fail)?;
        let index = *content_index;
        if let Some(call) = out.toolcall_mut(index) {
            call.arguments = input.arguments();
        }
        if let Some(piece) = piece {
            out.toolcall_delta(index, &piece);
        }
        Ok(())
    }

    fn finalize(&mut self, response: &Value, out: &mut Output) {
        self.saw_terminal = true;
        // Azure may only put encrypted reasoning on the final output: backfill it.
        if let Some(items) = response.get("output").and_then(Value::as_array) {
            for item in items {
                let (Some("reasoning"), Some(id), Some(enc)) = (
                    item.get("type").and_then(Value::as_str),
                    item.get("id").and_then(Value::as_str),
                    item.get("encrypted_content")
                        .filter(|e| e.as_str().is_some_and(|s| !s.is_empty())),
                ) else {
                    continue;
                };
                let Some(&index) = self.reasoning_by_id.get(id) else {
                    continue;
                };
                if let Some(t) = out.thinking_mut(index) {
                    if let Some(mut stored) = t
                        .thinking_signature
                        .as_deref()
                        .and_then(|s| serde_json::from_str::<Map<String, Value>>(s).ok())
                    {
                        if stored
                            .get("encrypted_content")
                            .is_none_or(|e| e.is_null() || e.as_str() == Some(""))
                        {
                            stored.insert("encrypted_content".into(), enc.clone());
                            t.thinking_signature = Some(Value::Object(stored).to_string());
                        }
                    }
                }
            }
        }
        if let Some(id) = response.get("id").and_then(Value::as_str) {
            out.message.response_id = Some(id.to_string());
        }
        let mut usage: Usage = Usage::clone(&out.message.usage);
        if let Some(u) = response.get("usage").filter(|u| u.is_object()) {
            let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            let cached = n("/input_tokens_details/cached_tokens");
            let write = n("/input_tokens_details/cache_write_tokens");
            usage.input = n("/input_tokens").saturating_sub(cached + write);
            usage.output = n("/output_tokens");
            usage.cache_read = cached;
            usage.cache_write = write;
            usage.reasoning = Some(n("/output_tokens_details/reasoning_tokens"));
            usage.total_tokens = Some(n("/total_tokens"));
        }
        out.set_usage(usage);
        let tier = response
            .get("service_tier")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| self.service_tier.clone());
        let multiplier = match tier.as_deref() {
            Some("flex") => 0.5,
            Some("priority") if out.model().id.starts_with("gpt-5.5") => 2.5,
            Some("priority" | "fast") => 2.0,
            _ => 1.0,
        };
        if multiplier != 1.0 {
            let c = &mut out.message.usage.cost;
            for n in [
                &mut c.input,
                &mut c.output,
                &mut c.cache_read,
                &mut c.cache_write,
                &mut c.total,
            ] {
                *n = crate::json::Num::new(n.get() * multiplier);
            }
        }
        let status = response.get("status").and_then(Value::as_str);
        let reason = response
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str);
        if let Some(status) = status {
            match reason {
                Some(r) => out.set_raw_stop_reason(&format!("{status}.{r}")),
                None => out.set_raw_stop_reason(status),
            }
        }
        let (stop, message) = match status {
            None | Some("completed" | "in_progress" | "queued") => (StopReason::Stop, None),
            Some("incomplete") if reason == Some("max_output_tokens") => (StopReason::Length, None),
            Some("incomplete") => (
                StopReason::Error,
                Some(match reason {
                    Some(r) => format!("Response incomplete: {r}"),
                    None => "Response incomplete without a provider reason".to_string(),
                }),
            ),
            Some("failed" | "cancelled") => (StopReason::Error, None),
            Some(other) => (
                StopReason::Error,
                Some(format!("Unhandled stop reason: {other}")),
            ),
        };
        out.message.stop_reason = stop;
        out.message.error_message = message;
        if stop == StopReason::Stop && out.has_tool_calls() {
            out.message.stop_reason = StopReason::ToolUse;
        }
    }

    fn item_done(&mut self, output_index: u64, item: &Value, out: &mut Output) -> Result<(), Halt> {
        if item.get("type").and_then(Value::as_str) == Some("message")
            && item.get("phase").and_then(Value::as_str) == Some("final_answer")
        {
            out.message.stop_reason = StopReason::Stop;
        }
        if !self.slots.contains_key(&output_index) {
            self.create_slot(output_index, item, out);
        }
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "custom_tool_call" {
            if let Some(Slot {
                kind: SlotKind::CustomCall(_),
                content_index,
            }) = self.slots.get(&output_index)
            {
                let index = *content_index;
                let final_input = item.get("input").and_then(Value::as_str);
                self.custom_step(output_index, out, |input| input.close(final_input))?;
                if let (Some(ns), Some(call)) = (
                    item.get("namespace").and_then(Value::as_str),
                    out.toolcall_mut(index),
                ) {
                    call.namespace = Some(ns.to_string());
                }
                out.toolcall_end_with(index);
                self.unfinished_calls.retain(|i| *i != index);
                self.slots.remove(&output_index);
            }
            return Ok(());
        }
        let Some(slot) = self.slots.get_mut(&output_index) else {
            return Ok(());
        };
        let index = slot.content_index;
        match (kind, &mut slot.kind) {
            ("reasoning", SlotKind::Thinking) => {
                let join = |key: &str| -> String {
                    item.get(key)
                        .and_then(Value::as_array)
                        .map(|parts| {
                            parts
                                .iter()
                                .map(|p| p.get("text").and_then(Value::as_str).unwrap_or(""))
                                .collect::<Vec<_>>()
                                .join("\n\n")
                        })
                        .unwrap_or_default()
                };
                let summary = join("summary");
                let content = join("content");
                if let Some(t) = out.thinking_mut(index) {
                    if !summary.is_empty() {
                        t.thinking = summary;
                    } else if !content.is_empty() {
                        t.thinking = content;
                    }
                    t.thinking_signature = Some(item.to_string());
                }
                if let Some(id) = item.get("id").and_then(Value::as_str) {
                    self.reasoning_by_id.insert(id.to_string(), index);
                }
                out.thinking_end(index);
            }
            ("message", SlotKind::Text) => {
                let text: String = item
                    .get("content")
                    .and_then(Value::as_array)
                    .map(|parts| {
                        parts
                            .iter()
                            .map(|p| {
                                let key = if p.get("type").and_then(Value::as_str)
                                    == Some("output_text")
                                {
                                    "text"
                                } else {
                                    "refusal"
                                };
                                p.get(key).and_then(Value::as_str).unwrap_or("")
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let mut signature = Map::new();
                signature.insert("v".into(), json!(1));
                signature.insert("id".into(), item.get("id").cloned().unwrap_or(Value::Null));
                if let Some(phase) = item.get("phase").filter(|p| p.is_string()) {
                    signature.insert("phase".into(), phase.clone());
                }
                if let Some(t) = out.text_mut(index) {
                    t.text = text;
                    t.text_signature = Some(Value::Object(signature).to_string());
                }
                out.text_end(index);
            }
            ("function_call", SlotKind::ToolCall { arguments }) => {
                if let Some(full) = item
                    .get("arguments")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                {
                    *arguments = full.to_string();
                }
                let args = std::mem::take(arguments);
                if let (Some(ns), Some(call)) = (
                    item.get("namespace").and_then(Value::as_str),
                    out.toolcall_mut(index),
                ) {
                    call.namespace = Some(ns.to_string());
                }
                out.toolcall_end(index, &args);
                self.unfinished_calls.retain(|i| *i != index);
            }
            _ => return Ok(()),
        }
        self.slots.remove(&output_index);
        Ok(())
    }
}

impl StreamParser for Parser {
    fn init_output(&self, out: &mut Output) {
        if let Some(level) = &self.thinking_level {
            out.message
                .extra
                .insert("providerThinkingLevel".into(), Value::String(level.clone()));
        }
    }

    fn on_event(&mut self, event: SseEvent<'_>, out: &mut Output) -> Result<(), Halt> {
        if event.data == "[DONE]" {
            return Err(Halt::Stop);
        }
        let ev: Event<'_> = serde_json::from_str(event.data).map_err(|_| {
            Halt::Fail("Error reading response: malformed server-sent event JSON.".to_string())
        })?;
        if event.event == Some("error") {
            // The SDK raises an API error carrying the event's message.
            let data: Value = serde_json::from_str(event.data).unwrap_or(Value::Null);
            let err = data.get("error").cloned().unwrap_or(data);
            let text = match err.get("message") {
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                _ => err.to_string(),
            };
            return Err(Halt::Fail(text));
        }
        let index = ev.output_index.unwrap_or(0);
        match ev.kind.as_ref() {
            "response.created" => {
                if let Some(id) = ev
                    .response
                    .as_ref()
                    .and_then(|r| r.get("id"))
                    .and_then(Value::as_str)
                {
                    out.message.response_id = Some(id.to_string());
                }
            }
            "response.output_item.added" => {
                if let Some(item) = &ev.item {
                    self.create_slot(index, item, out);
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let (
                    Some(Slot {
                        kind: SlotKind::Thinking,
                        content_index,
                    }),
                    Some(d),
                ) = (self.slots.get(&index), ev.delta.as_deref())
                {
                    out.thinking_delta(*content_index, d);
                }
            }
            "response.reasoning_summary_part.done" => {
                if let Some(Slot {
                    kind: SlotKind::Thinking,
                    content_index,
                }) = self.slots.get(&index)
                {
                    out.thinking_delta(*content_index, "\n\n");
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                if let (
                    Some(Slot {
                        kind: SlotKind::Text,
                        content_index,
                    }),
                    Some(d),
                ) = (self.slots.get(&index), ev.delta.as_deref())
                {
                    out.text_delta(*content_index, d);
                }
            }
            "response.function_call_arguments.delta" => {
                if let (
                    Some(Slot {
                        kind: SlotKind::ToolCall { arguments },
                        content_index,
                    }),
                    Some(d),
                ) = (self.slots.get_mut(&index), ev.delta.as_deref())
                {
                    arguments.push_str(d);
                    out.toolcall_delta(*content_index, d);
                }
            }
            "response.function_call_arguments.done" => {
                if let (
                    Some(Slot {
                        kind: SlotKind::ToolCall { arguments },
                        content_index,
                    }),
                    Some(full),
                ) = (self.slots.get_mut(&index), ev.arguments.as_deref())
                {
                    let suffix = full
                        .strip_prefix(arguments.as_str())
                        .filter(|s| !s.is_empty())
                        .map(str::to_string);
                    *arguments = full.to_string();
                    if let Some(suffix) = suffix {
                        out.toolcall_delta(*content_index, &suffix);
                    }
                }
            }
            "response.custom_tool_call_input.delta" => {
                let delta = ev.delta.as_deref().unwrap_or("");
                self.custom_step(index, out, |input| input.append(delta))?;
            }
            "response.custom_tool_call_input.done" => {
                let final_input = ev.input.as_deref();
                self.custom_step(index, out, |input| input.close(final_input))?;
            }
            "response.output_item.done" => {
                if let Some(item) = &ev.item {
                    self.item_done(index, item, out)?;
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = ev.response.unwrap_or(Value::Null);
                self.finalize(&response, out);
            }
            "response.failed" => {
                self.saw_terminal = true;
                let response = ev.response.unwrap_or(Value::Null);
                if let Some(status) = response.get("status").and_then(Value::as_str) {
                    out.set_raw_stop_reason(status);
                }
                let message = if let Some(err) = response.get("error").filter(|e| e.is_object()) {
                    let code = err
                        .get("code")
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                        .unwrap_or("unknown");
                    let msg = err
                        .get("message")
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                        .unwrap_or("no message");
                    format!("{code}: {msg}")
                } else if let Some(reason) = response
                    .pointer("/incomplete_details/reason")
                    .and_then(Value::as_str)
                {
                    format!("incomplete: {reason}")
                } else {
                    "Unknown error (no error details in response)".to_string()
                };
                return Err(Halt::Fail(message));
            }
            "error" => {
                let code = match &ev.code {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => "undefined".into(),
                };
                let message = ev.message.as_deref().unwrap_or("undefined");
                return Err(Halt::Fail(format!("Error Code {code}: {message}")));
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Output) -> Result<(), String> {
        if !self.saw_terminal {
            return Err("OpenAI Responses stream ended before a terminal response event".into());
        }
        if out.message.stop_reason == StopReason::ToolUse {
            if let Some(&index) = self.unfinished_calls.first() {
                let (name, id) = out
                    .toolcall_mut(index)
                    .map(|c| (c.name.clone(), c.id.clone()))
                    .unwrap_or_default();
                return Err(format!(
                    "OpenAI Responses stream completed with an unfinished tool call: {name} ({id})"
                ));
            }
        }
        // Decision: text/reasoning items the server never closed with `output_item.done` are
        // closed here, so every started block gets its `*_end` (pi leaves them open).
        let mut open: Vec<(u64, usize, bool)> = self
            .slots
            .iter()
            .filter_map(|(k, s)| match s.kind {
                SlotKind::Text => Some((*k, s.content_index, true)),
                SlotKind::Thinking => Some((*k, s.content_index, false)),
                SlotKind::ToolCall { .. } | SlotKind::CustomCall(_) => None,
            })
            .collect();
        open.sort_by_key(|(_, index, _)| *index);
        // A function call the server never closed keeps the arguments streamed so far, parsed
        // leniently, as pi's live arguments do.
        for slot in self.slots.values() {
            if let SlotKind::ToolCall { arguments } = &slot.kind {
                if !arguments.trim().is_empty() {
                    out.set_partial_arguments(slot.content_index, arguments);
                }
            }
        }
        for (key, index, is_text) in open {
            if is_text {
                out.text_end(index);
            } else {
                out.thinking_end(index);
            }
            self.slots.remove(&key);
        }
        match out.message.stop_reason {
            StopReason::Pending => {
                Err("OpenAI Responses stream ended without a stop reason".into())
            }
            StopReason::Error | StopReason::Aborted => Err(out
                .message
                .error_message
                .clone()
                .unwrap_or_else(|| "An unknown error occurred".into())),
            _ => Ok(()),
        }
    }

    fn on_failure(&mut self, out: &mut Output) {
        for slot in self.slots.values() {
            if let SlotKind::ToolCall { arguments } = &slot.kind {
                if !arguments.trim().is_empty() {
                    out.set_partial_arguments(slot.content_index, arguments);
                }
            }
        }
    }
}
