//! Helpers for the context/session suites: fixture locations, a strict v3 reader for
//! pure-projection checks, message builders and snapshot normalization.

use std::path::PathBuf;

use arbor_session::entry::SessionEntry;
use arbor_session::message::AgentMessage;
use serde_json::{json, Value};

pub fn fixtures_dir() -> PathBuf {
    super::testdata_dir()
}

/// Entries of a JSON-lines string (one entry per non-blank line, no header).
pub fn entries(lines: &str) -> Vec<SessionEntry> {
    lines
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| SessionEntry::from_json(l.trim()).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

pub fn msg(v: Value) -> AgentMessage {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"))
}

pub fn user(text: &str, ts: i64) -> AgentMessage {
    msg(json!({"role": "user", "content": text, "timestamp": ts}))
}

pub fn assistant(text: &str, provider: &str, model: &str, ts: i64) -> AgentMessage {
    msg(json!({
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages", "provider": provider, "model": model,
        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop", "timestamp": ts
    }))
}

pub fn tool_call(call_id: &str, name: &str, ts: i64) -> AgentMessage {
    msg(json!({
        "role": "assistant",
        "content": [{"type": "toolCall", "id": call_id, "name": name, "arguments": {"path": "a.rs"}}],
        "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "toolUse", "timestamp": ts
    }))
}

pub fn tool_result(call_id: &str, name: &str, text: &str, ts: i64) -> AgentMessage {
    msg(json!({
        "role": "toolResult", "toolCallId": call_id, "toolName": name,
        "content": [{"type": "text", "text": text}], "isError": false, "timestamp": ts
    }))
}

pub fn system(text: &str, ts: i64) -> AgentMessage {
    msg(json!({"role": "system", "content": text, "timestamp": ts}))
}

pub use arbor_test_support::snapshot::normalize;
