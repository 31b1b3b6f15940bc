//! The materialized per-session state that the database backends (SQLite, PostgreSQL) keep in
//! one row beside the entries: every append folds its entry in within the same transaction, so
//! reads of leaf, name, counts and stats are one row. One fold for every backend keeps their
//! listings and stats equal (DECISIONS §25.10).

use super::entry::{EntryKind, SessionEntry};
use super::storage::SessionStats;
use crate::message::AgentMessage;
use arbor_ai::types::{Content, ContentBlock, Message, Usage};

/// The state columns of a database backend's session row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MaterializedState {
    /// The current leaf.
    pub leaf_id: Option<String>,
    /// The latest `session_info` name, trimmed; `None` when never set or cleared.
    pub name: Option<String>,
    /// Entries in the log.
    pub entry_count: u64,
    /// Message count, tokens and cost.
    pub stats: SessionStats,
    /// The newest `compaction` entry in log order (on any branch).
    pub latest_compaction_id: Option<String>,
    /// Text of the first user message in log order, shortened, for listings.
    pub first_message: Option<String>,
}

impl MaterializedState {
    /// Folds one entry, appended in log order, into the state (DECISIONS §2.3 for the leaf;
    /// pi's G1 statistics rules plus `usage` entries, as the other backends count them).
    pub fn apply(&mut self, entry: &SessionEntry) {
        self.entry_count += 1;
        self.leaf_id = match &entry.kind {
            EntryKind::Leaf(l) => l.target_id.clone(),
            _ => Some(entry.id.clone()),
        };
        match &entry.kind {
            EntryKind::Message(m) => {
                self.stats.message_count += 1;
                match &m.message {
                    AgentMessage::Llm(Message::Assistant(a)) => {
                        add_usage(&mut self.stats, &a.usage)
                    }
                    AgentMessage::Llm(Message::User(u)) if self.first_message.is_none() => {
                        self.first_message = Some(preview(&user_text(&u.content)));
                    }
                    _ => {}
                }
            }
            EntryKind::Compaction(c) => {
                self.latest_compaction_id = Some(entry.id.clone());
                if let Some(u) = &c.usage {
                    add_usage(&mut self.stats, u);
                }
            }
            EntryKind::BranchSummary(b) => {
                if let Some(u) = &b.usage {
                    add_usage(&mut self.stats, u);
                }
            }
            EntryKind::Usage(u) => {
                if let Some(u) = &u.usage {
                    add_usage(&mut self.stats, u);
                }
            }
            EntryKind::SessionInfo(info) => {
                let name = info.name.get().map(|n| n.trim()).unwrap_or("");
                self.name = (!name.is_empty()).then(|| name.to_owned());
            }
            _ => {}
        }
    }
}

/// pi's sums: cached = cacheRead, uncached = input + cacheWrite, total = all four parts.
fn add_usage(stats: &mut SessionStats, u: &Usage) {
    stats.cached_tokens += u.cache_read;
    stats.uncached_tokens += u.input + u.cache_write;
    stats.total_tokens += u.input + u.output + u.cache_read + u.cache_write;
    stats.cost_total += u.cost.total.get();
}

/// A string content as is, or the text blocks joined by spaces (as the other backends list it).
fn user_text(content: &Content) -> String {
    match content {
        Content::Text(t) => t.clone(),
        Content::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// Listings show the start of the first prompt; a pasted file must not bloat the state row.
const PREVIEW_CHARS: usize = 500;

fn preview(text: &str) -> String {
    match text.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => text[..cut].to_owned(),
        None => text.to_owned(),
    }
}
