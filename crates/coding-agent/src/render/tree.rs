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

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

use arbor_agent::session::rows::{MessageRow, RowCaps, RowKind, RowSummary};
use arbor_agent::session::tree_view::{Layout, Rows};
use arbor_agent::session::TreeLinks;

use super::text::preview;

const PREVIEW_CHARS: usize = 72;

/// What `arbor session tree` reads of each entry: previews a little longer than it prints
/// (a [`arbor_agent::session::rows::Preview`] is exact up to `text - 2` characters), no tool
/// arguments.
pub const ROW_CAPS: RowCaps = RowCaps {
    text: PREVIEW_CHARS + 8,
    tool_args: false,
};

/// What one row shows, kept per node instead of the parsed entry (a preview is ~100 bytes;
/// the entry may be megabytes).
pub struct RowText {
    pub id: Box<str>,
    pub kind: Cow<'static, str>,
    pub text: Box<str>,
    pub label: Option<Box<str>>,
}

impl RowText {
    pub fn of(row: RowSummary) -> RowText {
        let (kind, text) = describe(&row);
        RowText {
            id: row.id,
            kind,
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
pub fn describe(row: &RowSummary) -> (Cow<'static, str>, String) {
    let kind = |k: &'static str| Cow::Borrowed(k);
    match &row.kind {
        RowKind::Message(m) => describe_message(m),
        RowKind::ThinkingLevelChange { level } => (kind("thinking"), level.to_string()),
        RowKind::ModelChange { provider, model_id } => {
            (kind("model"), format!("{provider}/{model_id}"))
        }
        RowKind::ActiveToolsChange { names } => (
            kind("tools"),
            match names {
                Some(names) => preview(&names.join(", "), PREVIEW_CHARS),
                None => "all".into(),
            },
        ),
        RowKind::Compaction {
            tokens_before,
            retained_tail,
            summary,
        } => (
            kind("compaction"),
            format!(
                "{} tokens before{}: {}",
                tokens_before,
                if *retained_tail {
                    ", retained tail"
                } else {
                    ""
                },
                preview(summary.as_str(), PREVIEW_CHARS)
            ),
        ),
        RowKind::BranchSummary { from_id, summary } => (
            kind("branch_summary"),
            format!(
                "from {}: {}",
                from_id,
                preview(summary.as_str(), PREVIEW_CHARS)
            ),
        ),
        RowKind::Custom { custom_type } => (kind("custom"), custom_type.to_string()),
        RowKind::CustomMessage { custom_type, text } => (
            kind("custom_message"),
            format!("{}: {}", custom_type, preview(text.as_str(), PREVIEW_CHARS)),
        ),
        RowKind::Label {
            target_id, label, ..
        } => (
            kind("label"),
            match label {
                Some(label) => format!("{} = {}", target_id, preview(label, PREVIEW_CHARS)),
                None => format!("{target_id} cleared"),
            },
        ),
        RowKind::SessionInfo { name } => (
            kind("name"),
            name.as_deref()
                .map(|n| preview(n, PREVIEW_CHARS))
                .unwrap_or_default(),
        ),
        RowKind::Leaf { target_id } => (
            kind("leaf"),
            format!("→ {}", target_id.as_deref().unwrap_or("(root)")),
        ),
        RowKind::ContextEdit { target_id, omit } => (
            kind("context_edit"),
            if *omit {
                format!("remove {target_id}")
            } else {
                format!("replace {target_id}")
            },
        ),
        RowKind::Usage {
            kind: k,
            provider,
            model,
        } => (kind("usage"), format!("{k} {provider}/{model}")),
        RowKind::Other { entry_type } => (Cow::Owned(entry_type.to_string()), String::new()),
    }
}

fn describe_message(message: &MessageRow) -> (Cow<'static, str>, String) {
    let role = match message {
        MessageRow::Other { role } => Cow::Owned(role.to_string()),
        MessageRow::User { .. } => Cow::Borrowed("user"),
        MessageRow::Assistant { .. } => Cow::Borrowed("assistant"),
        MessageRow::ToolResult { .. } => Cow::Borrowed("toolResult"),
        MessageRow::System { .. } => Cow::Borrowed("system"),
        MessageRow::BashExecution { .. } => Cow::Borrowed("bashExecution"),
        MessageRow::Custom { .. } => Cow::Borrowed("custom"),
        MessageRow::BranchSummary { .. } => Cow::Borrowed("branchSummary"),
        MessageRow::CompactionSummary { .. } => Cow::Borrowed("compactionSummary"),
    };
    let text = match message {
        MessageRow::User { text } => preview(text.as_str(), PREVIEW_CHARS),
        MessageRow::System { text, sections } => {
            let text = preview(text.as_str(), PREVIEW_CHARS);
            if text.is_empty() && !sections.is_empty() {
                format!("sections: {}", sections.join(", "))
            } else {
                text
            }
        }
        MessageRow::Assistant {
            text,
            calls,
            thinking,
            error,
            ..
        } => {
            let mut text = preview(text.as_str(), PREVIEW_CHARS);
            if !calls.is_empty() {
                if !text.is_empty() {
                    text.push(' ');
                }
                let names: Vec<&str> = calls.iter().map(|c| &*c.name).collect();
                let _ = write!(text, "→ {}", names.join(", "));
            }
            if text.is_empty() && *thinking {
                text.push_str("(thinking only)");
            }
            if let Some(err) = error {
                let _ = write!(text, " [error: {}]", preview(err.as_str(), 40));
            }
            text.trim_start().to_string()
        }
        MessageRow::ToolResult {
            tool_name,
            is_error,
            text,
            ..
        } => format!(
            "{}{}: {}",
            tool_name,
            if *is_error { " (error)" } else { "" },
            preview(text.as_str(), PREVIEW_CHARS)
        ),
        MessageRow::Custom { custom_type, text } => {
            format!("{}: {}", custom_type, preview(text.as_str(), PREVIEW_CHARS))
        }
        MessageRow::BashExecution { command } => {
            format!("$ {}", preview(command.as_str(), PREVIEW_CHARS))
        }
        MessageRow::BranchSummary { summary } => preview(summary.as_str(), PREVIEW_CHARS),
        MessageRow::CompactionSummary { summary } => preview(summary.as_str(), PREVIEW_CHARS),
        MessageRow::Other { .. } => String::new(),
    };
    (role, text)
}
