//! The Gemini request: contents, function declarations (strict schemas on Gemini 3+),
//! generation and thinking config.

use serde_json::{json, Map, Value};

use crate::options::StreamOptions;
use crate::providers::constrained::Refusal;
use crate::providers::{final_headers, user_agent, PreparedRequest, Transcript};
use crate::types::{Model, Tool};

use super::convert::{convert_messages, gemini_major_version};

pub(crate) fn build_request(
    model: &Model,
    transcript: &Transcript,
    options: &StreamOptions,
    api_key: Option<&str>,
) -> Result<PreparedRequest, Refusal> {
    let mut body = Map::new();
    body.insert(
        "contents".into(),
        Value::Array(convert_messages(model, transcript)),
    );
    if !transcript.system_prompt.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({"role": "user", "parts": [{"text": transcript.system_prompt}]}),
        );
    }
    let mut generation = Map::new();
    if let Some(t) = options.temperature {
        generation.insert("temperature".into(), json!(t));
    }
    if let Some(m) = options.max_tokens {
        generation.insert("maxOutputTokens".into(), json!(m));
    }
    if model.reasoning {
        if let Some(thinking) = &options.google.thinking {
            if thinking.enabled {
                let mut config = Map::new();
                config.insert("includeThoughts".into(), json!(true));
                if let Some(level) = &thinking.level {
                    config.insert("thinkingLevel".into(), json!(level));
                } else if let Some(budget) = thinking.budget_tokens {
                    config.insert("thinkingBudget".into(), json!(budget));
                }
                generation.insert("thinkingConfig".into(), Value::Object(config));
            } else {
                generation.insert(
                    "thinkingConfig".into(),
                    crate::thinking::native::google_disabled_thinking(model)
                        .map_err(|e| Refusal(e.to_string()))?,
                );
            }
        }
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    if !transcript.tools.is_empty() {
        let supports_strict = gemini_major_version(&model.id).is_some_and(|v| v >= 3);
        let (declarations, any_strict) = convert_tools(&transcript.tools, supports_strict)?;
        body.insert(
            "tools".into(),
            json!([{ "functionDeclarations": declarations }]),
        );
        let mode = match options.tool_choice.as_ref().and_then(Value::as_str) {
            Some("none") => Some("NONE"),
            Some("any") => Some("ANY"),
            _ if any_strict => Some("VALIDATED"),
            Some(_) => Some("AUTO"),
            None => None,
        };
        if let Some(mode) = mode {
            body.insert(
                "toolConfig".into(),
                json!({"functionCallingConfig": {"mode": mode}}),
            );
        }
    }
    let mut headers: Vec<(String, String)> = vec![
        ("content-type".into(), "application/json".into()),
        ("accept".into(), "text/event-stream".into()),
        ("user-agent".into(), user_agent()),
    ];
    if let Some(key) = api_key {
        headers.push(("x-goog-api-key".into(), key.to_string()));
    }
    Ok(PreparedRequest {
        url: format!(
            "{}/models/{}:streamGenerateContent?alt=sse",
            model.base_url.trim_end_matches('/'),
            model.id
        ),
        headers: final_headers(headers, model, transcript, options),
        body: Value::Object(body),
    })
}

/// Function declarations; on Gemini 3+ tools asking for `constrainedSampling` get their strict
/// schema. Returns whether any tool is strict (the calling mode is then `VALIDATED`).
fn convert_tools(tools: &[Tool], supports_strict: bool) -> Result<(Vec<Value>, bool), Refusal> {
    let mut any_strict = false;
    let mut out = Vec::with_capacity(tools.len());
    for tool in tools {
        let strict = crate::providers::constrained::resolve(tool, supports_strict, None)?;
        any_strict |= strict.is_some();
        let schema = strict.as_ref().unwrap_or(&tool.parameters);
        out.push(json!({
            "name": tool.name,
            "description": tool.description,
            "parametersJsonSchema": const_to_enum(schema, false),
        }));
    }
    Ok((out, any_strict))
}

const NAME_MAPS: [&str; 6] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];
const SUBSCHEMAS: [&str; 16] = [
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "items",
    "prefixItems",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];

/// Gemini rejects `const`: string/number consts become one-value enums.
fn const_to_enum(schema: &Value, is_name_map: bool) -> Value {
    match schema {
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| const_to_enum(i, false)).collect())
        }
        Value::Object(obj) => {
            let mut out = Map::new();
            for (key, value) in obj {
                let v = if is_name_map || SUBSCHEMAS.contains(&key.as_str()) {
                    const_to_enum(value, false)
                } else if NAME_MAPS.contains(&key.as_str()) {
                    const_to_enum(value, true)
                } else {
                    value.clone()
                };
                out.insert(key.clone(), v);
            }
            if !is_name_map && !out.contains_key("enum") {
                if let Some(c @ (Value::String(_) | Value::Number(_))) = out.get("const").cloned() {
                    out.remove("const");
                    out.insert("enum".into(), json!([c]));
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}
