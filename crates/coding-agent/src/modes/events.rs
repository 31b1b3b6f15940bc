//! Harness events as pi's JSON and RPC modes write them: the loop's
//! events keep their names; `message_update` carries the latest `usage` and drops the
//! cumulative `partial`; `agent_end` gains `willRetry`; the harness's `settled` becomes `agent_settled{aborted}` (DECISIONS §22.9).
//! Harness-internal notifications (`save_point`, `abort`) are not part of pi's stream.

use arbor_agent::agent::AgentEvent;
use arbor_agent::compaction::CompactionReason;
use arbor_agent::harness::AgentHarness;
use arbor_ai::AssistantMessageEvent;
use serde_json::{json, Value};

/// Converts events one by one; keeps what later events need (usage, the system message).
#[derive(Debug, Default)]
pub struct PiEvents {
    usage: Option<Value>,
    aborted: bool,
    /// pi's system message, announced after the next `turn_start` (DECISIONS §31.2).
    system: Option<Value>,
    /// The system message announced in this run, first in `agent_end.messages`.
    run_system: Option<Value>,
    /// The queues last reported: pi reports a change, not every harness notification
    /// (start-up, abort, session replacement), DECISIONS §31.4.
    queues: (Vec<String>, Vec<String>),
    /// Between a `turn_end` and the next `turn_start`: a queue change there (queued messages
    /// taken for the next turn) is reported after that `turn_start`, where pi reports it.
    between_turns: bool,
    held: Option<Value>,
}

impl PiEvents {
    /// The next run starts a session's conversation: its first turn announces pi's system
    /// message (`message_start`/`message_end`) and `agent_end` lists it first.
    pub fn announce_system(&mut self, message: Value) {
        self.system = Some(message);
    }

    /// The JSON lines (usually one, sometimes none) for an event.
    pub fn convert(&mut self, event: &AgentEvent) -> Vec<Value> {
        let mut lines = self.convert_one(event);
        match event {
            AgentEvent::QueueUpdate { .. } if self.between_turns => {
                if let Some(l) = lines.pop() {
                    self.held = Some(l);
                }
                return Vec::new();
            }
            AgentEvent::TurnEnd { .. } => self.between_turns = true,
            AgentEvent::TurnStart => {
                self.between_turns = false;
                lines.extend(self.held.take());
                return lines;
            }
            AgentEvent::AgentEnd { .. } => self.between_turns = false,
            _ => {}
        }
        if let Some(h) = self.held.take() {
            lines.insert(0, h);
        }
        lines
    }

