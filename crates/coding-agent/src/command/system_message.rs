//! pi's `role: "system"` message, shown to RPC and JSON clients but never stored: pi 1.6.0
//! keeps its system prompt as the first message of a session's context, and its clients count
//! and index messages with it (`get_messages`, `messageCount`, `agent_end.messages`, the
//! `message_start`/`message_end` pair on a session's first prompt). Arbor keeps the rule that
//! the system prompt is not a conversation entry and synthesizes the message at the edge,
//! carrying the prompt the next turn sends as `content` (DECISIONS §31.2).

use arbor_agent::harness::AgentHarness;
use serde_json::{json, Value};

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

/// `messages` as pi lists them: the system message first when there are any.
pub fn with_system_message(harness: &AgentHarness, messages: Vec<Value>) -> Vec<Value> {
    if messages.is_empty() {
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
