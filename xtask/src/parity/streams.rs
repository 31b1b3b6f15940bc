//! Seeded random provider responses: SSE bodies in each API's wire format (text, thinking,
//! signatures, tool calls, usage, every stop reason, unknown events, malformed chunks),
//! delivered whole, in coarse pieces or a few bytes at a time, cut short, dropped mid-body,
//! or replaced by an HTTP error.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

/// What the logging server answers.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
    /// Byte offsets at which the body is split into separate writes.
    pub splits: Vec<usize>,
    /// `true`: the socket is closed before the body's final chunk (a dropped connection).
    pub cut: bool,
}

impl Reply {
    pub fn to_json(&self) -> Value {
        json!({
            "status": self.status,
            "headers": {"content-type": self.content_type},
            "body": self.body,
            "splits": self.splits,
            "ending": if self.cut { "cut" } else { "complete" },
        })
    }
}

const PIECES: &[&str] = &[
    "Hello",
    " world",
    "!",
    " ünï",
    "😀",
    "\n",
    " code: `x`",
    " done.",
    "\\",
    "\"",
];

fn text(rng: &mut StdRng) -> Vec<String> {
    (0..rng.gen_range(1..5))
        .map(|_| PIECES.choose(rng).copied().unwrap_or("x").to_string())
        .collect()
}

fn args_fragments(rng: &mut StdRng) -> Vec<String> {
    let full = match rng.gen_range(0..6) {
        0 => String::new(),
        1 => "{\"path\": \"a\\nb\"}".to_string(),
        2 => "[1,2]".to_string(),
        3 => "{\"cmd\": \"ls\", \"n\": 3, \"deep\": {\"x\": [true, null]}}".to_string(),
        4 => "{\"bad\": \"tab\there\"}".to_string(),
        _ => "{\"p\": 1".to_string(),
    };
    let bytes: Vec<char> = full.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let n = rng.gen_range(1..8).min(bytes.len() - at);
        out.push(bytes[at..at + n].iter().collect());
        at += n;
    }
    out
}

enum Block {
    Text(Vec<String>),
    Thinking(Vec<String>, Option<String>),
    Redacted,
    Tool(String, String, Vec<String>),
}

fn blocks(rng: &mut StdRng, allow_redacted: bool) -> Vec<Block> {
    let mut out = Vec::new();
    for i in 0..rng.gen_range(0..4) {
        out.push(match rng.gen_range(0..6) {
            0 | 1 => Block::Text(text(rng)),
            2 => Block::Thinking(text(rng), rng.gen_bool(0.7).then(|| "c2lnMQ==".to_string())),
            3 if allow_redacted => Block::Redacted,
            _ => Block::Tool(
                format!("call_{i}"),
                ["read", "bash", "Read"]
                    .choose(rng)
                    .copied()
                    .unwrap_or("read")
                    .into(),
                args_fragments(rng),
            ),
        });
    }
    out
}

fn sse(event: Option<&str>, data: &Value, crlf: bool) -> String {
    let nl = if crlf { "\r\n" } else { "\n" };
    match event {
        Some(e) => format!("event: {e}{nl}data: {data}{nl}{nl}"),
        None => format!("data: {data}{nl}{nl}"),
    }
}

