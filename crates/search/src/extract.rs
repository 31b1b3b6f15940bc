//! What of an entry is searchable: the text a person would remember it by.
//!
//! One document per entry (DECISIONS §34.3): message text, tool calls (name and arguments),
//! tool results, `!` bash commands and their output, compaction and branch summaries, custom
//! messages, labels (filed under the entry they label) and session names. Thinking, images,
//! usage and settings changes are left out: they are either not what people search for or
//! not text. The output of tools and `!` commands is indexed by its head and its tail only
//! (DECISIONS §34.13): file contents and logs are most of the bytes of a session and least of
//! what a person remembers it by.

use arbor_ai::types::{Content, ContentBlock, Message};
use arbor_session::{AgentMessage, EntryKind, SessionEntry};
use serde_json::Value;

/// The searchable part of one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    /// The entry a hit opens on: the entry itself, or a label's target.
    pub target_id: String,
    /// What kind of text this is, for display: `user`, `assistant`, `toolResult`, `bash`,
    /// `compaction`, `branch_summary`, `label`, `session_name`, `custom`.
    pub kind: &'static str,
    /// The text to index: words separated by spaces or newlines, long outputs cut to their head
    /// and tail.
    pub body: String,
}

/// The searchable text of `entry`, or `None` when it holds nothing to search.
pub fn extract(entry: &SessionEntry) -> Option<Extracted> {
    let mut body = String::new();
    let (kind, target) = match &entry.kind {
        EntryKind::Message(m) => (message_text(&m.message, &mut body), None),
        EntryKind::Compaction(c) => {
            push(&mut body, &c.summary);
            ("compaction", None)
        }
        EntryKind::BranchSummary(b) => {
            push(&mut body, &b.summary);
            ("branch_summary", None)
        }
        EntryKind::CustomMessage(c) => {
            content_text(&c.content, &mut body);
            ("custom", None)
        }
        EntryKind::Label(l) => {
            if let Some(label) = l.label.get() {
                push(&mut body, label);
            }
            ("label", Some(l.target_id.clone()))
        }
        EntryKind::SessionInfo(s) => {
            if let Some(name) = s.name.get() {
                push(&mut body, name);
            }
            ("session_name", None)
        }
        _ => return None,
    };
    if body.trim().is_empty() {
        return None;
    }
    Some(Extracted {
        target_id: target.unwrap_or_else(|| entry.id.clone()),
        kind,
        body,
    })
}

fn message_text(message: &AgentMessage, body: &mut String) -> &'static str {
    match message {
        AgentMessage::Llm(Message::User(u)) => {
            content_text(&u.content, body);
            "user"
        }
        AgentMessage::Llm(Message::Assistant(a)) => {
            blocks_text(&a.content, body);
            "assistant"
        }
        AgentMessage::Llm(Message::ToolResult(r)) => {
            push(body, &r.tool_name);
            let mut output = String::new();
            content_text(&r.content, &mut output);
            push_output(body, &output);
            "toolResult"
        }
        AgentMessage::Llm(Message::System(s)) => {
            content_text(&s.content, body);
            "system"
        }
        AgentMessage::Custom(c) => {
            content_text(&c.content, body);
            "custom"
        }
        AgentMessage::BashExecution(b) => {
            push(body, &b.command);
            push_output(body, &b.output);
            "bash"
        }
        AgentMessage::BranchSummary(b) => {
            push(body, &b.summary);
            "branch_summary"
        }
        AgentMessage::CompactionSummary(c) => {
            push(body, &c.summary);
            "compaction"
        }
        AgentMessage::Other(_) => "other",
    }
}

fn content_text(content: &Content, body: &mut String) {
    match content {
        Content::Text(t) => push(body, t),
        Content::Blocks(blocks) => blocks_text(blocks, body),
    }
}

fn blocks_text(blocks: &[ContentBlock], body: &mut String) {
    for block in blocks {
        match block {
            ContentBlock::Text(t) => push(body, &t.text),
            // A tool call is searchable by its name and every string of its arguments, which
            // is where the paths it touched and the commands it ran are.
            ContentBlock::ToolCall(call) => {
                push(body, &call.name);
                value_strings(&call.arguments, body);
            }
            ContentBlock::Thinking(_) | ContentBlock::Image(_) | ContentBlock::Unknown(_) => {}
        }
    }
}

/// Every string (and number) inside a JSON value, in document order; keys are left out so a
/// search for `path` does not match every file operation.
fn value_strings(value: &Value, body: &mut String) {
    match value {
        Value::String(s) => push(body, s),
        Value::Number(n) => push(body, &n.to_string()),
        Value::Array(items) => items.iter().for_each(|v| value_strings(v, body)),
        Value::Object(map) => map.values().for_each(|v| value_strings(v, body)),
        Value::Bool(_) | Value::Null => {}
    }
}

fn push(body: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    if !body.is_empty() {
        body.push('\n');
    }
    body.push_str(text);
}

/// Bytes of a tool's or command's output indexed from its start, and from its end (where a
/// command's verdict is): DECISIONS §34.13.
pub const OUTPUT_HEAD: usize = 6 * 1024;
/// Bytes of a long output indexed from its end (see [`OUTPUT_HEAD`]).
pub const OUTPUT_TAIL: usize = 2 * 1024;

/// Pushes `text`, or when it is longer than [`OUTPUT_HEAD`] + [`OUTPUT_TAIL`] only its head and
/// tail, each cut at a word boundary so no word is indexed in part.
fn push_output(body: &mut String, text: &str) {
    if text.len() <= OUTPUT_HEAD + OUTPUT_TAIL {
        push(body, text);
        return;
    }
    let head_end = word_boundary_before(text, OUTPUT_HEAD);
    let tail_start = word_boundary_after(text, text.len() - OUTPUT_TAIL);
    push(body, &text[..head_end]);
    push(body, "…");
    push(body, &text[tail_start..]);
}

/// The start of the word that `at` falls in (or `at` at a boundary), on a char boundary.
fn word_boundary_before(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    if !text[at..].starts_with(char::is_alphanumeric) {
        return at;
    }
    match text[..at].rfind(|c: char| !c.is_alphanumeric()) {
        Some(i) => i,
        None => at,
    }
}

/// The end of the word that `at` falls in (or `at` at a boundary), on a char boundary.
fn word_boundary_after(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    if !text[..at].ends_with(char::is_alphanumeric) {
        return at;
    }
    match text[at..].find(|c: char| !c.is_alphanumeric()) {
        Some(i) => at + i,
        None => at,
    }
}
