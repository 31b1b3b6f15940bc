//! pi's `role: "system"` message, shown to RPC and JSON clients but never stored: pi 1.6.0
//! keeps its system prompt as the first message of a session's context, and its clients count
//! and index messages with it (`get_messages`, `messageCount`, `agent_end.messages`, the
//! `message_start`/`message_end` pair on a session's first prompt). Arbor keeps the rule that
//! the system prompt is not a conversation entry and synthesizes the message at the edge,
//! carrying the prompt the next turn sends as `content` (DECISIONS §31.2).

use arbor_agent::harness::AgentHarness;
use arbor_agent::message::AgentMessage;
use arbor_ai::Message;
use serde_json::{json, Value};

/// Whether a conversation has begun: pi adds its system message with a session's first prompt,
/// so a context holding only `bash` results has none.
pub fn has_conversation(messages: &[AgentMessage]) -> bool {
    messages.iter().any(|m| {
        matches!(
            m,
            AgentMessage::Llm(Message::User(_) | Message::Assistant(_))
                | AgentMessage::CompactionSummary(_)
                | AgentMessage::BranchSummary(_)
        )
    })
}

/// The system message for a context that holds messages, with the given timestamp (ms).
pub fn system_message(harness: &AgentHarness, timestamp: i64) -> Value {
    json!({"role": "system", "content": harness.system_prompt_text(), "timestamp": timestamp})
}

/// Milliseconds since the epoch, for a message announced now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `messages` (the context, serialized) as pi lists them: the system message first once a
/// conversation has begun.
pub fn with_system_message(
    harness: &AgentHarness,
    context: &[AgentMessage],
    messages: Vec<Value>,
) -> Vec<Value> {
    if !has_conversation(context) {
        return messages;
    }
    let timestamp = messages
        .first()
        .and_then(|m| m.get("timestamp"))
        .and_then(Value::as_i64)
        .unwrap_or_else(now_ms);
    std::iter::once(system_message(harness, timestamp))
        .chain(messages)
        .collect()
}
