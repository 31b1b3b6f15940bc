//! Row summaries: what a tree view shows of an entry, without the entry (DECISIONS §25.80).
//!
//! `arbor session tree` and the TUI's `/tree` draw one row per entry: a role or type, a
//! one-line preview, tool names, a label. A [`RowSummary`] is exactly that, with every text
//! cut to a [`Preview`] of a few hundred characters, so a view over 1,000,000 entries keeps
//! ~100 bytes per row instead of the parsed entries.
//!
//! From a parsed entry a row is [`RowSummary::from_entry`]; from a stored line it is
//! `RowSummary::from_line`, the row tier of the line readers (the private `line` module). The views
//! over any backend are [`visit_row_summaries`] (rows in log order) and [`row_source`] (rows
//! to read again later, without the storage).

use arbor_ai::types::{Content, ContentBlock, Message, StopReason};
use serde_json::Value;

use crate::entry::{EntryKind, SessionEntry};
use crate::message::AgentMessage;

pub mod preview;
pub mod source;
pub mod view;

pub(crate) use preview::Squash;
pub use preview::{preview, preview_into, Preview};
pub use source::{row_source, EntryRows, RowSource, RowSourceRef};
pub use view::visit_row_summaries;

/// How much of each text a summary keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowCaps {
    /// Characters of each [`Preview`]; a preview of up to `text - 2` characters drawn from it
    /// equals the one drawn from the whole text. Also caps tool-call argument strings.
    pub text: usize,
    /// Keep tool-call arguments (the TUI names a tool result's path or command from them).
    pub tool_args: bool,
}

impl RowCaps {
    /// The TUI's `/tree` rows (previews up to 510 characters wide; DECISIONS §25.81).
    pub const TREE: RowCaps = RowCaps {
        text: 512,
        tool_args: true,
    };
    /// The TUI's search text (DECISIONS §23.64: 8 KiB of each entry).
    pub const SEARCH: RowCaps = RowCaps {
        text: 8 * 1024 + 2,
        tool_args: false,
    };
}

/// Why an assistant message stopped, as far as a row cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The request failed (`stopReason: "error"`); the row shows the error.
    Error,
    /// The user or caller cancelled the reply (`stopReason: "aborted"`).
    Aborted,
    /// Any other stop reason (a finished reply, a tool call, a length limit).
    Other,
}

/// One tool call of an assistant message.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSummary {
    /// The tool call id, which the matching `toolResult` names.
    pub id: Box<str>,
    /// The name of the tool called.
    pub name: Box<str>,
    /// The arguments with every string cut to [`RowCaps::text`] characters; `None` unless
    /// [`RowCaps::tool_args`].
    pub args: Option<Value>,
}

/// What a `message` entry's row shows.
#[derive(Debug, Clone, PartialEq)]
pub enum MessageRow {
    /// A `user` message.
    User {
        /// Its text (a string content, or the text blocks joined by a space).
        text: Preview,
    },
    /// An `assistant` reply.
    Assistant {
        /// The text blocks, joined by a space.
        text: Preview,
        /// Some text block has non-whitespace text.
        has_text: bool,
        /// The tool calls, in block order.
        calls: Vec<CallSummary>,
        /// Some block is a thinking block.
        thinking: bool,
        /// How the reply ended.
        stop: Stop,
        /// The message's `errorMessage`, when it has one.
        error: Option<Preview>,
    },
    /// A `toolResult` message.
    ToolResult {
        /// The call it answers ([`CallSummary::id`]).
        call_id: Box<str>,
        /// The tool that produced it.
        tool_name: Box<str>,
        /// The tool reported a failure.
        is_error: bool,
        /// Its text (a string content, or the text blocks joined by a space).
        text: Preview,
    },
    /// A `system` message (a prompt checkpoint or patch).
    System {
        /// Its `content` text.
        text: Preview,
        /// The names of the message's `sections`, in order.
        sections: Vec<Box<str>>,
    },
    /// A `bashExecution` message (a command the user ran).
    BashExecution {
        /// The start of the command line, on one line.
        command: Preview,
    },
    /// A `custom` message (an extension's).
    Custom {
        /// The extension's `customType`.
        custom_type: Box<str>,
        /// Its text content.
        text: Preview,
    },
    /// A stored `branchSummary` message.
    BranchSummary {
        /// The start of the summary, on one line.
        summary: Preview,
    },
    /// A stored `compactionSummary` message.
    CompactionSummary {
        /// The start of the summary, on one line.
        summary: Preview,
    },
    /// A role this version does not know.
    Other {
        /// The role as written (empty when the message has none).
        role: Box<str>,
    },
}

