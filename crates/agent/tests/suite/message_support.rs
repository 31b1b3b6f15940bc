//! Message builders for the compaction suite.

use arbor_agent::message::AgentMessage;
use serde_json::{json, Value};

pub use arbor_test_support::snapshot::normalize;

pub fn msg(v: Value) -> AgentMessage {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"))
}

pub fn user(text: &str, ts: i64) -> AgentMessage {
    msg(json!({"role": "user", "content": text, "timestamp": ts}))
}
