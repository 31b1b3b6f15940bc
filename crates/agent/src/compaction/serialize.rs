//! The conversation as plain text for the summarizer (pi 1.6.0's `serializeConversation`,
//! byte for byte): labelled parts joined by blank lines, so the model reads a transcript
//! instead of continuing a chat. Thinking and system messages are left out.

use arbor_ai::{ContentBlock, Message};
use serde_json::Value;

use crate::compaction::js::{stringify, utf16_len, utf16_prefix_end};
use crate::context::convert::convert_one;
use crate::message::AgentMessage;

/// Longest tool result (UTF-16 units) shown to the summarizer.
pub const TOOL_RESULT_MAX_CHARS: usize = 2_000;

/// Serializes agent messages (through `convert_to_llm`) for a summary request.
pub fn serialize_conversation(messages: &[AgentMessage]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for m in messages {
        if let Some(llm) = convert_one(m) {
            push_parts(&mut parts, &llm);
        }
    }
    parts.join("\n\n")
}

fn push_parts(parts: &mut Vec<String>, message: &Message) {
    match message {
        Message::User(u) => {
            let text = u.content.joined_text("");
            if !text.is_empty() {
                parts.push(format!("[User]: {text}"));
            }
        }
        Message::Assistant(a) => {
            let texts: Vec<&str> = a
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect();
            if a.content.iter().any(|b| matches!(b, ContentBlock::Text(_))) {
                parts.push(format!("[Assistant]: {}", texts.join("\n")));
            }
            let calls: Vec<String> = a
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolCall(c) => {
                        Some(format!("{}({})", c.name, render_arguments(&c.arguments)))
                    }
                    _ => None,
                })
                .collect();
            if !calls.is_empty() {
                parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
            }
        }
        Message::ToolResult(t) => {
            let text = t.content.joined_text("");
            if !text.is_empty() {
                parts.push(format!("[Tool result]: {}", truncate_for_summary(&text)));
            }
        }
        Message::System(_) => {}
    }
}

/// `k=<JSON of v>` per own property, `, ` between them (`Object.entries` order).
fn render_arguments(arguments: &Value) -> String {
    match arguments {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", stringify(v)))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(k, v)| format!("{k}={}", stringify(v)))
            .collect::<Vec<_>>()
            .join(", "),
        _ => String::new(),
    }
}

/// The first 2,000 units and a note of how many more there were.
fn truncate_for_summary(text: &str) -> String {
    let len = utf16_len(text);
    if len <= TOOL_RESULT_MAX_CHARS {
        return text.to_string();
    }
    let end = utf16_prefix_end(text, TOOL_RESULT_MAX_CHARS);
    format!(
        "{}\n\n[... {} more characters truncated]",
        &text[..end],
        len - TOOL_RESULT_MAX_CHARS
    )
}
