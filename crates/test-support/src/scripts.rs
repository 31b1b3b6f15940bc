//! Scripted model answers for [`crate::MockServer`]: whole streamed responses in the OpenAI
//! chat-completions and Anthropic messages formats, so app tests can drive real sessions
//! (text answers, tool calls) without a network.

use serde_json::{json, Value};

use crate::{sse_data, sse_events, MockResponse};

/// A streamed chat-completions answer with `text`, then `stop` and usage.
pub fn openai_text(text: &str) -> MockResponse {
    let chunks = vec![
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}),
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}),
    ];
    MockResponse::sse().body(format!("{}data: [DONE]\n\n", sse_data(&chunks)))
}

/// A streamed chat-completions answer that calls tools: `(call id, tool name, arguments)`.
pub fn openai_tool_calls(calls: &[(&str, &str, Value)]) -> MockResponse {
    let mut chunks = vec![
        json!({"id": "chatcmpl-2", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": null}}]}),
    ];
    for (i, (id, name, args)) in calls.iter().enumerate() {
        chunks.push(json!({"id": "chatcmpl-2", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}}]}));
        chunks.push(json!({"id": "chatcmpl-2", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": args.to_string()}}]}}]}));
    }
    chunks.push(json!({"id": "chatcmpl-2", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
    chunks.push(json!({"id": "chatcmpl-2", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 20, "total_tokens": 140}}));
    MockResponse::sse().body(format!("{}data: [DONE]\n\n", sse_data(&chunks)))
}

/// A streamed Anthropic messages answer with `text`.
pub fn anthropic_text(text: &str) -> MockResponse {
    let start = json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "mock", "content": [], "stop_reason": null, "usage": {"input_tokens": 100, "output_tokens": 1}}});
    let block = json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}});
    let delta = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}});
    let stop = json!({"type": "content_block_stop", "index": 0});
    let mdelta = json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 10}});
    let mstop = json!({"type": "message_stop"});
    let (a, b, c, d, e, f) = (
        start.to_string(),
        block.to_string(),
        delta.to_string(),
        stop.to_string(),
        mdelta.to_string(),
        mstop.to_string(),
    );
    MockResponse::sse().body(sse_events([
        (Some("message_start"), a.as_str()),
        (Some("content_block_start"), b.as_str()),
        (Some("content_block_delta"), c.as_str()),
        (Some("content_block_stop"), d.as_str()),
        (Some("message_delta"), e.as_str()),
        (Some("message_stop"), f.as_str()),
    ]))
}

/// A streamed Anthropic messages answer calling one tool.
pub fn anthropic_tool_call(id: &str, name: &str, args: &Value) -> MockResponse {
    let start = json!({"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant", "model": "mock", "content": [], "stop_reason": null, "usage": {"input_tokens": 100, "output_tokens": 1}}});
    let block = json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}});
    let delta = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": args.to_string()}});
    let stop = json!({"type": "content_block_stop", "index": 0});
    let mdelta = json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 10}});
    let mstop = json!({"type": "message_stop"});
    let (a, b, c, d, e, f) = (
        start.to_string(),
        block.to_string(),
        delta.to_string(),
        stop.to_string(),
        mdelta.to_string(),
        mstop.to_string(),
    );
    MockResponse::sse().body(sse_events([
        (Some("message_start"), a.as_str()),
        (Some("content_block_start"), b.as_str()),
        (Some("content_block_delta"), c.as_str()),
        (Some("content_block_stop"), d.as_str()),
        (Some("message_delta"), e.as_str()),
        (Some("message_stop"), f.as_str()),
    ]))
}
