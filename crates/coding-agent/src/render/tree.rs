//! The session tree as text: one line per entry, indented only where the tree branches, so a
//! long linear session stays flush left and every fork is visible at a glance.
//!
//! ```text
//! * 11111111  user        hello
//! * 22222222  assistant   hi
//!   ├─ 33333333  user        plan A
//!   │  44444444  assistant   ok A
//! * └─ 55555555  user        plan B
//! *    66666666  assistant   ok B  ← leaf
//! ```
//! `*` marks the active path (root to leaf); labels follow in brackets.

use std::fmt::Write as _;

use arbor_agent::message::AgentMessage;
use arbor_agent::session::{EntryKind, SessionEntry, SessionTree};
use arbor_ai::types::{ContentBlock, Message};

use super::text::{blocks_text, content_text, preview};

const PREVIEW_CHARS: usize = 72;

/// Draws the whole tree (iteratively: a linear session is as deep as it is long).
pub fn render(tree: &SessionTree) -> String {
    let mut out = String::new();
    // (node, prefix for its own line, prefix for what hangs below it)
    let mut stack: Vec<(usize, String, String)> = Vec::new();
    push_children(&mut stack, &tree.roots, "");
    while let Some((idx, head, body)) = stack.pop() {
        let Some(node) = tree.nodes.get(idx) else {
            continue;
        };
        let mark = if node.on_active_path { '*' } else { ' ' };
        let (kind, text) = describe(&node.entry);
        let _ = write!(out, "{mark} {head}{}  {kind:<14} {text}", node.entry.id);
        if let Some(label) = &node.label {
            let _ = write!(out, "  [{label}]");
        }
        if node.is_leaf {
            out.push_str("  ← leaf");
        }
        // No trailing spaces when the preview is empty.
        let trimmed = out.trim_end_matches(' ').len();
        out.truncate(trimmed);
        out.push('\n');
        push_children(&mut stack, &node.children, &body);
    }
    out
}

/// A single child continues its parent's column; several children each open a branch.
fn push_children(stack: &mut Vec<(usize, String, String)>, children: &[usize], body: &str) {
    if let [only] = children {
        stack.push((*only, body.to_string(), body.to_string()));
        return;
    }
    let last = children.len().saturating_sub(1);
    // Reversed so the first child is drawn first.
    for (i, &child) in children.iter().enumerate().rev() {
        let (head, cont) = if i == last {
            ("└─ ", "   ")
        } else {
            ("├─ ", "│  ")
        };
        stack.push((child, format!("{body}{head}"), format!("{body}{cont}")));
    }
}

/// `(kind, preview)` for one entry: the role for messages, the entry type otherwise.
pub fn describe(entry: &SessionEntry) -> (String, String) {
    match &entry.kind {
        EntryKind::Message(m) => describe_message(&m.message),
        EntryKind::ThinkingLevelChange(e) => ("thinking".into(), e.thinking_level.clone()),
        EntryKind::ModelChange(e) => ("model".into(), format!("{}/{}", e.provider, e.model_id)),
        EntryKind::ActiveToolsChange(e) => (
            "tools".into(),
            match e.active_tool_names.get() {
                Some(names) => preview(&names.join(", "), PREVIEW_CHARS),
                None => "all".into(),
            },
        ),
        EntryKind::Compaction(e) => (
            "compaction".into(),
            format!(
                "{} tokens before{}: {}",
                e.tokens_before,
                if e.retained_tail.is_some() {
                    ", retained tail"
                } else {
                    ""
                },
                preview(&e.summary, PREVIEW_CHARS)
            ),
        ),
        EntryKind::BranchSummary(e) => (
            "branch_summary".into(),
            format!("from {}: {}", e.from_id, preview(&e.summary, PREVIEW_CHARS)),
        ),
        EntryKind::Custom(e) => ("custom".into(), e.custom_type.clone()),
        EntryKind::CustomMessage(e) => (
            "custom_message".into(),
            format!(
                "{}: {}",
                e.custom_type,
                preview(&content_text(&e.content), PREVIEW_CHARS)
            ),
        ),
        EntryKind::Label(e) => (
            "label".into(),
            match e.label.get() {
                Some(label) => format!("{} = {}", e.target_id, preview(label, PREVIEW_CHARS)),
                None => format!("{} cleared", e.target_id),
            },
        ),
        EntryKind::SessionInfo(e) => (
            "name".into(),
            e.name
                .get()
                .map(|n| preview(n, PREVIEW_CHARS))
                .unwrap_or_default(),
        ),
        EntryKind::Leaf(e) => (
            "leaf".into(),
            format!("→ {}", e.target_id.as_deref().unwrap_or("(root)")),
        ),
        EntryKind::ContextEdit(e) => (
            "context_edit".into(),
            if e.replacement.is_null() {
                format!("remove {}", e.target_id)
            } else {
                format!("replace {}", e.target_id)
            },
        ),
        EntryKind::Usage(e) => (
            "usage".into(),
            format!("{} {}/{}", e.kind, e.provider, e.model),
        ),
        EntryKind::Other { entry_type, .. } => (entry_type.clone(), String::new()),
    }
}

fn describe_message(message: &AgentMessage) -> (String, String) {
    let role = message.role().to_string();
    let text = match message {
        AgentMessage::Llm(Message::User(m)) => preview(&content_text(&m.content), PREVIEW_CHARS),
        AgentMessage::Llm(Message::System(m)) => {
            let text = preview(&content_text(&m.content), PREVIEW_CHARS);
            match &m.sections {
                Some(sections) if text.is_empty() && !sections.is_empty() => {
                    let names: Vec<&str> = sections.keys().map(String::as_str).collect();
                    format!("sections: {}", names.join(", "))
                }
                _ => text,
            }
        }
        AgentMessage::Llm(Message::Assistant(m)) => {
            let mut text = preview(&blocks_text(&m.content), PREVIEW_CHARS);
            let calls: Vec<&str> = m.tool_calls().map(|c| c.name.as_str()).collect();
            if !calls.is_empty() {
                if !text.is_empty() {
                    text.push(' ');
                }
                let _ = write!(text, "→ {}", calls.join(", "));
            }
            if text.is_empty()
                && m.content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::Thinking(_)))
            {
                text.push_str("(thinking only)");
            }
            if let Some(err) = &m.error_message {
                let _ = write!(text, " [error: {}]", preview(err, 40));
            }
            text.trim_start().to_string()
        }
        AgentMessage::Llm(Message::ToolResult(m)) => format!(
            "{}{}: {}",
            m.tool_name,
            if m.is_error { " (error)" } else { "" },
            preview(&content_text(&m.content), PREVIEW_CHARS)
        ),
        AgentMessage::Custom(m) => format!(
            "{}: {}",
            m.custom_type,
            preview(&content_text(&m.content), PREVIEW_CHARS)
        ),
        AgentMessage::BashExecution(m) => format!("$ {}", preview(&m.command, PREVIEW_CHARS)),
        AgentMessage::BranchSummary(m) => preview(&m.summary, PREVIEW_CHARS),
        AgentMessage::CompactionSummary(m) => preview(&m.summary, PREVIEW_CHARS),
        AgentMessage::Other(_) => String::new(),
    };
    (role, text)
}
