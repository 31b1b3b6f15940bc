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
//!

//! Layout (bounded indentation, flat chains, detached cycles last) comes from
//! `arbor_agent::session::tree_view`; this module only formats rows. Rows are written as they
//! are laid out, so output needs no buffer of its own (DECISIONS §25.1).

use std::fmt::Write as _;
use std::io::{self, Write};

use arbor_agent::message::AgentMessage;
use arbor_agent::session::tree_view::{Layout, Rows};
use arbor_agent::session::{EntryKind, SessionEntry, TreeLinks};
use arbor_ai::types::{ContentBlock, Message};

use super::text::{blocks_text, content_text, preview};

const PREVIEW_CHARS: usize = 72;

/// What one row shows, kept per node instead of the parsed entry (a preview is ~100 bytes;
/// the entry may be megabytes).
pub struct RowText {
    pub id: Box<str>,
    pub kind: Box<str>,
    pub text: Box<str>,
    pub label: Option<Box<str>>,
}

impl RowText {
    pub fn of(entry: &SessionEntry) -> RowText {
        let (kind, text) = describe(entry);
        RowText {
            id: entry.id.as_str().into(),
            kind: kind.into(),
            text: text.into(),
            label: None,
        }
    }
}

/// A session's tree, ready to draw.
pub struct TreeView {
    pub links: TreeLinks,
    /// Per node (index as in `links`).
    pub rows: Vec<RowText>,
    /// Per node: on the root→leaf path.
    pub active: Vec<bool>,
    pub leaf: Option<usize>,
}

/// Writes the tree, one line per entry.
pub fn write(out: &mut impl Write, view: &TreeView) -> io::Result<()> {
    let mut rows = Rows::new(&view.links, Layout::default());
    let mut line = String::with_capacity(256);
    while let Some(row) = rows.next_row() {
        if row.first_detached {
            writeln!(
                out,
                "── {} unreachable from any root (parentId cycle) ──",
                plural(view.links.unreachable.len(), "entry", "entries")
            )?;
        }
        let Some(text) = view.rows.get(row.node) else {
            continue;
        };
        line.clear();
        let mark = if view.active.get(row.node).copied().unwrap_or(false) {
            '*'
        } else {
            ' '
        };
        let _ = write!(
            line,
            "{mark} {}{}  {:<14} {}",
            row.gutter, text.id, text.kind, text.text
        );
        if let Some(label) = &text.label {
            let _ = write!(line, "  [{label}]");
        }
        if view.leaf == Some(row.node) {
            line.push_str("  ← leaf");
        }
        // No trailing spaces when the preview is empty.
        let trimmed = line.trim_end_matches(' ').len();
        line.truncate(trimmed);
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
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
