//! Orphaned tool results, repaired before a request (DECISIONS §29.6).
//!
//! A tool result must follow the assistant message holding its call; strict providers answer
//! 400 otherwise, and every later request of the session fails the same way. The history
//! transform (pi-ai's rules, kept identical) already gives a call without a result a synthetic
//! one, but passes a result without its call through. Such a result comes from a damaged or
//! foreign log: an unknown entry where the call was, a failed or aborted answer (the transform
//! drops those with their calls), a result after a user message, a second result for one call.
//! [`OrphanRepair`] turns each into a user message naming the tool and the call id, followed by
//! the result's own content, so the model still learns what the tool did; the stored session
//! is left as it is.

use std::collections::HashSet;

use arbor_ai::{
    Content, ContentBlock, Message, StopReason, TextContent, ToolResultMessage, UserMessage,
};

/// How the user message an orphaned tool result becomes opens.
pub const ORPHANED_TOOL_RESULT_PREFIX: &str = "[A tool result whose call is missing";

/// The repair over a growing transcript, one model message at a time (its state: the calls of
/// the last assistant message still waiting for a result).
#[derive(Debug, Default, Clone)]
pub struct OrphanRepair {
    open: HashSet<String>,
}

impl OrphanRepair {
    /// `message`, or the user message it becomes when it is an orphaned tool result.
    pub fn push(&mut self, message: Message) -> Message {
        match message {
            Message::Assistant(a) => {
                self.open.clear();
                // A failed or aborted answer is dropped by the transform, its calls with it.
                if !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
                    self.open.extend(a.tool_calls().map(|c| c.id.clone()));
                }
                Message::Assistant(a)
            }
            Message::ToolResult(r) if self.open.remove(&r.tool_call_id) => Message::ToolResult(r),
            Message::ToolResult(r) => {
                // The note ends the tool flow: later results of the same calls become notes
                // too, and the transform gives the calls still owed synthetic results.
                self.open.clear();
                Message::User(note(r))
            }
            Message::User(u) => {
                self.open.clear();
                Message::User(u)
            }
            Message::System(s) => Message::System(s),
        }
    }

    /// [`Self::push`] over a whole transcript.
    pub fn repair(messages: Vec<Message>) -> Vec<Message> {
        let mut repair = OrphanRepair::default();
        messages.into_iter().map(|m| repair.push(m)).collect()
    }
}

/// An orphaned tool result as a user message: a line naming the tool and the call id, then the
/// result's own content.
fn note(r: ToolResultMessage) -> UserMessage {
    let failed = if r.is_error {
        ", marked as an error"
    } else {
        ""
    };
    let mut blocks = vec![text(format!(
        "{ORPHANED_TOOL_RESULT_PREFIX} (tool {}, call id {}{failed}):]",
        r.tool_name, r.tool_call_id
    ))];
    match r.content {
        Content::Text(t) => blocks.push(text(t)),
        Content::Blocks(content) => blocks.extend(content),
    }
    UserMessage {
        content: Content::Blocks(blocks),
        timestamp: r.timestamp,
        extra: Default::default(),
    }
}

fn text(text: String) -> ContentBlock {
    ContentBlock::Text(TextContent {
        text,
        text_signature: None,
        extra: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn msg(v: Value) -> Message {
        serde_json::from_value(v).unwrap()
    }

    fn assistant(calls: &[&str], stop: &str) -> Message {
        let content: Vec<Value> = calls
            .iter()
            .map(|id| json!({"type": "toolCall", "id": id, "name": "bash", "arguments": {}}))
            .collect();
        msg(
            json!({"role": "assistant", "content": content, "api": "a", "provider": "p",
                   "model": "m", "stopReason": stop, "timestamp": 2}),
        )
    }

    fn result(id: &str, error: bool) -> Message {
        msg(
            json!({"role": "toolResult", "toolCallId": id, "toolName": "bash",
                   "content": [{"type": "text", "text": format!("out of {id}")}], "isError": error, "timestamp": 3}),
        )
    }

    fn user(t: &str) -> Message {
        msg(json!({"role": "user", "content": t, "timestamp": 1}))
    }

    fn roles(ms: &[Message]) -> Vec<&'static str> {
        ms.iter()
            .map(|m| match m {
                Message::User(_) => "user",
                Message::Assistant(_) => "assistant",
                Message::ToolResult(_) => "toolResult",
                Message::System(_) => "system",
            })
            .collect()
    }

    #[test]
    fn matched_results_pass_and_orphans_become_notes() {
        let out = OrphanRepair::repair(vec![
            user("q"),
            assistant(&["c1", "c2"], "toolUse"),
            result("c1", false),
            result("c2", false),
            result("c2", false),
            user("next"),
            result("c1", false),
            assistant(&["c3"], "error"),
            result("c3", true),
        ]);
        assert_eq!(
            roles(&out),
            [
                "user",
                "assistant",
                "toolResult",
                "toolResult",
                "user",
                "user",
                "user",
                "assistant",
                "user"
            ]
        );
        let Message::User(u) = &out[8] else { panic!() };
        assert_eq!(
            serde_json::to_value(&u.content).unwrap(),
            json!([{"type": "text", "text": "[A tool result whose call is missing (tool bash, call id c3, marked as an error):]"},
                   {"type": "text", "text": "out of c3"}])
        );
    }

    #[test]
    fn a_note_inside_a_batch_closes_it() {
        let out = OrphanRepair::repair(vec![
            assistant(&["c1", "c2"], "toolUse"),
            result("zz", false),
            result("c1", false),
        ]);
        assert_eq!(roles(&out), ["assistant", "user", "user"]);
    }
}
