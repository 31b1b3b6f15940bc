//! History → Messages wire messages: turns, tool results (error images moved after the
//! results), replayed thinking, effort markers and in-place system updates.

use serde_json::{json, Value};

use crate::providers::compat_bool;
use crate::providers::constrained::Refusal;
use crate::providers::transcript::tool_result_text;
use crate::types::{
    AssistantMessage, Content, ContentBlock, ImageContent, Message, Model, Tool, ToolResultMessage,
};

use super::oauth::to_claude_code_name;

/// Efforts an assistant turn may carry as `providerThinkingLevel` to be replayed.
const EFFORTS: [&str; 5] = ["low", "medium", "high", "xhigh", "max"];
const ERROR_IMAGE_PLACEHOLDER: &str = "(image attached after the tool results)";

fn image_block(image: &ImageContent) -> Value {
    json!({
        "type": "image",
        "source": {"type": "base64", "media_type": image.mime_type, "data": image.data}
    })
}

/// Converts the tools a system message adds (native tool changes).
pub(super) type NativeTools<'a> = &'a dyn Fn(&[Tool]) -> Result<Vec<Value>, Refusal>;

/// How [`convert_messages`] renders the conversation.
pub(super) struct ConvertOptions<'a> {
    pub(super) oauth: bool,
    pub(super) cache: Option<&'a Value>,
    pub(super) allow_empty_signature: bool,
    /// With effort markers: replayed turns of this provider keep their recorded effort.
    pub(super) managed_provider: Option<&'a str>,
    /// With native tool changes: converts the tools a system message adds.
    pub(super) native_tools: Option<NativeTools<'a>>,
}

/// The converted messages plus, per assistant message index, the effort it was produced at.
pub(super) struct Converted {
    pub(super) messages: Vec<Value>,
    pub(super) assistant_levels: Vec<(usize, String)>,
}

/// A later system message (in place): its update text, then the native tool changes.
fn system_blocks(
    system: &crate::types::SystemMessage,
    opts: &ConvertOptions<'_>,
) -> Result<Vec<Value>, Refusal> {
    let mut blocks = Vec::new();
    let text = crate::providers::transcript::system_update_text(system);
    if !text.is_empty() {
        blocks.push(json!({"type": "text", "text": text}));
    }
    if let Some(convert) = opts.native_tools {
        let added = system.tools_added.as_deref().unwrap_or(&[]);
        for removed in system.tools_removed.iter().flatten() {
            let Some(name) = removed.get("name").and_then(Value::as_str) else {
                continue;
            };
            // A new definition under the same name replaces the old one by itself.
            if added.iter().any(|t| t.name == name) {
                continue;
            }
            let name = if opts.oauth {
                to_claude_code_name(name)
            } else {
                name.to_string()
            };
            blocks.push(json!({"type": "tool_removal",
                "tool": {"type": "tool_reference", "name": name}}));
        }
        for definition in convert(added)? {
            blocks.push(json!({"type": "tool_addition",
                "tool": {"type": "tool_definition", "definition": definition}}));
        }
    }
    Ok(blocks)
}

