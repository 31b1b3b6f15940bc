//! History → Gemini `contents`: turns, function calls and responses (tool-call ids and
//! multimodal responses only where the model takes them), thought signatures.

use serde_json::{json, Map, Value};

use crate::providers::transcript::tool_result_text;
use crate::providers::Transcript;
use crate::types::{Content, ContentBlock, Message, Model};

/// The Gemini major version in ids like `gemini-3-pro`, `gemini-live-2.5-flash`.
pub(super) fn gemini_major_version(id: &str) -> Option<u32> {
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

fn inline_data(mime: &str, data: &str) -> Value {
    json!({"inlineData": {"mimeType": mime, "data": data}})
}

pub(super) fn convert_messages(model: &Model, transcript: &Transcript) -> Vec<Value> {
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
                let text = tool_result_text(&blocks);
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
