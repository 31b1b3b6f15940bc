//! The Responses request: input, tools, reasoning and caching switches, service tier.

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use crate::options::{CacheRetention, StreamOptions};
use crate::providers::constrained::Refusal;
use crate::providers::{
    cache_key, compat_bool, compat_str, final_headers, level_mapping, mapped_level, user_agent,
    LevelMapping, PreparedRequest, Transcript,
};
use crate::types::Model;

use super::convert::convert_input;
use super::tools::{convert_tools, tool_support, ToolSupport};

const MIN_OUTPUT_TOKENS: u64 = 16;

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

fn is_openrouter(model: &Model) -> bool {
    model.provider == "openrouter" || model.base_url.contains("openrouter.ai")
}

pub(crate) fn build_request(
    model: &Model,
    transcript: &Transcript,
    options: &StreamOptions,
    api_key: Option<&str>,
) -> Result<PreparedRequest, Refusal> {
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
