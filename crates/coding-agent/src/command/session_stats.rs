//! A session's message counts and token totals, computed in one place for `get_session_stats`,
//! the TUI's `/session` and the footer's totals. The storage's own `stats` answers the
//! session list (message count, cached and uncached tokens including summaries); these are the
//! per-role counts and per-kind tokens of the messages, so they walk the typed entries once.

use arbor_agent::compaction::estimate_context_tokens;
use arbor_agent::message::AgentMessage;
use arbor_agent::session::{EntryKind, SessionEntry};
use arbor_ai::{ContentBlock, Message};
use serde::Serialize;

/// Token totals of every answer in a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenTotals {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl TokenTotals {
    pub fn total(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write
    }
}

/// What the message entries of a session (every branch) hold.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SessionCounts {
    pub user_messages: u64,
    pub assistant_messages: u64,
    pub tool_calls: u64,
    pub tool_results: u64,
    /// Every message entry, whatever its role.
    pub total_messages: u64,
    pub tokens: TokenTotals,
    pub cost: f64,
}

impl SessionCounts {
    pub fn of(entries: &[SessionEntry]) -> SessionCounts {
        let mut c = SessionCounts::default();
        for e in entries {
            let EntryKind::Message(m) = &e.kind else {
                continue;
            };
            c.total_messages += 1;
            match &m.message {
                AgentMessage::Llm(Message::User(_)) => c.user_messages += 1,
                AgentMessage::Llm(Message::Assistant(a)) => {
                    c.assistant_messages += 1;
                    c.tool_calls += a
                        .content
                        .iter()
                        .filter(|b| matches!(b, ContentBlock::ToolCall(_)))
                        .count() as u64;
                    c.tokens.input += a.usage.input;
                    c.tokens.output += a.usage.output;
                    c.tokens.cache_read += a.usage.cache_read;
                    c.tokens.cache_write += a.usage.cache_write;
                    c.cost += a.usage.cost.total.get();
                }
                AgentMessage::Llm(Message::ToolResult(_)) => c.tool_results += 1,
                _ => {}
            }
        }
        c
    }
}

/// `get_session_stats`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatsReply {
    pub session_file: Option<String>,
    pub session_id: String,
    pub user_messages: u64,
    pub assistant_messages: u64,
    pub tool_calls: u64,
    pub tool_results: u64,
    pub total_messages: u64,
    pub tokens: TokensWithTotal,
    pub cost: f64,
    pub context_usage: Option<ContextUsage>,
}

/// [`TokenTotals`] with their sum, as `get_session_stats` reports them.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TokensWithTotal {
    #[serde(flatten)]
    pub kinds: TokenTotals,
    pub total: u64,
}

impl SessionStatsReply {
    pub fn new(
        session_file: Option<String>,
        session_id: String,
        c: &SessionCounts,
        context_usage: Option<ContextUsage>,
    ) -> Self {
        SessionStatsReply {
            session_file,
            session_id,
            user_messages: c.user_messages,
            assistant_messages: c.assistant_messages,
            tool_calls: c.tool_calls,
            tool_results: c.tool_results,
            total_messages: c.total_messages,
            tokens: TokensWithTotal {
                kinds: c.tokens,
                total: c.tokens.total(),
            },
            cost: c.cost,
            context_usage,
        }
    }
}

/// `contextUsage` of `get_session_stats`: the projected context's size estimate against the
/// model's window; `tokens`/`percent` are null after a compaction until a reply reports usage.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextUsage {
    pub tokens: Option<u64>,
    pub context_window: u64,
    pub percent: Option<f64>,
}

impl ContextUsage {
    /// `None` when the model's window is unknown (0).
    pub fn of(messages: &[AgentMessage], window: u64) -> Option<ContextUsage> {
        if window == 0 {
            return None;
        }
        let est = estimate_context_tokens(messages);
        let summary_at = messages
            .iter()
            .rposition(|m| matches!(m, AgentMessage::CompactionSummary(_)));
        if let Some(at) = summary_at {
            if est.last_usage_index.is_none_or(|u| u < at) {
                return Some(ContextUsage {
                    tokens: None,
                    context_window: window,
                    percent: None,
                });
            }
        }
        Some(ContextUsage {
            tokens: Some(est.tokens),
            context_window: window,
            percent: Some(est.tokens as f64 / window as f64 * 100.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_serialize_in_pis_order() {
        let c = SessionCounts {
            user_messages: 1,
            assistant_messages: 2,
            tool_calls: 3,
            tool_results: 3,
            total_messages: 6,
            tokens: TokenTotals {
                input: 10,
                output: 5,
                cache_read: 1,
                cache_write: 0,
            },
            cost: 0.5,
        };
        let usage = ContextUsage {
            tokens: None,
            context_window: 100,
            percent: None,
        };
        let r = SessionStatsReply::new(None, "s".into(), &c, Some(usage));
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"sessionFile":null,"sessionId":"s","userMessages":1,"assistantMessages":2,"toolCalls":3,"toolResults":3,"totalMessages":6,"tokens":{"input":10,"output":5,"cacheRead":1,"cacheWrite":0,"total":16},"cost":0.5,"contextUsage":{"tokens":null,"contextWindow":100,"percent":null}}"#
        );
        assert!(ContextUsage::of(&[], 0).is_none());
    }

    /// The counts `get_session_stats` made before, by re-serialising every entry to JSON.
    fn counted_as_json(entries: &[SessionEntry]) -> SessionCounts {
        use serde_json::Value;
        let mut c = SessionCounts::default();
        for e in entries {
            let v = serde_json::to_value(e).unwrap();
            let Some(m) = v.get("message").filter(|_| v["type"] == "message") else {
                continue;
            };
            c.total_messages += 1;
            match m.get("role").and_then(Value::as_str) {
                Some("user") => c.user_messages += 1,
                Some("assistant") => {
                    c.assistant_messages += 1;
                    c.tool_calls += m["content"].as_array().map_or(0, |b| {
                        b.iter().filter(|x| x["type"] == "toolCall").count() as u64
                    });
                    let u = |k: &str| {
                        m.pointer(&format!("/usage/{k}"))
                            .and_then(Value::as_u64)
                            .unwrap_or(0)
                    };
                    c.tokens.input += u("input");
                    c.tokens.output += u("output");
                    c.tokens.cache_read += u("cacheRead");
                    c.tokens.cache_write += u("cacheWrite");
                    c.cost += m
                        .pointer("/usage/cost/total")
                        .and_then(Value::as_f64)
                        .unwrap_or(0.0);
                }
                Some("toolResult") => c.tool_results += 1,
                _ => {}
            }
        }
        c
    }

    #[tokio::test]
    async fn the_typed_walk_counts_what_the_json_walk_counted() {
        use arbor_agent::session::{JsonlRepository, Session};
        let mut seen = 0;
        for path in arbor_test_support::fixtures::fixture_files("pi-sessions") {
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            let dir = path.parent().unwrap().to_path_buf();
            let Ok(storage) = JsonlRepository::flat(dir)
                .open_read_only(&path.display().to_string())
                .await
            else {
                continue;
            };
            let session = Session::new(std::sync::Arc::new(storage));
            let entries = session.entries().await.unwrap();
            assert_eq!(
                SessionCounts::of(&entries),
                counted_as_json(&entries),
                "{}",
                path.display()
            );
            seen += 1;
        }
        assert!(seen >= 5, "{seen} fixture sessions");
    }
}
