//! The session tree as text: one line per entry, indented only where the tree branches, so a
//! long linear session stays flush left and every fork is visible at a glance. This is what
//! `arbor session tree` prints (DECISIONS §25.1), made from the row summaries
//! [`arbor_session::rows::visit_row_summaries`] reads from any backend.
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
//! [`arbor_session::tree_view`]; this module only formats rows. Rows are written as they are
//! laid out, so output needs no buffer of its own (DECISIONS §25.1).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

use arbor_session::rows::{
    preview_into, visit_row_summaries, MessageRow, RowCaps, RowKind, RowSummary,
};
use arbor_session::tree::{LinkItem, TreeLinks};
use arbor_session::tree_view::{Layout, Rows};
use arbor_session::{Result, SessionStorage};

const PREVIEW_CHARS: usize = 72;

/// What `arbor session tree` reads of each entry: previews a little longer than it prints
/// (a [`arbor_session::rows::Preview`] is exact up to `text - 2` characters), no tool
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
        let mut text = String::new();
        RowText::with_buffer(row, &mut text)
    }

    /// [`RowText::of`] formatting through `buf` (cleared first), so a view of a million rows
    /// allocates each row's text once, at its final size (DECISIONS §25.93).
    fn with_buffer(row: RowSummary, buf: &mut String) -> RowText {
        buf.clear();
        let kind = describe_into(&row, buf);
        RowText {
            id: row.id,
            kind,
            text: Box::from(buf.as_str()),
            label: None,
        }
    }
}

/// One entry as `arbor session tree` keeps it: its text and the links and label facts the
/// tree is built from. Made where the row was read (the `map` of [`visit_row_summaries`]).
pub struct TreeRow {
    pub text: RowText,
    pub parent: Option<Box<str>>,
    /// A `leaf` entry (not drawn).
    pub hidden: bool,
    pub time: i64,
    /// A `label` entry: its target and the label it sets (`None` clears).
    pub label_set: Option<(Box<str>, Option<Box<str>>)>,
}