    fn convert_one(&mut self, event: &AgentEvent) -> Vec<Value> {
        let Ok(mut v) = serde_json::to_value(event) else {
            return Vec::new();
        };
        match event {
            AgentEvent::MessageStart { .. } | AgentEvent::MessageEnd { .. } => {
                if let Some(u) = v.pointer("/message/usage") {
                    self.usage = Some(u.clone());
                }
                // A reply cut off by an abort settles an aborted run, also when the harness
                // announced no queue clearing.
                if v.pointer("/message/stopReason").and_then(Value::as_str) == Some("aborted") {
                    self.aborted = true;
                }
            }
            AgentEvent::MessageUpdate { .. } => {
                if let Some(ev) = v
                    .get_mut("assistantMessageEvent")
                    .and_then(Value::as_object_mut)
                {
                    if let Some(partial) = ev.remove("partial") {
                        if let Some(u) = partial.get("usage") {
                            self.usage = Some(u.clone());
                        }
                    }
                    if let Some(m) = ev.get("message").or_else(|| ev.get("error")) {
                        if let Some(u) = m.get("usage") {
                            self.usage = Some(u.clone());
                        }
                    }
                }
                // pi names the call a `toolcall_start` begins (json.md).
                if let AgentEvent::MessageUpdate {
                    assistant_message_event:
                        AssistantMessageEvent::ToolcallStart { id, tool_name, .. },
                } = event
                {
                    if let Some(ev) = v
                        .get_mut("assistantMessageEvent")
                        .and_then(Value::as_object_mut)
                    {
                        ev.insert("id".into(), json!(id));
                        ev.insert("toolName".into(), json!(tool_name));
                    }
                }
                if let Some(obj) = v.as_object_mut() {
                    let usage = self.usage.clone().unwrap_or(Value::Null);
                    let ev = obj.remove("assistantMessageEvent").unwrap_or(Value::Null);
                    obj.insert("usage".into(), usage);
                    obj.insert("assistantMessageEvent".into(), ev);
                }
            }
            AgentEvent::CompactionEnd(end) => {
                if let Some(obj) = v.as_object_mut() {
                    if end.result.is_none() {
                        obj.remove("result");
                    }
                    // pi's manual compaction names a failure "Compaction failed: …" and an
                    // abort by its `aborted` flag alone (the harness keeps the bare text,
                    // DECISIONS §31.15).
                    if end.reason == CompactionReason::Manual {
                        match (&end.error, end.aborted) {
                            (_, true) => {
                                obj.remove("errorMessage");
                            }
                            (Some(e), false) => {
                                obj.insert(
                                    "errorMessage".into(),
                                    json!(format!("Compaction failed: {e}")),
                                );
                            }
                            (None, false) => {}
                        }
                    }
                }
            }
            AgentEvent::AgentStart => self.aborted = false,
            AgentEvent::TurnStart => {
                if let Some(m) = self.system.take() {
                    self.run_system = Some(m.clone());
                    return vec![
                        v,
                        json!({"type": "message_start", "message": m}),
                        json!({"type": "message_end", "message": m}),
                    ];
                }
            }
            AgentEvent::AgentEnd { .. } => {
                if let Some(obj) = v.as_object_mut() {
                    if let Some(m) = self.run_system.take() {
                        if let Some(Value::Array(ms)) = obj.get_mut("messages") {
                            ms.insert(0, m);
                        }
                    }
                    obj.insert("willRetry".into(), json!(false));
                }
            }
            AgentEvent::Abort { .. } => {
                self.aborted = true;
                return Vec::new();
            }
            AgentEvent::TurnEnd { .. } => {
                // pi's tool results carry their role.
                if let Some(Value::Array(rs)) = v.get_mut("toolResults") {
                    for r in rs.iter_mut().filter_map(Value::as_object_mut) {
                        let mut with_role = serde_json::Map::new();
                        with_role.insert("role".into(), json!("toolResult"));
                        with_role.extend(std::mem::take(r));
                        *r = with_role;
                    }
                }
            }
            // Events pi's stream does not have (DECISIONS §31.4).
            AgentEvent::ModelUpdate { .. }
            | AgentEvent::ToolsUpdate { .. }
            | AgentEvent::SessionCompact { .. }
            | AgentEvent::SessionTree { .. }
            | AgentEvent::RetryAttemptStart { .. }
            | AgentEvent::RetryFinished { .. } => return Vec::new(),
            AgentEvent::Settled { .. } => {
                return vec![json!({"type": "agent_settled", "aborted": self.aborted})]
            }
            AgentEvent::SavePoint { .. } => return Vec::new(),
            AgentEvent::QueueUpdate {
                steer, follow_up, ..
            } => {
                let text = |ms: &Vec<arbor_agent::message::AgentMessage>| -> Vec<String> {
                    ms.iter().map(message_text).collect()
                };
                let queues = (text(steer), text(follow_up));
                if queues == self.queues {
                    return Vec::new();
                }
                self.queues = queues;
                return vec![
                    json!({"type": "queue_update", "steering": self.queues.0, "followUp": self.queues.1}),
                ];
            }
            AgentEvent::RetryScheduled {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
                ..
            } => {
                return vec![
                    json!({"type": "auto_retry_start", "attempt": attempt, "maxAttempts": max_attempts, "delayMs": delay_ms, "errorMessage": error_message}),
                ];
            }
            AgentEvent::ThinkingLevelUpdate {
                level,
                previous_level,
            } => {
                if level == previous_level {
                    return Vec::new();
                }
                return vec![json!({"type": "thinking_level_changed", "level": level})];
            }
            _ => {}
        }
        vec![v]
    }
}

/// The plain text of a queued message.
pub fn message_text(m: &arbor_agent::message::AgentMessage) -> String {
    let v = serde_json::to_value(m).unwrap_or(Value::Null);
    match v.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Long work (retries, compaction) is announced on stderr, never stdout (print mode).
pub fn progress_on_stderr(harness: &AgentHarness) {
    harness.subscribe(|e| match e {
        AgentEvent::RetryScheduled {
            attempt,
            max_attempts,
            delay_ms,
            error_message,
            ..
        } => {
            eprintln!(
                "arbor: request failed ({error_message}); retry {attempt}/{max_attempts} in {:.1}s",
                *delay_ms as f64 / 1000.0
            );
        }
        AgentEvent::SessionCompact { .. } => eprintln!("arbor: compacted the session context"),
        _ => {}
    });
}
