//! History → Chat Completions messages (replayed reasoning in the server's field, grammar
//! calls as `custom` calls, in-place system updates and tool announcements) and the tool
//! definitions.

use serde_json::{json, Map, Value};

use super::compat::Compat;
use crate::providers::constrained::Refusal;
use crate::providers::transcript::tool_result_text;
use crate::providers::Transcript;
use crate::types::{Content, ContentBlock, Message, Model, Tool};

/// Function tools; `strict` is sent only where the compat allows it, `true` for tools whose
/// `constrainedSampling` schema has a strict form (DECISIONS §26.12). Grammar tools on a model
/// with `compat.supportsOpenAIGrammarTools` are `custom` tools (DECISIONS §26.41).
pub(super) fn convert_tools(
    model: &Model,
    tools: &[Tool],
    compat: &Compat,
) -> Result<Vec<Value>, Refusal> {
    let supports_grammar =
        crate::providers::compat_bool(model, "supportsOpenAIGrammarTools") == Some(true);
    let mut out = Vec::with_capacity(tools.len());
    for tool in tools {
        if let Some(g) = crate::providers::constrained::grammar(tool, supports_grammar)? {
            out.push(json!({"type": "custom", "custom": {
                "name": tool.name, "description": tool.description,
                "format": {"type": "grammar", "grammar": {"syntax": g.syntax, "definition": g.definition}}
            }}));
            continue;
        }
        let strict =
            crate::providers::constrained::resolve(tool, compat.supports_strict_mode, None)?;
        let mut function = Map::new();
        function.insert("name".into(), json!(tool.name));
        function.insert("description".into(), json!(tool.description));
        let is_strict = strict.is_some();
        function.insert(
            "parameters".into(),
            strict.unwrap_or_else(|| tool.parameters.clone()),
        );
        if compat.supports_strict_mode {
            function.insert("strict".into(), json!(is_strict));
        }
        out.push(json!({"type": "function", "function": function}));
    }
    Ok(out)
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

pub(super) fn is_reasoning_detail(detail: &Value) -> bool {
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

/// `grammar_inputs`: the input property of each grammar tool the transcript declares; their
/// replayed calls go out as `custom` calls with the input as it is (DECISIONS §26.41).
/// `announced_after`: with tool additions in place, the later system messages after this many
/// announce their `toolsAdded` as a `{role: "system", tools}` message (DECISIONS §26.51).
pub(super) fn convert_messages(
    model: &Model,
    transcript: &Transcript,
    compat: &Compat,
    grammar_inputs: &[(String, String)],
    announced_after: Option<usize>,
) -> Result<Vec<Value>, Refusal> {
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
    let mut system_index = 0usize;
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
                    let mut tool_calls: Vec<Value> = Vec::with_capacity(calls.len());
                    for c in &calls {
                        let property = grammar_inputs
                            .iter()
                            .find(|(name, _)| *name == c.name)
                            .map(|(_, p)| p.as_str());
                        tool_calls.push(match property {
                            Some(property) => json!({
                                "id": c.id,
                                "type": "custom",
                                "custom": {"name": c.name, "input":
                                    crate::providers::constrained::grammar_call_input(&c.name, &c.arguments, property)?}
                            }),
                            None => json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments.to_string()}
                            }),
                        });
                    }
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
                    let blocks = Content::to_blocks(&result.content);
                    let text = tool_result_text(&blocks);
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
            // Only kept here when sent in place (DECISIONS §26.20).
            Message::System(system) => {
                let added = system.tools_added.as_deref().unwrap_or(&[]);
                if announced_after.is_some_and(|folded| system_index >= folded) && !added.is_empty()
                {
                    params.push(
                        json!({"role": "system", "tools": convert_tools(model, added, compat)?}),
                    );
                }
                system_index += 1;
                let text = crate::providers::transcript::system_update_text(system);
                if !text.is_empty() {
                    params.push(json!({"role": instruction_role, "content": text}));
                }
            }
        }
        last_role = Some(match message {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
            Message::System(_) => "system",
        });
        i += 1;
    }
    Ok(params)
}
