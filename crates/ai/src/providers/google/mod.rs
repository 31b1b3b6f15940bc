//! Google Generative AI (`google-generative-ai`):
//! `POST {baseUrl}/models/{id}:streamGenerateContent?alt=sse`, SSE of `GenerateContentResponse`.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::error::AiError;
use crate::options::StreamOptions;
use crate::providers::api_client::{ApiClient, BuiltRequest};
use crate::providers::http_error::google_error_text;
use crate::providers::sse::SseEvent;
use crate::providers::{
    final_headers, user_agent, CowStr, Halt, Output, PreparedRequest, StreamParser, Transcript,
};
use crate::time::now_ms;
use crate::types::{Content, ContentBlock, Message, Model, StopReason, Tool, Usage};

/// The Gemini major version in ids like `gemini-3-pro`, `gemini-live-2.5-flash`.
fn gemini_major_version(id: &str) -> Option<u32> {
    let id = id.to_ascii_lowercase();
    let rest = id.strip_prefix("gemini-")?;
    let rest = rest.strip_prefix("live-").unwrap_or(rest);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Tool-call ids are only sent to models that need them.
fn requires_tool_call_id(id: &str) -> bool {
    id.starts_with("claude-")
        || id.starts_with("gpt-oss-")
        || gemini_major_version(id).is_some_and(|v| v >= 3)
}

fn multimodal_function_response(id: &str) -> bool {
    gemini_major_version(id).is_none_or(|v| v >= 3)
}

fn is_valid_signature(signature: Option<&str>) -> bool {
    let Some(s) = signature.filter(|s| !s.is_empty()) else {
        return false;
    };
    if s.len() % 4 != 0 {
        return false;
    }
    let body = s.trim_end_matches('=');
    s.len() - body.len() <= 2
        && !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

/// The Google Generative AI client.
pub(crate) struct GoogleGenerativeAi;

impl ApiClient for GoogleGenerativeAi {
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

    fn http_error(
        &self,
        _model: &Model,
        status: u16,
        content_type: Option<&str>,
        body: &str,
    ) -> String {
        google_error_text(status, content_type, body)
    }
}

pub(crate) fn build_request(
    model: &Model,
    transcript: &Transcript,
    options: &StreamOptions,
    api_key: Option<&str>,
) -> Result<PreparedRequest, String> {
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
                        .map_err(|e| e.to_string())?,
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
fn convert_tools(tools: &[Tool], supports_strict: bool) -> Result<(Vec<Value>, bool), String> {
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

fn inline_data(mime: &str, data: &str) -> Value {
    json!({"inlineData": {"mimeType": mime, "data": data}})
}

fn convert_messages(model: &Model, transcript: &Transcript) -> Vec<Value> {
    let mut contents: Vec<Value> = Vec::new();
    let include_id = requires_tool_call_id(&model.id);
    let supports_images = model.input.iter().any(|i| i == "image");
    for message in &transcript.messages {
        match message {
            Message::User(user) => {
                let parts: Vec<Value> = match &user.content {
                    Content::Text(text) => vec![json!({"text": text})],
                    Content::Blocks(blocks) => blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(json!({"text": t.text})),
                            ContentBlock::Image(img) => {
                                Some(inline_data(&img.mime_type, &img.data))
                            }
                            _ => None,
                        })
                        .collect(),
                };
                if !parts.is_empty() {
                    contents.push(json!({"role": "user", "parts": parts}));
                }
            }
            Message::Assistant(assistant) => {
                let same = assistant.provider == model.provider && assistant.model == model.id;
                let signature = |s: Option<&String>| {
                    s.filter(|s| same && is_valid_signature(Some(s.as_str())))
                        .cloned()
                };
                let mut parts = Vec::new();
                for block in &assistant.content {
                    match block {
                        ContentBlock::Text(t) => {
                            let sig = signature(t.text_signature.as_ref());
                            if t.text.trim().is_empty() && sig.is_none() {
                                continue;
                            }
                            let mut part = Map::new();
                            part.insert("text".into(), json!(t.text));
                            if let Some(sig) = sig {
                                part.insert("thoughtSignature".into(), json!(sig));
                            }
                            parts.push(Value::Object(part));
                        }
                        ContentBlock::Thinking(t) => {
                            if same {
                                let sig = signature(t.thinking_signature.as_ref());
                                if t.thinking.trim().is_empty() && sig.is_none() {
                                    continue;
                                }
                                let mut part = Map::new();
                                part.insert("thought".into(), json!(true));
                                part.insert("text".into(), json!(t.thinking));
                                if let Some(sig) = sig {
                                    part.insert("thoughtSignature".into(), json!(sig));
                                }
                                parts.push(Value::Object(part));
                            } else if !t.thinking.trim().is_empty() {
                                parts.push(json!({"text": t.thinking}));
                            }
                        }
                        ContentBlock::ToolCall(call) => {
                            let mut function_call = Map::new();
                            function_call.insert("name".into(), json!(call.name));
                            function_call.insert(
                                "args".into(),
                                if call.arguments.is_object() {
                                    call.arguments.clone()
                                } else {
                                    json!({})
                                },
                            );
                            if include_id {
                                function_call.insert("id".into(), json!(call.id));
                            }
                            let mut part = Map::new();
                            part.insert("functionCall".into(), Value::Object(function_call));
                            if let Some(sig) = signature(call.thought_signature.as_ref()) {
                                part.insert("thoughtSignature".into(), json!(sig));
                            }
                            parts.push(Value::Object(part));
                        }
                        _ => {}
                    }
                }
                if !parts.is_empty() {
                    contents.push(json!({"role": "model", "parts": parts}));
                }
            }
            Message::ToolResult(result) => {
                let blocks = Content::to_blocks(&result.content);
                let texts: Vec<&str> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect();
                let text = texts.join("\n");
                let images: Vec<Value> = if supports_images {
                    blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Image(img) => {
                                Some(inline_data(&img.mime_type, &img.data))
                            }
                            _ => None,
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                let value = if !text.trim().is_empty() {
                    text
                } else if !images.is_empty() {
                    "(see attached image)".into()
                } else {
                    String::new()
                };
                let multimodal = multimodal_function_response(&model.id);
                let mut response = Map::new();
                response.insert("name".into(), json!(result.tool_name));
                response.insert(
                    "response".into(),
                    if result.is_error {
                        json!({"error": value})
                    } else {
                        json!({"output": value})
                    },
                );
                if !images.is_empty() && multimodal {
                    response.insert("parts".into(), Value::Array(images.clone()));
                }
                if include_id {
                    response.insert("id".into(), json!(result.tool_call_id));
                }
                let part = json!({"functionResponse": response});
                let merge = contents.last().is_some_and(|c| {
                    c.get("role").and_then(Value::as_str) == Some("user")
                        && c.get("parts")
                            .and_then(Value::as_array)
                            .is_some_and(|p| p.iter().any(|p| p.get("functionResponse").is_some()))
                });
                match contents
                    .last_mut()
                    .and_then(|c| c.get_mut("parts"))
                    .and_then(Value::as_array_mut)
                {
                    Some(parts) if merge => parts.push(part),
                    _ => contents.push(json!({"role": "user", "parts": [part]})),
                }
                if !images.is_empty() && !multimodal {
                    let mut parts = vec![json!({"text": "Tool result image:"})];
                    parts.extend(images);
                    contents.push(json!({"role": "user", "parts": parts}));
                }
            }
            Message::System(_) => {}
        }
    }
    contents
}

// ---------------------------------------------------------------------------------------------
// Stream parsing.

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk<'a> {
    #[serde(borrow, default)]
    response_id: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    candidates: Option<Vec<Candidate<'a>>>,
    #[serde(default)]
    usage_metadata: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(borrow, default)]
    content: Option<CandidateContent<'a>>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct CandidateContent<'a> {
    #[serde(borrow, default)]
    parts: Option<Vec<Part<'a>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(borrow, default)]
    text: Option<CowStr<'a>>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default)]
    thought_signature: Option<String>,
    #[serde(default)]
    function_call: Option<FunctionCall>,
}

#[derive(Deserialize)]
struct FunctionCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Clone, Copy, PartialEq)]
enum Current {
    Text(usize),
    Thinking(usize),
}

