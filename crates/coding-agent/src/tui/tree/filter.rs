//! The navigator's filters (pi's `treeFilterMode`) and the per-node class each filter tests.

use arbor_agent::session::rows::{MessageRow, RowKind, RowSummary, Stop};

/// Which entries the navigator shows (pi's `treeFilterMode` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TreeFilter {
    /// Conversation entries; settings and bookkeeping (labels, model/thinking changes, custom
    /// entries, names, context edits) hidden.
    #[default]
    Default,
    /// The default view without tool results.
    NoTools,
    /// User messages only.
    UserOnly,
    /// Entries with a label only.
    LabeledOnly,
    /// Everything.
    All,
}

impl TreeFilter {
    /// The order Ctrl+O cycles through.
    pub const CYCLE: [TreeFilter; 5] = [
        TreeFilter::Default,
        TreeFilter::NoTools,
        TreeFilter::UserOnly,
        TreeFilter::LabeledOnly,
        TreeFilter::All,
    ];

    /// The setting value (`default`, `no-tools`, `user-only`, `labeled-only`, `all`).
    pub fn name(self) -> &'static str {
        match self {
            TreeFilter::Default => "default",
            TreeFilter::NoTools => "no-tools",
            TreeFilter::UserOnly => "user-only",
            TreeFilter::LabeledOnly => "labeled-only",
            TreeFilter::All => "all",
        }
    }

    /// Parses a setting value; `None` for anything else.
    pub fn from_name(name: &str) -> Option<TreeFilter> {
        Self::CYCLE.into_iter().find(|f| f.name() == name)
    }

    pub(super) fn position(self) -> usize {
        Self::CYCLE.iter().position(|f| *f == self).unwrap_or(0)
    }

    pub fn next(self) -> TreeFilter {
        Self::CYCLE[(self.position() + 1) % Self::CYCLE.len()]
    }

    pub fn prev(self) -> TreeFilter {
        Self::CYCLE[(self.position() + Self::CYCLE.len() - 1) % Self::CYCLE.len()]
    }

    /// A direct filter key: on when off, back to the default when already on.
    pub(super) fn toggle(self, to: TreeFilter) -> TreeFilter {
        if self == to {
            TreeFilter::Default
        } else {
            to
        }
    }
}

/// Per-node facts the filters need, computed once when the navigator opens.
pub(super) mod class {
    pub const SETTINGS: u8 = 1;
    pub const USER: u8 = 2;
    pub const TOOL_RESULT: u8 = 4;
    /// Never shown: usage records, and assistant messages with only tool calls (unless they
    /// are the leaf or ended in an error or abort).
    pub const NEVER: u8 = 8;
}

pub(super) fn classify(row: &RowSummary, is_leaf: bool) -> u8 {
    match &row.kind {
        RowKind::Message(m) => match m {
            MessageRow::User { .. } => class::USER,
            MessageRow::ToolResult { .. } => class::TOOL_RESULT,
            MessageRow::Assistant { has_text, stop, .. } => {
                let failed = matches!(stop, Stop::Error | Stop::Aborted);
                if *has_text || failed || is_leaf {
                    0
                } else {
                    class::NEVER
                }
            }
            _ => 0,
        },
        RowKind::Usage { .. } => class::NEVER,
        RowKind::Label { .. }
        | RowKind::ContextEdit { .. }
        | RowKind::Custom { .. }
        | RowKind::ModelChange { .. }
        | RowKind::ThinkingLevelChange { .. }
        | RowKind::ActiveToolsChange { .. }
        | RowKind::SessionInfo { .. }
        | RowKind::Leaf { .. }
        | RowKind::Other { .. } => class::SETTINGS,
        RowKind::Compaction { .. }
        | RowKind::BranchSummary { .. }
        | RowKind::CustomMessage { .. } => 0,
    }
}
