//! What the navigator's search matches for each entry.

use arbor_agent::session::rows::{MessageRow, RowKind, RowSummary};

/// Characters of one entry that search looks at (DECISIONS §23.64).
pub const SEARCH_CHARS: usize = 8 * 1024;

/// What search matches for one node besides its label, lower-cased and capped at
/// [`SEARCH_CHARS`]: pi's words for the kind, and the entry's text (more of it than pi's first
/// 200 characters, plus tool names, tool results and compaction summaries; DECISIONS §23.64).
pub(super) fn searchable(row: &RowSummary) -> Box<str> {
    let mut text = String::new();
    // pi's words for each kind come first ("branch summary", "model", "title", …).
    let word = match &row.kind {
        RowKind::Message(_) | RowKind::CustomMessage { .. } => "",
        RowKind::Compaction { .. } => "compaction",
        RowKind::BranchSummary { .. } => "branch summary",
        RowKind::SessionInfo { .. } => "title",
        RowKind::ModelChange { .. } => "model",
        RowKind::ThinkingLevelChange { .. } => "thinking",
        RowKind::Custom { .. } => "custom",
        RowKind::ContextEdit { omit, .. } => {
            if *omit {
                "context edit omit"
            } else {
                "context edit replace"
            }
        }
        RowKind::Label { .. } => "label",
        RowKind::ActiveToolsChange { .. } => "tools",
        RowKind::Usage { .. } => "usage",
        RowKind::Leaf { .. } => "leaf",
        RowKind::Other { entry_type } => entry_type,
    };
    if !word.is_empty() {
        text.push_str(word);
        text.push(' ');
    }
    match &row.kind {
        RowKind::Message(m) => {
            text.push_str(m.role());
            text.push(' ');
            match m {
                MessageRow::User { text: t } => text.push_str(t.as_str()),
                MessageRow::Assistant {
                    text: t,
                    calls,
                    error,
                    ..
                } => {
                    text.push_str(t.as_str());
                    for c in calls {
                        text.push(' ');
                        text.push_str(&c.name);
                    }
                    if let Some(e) = error {
                        text.push(' ');
                        text.push_str(e.as_str());
                    }
                }
                MessageRow::ToolResult {
                    tool_name, text: t, ..
                } => {
                    text.push_str(tool_name);
                    text.push(' ');
                    text.push_str(t.as_str());
                }
                MessageRow::System { text: t, .. } => text.push_str(t.as_str()),
                MessageRow::BashExecution { command } => text.push_str(command.as_str()),
                MessageRow::Custom {
                    custom_type,
                    text: t,
                } => {
                    text.push_str(custom_type);
                    text.push(' ');
                    text.push_str(t.as_str());
                }
                MessageRow::BranchSummary { summary }
                | MessageRow::CompactionSummary { summary } => text.push_str(summary.as_str()),
                MessageRow::Other { .. } => {}
            }
        }
        RowKind::CustomMessage {
            custom_type,
            text: t,
        } => {
            text.push_str(custom_type);
            text.push(' ');
            text.push_str(t.as_str());
        }
        RowKind::Compaction { summary, .. } | RowKind::BranchSummary { summary, .. } => {
            text.push_str(summary.as_str())
        }
        RowKind::ModelChange { provider, model_id } => {
            text.push_str(provider);
            text.push('/');
            text.push_str(model_id);
        }
        RowKind::ThinkingLevelChange { level } => text.push_str(level),
        RowKind::Custom { custom_type } => text.push_str(custom_type),
        RowKind::Label { label, .. } => text.push_str(label.as_deref().unwrap_or("")),
        RowKind::SessionInfo { name } => text.push_str(name.as_deref().unwrap_or("")),
        RowKind::ContextEdit { target_id, .. } => text.push_str(target_id),
        RowKind::ActiveToolsChange { names: Some(names) } => text.push_str(&names.join(" ")),
        _ => {}
    }
    let mut end = text.len().min(SEARCH_CHARS);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.to_lowercase().into_boxed_str()
}
