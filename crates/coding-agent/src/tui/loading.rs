//! A resumed session's first frame and the rest loaded behind it (DECISIONS §23.102): how many
//! entries the first frame reads, what loading the whole branch produces, and the footer's
//! totals. The state machine and the driver both use these, so they live apart from either.

use arbor_agent::message::AgentMessage;
use arbor_ai::Message;

use super::transcript::TranscriptView;
use crate::command::session_stats::SessionCounts;

/// Entries of the active path read for the first frame of a resumed session: enough rows for
/// two screens of the tallest terminal, a fixed cost whatever the session's size (DECISIONS
/// §23.102). A shorter path is the whole path and loads at once.
pub const FIRST_FRAME_ENTRIES: usize = 256;

/// Token and cost totals of every answer in a session (the footer's usage).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub cost: f64,
}

impl Totals {
    pub(super) fn of(entries: &[arbor_agent::session::SessionEntry]) -> Self {
        let c = SessionCounts::of(entries);
        Totals {
            input: c.tokens.input,
            output: c.tokens.output,
            cache_read: c.tokens.cache_read,
            cache_write: c.tokens.cache_write,
            cost: c.cost,
        }
    }
}

/// What loading a large session behind its first frame produced (DECISIONS §23.102).
#[derive(Debug, Clone)]
pub struct LoadedSession {
    /// The whole branch's transcript; the driver takes it out and swaps it in.
    pub transcript: Option<TranscriptView>,
    /// The branch's user messages for the editor history (`None`: keep the current one).
    pub history: Option<Vec<String>>,
    pub totals: Totals,
    /// Why loading failed (the tail view stays; the next turn builds the context itself).
    pub error: Option<String>,
    /// The driver's reload count when loading began: a reload since (navigation) makes the
    /// transcript stale.
    pub(super) generation: u64,
}

/// The context's size as pi's footer counts it: the last answer's usage plus estimates of the
/// messages after it, every message estimated when no answer reports usage (a branch
/// navigated to before the first answer), unknown after a compaction until the next answer
/// (DECISIONS §23.163).
pub(super) fn context_tokens(messages: &[AgentMessage]) -> Option<u64> {
    // The window only scales the percentage, which the footer computes itself.
    crate::command::session_stats::ContextUsage::of(messages, u64::MAX).and_then(|u| u.tokens)
}

/// The user message texts of a branch, oldest first (editor history).
pub(super) fn user_texts(messages: &[AgentMessage]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::Llm(Message::User(u)) => Some(u.content.joined_text("")),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(v: serde_json::Value) -> AgentMessage {
        serde_json::from_value(v).unwrap()
    }

    /// DECISIONS §23.163: a branch without an answer is estimated (navigating back to the
    /// first message showed `?`); after a compaction the size is unknown until an answer.
    #[test]
    fn context_tokens_estimate_without_an_answer_and_are_unknown_after_a_compaction() {
        let user = msg(serde_json::json!({"role": "user", "content": "12345678", "timestamp": 1}));
        assert_eq!(context_tokens(&[]), Some(0));
        assert_eq!(context_tokens(std::slice::from_ref(&user)), Some(2));
        let summary = msg(
            serde_json::json!({"role": "compactionSummary", "summary": "s",
            "tokensBefore": 10, "timestamp": 1}),
        );
        assert_eq!(context_tokens(&[summary, user]), None);
    }
}
