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

fn request(
    model: serde_json::Value,
    context: serde_json::Value,
    options: serde_json::Value,
) -> serde_json::Value {
    let model: arbor_ai::Model = serde_json::from_value(model).unwrap();
    let context: arbor_ai::Context = serde_json::from_value(context).unwrap();
    let options = arbor_ai::SimpleStreamOptions::from_pi_json(&options).unwrap();
    arbor_ai::providers::simple::build_simple_request(&model, &context, options)
        .unwrap()
        .body
}

fn model_json(api: &str, provider: &str, id: &str) -> serde_json::Value {
    json!({"id": id, "name": id, "api": api, "provider": provider, "baseUrl": "https://example.test/v1",
        "reasoning": true, "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 200000, "maxTokens": 32000})
}

fn assistant(
    api: &str,
    provider: &str,
    model: &str,
    content: serde_json::Value,
    ts: i64,
) -> serde_json::Value {
    json!({"role": "assistant", "content": content, "api": api, "provider": provider, "model": model,
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop", "timestamp": ts})
}

/// Bug 1: an assistant turn that converts to nothing does not consume a `msg_pi_<n>` number.
#[test]
fn responses_fallback_ids_count_only_messages_with_items() {
    let context = json!({"messages": [
        {"role": "user", "content": "one", "timestamp": 1},
        // Foreign signed thinking only: dropped by the history transform, no input item.
        assistant("anthropic-messages", "anthropic", "claude-x",
            json!([{"type": "thinking", "thinking": "hm", "thinkingSignature": "sig"}]), 2),
        {"role": "user", "content": "two", "timestamp": 3},
        assistant("openai-responses", "openai", "gpt-t", json!([{"type": "text", "text": "answer"}]), 4),
    ]});
    let body = request(
        model_json("openai-responses", "openai", "gpt-t"),
        context,
        json!({"apiKey": "k"}),
    );
    let ids: Vec<&str> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["id"].as_str())
        .collect();
    assert_eq!(ids, ["msg_pi_2"]);
}

/// Bug 2: a tool redefined by a later system message keeps its place in the tool list; only a
/// removal followed by an addition moves it to the end.
#[test]
fn redefined_tools_keep_their_position() {
    let tool = |name: &str, d: &str| json!({"name": name, "description": d, "parameters": {"type": "object", "properties": {}}});
    let context = json!({"tools": [tool("read", "r"), tool("bash", "b"), tool("edit", "e")], "messages": [
        {"role": "user", "content": "hi", "timestamp": 1},
        {"role": "system", "content": "", "toolsAdded": [tool("read", "r2")], "timestamp": 2},
        {"role": "system", "content": "", "toolsRemoved": [{"name": "bash"}], "toolsAdded": [tool("bash", "b2")], "timestamp": 3},
    ]});
    let body = request(
        model_json("openai-completions", "local", "m"),
        context,
        json!({"apiKey": "k"}),
    );
    let names: Vec<(&str, &str)> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["function"]["name"].as_str().unwrap(),
                t["function"]["description"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [("read", "r2"), ("edit", "e"), ("bash", "b2")]);
}

/// Bug 3: the clamp estimate renders system messages like pi (sections, `\n` between blocks).
#[test]
fn max_tokens_clamp_counts_system_sections() {
    let mut model = model_json("anthropic-messages", "anthropic", "claude-sonnet-4-5");
    model["contextWindow"] = json!(40000);
    let context = json!({"messages": [
        {"role": "system", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "sections": {"big": "x".repeat(35000)}, "timestamp": 0},
        {"role": "user", "content": "hi", "timestamp": 1},
    ]});
    let body = request(model, context, json!({"apiKey": "k", "maxTokens": 32000}));
    // System: ceil(("a\nb" + "\n\n" + 35000 x) / 3.5) = 10002; user "hi": 1.
    // 40000 - 10003 - 4096 = 25901 (the old estimate, 10001 + 1, gave 25903).
    assert_eq!(body["max_tokens"], 25901);
}