impl MessageRow {
    /// The message's `role`.
    pub fn role(&self) -> &str {
        match self {
            MessageRow::User { .. } => "user",
            MessageRow::Assistant { .. } => "assistant",
            MessageRow::ToolResult { .. } => "toolResult",
            MessageRow::System { .. } => "system",
            MessageRow::BashExecution { .. } => "bashExecution",
            MessageRow::Custom { .. } => "custom",
            MessageRow::BranchSummary { .. } => "branchSummary",
            MessageRow::CompactionSummary { .. } => "compactionSummary",
            MessageRow::Other { role } => role,
        }
    }
}

/// What an entry's row shows, by entry type.
#[derive(Debug, Clone, PartialEq)]
pub enum RowKind {
    /// A `message` entry, by role.
    Message(MessageRow),
    /// A `thinking_level_change` entry.
    ThinkingLevelChange {
        /// The new level, as written.
        level: Box<str>,
    },
    /// A `model_change` entry.
    ModelChange {
        /// The provider id.
        provider: Box<str>,
        /// The model id within that provider.
        model_id: Box<str>,
    },
    /// An `active_tools_change` entry.
    ActiveToolsChange {
        /// `None`: all tools.
        names: Option<Vec<Box<str>>>,
    },
    /// A `compaction` entry.
    Compaction {
        /// The context's size in tokens when it was compacted.
        tokens_before: u64,
        /// The compaction carries a `retainedTail` (a self-contained checkpoint).
        retained_tail: bool,
        /// The start of the summary, on one line.
        summary: Preview,
    },
    /// A `branch_summary` entry.
    BranchSummary {
        /// The leaf the summarized branch ended at (`"root"` when none).
        from_id: Box<str>,
        /// The start of the summary, on one line.
        summary: Preview,
    },
    /// A `custom` entry (extension state; its data is not summarized).
    Custom {
        /// The extension's `customType`.
        custom_type: Box<str>,
    },
    /// A `custom_message` entry.
    CustomMessage {
        /// The extension's `customType`.
        custom_type: Box<str>,
        /// Its text content.
        text: Preview,
    },
    /// A `label` entry.
    Label {
        /// The id of the entry the label is on.
        target_id: Box<str>,
        /// As written (not trimmed); `None` when absent or `null`.
        label: Option<Box<str>>,
        /// The label entry's own timestamp.
        timestamp: Box<str>,
    },
    /// A `session_info` entry.
    SessionInfo {
        /// The name it sets; `None` when absent or `null` (it clears the name).
        name: Option<Box<str>>,
    },
    /// A `leaf` control entry (tree views hide it).
    Leaf {
        /// Where it moved the leaf; `None` before the first entry.
        target_id: Option<Box<str>>,
    },
    /// A `context_edit` entry.
    ContextEdit {
        /// The id of the entry whose contribution the edit changes.
        target_id: Box<str>,
        /// The replacement is `null` (the target is left out).
        omit: bool,
    },
    /// A `usage` entry.
    Usage {
        /// What the tokens were spent on (`cache_warm`, ...).
        kind: Box<str>,
        /// The provider billed.
        provider: Box<str>,
        /// The model that spent them.
        model: Box<str>,
    },
    /// An entry type this version does not know.
    Other {
        /// The `type` as written.
        entry_type: Box<str>,
    },
}

impl RowKind {
    /// The entry's `type` as written in the file (`message`, `compaction`, ...).
    pub fn entry_type(&self) -> &str {
        match self {
            RowKind::Message(_) => "message",
            RowKind::ThinkingLevelChange { .. } => "thinking_level_change",
            RowKind::ModelChange { .. } => "model_change",
            RowKind::ActiveToolsChange { .. } => "active_tools_change",
            RowKind::Compaction { .. } => "compaction",
            RowKind::BranchSummary { .. } => "branch_summary",
            RowKind::Custom { .. } => "custom",
            RowKind::CustomMessage { .. } => "custom_message",
            RowKind::Label { .. } => "label",
            RowKind::SessionInfo { .. } => "session_info",
            RowKind::Leaf { .. } => "leaf",
            RowKind::ContextEdit { .. } => "context_edit",
            RowKind::Usage { .. } => "usage",
            RowKind::Other { entry_type } => entry_type,
        }
    }