pub struct Parser {
    current: Option<Current>,
    counter: u64,
    raw_stop: Option<String>,
    /// Ids of the tool calls so far (duplicates get a generated id).
    call_ids: HashSet<String>,
}

impl Parser {
    pub fn new(_model: &Model) -> Self {
        Self {
            current: None,
            counter: 0,
            raw_stop: None,
            call_ids: HashSet::new(),
        }
    }

    fn close_current(&mut self, out: &mut Output) {
        match self.current.take() {
            Some(Current::Text(i)) => out.text_end(i),
            Some(Current::Thinking(i)) => out.thinking_end(i),
            None => {}
        }
    }

    fn chunk(&mut self, chunk: Chunk<'_>, out: &mut Output) -> Result<(), String> {
        if out.message.response_id.is_none() {
            out.message.response_id = chunk.response_id.map(|c| c.0.into_owned());
        }
        let candidate = chunk.candidates.and_then(|c| c.into_iter().next());
        let (parts, finish) = match candidate {
            Some(c) => (
                c.content.and_then(|c| c.parts).unwrap_or_default(),
                c.finish_reason,
            ),
            None => (Vec::new(), None),
        };
        for part in parts {
            if let Some(text) = &part.text {
                let thinking = part.thought == Some(true);
                let index = match (self.current, thinking) {
                    (Some(Current::Thinking(i)), true) | (Some(Current::Text(i)), false) => i,
                    _ => {
                        self.close_current(out);
                        if thinking {
                            let i = out.thinking_start(String::new(), None, false);
                            self.current = Some(Current::Thinking(i));
                            i
                        } else {
                            let i = out.text_start(String::new());
                            self.current = Some(Current::Text(i));
                            i
                        }
                    }
                };
                let incoming = part.thought_signature.as_deref().filter(|s| !s.is_empty());
                if thinking {
                    out.thinking_delta(index, text);
                    if let (Some(sig), Some(t)) = (incoming, out.thinking_mut(index)) {
                        t.thinking_signature = Some(sig.to_string());
                    }
                } else {
                    out.text_delta(index, text);
                    if let (Some(sig), Some(t)) = (incoming, out.text_mut(index)) {
                        t.text_signature = Some(sig.to_string());
                    }
                }
            }
            if let Some(call) = part.function_call {
                self.close_current(out);
                let name = call.name.unwrap_or_default();
                let id = match call
                    .id
                    .filter(|id| !id.is_empty() && !self.call_ids.contains(id))
                {
                    Some(id) => id,
                    None => {
                        self.counter += 1;
                        format!("{name}_{}_{}", now_ms(), self.counter)
                    }
                };
                self.call_ids.insert(id.clone());
                let args = match call.args {
                    Some(v @ Value::Object(_)) => v,
                    _ => json!({}),
                };
                let delta = args.to_string();
                let index = out.toolcall_start(id, name, args);
                if let (Some(sig), Some(c)) = (
                    part.thought_signature.filter(|s| !s.is_empty()),
                    out.toolcall_mut(index),
                ) {
                    c.thought_signature = Some(sig);
                }
                out.toolcall_delta(index, &delta);
                out.toolcall_end_with(index);
            }
        }
        if let Some(reason) = finish {
            out.set_raw_stop_reason(&reason);
            out.message.stop_reason = match reason.as_str() {
                "STOP" => StopReason::Stop,
                "MAX_TOKENS" | "CONTINUATION" => StopReason::Length,
                r if ERROR_FINISH_REASONS.contains(&r) => StopReason::Error,
                // pi fails the stream at once, leaving the open block unclosed.
                _ => return Err(format!("Unhandled stop reason: {reason}")),
            };
            if out.message.stop_reason == StopReason::Stop && out.has_tool_calls() {
                out.message.stop_reason = StopReason::ToolUse;
            }
            self.raw_stop = Some(reason);
        }
        if let Some(meta) = chunk.usage_metadata.filter(serde_json::Value::is_object) {
            let n = |k: &str| meta.get(k).and_then(Value::as_u64).unwrap_or(0);
            let cached = n("cachedContentTokenCount");
            let thoughts = n("thoughtsTokenCount");
            let mut usage: Usage = Usage::clone(&out.message.usage);
            usage.input = n("promptTokenCount").saturating_sub(cached);
            usage.output = n("candidatesTokenCount") + thoughts;
            usage.cache_read = cached;
            usage.cache_write = 0;
            usage.reasoning = Some(thoughts);
            usage.total_tokens = Some(n("totalTokenCount"));
            out.set_usage(usage);
        }
        Ok(())
    }
}

