//! `stream_simple`'s mapping: one provider-neutral [`ThinkingLevel`] mapped to each API's native
//! parameters (token budgets, effort strings, clamping; DECISIONS §10.6).

use serde_json::{json, Value};

use super::{clamp_level, level_mapping, uses_thinking_level, LevelMapping};
use crate::error::AiError;
use crate::models::compat_bool;
use crate::options::{GoogleThinking, SimpleStreamOptions, StreamOptions, ThinkingBudgets};
use crate::types::{Context, Model, ThinkingLevel};

/// The wire name of a level (`off`, `minimal`, … `max`).
pub fn level_name(level: ThinkingLevel) -> &'static str {
    level.as_str()
}

const MIN_ANSWER_TOKENS: u64 = 1024;

const CONTEXT_SAFETY_TOKENS: i64 = 4096;
const CONTEXT_SAFETY_RATIO: f64 = 0.15;
const MIN_OUTPUT_WITH_RATIO_MARGIN: i64 = 32768;
pub use crate::estimate::estimate_context_tokens;

/// Keeps `max_tokens` inside the context window with a safety margin.
pub fn clamp_max_tokens_to_context(model: &Model, context: &Context, max_tokens: u64) -> u64 {
    let window = model.context_window as i64;
    if window <= 0 {
        return max_tokens.max(1);
    }
    let input = estimate_context_tokens(context) as i64;
    let margin = CONTEXT_SAFETY_TOKENS.max((input as f64 * CONTEXT_SAFETY_RATIO).ceil() as i64);
    let mut room = window - input - margin;
    if room < MIN_OUTPUT_WITH_RATIO_MARGIN {
        room = MIN_OUTPUT_WITH_RATIO_MARGIN.min(window - input - CONTEXT_SAFETY_TOKENS);
    }
    max_tokens.min(room.max(1) as u64)
}

fn anthropic_effort(model: &Model, level: ThinkingLevel) -> String {
    if let LevelMapping::Value(v) = level_mapping(model, level_name(level)) {
        return v;
    }
    match level {
        ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        _ => "high",
    }
    .to_string()
}

fn google_level(model: &Model, level: ThinkingLevel) -> Result<&'static str, AiError> {
    let mapped = level_mapping(model, level_name(level));
    let resolved = match &mapped {
        LevelMapping::Value(v) => v.to_ascii_lowercase(),
        _ => level_name(level).to_string(),
    };
    match resolved.as_str() {
        "minimal" => Ok("MINIMAL"),
        "low" => Ok("LOW"),
        "medium" => Ok("MEDIUM"),
        "high" => Ok("HIGH"),
        _ => Err(AiError::InvalidRequest(format!(
            "Unsupported Google thinking level mapping for {}/{}: {} -> {}",
            model.provider,
            model.id,
            level_name(level),
            match mapped {
                LevelMapping::Value(v) => v,
                LevelMapping::Unsupported => "null".into(),
                LevelMapping::Missing => "undefined".into(),
            }
        ))),
    }
}

fn google_budget(model: &Model, level: ThinkingLevel, custom: &ThinkingBudgets) -> i64 {
    let pick = match level {
        ThinkingLevel::Minimal => custom.minimal,
        ThinkingLevel::Low => custom.low,
        ThinkingLevel::Medium => custom.medium,
        _ => custom.high,
    };
    if let Some(b) = pick {
        return b as i64;
    }
    let idx = match level {
        ThinkingLevel::Minimal => 0,
        ThinkingLevel::Low => 1,
        ThinkingLevel::Medium => 2,
        _ => 3,
    };
    let table: Option<[i64; 4]> = if model.id.contains("2.5-pro") {
        Some([128, 2048, 8192, 32768])
    } else if model.id.contains("2.5-flash-lite") {
        Some([512, 2048, 8192, 24576])
    } else if model.id.contains("2.5-flash") {
        Some([128, 2048, 8192, 24576])
    } else {
        None
    };
    table.map_or(-1, |t| t[idx])
}

/// `thinkingConfig` that turns thinking off (or as low as the model allows).
pub fn google_disabled_thinking(model: &Model) -> Result<Value, AiError> {
    if !uses_thinking_level(model) {
        return Ok(json!({"thinkingBudget": 0}));
    }
    let fallback = clamp_level(model, ThinkingLevel::Off);
    if fallback == ThinkingLevel::Off {
        return Ok(json!({"thinkingBudget": 0}));
    }
    Ok(json!({"thinkingLevel": google_level(model, fallback)?}))
}