    /// A one-line preview of what the entry says (message and summary text), if any.
    pub fn preview(&self) -> Option<&str> {
        let p = match self {
            RowKind::Message(m) => match m {
                MessageRow::User { text }
                | MessageRow::Assistant { text, .. }
                | MessageRow::ToolResult { text, .. }
                | MessageRow::System { text, .. }
                | MessageRow::Custom { text, .. } => text,
                MessageRow::BashExecution { command } => command,
                MessageRow::BranchSummary { summary }
                | MessageRow::CompactionSummary { summary } => summary,
                MessageRow::Other { .. } => return None,
            },
            RowKind::Compaction { summary, .. } | RowKind::BranchSummary { summary, .. } => summary,
            RowKind::CustomMessage { text, .. } => text,
            _ => return None,
        };
        (!p.is_empty()).then(|| p.as_str())
    }
}

/// One entry as a tree view shows it (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct RowSummary {
    /// The entry id.
    pub id: Box<str>,
    /// The entry's `parentId`; `None` for a root.
    pub parent_id: Option<Box<str>>,
    /// The entry's timestamp in Unix ms; `i64::MAX` when it does not parse (sorts last).
    pub time: i64,
    /// What the row shows.
    pub kind: RowKind,
}

pub(crate) fn time_of(timestamp: &str) -> i64 {
    crate::time::iso_to_ms(timestamp).unwrap_or(i64::MAX)
}

pub(crate) fn boxed(s: &str) -> Box<str> {
    s.into()
}