pub(super) fn convert_messages(
    messages: &[Message],
    opts: &ConvertOptions<'_>,
) -> Result<Converted, Refusal> {
    let oauth = opts.oauth;
    let mut params: Vec<Value> = Vec::new();
    let mut assistant_levels = Vec::new();
    // Later system messages wait for the next assistant message that is sent (or the end):
    // a system message between a `tool_use` and its `tool_result` is rejected, and waiting
    // past assistant turns that convert to nothing keeps an update from landing before a
    // user message. So an update placed before a user message arrives after it.
    let mut pending_system: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            Message::User(user) => match &user.content {
                Content::Text(text) => {
                    if !text.trim().is_empty() {
                        params.push(json!({"role": "user", "content": text}));
                    }
                }
                Content::Blocks(blocks) => {
                    let converted: Vec<Value> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                                Some(json!({"type": "text", "text": t.text}))
                            }
                            ContentBlock::Image(img) => Some(image_block(img)),
                            _ => None,
                        })
                        .collect();
                    if !converted.is_empty() {
                        params.push(json!({"role": "user", "content": converted}));
                    }
                }
            },
            Message::Assistant(assistant) => {
                let mut blocks = Vec::new();
                for block in &assistant.content {
                    match block {
                        ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                            blocks.push(json!({"type": "text", "text": t.text}));
                        }
                        ContentBlock::Thinking(t) => {
                            if t.redacted == Some(true) {
                                blocks.push(json!({
                                    "type": "redacted_thinking",
                                    "data": t.thinking_signature.clone().unwrap_or_default()
                                }));
                                continue;
                            }
                            let signature = t
                                .thinking_signature
                                .as_deref()
                                .filter(|s| !s.trim().is_empty());
                            match signature {
                                Some(sig) => blocks.push(json!({
                                    "type": "thinking", "thinking": t.thinking, "signature": sig
                                })),
                                None if t.thinking.trim().is_empty() => {}
                                // Unsigned thinking (e.g. from an aborted stream) is replayed
                                // as text: the API rejects unsigned thinking blocks. Servers
                                // marked `allowEmptySignature` (Fireworks, Vercel) take it as
                                // thinking with an empty signature.
                                None if opts.allow_empty_signature => blocks.push(json!({
                                    "type": "thinking", "thinking": t.thinking, "signature": ""
                                })),
                                None => blocks.push(json!({"type": "text", "text": t.thinking})),
                            }
                        }
                        ContentBlock::ToolCall(call) => {
                            let name = if oauth {
                                to_claude_code_name(&call.name)
                            } else {
                                call.name.clone()
                            };
                            let input = if call.arguments.is_object() {
                                call.arguments.clone()
                            } else {
                                json!({})
                            };
                            blocks.push(json!({
                                "type": "tool_use", "id": call.id, "name": name, "input": input
                            }));
                        }
                        _ => {}
                    }
                }
                if !blocks.is_empty() {
                    params.append(&mut pending_system);
                    if let Some(level) = opts
                        .managed_provider
                        .filter(|p| {
                            assistant.api == "anthropic-messages" && assistant.provider == *p
                        })
                        .and_then(|_| assistant.extra.get("providerThinkingLevel"))
                        .and_then(Value::as_str)
                        .filter(|l| EFFORTS.contains(l))
                    {
                        assistant_levels.push((params.len(), level.to_string()));
                    }
                    params.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            Message::ToolResult(_) => {
                let mut results = Vec::new();
                let mut error_images = Vec::new();
                while let Some(Message::ToolResult(result)) = messages.get(i) {
                    results.push(convert_tool_result(result, &mut error_images));
                    i += 1;
                }
                results.extend(error_images);
                params.push(json!({"role": "user", "content": results}));
                continue;
            }
            // Only present when sent in place (DECISIONS §26.20).
            Message::System(system) => {
                let blocks = system_blocks(system, opts)?;
                if !blocks.is_empty() {
                    pending_system.push(json!({"role": "system", "content": blocks}));
                }
            }
        }
        i += 1;
    }
    params.append(&mut pending_system);

    // Cache breakpoint on the conversation: the last block of a trailing user or system message.
    if let Some(cc) = opts.cache {
        if let Some(last) = params.last_mut() {
            if matches!(
                last.get("role").and_then(Value::as_str),
                Some("user" | "system")
            ) {
                if let Some(text) = last
                    .get("content")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                {
                    last["content"] = json!([{"type": "text", "text": text, "cache_control": cc}]);
                } else if let Some(Value::Object(block)) = last
                    .get_mut("content")
                    .and_then(Value::as_array_mut)
                    .and_then(|a| a.last_mut())
                {
                    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
                    if matches!(
                        kind,
                        "text" | "image" | "tool_result" | "tool_addition" | "tool_removal"
                    ) {
                        block.insert("cache_control".into(), cc.clone());
                    }
                }
            }
        }
    }
    Ok(Converted {
        messages: params,
        assistant_levels,
    })
}

