//! History → Responses input items: messages, reasoning and function-call items, in-place
//! system updates and tool changes, effort `configuration_update` items.

use serde_json::{json, Map, Value};

use crate::providers::constrained::Refusal;
use crate::providers::transcript::tool_result_text;
use crate::providers::{compat_bool, Transcript};
use crate::transform::short_hash;
use crate::types::{Content, ContentBlock, Message, Model};

use super::tools::{push_tool_search, tool_support, ToolDeclarations, ToolSupport};

fn configuration_update(effort: Value) -> Value {
    json!({"type": "configuration_update", "reasoning": {"effort": effort}})
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
pub(super) fn convert_input(
    model: &Model,
    transcript: &Transcript,
    effort_update: Option<&str>,
) -> Result<Vec<Value>, Refusal> {
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
                let text = tool_result_text(&blocks);
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