/// A copy of `v` with every string cut to `cap` characters.
pub(crate) fn cap_strings(v: &Value, cap: usize) -> Value {
    match v {
        Value::String(s) => match s.char_indices().nth(cap) {
            Some((end, _)) => Value::String(s[..end].to_string()),
            None => Value::String(s.clone()),
        },
        Value::Array(items) => Value::Array(items.iter().map(|x| cap_strings(x, cap)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, x)| (k.clone(), cap_strings(x, cap)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn content_preview(content: &Content, cap: usize) -> Preview {
    match content {
        Content::Text(s) => Preview::of(s, cap),
        Content::Blocks(blocks) => blocks_preview(blocks, cap),
    }
}

fn blocks_preview(blocks: &[ContentBlock], cap: usize) -> Preview {
    let mut s = Squash::new(cap);
    for block in blocks {
        if let ContentBlock::Text(t) = block {
            s.separator();
            s.push(&t.text);
        }
    }
    s.finish()
}

impl RowSummary {
    /// The summary of a parsed entry (the path every backend can take).
    pub fn from_entry(entry: &SessionEntry, caps: RowCaps) -> RowSummary {
        RowSummary {
            id: boxed(&entry.id),
            parent_id: entry.parent_id.as_deref().map(boxed),
            time: time_of(&entry.timestamp),
            kind: kind_of(entry, caps),
        }
    }

    /// This entry's label target and text when it is a `label` entry (text trimmed, `None`
    /// when it clears the label).
    pub fn label_set(&self) -> Option<(&str, Option<&str>, &str)> {
        match &self.kind {
            RowKind::Label {
                target_id,
                label,
                timestamp,
            } => {
                let text = label.as_deref().map(str::trim).filter(|s| !s.is_empty());
                Some((target_id, text, timestamp))
            }
            _ => None,
        }
    }

    /// A `leaf` control entry (tree views hide these).
    pub fn is_leaf_entry(&self) -> bool {
        matches!(self.kind, RowKind::Leaf { .. })
    }
}

fn message_row(message: &AgentMessage, caps: RowCaps) -> MessageRow {
    let cap = caps.text;
    match message {
        AgentMessage::Llm(Message::User(u)) => MessageRow::User {
            text: content_preview(&u.content, cap),
        },
        AgentMessage::Llm(Message::Assistant(a)) => MessageRow::Assistant {
            text: blocks_preview(&a.content, cap),
            has_text: a.content.iter().any(|b| match b {
                ContentBlock::Text(t) => !t.text.trim().is_empty(),
                _ => false,
            }),
            calls: a
                .tool_calls()
                .map(|c| CallSummary {
                    id: boxed(&c.id),
                    name: boxed(&c.name),
                    args: caps.tool_args.then(|| cap_strings(&c.arguments, cap)),
                })
                .collect(),
            thinking: a
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::Thinking(_))),
            stop: match a.stop_reason {
                StopReason::Error => Stop::Error,
                StopReason::Aborted => Stop::Aborted,
                _ => Stop::Other,
            },
            error: a.error_message.as_deref().map(|e| Preview::of(e, cap)),
        },
        AgentMessage::Llm(Message::ToolResult(r)) => MessageRow::ToolResult {
            call_id: boxed(&r.tool_call_id),
            tool_name: boxed(&r.tool_name),
            is_error: r.is_error,
            text: content_preview(&r.content, cap),
        },
        AgentMessage::Llm(Message::System(s)) => MessageRow::System {
            text: content_preview(&s.content, cap),
            sections: s
                .sections
                .as_ref()
                .map(|m| m.keys().map(|k| boxed(k)).collect())
                .unwrap_or_default(),
        },
        AgentMessage::BashExecution(b) => MessageRow::BashExecution {
            command: Preview::of(&b.command, cap),
        },
        AgentMessage::Custom(c) => MessageRow::Custom {
            custom_type: boxed(&c.custom_type),
            text: content_preview(&c.content, cap),
        },
        AgentMessage::BranchSummary(b) => MessageRow::BranchSummary {
            summary: Preview::of(&b.summary, cap),
        },
        AgentMessage::CompactionSummary(c) => MessageRow::CompactionSummary {
            summary: Preview::of(&c.summary, cap),
        },
        AgentMessage::Other(_) => MessageRow::Other {
            role: boxed(message.role()),
        },
    }
}

fn kind_of(entry: &SessionEntry, caps: RowCaps) -> RowKind {
    let cap = caps.text;
    match &entry.kind {
        EntryKind::Message(m) => RowKind::Message(message_row(&m.message, caps)),
        EntryKind::ThinkingLevelChange(e) => RowKind::ThinkingLevelChange {
            level: boxed(&e.thinking_level),
        },
        EntryKind::ModelChange(e) => RowKind::ModelChange {
            provider: boxed(&e.provider),
            model_id: boxed(&e.model_id),
        },
        EntryKind::ActiveToolsChange(e) => RowKind::ActiveToolsChange {
            names: e
                .active_tool_names
                .get()
                .map(|names| names.iter().map(|n| boxed(n)).collect()),
        },
        EntryKind::Compaction(e) => RowKind::Compaction {
            tokens_before: e.tokens_before,
            retained_tail: e.retained_tail.is_some(),
            summary: Preview::of(&e.summary, cap),
        },
        EntryKind::BranchSummary(e) => RowKind::BranchSummary {
            from_id: boxed(&e.from_id),
            summary: Preview::of(&e.summary, cap),
        },
        EntryKind::Custom(e) => RowKind::Custom {
            custom_type: boxed(&e.custom_type),
        },
        EntryKind::CustomMessage(e) => RowKind::CustomMessage {
            custom_type: boxed(&e.custom_type),
            text: content_preview(&e.content, cap),
        },
        EntryKind::Label(e) => RowKind::Label {
            target_id: boxed(&e.target_id),
            label: e.label.get().map(|l| boxed(l)),
            timestamp: boxed(&entry.timestamp),
        },
        EntryKind::SessionInfo(e) => RowKind::SessionInfo {
            name: e.name.get().map(|n| boxed(n)),
        },
        EntryKind::Leaf(e) => RowKind::Leaf {
            target_id: e.target_id.as_deref().map(boxed),
        },
        EntryKind::ContextEdit(e) => RowKind::ContextEdit {
            target_id: boxed(&e.target_id),
            omit: e.replacement.is_null(),
        },
        EntryKind::Usage(e) => RowKind::Usage {
            kind: boxed(&e.kind),
            provider: boxed(&e.provider),
            model: boxed(&e.model),
        },
        EntryKind::Other { entry_type, .. } => RowKind::Other {
            entry_type: boxed(entry_type),
        },
    }
}