impl TreeRow {
    /// The row of one summary (its text formatted through a buffer of this thread's).
    pub fn of(mut row: RowSummary) -> TreeRow {
        thread_local! {
            static BUF: std::cell::RefCell<String> = std::cell::RefCell::new(String::with_capacity(256));
        }
        let label_set = row
            .label_set()
            .map(|(target, text, _)| (Box::from(target), text.map(Box::from)));
        let parent = row.parent_id.take();
        let hidden = row.is_leaf_entry();
        let time = row.time;
        let text = BUF.with(|b| match b.try_borrow_mut() {
            Ok(mut buf) => RowText::with_buffer(row, &mut buf),
            Err(_) => RowText::of(row),
        });
        TreeRow {
            text,
            parent,
            hidden,
            time,
            label_set,
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

impl TreeView {
    /// Reads the tree view of any backend's session from its entries' row summaries
    /// (DECISIONS §25.80), keeping only each row's text; the storage is dropped once the log
    /// is read.
    pub async fn read<S: SessionStorage>(storage: S) -> Result<TreeView> {
        let leaf_id = storage.leaf_id().await?;
        struct Item {
            parent: Option<Box<str>>,
            hidden: bool,
            time: i64,
        }
        let mut items: Vec<Item> = Vec::new();
        let mut texts: Vec<RowText> = Vec::new();
        let mut labels: std::collections::HashMap<Box<str>, Box<str>> = Default::default();
        visit_row_summaries(&storage, ROW_CAPS, &TreeRow::of, &mut |row: TreeRow| {
            if let Some((target, text)) = row.label_set {
                match text {
                    Some(text) => {
                        labels.insert(target, text);
                    }
                    None => {
                        labels.remove(&target);
                    }
                }
            }
            items.push(Item {
                parent: row.parent,
                hidden: row.hidden,
                time: row.time,
            });
            texts.push(row.text);
        })
        .await?;
        drop(storage);
        let links = TreeLinks::build(
            &items
                .iter()
                .zip(&texts)
                .map(|(it, t)| LinkItem {
                    id: &t.id,
                    parent_id: it.parent.as_deref(),
                    hidden: it.hidden,
                    time: it.time,
                })
                .collect::<Vec<_>>(),
        );
        drop(items);
        // Nodes are in log order (`links.item` ascends), so the texts move into them in one
        // pass.
        let mut rows = Vec::with_capacity(links.item.len());
        let mut next = links.item.iter().copied().peekable();
        for (i, mut t) in texts.into_iter().enumerate() {
            if next.next_if_eq(&i).is_none() {
                continue;
            }
            if !labels.is_empty() {
                t.label = labels.remove(&*t.id);
            }
            rows.push(t);
        }
        let leaf = leaf_id
            .as_deref()
            .and_then(|id| rows.iter().position(|r| &*r.id == id));
        let mut active = vec![false; rows.len()];
        let mut cur = leaf;
        while let Some(n) = cur {
            if std::mem::replace(&mut active[n], true) {
                break;
            }
            cur = links.parent[n];
        }
        Ok(TreeView {
            links,
            rows,
            active,
            leaf,
        })
    }
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
        // `{mark} {gutter}{id}  {kind:<14} {text}`, built without the formatting machinery
        // (one million rows; DECISIONS §25.93).
        line.push(mark);
        line.push(' ');
        line.push_str(row.gutter);
        line.push_str(&text.id);
        line.push_str("  ");
        line.push_str(&text.kind);
        for _ in text.kind.chars().count()..14 {
            line.push(' ');
        }
        line.push(' ');
        line.push_str(&text.text);
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

/// One entry's kind (the role for messages, the entry type otherwise), with its preview appended
/// to `out`.
fn describe_into(row: &RowSummary, out: &mut String) -> Cow<'static, str> {
    let kind = |k: &'static str| Cow::Borrowed(k);
    match &row.kind {
        RowKind::Message(m) => describe_message(m, out),
        RowKind::ThinkingLevelChange { level } => {
            out.push_str(level);
            kind("thinking")
        }
        RowKind::ModelChange { provider, model_id } => {
            let _ = write!(out, "{provider}/{model_id}");
            kind("model")
        }
        RowKind::ActiveToolsChange { names } => {
            match names {
                Some(names) => preview_into(&names.join(", "), PREVIEW_CHARS, out),
                None => out.push_str("all"),
            }
            kind("tools")
        }
        RowKind::Compaction {
            tokens_before,
            retained_tail,
            summary,
        } => {
            let _ = write!(
                out,
                "{} tokens before{}: ",
                tokens_before,
                if *retained_tail {
                    ", retained tail"
                } else {
                    ""
                }
            );
            preview_into(summary.as_str(), PREVIEW_CHARS, out);
            kind("compaction")
        }
        RowKind::BranchSummary { from_id, summary } => {
            let _ = write!(out, "from {from_id}: ");
            preview_into(summary.as_str(), PREVIEW_CHARS, out);
            kind("branch_summary")
        }
        RowKind::Custom { custom_type } => {
            out.push_str(custom_type);
            kind("custom")
        }
        RowKind::CustomMessage { custom_type, text } => {
            let _ = write!(out, "{custom_type}: ");
            preview_into(text.as_str(), PREVIEW_CHARS, out);
            kind("custom_message")
        }
        RowKind::Label {
            target_id, label, ..
        } => {
            match label {
                Some(label) => {
                    let _ = write!(out, "{target_id} = ");
                    preview_into(label, PREVIEW_CHARS, out);
                }
                None => {
                    let _ = write!(out, "{target_id} cleared");
                }
            }
            kind("label")
        }
        RowKind::SessionInfo { name } => {
            if let Some(n) = name {
                preview_into(n, PREVIEW_CHARS, out);
            }
            kind("name")
        }
        RowKind::Leaf { target_id } => {
            let _ = write!(out, "→ {}", target_id.as_deref().unwrap_or("(root)"));
            kind("leaf")
        }
        RowKind::ContextEdit { target_id, omit } => {
            let _ = write!(
                out,
                "{} {target_id}",
                if *omit { "remove" } else { "replace" }
            );
            kind("context_edit")
        }
        RowKind::Usage {
            kind: k,
            provider,
            model,
        } => {
            let _ = write!(out, "{k} {provider}/{model}");
            kind("usage")
        }
        RowKind::Other { entry_type } => Cow::Owned(entry_type.to_string()),
    }
}

fn describe_message(message: &MessageRow, out: &mut String) -> Cow<'static, str> {
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
    let start = out.len();
    match message {
        MessageRow::User { text } => preview_into(text.as_str(), PREVIEW_CHARS, out),
        MessageRow::System { text, sections } => {
            preview_into(text.as_str(), PREVIEW_CHARS, out);
            if out.len() == start && !sections.is_empty() {
                let _ = write!(out, "sections: {}", sections.join(", "));
            }
        }
        MessageRow::Assistant {
            text,
            calls,
            thinking,
            error,
            ..
        } => {
            preview_into(text.as_str(), PREVIEW_CHARS, out);
            if !calls.is_empty() {
                if out.len() > start {
                    out.push(' ');
                }
                out.push_str("→ ");
                for (i, c) in calls.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&c.name);
                }
            }
            if out.len() == start && *thinking {
                out.push_str("(thinking only)");
            }
            if let Some(err) = error {
                // Nothing precedes an error shown alone (the text is trimmed at the start).
                if out.len() > start {
                    out.push(' ');
                }
                out.push_str("[error: ");
                preview_into(err.as_str(), 40, out);
                out.push(']');
            }
        }
        MessageRow::ToolResult {
            tool_name,
            is_error,
            text,
            ..
        } => {
            out.push_str(tool_name);
            if *is_error {
                out.push_str(" (error)");
            }
            out.push_str(": ");
            preview_into(text.as_str(), PREVIEW_CHARS, out);
        }
        MessageRow::Custom { custom_type, text } => {
            out.push_str(custom_type);
            out.push_str(": ");
            preview_into(text.as_str(), PREVIEW_CHARS, out);
        }
        MessageRow::BashExecution { command } => {
            out.push_str("$ ");
            preview_into(command.as_str(), PREVIEW_CHARS, out);
        }
        MessageRow::BranchSummary { summary } => preview_into(summary.as_str(), PREVIEW_CHARS, out),
        MessageRow::CompactionSummary { summary } => {
            preview_into(summary.as_str(), PREVIEW_CHARS, out)
        }
        MessageRow::Other { .. } => {}
    }
    role
}
