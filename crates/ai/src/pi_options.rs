//! pi's `SimpleStreamOptions` JSON (`{apiKey, reasoning, maxTokens, cacheRetention, …}`) read
//! into Arbor's options — the form the parity fixtures and RPC-style callers carry.

use serde_json::Value;

use crate::error::AiError;
use crate::options::{CacheRetention, SimpleStreamOptions, ThinkingBudgets};
use crate::types::ThinkingLevel;

fn invalid(field: &str, message: impl Into<String>) -> AiError {
    AiError::InvalidRequest(format!("invalid stream option {field}: {}", message.into()))
}

fn opt_u64(options: &Value, field: &str) -> Result<Option<u64>, AiError> {
    match options.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| invalid(field, format!("expected a non-negative integer, got {v}"))),
    }
}

fn opt_str<'a>(options: &'a Value, field: &str) -> Result<Option<&'a str>, AiError> {
    match options.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(invalid(field, format!("expected a string, got {v}"))),
    }
}

impl SimpleStreamOptions {
    /// Reads pi's option object. Unknown fields are ignored (pi has many transport-only ones);
    /// a known field of the wrong type is an error naming the field.
    pub fn from_pi_json(options: &Value) -> Result<Self, AiError> {
        if !options.is_object() {
            return Err(invalid(
                "object",
                format!("expected an object, got {options}"),
            ));
        }
        let mut out = SimpleStreamOptions::default();
        let base = &mut out.base;
        base.api_key = opt_str(options, "apiKey")?.map(str::to_string);
        base.max_tokens = opt_u64(options, "maxTokens")?;
        base.temperature = match options.get("temperature") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_f64()
                    .ok_or_else(|| invalid("temperature", format!("expected a number, got {v}")))?,
            ),
        };
        base.session_id = opt_str(options, "sessionId")?.map(str::to_string);
        base.cache_retention = match opt_str(options, "cacheRetention")? {
            None => None,
            Some("none") => Some(CacheRetention::None),
            Some("short") => Some(CacheRetention::Short),
            Some("long") => Some(CacheRetention::Long),
            Some(other) => {
                return Err(invalid(
                    "cacheRetention",
                    format!("expected none, short or long, got {other:?}"),
                ))
            }
        };
        base.tool_choice = options.get("toolChoice").filter(|v| !v.is_null()).cloned();
        if let Some(Value::Object(map)) = options.get("metadata") {
            base.metadata = Some(map.clone());
        }
        if let Some(Value::Object(params)) = options.get("samplingParams") {
            base.sampling_params = Some(params.clone());
        }
        if let Some(Value::Object(headers)) = options.get("headers") {
            for (name, value) in headers {
                base.headers
                    .push((name.clone(), value.as_str().map(str::to_string)));
            }
        }
        out.reasoning = match opt_str(options, "reasoning")? {
            None => None,
            Some(level) => Some(ThinkingLevel::parse(level).ok_or_else(|| {
                invalid("reasoning", format!("unknown thinking level {level:?}"))
            })?),
        };
        if let Some(budgets) = options.get("thinkingBudgets").filter(|v| !v.is_null()) {
            out.thinking_budgets = ThinkingBudgets {
                minimal: opt_u64(budgets, "minimal")?,
                low: opt_u64(budgets, "low")?,
                medium: opt_u64(budgets, "medium")?,
                high: opt_u64(budgets, "high")?,
            };
        }
        Ok(out)
    }
}