/// `reply` converted as the next request will replay it, assistant message only: the
/// messages a thread holds after its reply (DECISIONS §26.23, §26.40). No cache markers, effort
/// markers or tool changes: those are not part of the assistant message.
pub(super) fn thread_reply(
    model: &Model,
    reply: &AssistantMessage,
    oauth: bool,
) -> Result<Vec<Value>, Refusal> {
    let messages = crate::providers::transcript::prepare_messages(
        vec![Message::Assistant(reply.clone())],
        model,
    );
    let converted = convert_messages(
        &messages,
        &ConvertOptions {
            oauth,
            cache: None,
            allow_empty_signature: compat_bool(model, "allowEmptySignature") == Some(true),
            managed_provider: None,
            native_tools: None,
        },
    )?;
    Ok(converted
        .messages
        .into_iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .collect())
}

/// Effort markers: each replayed turn with a recorded effort is preceded by a system message
/// setting it, and a last one sets this request's effort (DECISIONS §26.21).
pub(super) fn insert_effort_messages(converted: Converted, active: &str) -> Vec<Value> {
    let marker = |effort: &str| json!({"role": "system", "content": [], "output_config": {"effort": effort}});
    let mut out =
        Vec::with_capacity(converted.messages.len() + converted.assistant_levels.len() + 1);
    let mut levels = converted.assistant_levels.into_iter().peekable();
    for (index, message) in converted.messages.into_iter().enumerate() {
        if let Some((_, level)) = levels.next_if(|(at, _)| *at == index) {
            out.push(marker(&level));
        }
        out.push(message);
    }
    out.push(marker(active));
    out
}

/// One `tool_result` block. Error results may not carry images: those are replaced by a
/// placeholder and appended (with a caption) after all results of the turn.
fn convert_tool_result(result: &ToolResultMessage, error_images: &mut Vec<Value>) -> Value {
    let blocks = Content::to_blocks(&result.content);
    let images: Vec<&ImageContent> = blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Image(img) => Some(img),
            _ => None,
        })
        .collect();
    let mut texts_and_images: Vec<&ContentBlock> = blocks
        .iter()
        .filter(|b| matches!(b, ContentBlock::Text(_) | ContentBlock::Image(_)))
        .collect();
    let placeholder_blocks;
    if result.is_error && !images.is_empty() {
        error_images.push(json!({
            "type": "text",
            "text": format!(
                "Images from the error result of tool call {} ({}):",
                result.tool_call_id, result.tool_name
            )
        }));
        error_images.extend(images.iter().map(|img| image_block(img)));
        placeholder_blocks = replace_images(&texts_and_images);
        texts_and_images = placeholder_blocks.iter().collect();
    }
    let has_images = texts_and_images
        .iter()
        .any(|b| matches!(b, ContentBlock::Image(_)));
    let content = if !has_images {
        Value::String(tool_result_text(texts_and_images.iter().copied()))
    } else {
        let mut out: Vec<Value> = texts_and_images
            .iter()
            .map(|b| match b {
                ContentBlock::Text(t) => json!({"type": "text", "text": t.text}),
                ContentBlock::Image(img) => image_block(img),
                _ => Value::Null,
            })
            .collect();
        if !texts_and_images
            .iter()
            .any(|b| matches!(b, ContentBlock::Text(_)))
        {
            out.insert(0, json!({"type": "text", "text": "(see attached image)"}));
        }
        Value::Array(out)
    };
    json!({
        "type": "tool_result",
        "tool_use_id": result.tool_call_id,
        "content": content,
        "is_error": result.is_error
    })
}

fn replace_images(blocks: &[&ContentBlock]) -> Vec<ContentBlock> {
    let mut out = Vec::new();
    let mut previous_was_placeholder = false;
    for block in blocks {
        match block {
            ContentBlock::Image(_) => {
                if !previous_was_placeholder {
                    out.push(ContentBlock::Text(crate::types::TextContent {
                        text: ERROR_IMAGE_PLACEHOLDER.into(),
                        text_signature: None,
                        extra: Default::default(),
                    }));
                }
                previous_was_placeholder = true;
            }
            ContentBlock::Text(t) => {
                previous_was_placeholder = t.text == ERROR_IMAGE_PLACEHOLDER;
                out.push((*block).clone());
            }
            _ => {}
        }
    }
    out
}