/// `finishReason` values that end the reply in an error (`Provider stopped with: <reason>`);
/// any value outside these and `STOP`/`MAX_TOKENS`/`CONTINUATION` is unknown.
const ERROR_FINISH_REASONS: &[&str] = &[
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "SAFETY",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
    "IMAGE_OTHER",
    "RECITATION",
    "FINISH_REASON_UNSPECIFIED",
    "OTHER",
    "LANGUAGE",
    "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
    "NO_IMAGE",
];

impl StreamParser for Parser {
    fn on_event(&mut self, event: SseEvent<'_>, out: &mut Output) -> Result<(), Halt> {
        if event.data.trim().is_empty() {
            return Ok(());
        }
        // pi surfaces JavaScript's `JSON.parse` message for a malformed chunk.
        let chunk: Chunk<'_> = serde_json::from_str(event.data).map_err(|e| {
            Halt::Fail(
                crate::json_error::js_json_parse_error(event.data)
                    .unwrap_or_else(|| format!("Could not read Google stream chunk: {e}")),
            )
        })?;
        if let Some(err) = chunk.error.as_ref().filter(|e| e.is_object()) {
            let status = err.get("status").map_or_else(
                || "undefined".to_string(),
                |s| s.as_str().map_or_else(|| s.to_string(), str::to_string),
            );
            let full: Value = serde_json::from_str(event.data).unwrap_or(Value::Null);
            return Err(Halt::Fail(format!("got status: {status}. {full}")));
        }
        self.chunk(chunk, out).map_err(Halt::Fail)
    }

    fn unterminated_tail_error(&self) -> Option<String> {
        // @google/genai's reader refuses a trailing event without its blank line.
        Some("Incomplete JSON segment at the end".to_string())
    }

    fn finish(&mut self, out: &mut Output) -> Result<(), String> {
        self.close_current(out);
        match out.message.stop_reason {
            StopReason::Pending => Err("Google stream ended without a finish reason".into()),
            StopReason::Error | StopReason::Aborted => Err(match &self.raw_stop {
                Some(r) => format!("Provider stopped with: {r}"),
                None => "An unknown error occurred".into(),
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_and_versions() {
        assert!(is_valid_signature(Some("AAAA")));
        assert!(is_valid_signature(Some("Ab+/cd==")));
        assert!(!is_valid_signature(Some("AAA")));
        assert!(!is_valid_signature(Some("AA-A")));
        assert_eq!(gemini_major_version("gemini-3-pro-preview"), Some(3));
        assert_eq!(gemini_major_version("gemini-live-2.5-flash"), Some(2));
        assert_eq!(gemini_major_version("gemma-3"), None);
    }
}