fn anthropic(rng: &mut StdRng, model: &str) -> String {
    let crlf = rng.gen_bool(0.1);
    let mut out = String::new();
    out.push_str(&sse(Some("message_start"), &json!({"type": "message_start", "message": {"id": "msg_01", "type": "message", "role": "assistant",
        "model": if rng.gen_bool(0.1) { "claude-other" } else { model }, "content": [], "stop_reason": null,
        "usage": {"input_tokens": rng.gen_range(1..900), "output_tokens": 1, "cache_read_input_tokens": rng.gen_range(0..50), "cache_creation_input_tokens": rng.gen_range(0..50)}}}), crlf));
    if rng.gen_bool(0.3) {
        out.push_str(&sse(Some("ping"), &json!({"type": "ping"}), crlf));
    }
    let bs = blocks(rng, true);
    let has_tool = bs.iter().any(|b| matches!(b, Block::Tool(..)));
    for (i, b) in bs.iter().enumerate() {
        let (start, deltas): (Value, Vec<Value>) = match b {
            Block::Text(parts) => (
                json!({"type": "text", "text": ""}),
                parts
                    .iter()
                    .map(|p| json!({"type": "text_delta", "text": p}))
                    .collect(),
            ),
            Block::Thinking(parts, sig) => {
                let mut d: Vec<Value> = parts
                    .iter()
                    .map(|p| json!({"type": "thinking_delta", "thinking": p}))
                    .collect();
                if let Some(s) = sig {
                    d.push(json!({"type": "signature_delta", "signature": s}));
                }
                (
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                    d,
                )
            }
            Block::Redacted => (
                json!({"type": "redacted_thinking", "data": "b3BhcXVl"}),
                vec![],
            ),
            Block::Tool(id, name, frags) => (
                json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                frags
                    .iter()
                    .map(|f| json!({"type": "input_json_delta", "partial_json": f}))
                    .collect(),
            ),
        };
        out.push_str(&sse(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": i, "content_block": start}),
            crlf,
        ));
        for d in deltas {
            out.push_str(&sse(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": i, "delta": d}),
                crlf,
            ));
        }
        out.push_str(&sse(
            Some("content_block_stop"),
            &json!({"type": "content_block_stop", "index": i}),
            crlf,
        ));
    }
    if rng.gen_bool(0.05) {
        out.push_str(&sse(Some("error"), &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}), crlf));
    }
    let stop = if has_tool {
        "tool_use"
    } else {
        [
            "end_turn",
            "end_turn",
            "max_tokens",
            "stop_sequence",
            "pause_turn",
            "refusal",
            "sensitive",
            "model_context_window_exceeded",
            "weird",
        ]
        .choose(rng)
        .copied()
        .unwrap_or("end_turn")
    };
    let mut delta = json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": rng.gen_range(1..500)}});
    if stop == "refusal" && rng.gen_bool(0.5) {
        delta["delta"]["stop_details"] = json!({"type": "refusal", "explanation": "Not allowed."});
    }
    out.push_str(&sse(Some("message_delta"), &delta, crlf));
    out.push_str(&sse(
        Some("message_stop"),
        &json!({"type": "message_stop"}),
        crlf,
    ));
    out
}

fn completions(rng: &mut StdRng, model: &str) -> String {
    let mut out = String::new();
    let chunk = |delta: Value, finish: Value| json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    out.push_str(&sse(
        None,
        &chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        false,
    ));
    let bs = blocks(rng, false);
    let mut tool_index = 0;
    let has_tool = bs.iter().any(|b| matches!(b, Block::Tool(..)));
    let reasoning_field = ["reasoning_content", "reasoning", "reasoning_text"]
        .choose(rng)
        .copied()
        .unwrap_or("reasoning_content");
    for b in &bs {
        match b {
            Block::Text(parts) => {
                for p in parts {
                    out.push_str(&sse(
                        None,
                        &chunk(json!({"content": p}), Value::Null),
                        false,
                    ));
                }
            }
            Block::Thinking(parts, _) => {
                for p in parts {
                    out.push_str(&sse(
                        None,
                        &chunk(json!({reasoning_field: p}), Value::Null),
                        false,
                    ));
                }
            }
            Block::Redacted => {}
            Block::Tool(id, name, frags) => {
                out.push_str(&sse(None, &chunk(json!({"tool_calls": [{"index": tool_index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}), Value::Null), false));
                for f in frags {
                    out.push_str(&sse(None, &chunk(json!({"tool_calls": [{"index": tool_index, "function": {"arguments": f}}]}), Value::Null), false));
                }
                tool_index += 1;
            }
        }
    }
    // A custom (grammar) call, drawn from a generator of its own so the replies drawn before
    // it was added stay as they were (DECISIONS §26.41).
    let mut side = StdRng::from_rng(rng.clone()).unwrap_or_else(|_| StdRng::seed_from_u64(41));
    if side.gen_bool(0.3) {
        let name = ["apply", "apply", "unknown_custom"]
            .choose(&mut side)
            .copied()
            .unwrap_or("apply");
        let id = format!("call_c{tool_index}");
        out.push_str(&sse(None, &chunk(json!({"tool_calls": [{"index": tool_index, "id": id, "type": "custom", "custom": {"name": name, "input": ""}}]}), Value::Null), false));
        let parts = [
            "*** Begin",
            "\n+ line \"quoted\"",
            " tab\t",
            " ünï 😀",
            "\n*** End",
        ];
        let take = side.gen_range(0..=parts.len());
        for p in &parts[..take] {
            out.push_str(&sse(
                None,
                &chunk(
                    json!({"tool_calls": [{"index": tool_index, "custom": {"input": p}}]}),
                    Value::Null,
                ),
                false,
            ));
        }
    }
    if rng.gen_bool(0.05) {
        out.push_str("data: {not json\n\n");
    }
    let finish = if has_tool && rng.gen_bool(0.8) {
        "tool_calls"
    } else {
        ["stop", "stop", "length", "content_filter", "end", "weird"]
            .choose(rng)
            .copied()
            .unwrap_or("stop")
    };
    if rng.gen_bool(0.9) {
        out.push_str(&sse(None, &chunk(json!({}), json!(finish)), false));
    }
    out.push_str(&sse(None, &json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model, "choices": [],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150, "prompt_tokens_details": {"cached_tokens": rng.gen_range(0..100)}, "completion_tokens_details": {"reasoning_tokens": 5}}}), false));
    out.push_str("data: [DONE]\n\n");
    out
}

