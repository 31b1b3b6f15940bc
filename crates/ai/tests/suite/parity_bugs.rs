//! Regression tests for the differences the pi-ai parity run found (issue 11, bugs 1–6).

use arbor_ai::event::AssistantMessageEvent;
use arbor_ai::{AssistantMessage, ToolCall};
use serde_json::json;

#[test]
fn toolcall_end_and_terminal_events_carry_pi_type_tags() {
    let call = ToolCall::new("call_1", "read", json!({"path": "a"}));
    let end = AssistantMessageEvent::ToolcallEnd {
        content_index: 0,
        tool_call: call.clone(),
    };
    let value = serde_json::to_value(&end).unwrap();
    assert_eq!(
        value,
        json!({"type": "toolcall_end", "contentIndex": 0,
            "toolCall": {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a"}}})
    );
    let back: AssistantMessageEvent = serde_json::from_value(value).unwrap();
    assert_eq!(back, end);

    let done = AssistantMessageEvent::Done {
        reason: arbor_ai::StopReason::Stop,
        message: AssistantMessage::default(),
    };
    let value = serde_json::to_value(&done).unwrap();
    assert_eq!(value["message"]["role"], "assistant");
    let back: AssistantMessageEvent = serde_json::from_value(value).unwrap();
    assert_eq!(back, done);
}