/// pi's sampling parameters for a level: the model's `samplingParams`, then its
/// `samplingParamsByThinkingLevel` entry for the clamped level, then the request's (later keys
/// win). `None` when none of the three exists.
pub fn resolve_sampling_params(
    model: &Model,
    level: ThinkingLevel,
    request: Option<&serde_json::Map<String, Value>>,
) -> Option<serde_json::Map<String, Value>> {
    let own = model.extra.get("samplingParams").and_then(Value::as_object);
    let by_level = model
        .extra
        .get("samplingParamsByThinkingLevel")
        .and_then(|m| m.get(level_name(clamp_level(model, level))))
        .and_then(Value::as_object);
    if own.is_none() && by_level.is_none() && request.is_none() {
        return None;
    }
    let mut merged = serde_json::Map::new();
    for source in [own, by_level, request].into_iter().flatten() {
        for (k, v) in source {
            merged.insert(k.clone(), v.clone());
        }
    }
    Some(merged)
}

/// Merges the sampling parameters into an OpenAI-compatible body, last, over named fields
/// (`effort` is the reasoning level sent, `None` = off).
#[cfg(feature = "providers")]
pub(crate) fn merge_sampling_params(
    body: &mut serde_json::Map<String, Value>,
    model: &Model,
    effort: Option<&str>,
    request: Option<&serde_json::Map<String, Value>>,
) {
    let level = effort
        .and_then(ThinkingLevel::parse)
        .unwrap_or(ThinkingLevel::Off);
    if let Some(params) = resolve_sampling_params(model, level, request) {
        for (k, v) in params {
            body.insert(k, v);
        }
    }
}

/// Builds the native options for `model.api` from simple options.
pub fn to_stream_options(
    model: &Model,
    context: &Context,
    options: SimpleStreamOptions,
) -> Result<StreamOptions, AiError> {
    let SimpleStreamOptions {
        base,
        reasoning,
        thinking_budgets,
    } = options;
    let mut native = base;
    native.sampling_params = resolve_sampling_params(
        model,
        reasoning.unwrap_or(ThinkingLevel::Off),
        native.sampling_params.as_ref(),
    );
    let requested_max = native.max_tokens.unwrap_or(model.max_tokens);
    native.max_tokens = Some(clamp_max_tokens_to_context(model, context, requested_max));
    let reasoning = reasoning.filter(|l| *l != ThinkingLevel::Off);
    match model.api.as_str() {
        "anthropic-messages" => {
            let Some(level) = reasoning else {
                native.anthropic.thinking_enabled = Some(false);
                return Ok(native);
            };
            native.anthropic.thinking_enabled = Some(true);
            if compat_bool(model, "forceAdaptiveThinking") == Some(true) {
                native.anthropic.effort = Some(anthropic_effort(model, level));
                return Ok(native);
            }
            let mut budget = thinking_budgets.budget_for(level);
            let base_max = native.max_tokens.unwrap_or(model.max_tokens);
            let max = (base_max + budget).min(model.max_tokens);
            if max <= budget {
                budget = budget.min(max.saturating_sub(MIN_ANSWER_TOKENS));
            }
            let max = clamp_max_tokens_to_context(model, context, max);
            native.max_tokens = Some(max);
            native.anthropic.thinking_budget_tokens =
                Some(budget.min(max.saturating_sub(MIN_ANSWER_TOKENS)));
        }
        "openai-completions" | "openai-responses" => {
            let clamped = reasoning.map(|l| clamp_level(model, l));
            let effort = clamped.filter(|l| *l != ThinkingLevel::Off);
            native.openai.reasoning_effort = effort.map(|l| level_name(l).to_string());
            if let Some(level) = effort {
                if model.api == "openai-completions" {
                    native.openai.thinking_budget = Some(thinking_budgets.budget_for(level));
                }
            }
        }
        "google-generative-ai" => {
            let clamped = reasoning.map(|l| clamp_level(model, l));
            native.google.thinking = Some(match clamped.filter(|l| *l != ThinkingLevel::Off) {
                None => GoogleThinking::default(),
                Some(level) => {
                    let resolved = google_level(model, level)?;
                    if uses_thinking_level(model) {
                        GoogleThinking {
                            enabled: true,
                            budget_tokens: None,
                            level: Some(resolved.to_string()),
                        }
                    } else {
                        let level = match resolved {
                            "MINIMAL" => ThinkingLevel::Minimal,
                            "LOW" => ThinkingLevel::Low,
                            "MEDIUM" => ThinkingLevel::Medium,
                            _ => ThinkingLevel::High,
                        };
                        GoogleThinking {
                            enabled: true,
                            budget_tokens: Some(google_budget(model, level, &thinking_budgets)),
                            level: None,
                        }
                    }
                }
            });
        }
        _ => {
            let clamped = reasoning.map(|l| clamp_level(model, l));
            native.openai.reasoning_effort = clamped
                .filter(|l| *l != ThinkingLevel::Off)
                .map(|l| level_name(l).to_string());
        }
    }
    Ok(native)
}

/// The request [`crate::stream_simple`] would send for a built-in API, without sending it.
#[cfg(feature = "providers")]
pub fn build_simple_request(
    model: &Model,
    context: &Context,
    options: SimpleStreamOptions,
) -> Result<crate::providers::PreparedRequest, crate::error::AiError> {
    let native = to_stream_options(model, context, options)?;
    crate::providers::build_request(model, context, &native)
}