fn responses(rng: &mut StdRng, model: &str) -> String {
    let mut out = String::new();
    let mut seq = 0;
    let mut ev = |out: &mut String, v: Value| {
        let mut v = v;
        v["sequence_number"] = json!(seq);
        seq += 1;
        let name = v["type"].as_str().unwrap_or("x").to_string();
        out.push_str(&sse(Some(&name), &v, false));
    };
    ev(
        &mut out,
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "model": model, "output": []}}),
    );
    let bs = blocks(rng, false);
    let mut output = Vec::new();
    for (i, b) in bs.iter().enumerate() {
        match b {
            Block::Text(parts) => {
                let id = format!("msg_{i}");
                ev(
                    &mut out,
                    json!({"type": "response.output_item.added", "output_index": i, "item": {"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []}}),
                );
                for p in parts {
                    ev(
                        &mut out,
                        json!({"type": "response.output_text.delta", "output_index": i, "item_id": id, "content_index": 0, "delta": p}),
                    );
                }
                let item = json!({"type": "message", "id": id, "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": parts.concat(), "annotations": []}]});
                ev(
                    &mut out,
                    json!({"type": "response.output_item.done", "output_index": i, "item": item}),
                );
                output.push(item);
            }
            Block::Thinking(parts, _) => {
                let id = format!("rs_{i}");
                ev(
                    &mut out,
                    json!({"type": "response.output_item.added", "output_index": i, "item": {"type": "reasoning", "id": id, "summary": []}}),
                );
                for p in parts {
                    ev(
                        &mut out,
                        json!({"type": "response.reasoning_summary_text.delta", "output_index": i, "item_id": id, "summary_index": 0, "delta": p}),
                    );
                }
                ev(
                    &mut out,
                    json!({"type": "response.reasoning_summary_part.done", "output_index": i, "item_id": id, "summary_index": 0}),
                );
                let item = json!({"type": "reasoning", "id": id, "summary": [{"type": "summary_text", "text": parts.concat()}], "encrypted_content": "ZW5j"});
                ev(
                    &mut out,
                    json!({"type": "response.output_item.done", "output_index": i, "item": item}),
                );
                output.push(item);
            }
            Block::Tool(id, name, frags) => {
                let item_id = format!("fc_{i}");
                ev(
                    &mut out,
                    json!({"type": "response.output_item.added", "output_index": i, "item": {"type": "function_call", "id": item_id, "call_id": id, "name": name, "arguments": "", "status": "in_progress"}}),
                );
                for f in frags {
                    ev(
                        &mut out,
                        json!({"type": "response.function_call_arguments.delta", "output_index": i, "item_id": item_id, "delta": f}),
                    );
                }
                let full = frags.concat();
                ev(
                    &mut out,
                    json!({"type": "response.function_call_arguments.done", "output_index": i, "item_id": item_id, "arguments": full}),
                );
                let item = json!({"type": "function_call", "id": item_id, "call_id": id, "name": name, "arguments": full, "status": "completed"});
                if rng.gen_bool(0.9) {
                    ev(
                        &mut out,
                        json!({"type": "response.output_item.done", "output_index": i, "item": item}),
                    );
                }
                output.push(item);
            }
            _ => {}
        }
    }
    if rng.gen_bool(0.3) {
        // A custom (grammar) tool call: streamed free-form input, optionally repeated whole.
        let i = bs.len();
        let item_id = format!("ctc_{i}");
        let name = ["apply", "apply", "unknown_custom"]
            .choose(rng)
            .copied()
            .unwrap_or("apply");
        let initial = if rng.gen_bool(0.3) { "*** Begin" } else { "" };
        let parts = ["\n+ line \"quoted\"", " tab\t", " ünï 😀", "\n*** End"];
        ev(
            &mut out,
            json!({"type": "response.output_item.added", "output_index": i, "item": {"type": "custom_tool_call", "id": item_id, "call_id": format!("call_c{i}"), "name": name, "input": initial, "status": "in_progress"}}),
        );
        let take = rng.gen_range(0..=parts.len());
        for p in &parts[..take] {
            ev(
                &mut out,
                json!({"type": "response.custom_tool_call_input.delta", "output_index": i, "item_id": item_id, "delta": p}),
            );
        }
        let full = format!("{initial}{}", parts.concat());
        if rng.gen_bool(0.7) {
            ev(
                &mut out,
                json!({"type": "response.custom_tool_call_input.done", "output_index": i, "item_id": item_id, "input": full}),
            );
        }
        let item = json!({"type": "custom_tool_call", "id": item_id, "call_id": format!("call_c{i}"), "name": name, "input": full, "status": "completed"});
        ev(
            &mut out,
            json!({"type": "response.output_item.done", "output_index": i, "item": item}),
        );
        output.push(item);
    }
    let usage = json!({"input_tokens": 200, "input_tokens_details": {"cached_tokens": rng.gen_range(0..100)}, "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 10}, "total_tokens": 240});
    match rng.gen_range(0..10) {
        0 => ev(
            &mut out,
            json!({"type": "response.incomplete", "response": {"id": "resp_1", "status": "incomplete", "incomplete_details": {"reason": (["max_output_tokens", "content_filter"].choose(rng).copied())}, "output": output, "usage": usage}}),
        ),
        1 => ev(
            &mut out,
            json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed", "error": {"code": "server_error", "message": "The server had an error"}, "output": output, "usage": usage}}),
        ),
        2 => ev(
            &mut out,
            json!({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down", "param": null}),
        ),
        _ => ev(
            &mut out,
            json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": output, "usage": usage}}),
        ),
    }
    out
}

fn google(rng: &mut StdRng, model: &str) -> String {
    let mut out = String::new();
    let bs = blocks(rng, false);
    let has_tool = bs.iter().any(|b| matches!(b, Block::Tool(..)));
    let usage = json!({"promptTokenCount": 100, "candidatesTokenCount": 20, "thoughtsTokenCount": 7, "cachedContentTokenCount": rng.gen_range(0..50), "totalTokenCount": 127});
    let mut chunks: Vec<Value> = Vec::new();
    for b in &bs {
        match b {
            Block::Text(parts) => chunks.extend(parts.iter().map(|p| json!({"text": p}))),
            Block::Thinking(parts, sig) => {
                for (k, p) in parts.iter().enumerate() {
                    let mut part = json!({"text": p, "thought": true});
                    if k + 1 == parts.len() {
                        if let Some(s) = sig {
                            part["thoughtSignature"] = json!(s);
                        }
                    }
                    chunks.push(part);
                }
            }
            Block::Tool(id, name, _) => {
                let mut call = json!({"name": name, "args": {"path": "a", "n": 2}});
                if rng.gen_bool(0.5) {
                    call["id"] = json!(id);
                }
                chunks.push(json!({"functionCall": call}));
            }
            Block::Redacted => {}
        }
    }
    let finish = if has_tool {
        "STOP"
    } else {
        [
            "STOP",
            "STOP",
            "MAX_TOKENS",
            "SAFETY",
            "RECITATION",
            "MALFORMED_FUNCTION_CALL",
            "FINISH_REASON_NEW",
        ]
        .choose(rng)
        .copied()
        .unwrap_or("STOP")
    };
    let n = chunks.len();
    for (k, part) in chunks.into_iter().enumerate() {
        let mut c = json!({"candidates": [{"content": {"parts": [part], "role": "model"}, "index": 0}], "modelVersion": model, "responseId": "r1"});
        if k + 1 == n && rng.gen_bool(0.5) {
            c["candidates"][0]["finishReason"] = json!(finish);
            c["usageMetadata"] = usage.clone();
        }
        out.push_str(&sse(None, &c, false));
    }
    if rng.gen_bool(0.05) {
        out.push_str("data: {\"candidates\": [\n\n");
    }
    if !out.contains("finishReason") && rng.gen_bool(0.9) {
        out.push_str(&sse(None, &json!({"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": finish, "index": 0}], "usageMetadata": usage, "modelVersion": model}), false));
    }
    out
}

fn http_error(rng: &mut StdRng, api: &str) -> Reply {
    let status = [400u16, 401, 404, 413, 429, 500, 503, 529]
        .choose(rng)
        .copied()
        .unwrap_or(500);
    let (ct, body) = match (api, rng.gen_range(0..4)) {
        (_, 0) => ("text/plain", "upstream connect error".to_string()),
        (_, 1) => ("application/json", String::new()),
        ("anthropic-messages", _) => ("application/json", json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}).to_string()),
        ("google-generative-ai", _) => ("application/json", json!({"error": {"code": status, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}}).to_string()),
        _ => ("application/json", json!({"error": {"message": "This model's maximum context length is 128000 tokens", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}).to_string()),
    };
    Reply {
        status,
        content_type: ct,
        body,
        splits: vec![],
        cut: false,
    }
}

/// A random reply for a model of `api` with id `model`.
pub fn reply(rng: &mut StdRng, api: &str, model: &str) -> Reply {
    if rng.gen_bool(0.08) {
        return http_error(rng, api);
    }
    let mut body = match api {
        "anthropic-messages" => anthropic(rng, model),
        "openai-completions" => completions(rng, model),
        "openai-responses" => responses(rng, model),
        _ => google(rng, model),
    };
    let mut cut = false;
    match rng.gen_range(0..12) {
        // Truncated body with a clean end of the transfer.
        0 => {
            let at = rng.gen_range(0..body.len().max(1));
            body = truncate_at_char(&body, at);
        }
        // Dropped connection mid-body.
        1 => {
            let at = rng.gen_range(0..body.len().max(1));
            body = truncate_at_char(&body, at);
            cut = true;
        }
        _ => {}
    }
    let splits = match rng.gen_range(0..3) {
        0 => vec![],
        1 => {
            let mut s: Vec<usize> = (0..rng.gen_range(1..5))
                .map(|_| rng.gen_range(0..body.len().max(1)))
                .collect();
            s.sort_unstable();
            s.dedup();
            s
        }
        _ => {
            let mut s = Vec::new();
            let mut at = 0;
            while at < body.len() {
                at += rng.gen_range(1..8);
                if at < body.len() {
                    s.push(at);
                }
            }
            s
        }
    };
    Reply {
        status: 200,
        content_type: "text/event-stream",
        body,
        splits,
        cut,
    }
}

fn truncate_at_char(s: &str, mut at: usize) -> String {
    while at > 0 && !s.is_char_boundary(at) {
        at -= 1;
    }
    s[..at].to_string()
}
