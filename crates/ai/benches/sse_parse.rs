//! SSE parsing throughput of each provider client, without the network: a generated ~50 MB
//! response body (text, thinking and tool-argument deltas in each provider's wire format) is fed
//! in 16 KiB reads through the same decoder + parser code the HTTP client uses.
//!
//! Run: `cargo bench -p arbor-ai --bench sse_parse`. Prints the median (and best) of several runs in MB/s;
//! `BENCH_ONLY=<api>` runs one API.

use std::time::Instant;

use arbor_ai::providers::parse_recorded;
use arbor_ai::{Model, StopReason};
use serde_json::json;

const TARGET_BYTES: usize = 50 * 1024 * 1024;
const READ_SIZE: usize = 16 * 1024;
const RUNS: usize = 7;

/// Delta texts resembling model output: prose, code with escapes, some non-ASCII.
const PIECES: [&str; 8] = [
    "The function ",
    "reads the file and ",
    "returns `Result<String, Error>`; ",
    "if the path is missing it falls back to \"./default\".\n",
    "fn main() {\n    println!(\"héllo\");\n}\n",
    "Das Ergebnis ist grün — ",
    "日本語のテキスト、",
    "{\"path\": \"src/lib.rs\", \"offset\": 120, \"limit\": 40}",
];

/// CPU time of this thread in seconds (Linux `/proc`, 10 ms resolution), so results stay
/// meaningful on a machine shared with other work; `None` elsewhere.
fn thread_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name (which is in parentheses and may contain spaces).
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

fn model(api: &str) -> Model {
    Model {
        id: "bench-model".into(),
        api: api.into(),
        provider: "bench".into(),
        base_url: "http://127.0.0.1".into(),
        reasoning: true,
        ..Model::default()
    }
}

fn push_event(out: &mut String, name: &str, data: serde_json::Value) {
    out.push_str("event: ");
    out.push_str(name);
    out.push_str("\ndata: ");
    out.push_str(&data.to_string());
    out.push_str("\n\n");
}

fn anthropic_body() -> Vec<u8> {
    let mut out = String::new();
    push_event(
        &mut out,
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "model": "bench-model", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    );
    let mut index = 0u64;
    let mut bytes = 0usize;
    while bytes < TARGET_BYTES {
        let (kind, block, delta_kind, field) = match index % 3 {
            0 => (
                "thinking",
                json!({"type": "thinking", "thinking": ""}),
                "thinking_delta",
                "thinking",
            ),
            1 => (
                "text",
                json!({"type": "text", "text": ""}),
                "text_delta",
                "text",
            ),
            _ => (
                "tool_use",
                json!({"type": "tool_use", "id": format!("toolu_{index}"), "name": "read", "input": {}}),
                "input_json_delta",
                "partial_json",
            ),
        };
        push_event(
            &mut out,
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": block}),
        );
        for i in 0..400 {
            let piece = if kind == "tool_use" {
                if i == 0 {
                    "{\"text\": \""
                } else {
                    "more text \\n "
                }
            } else {
                PIECES[i % PIECES.len()]
            };
            let mut delta = serde_json::Map::new();
            delta.insert("type".into(), json!(delta_kind));
            delta.insert(field.into(), json!(piece));
            push_event(
                &mut out,
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            );
        }
        if kind == "tool_use" {
            push_event(
                &mut out,
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": "\"}"}}),
            );
        }
        push_event(
            &mut out,
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
        index += 1;
        bytes = out.len();
    }
    push_event(
        &mut out,
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 999}}),
    );
    push_event(&mut out, "message_stop", json!({"type": "message_stop"}));
    out.into_bytes()
}

fn completions_body() -> Vec<u8> {
    let mut out = String::new();
    let mut i = 0usize;
    let mut call = 0u64;
    while out.len() < TARGET_BYTES {
        let delta = match i % 10 {
            0..=2 => json!({"reasoning_content": PIECES[i % PIECES.len()]}),
            3..=7 => json!({"content": PIECES[i % PIECES.len()]}),
            8 => {
                call += 1;
                json!({"tool_calls": [{"index": call, "id": format!("call_{call}"), "type": "function", "function": {"name": "read", "arguments": "{\"text\": \""}}]})
            }
            _ => {
                json!({"tool_calls": [{"index": call, "function": {"arguments": "more text \\n \"}"}}]})
            }
        };
        let chunk = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "bench-model",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
        out.push_str("data: ");
        out.push_str(&chunk.to_string());
        out.push_str("\n\n");
        i += 1;
    }
    out.push_str(&format!("data: {}\n\n", json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})));
    out.push_str(&format!("data: {}\n\n", json!({"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 999}})));
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}

fn responses_body() -> Vec<u8> {
    let mut out = String::new();
    let push = |out: &mut String, data: serde_json::Value| {
        let name = data["type"].as_str().unwrap_or("").to_string();
        push_event(out, &name, data);
    };
    push(
        &mut out,
        json!({"type": "response.created", "response": {"id": "resp_1"}}),
    );
    let mut index = 0u64;
    while out.len() < TARGET_BYTES {
        let (item, delta_type) = match index % 3 {
            0 => (
                json!({"type": "reasoning", "id": format!("rs_{index}"), "summary": []}),
                "response.reasoning_summary_text.delta",
            ),
            1 => (
                json!({"type": "message", "id": format!("msg_{index}"), "content": []}),
                "response.output_text.delta",
            ),
            _ => (
                json!({"type": "function_call", "id": format!("fc_{index}"), "call_id": format!("call_{index}"), "name": "read", "arguments": ""}),
                "response.function_call_arguments.delta",
            ),
        };
        push(
            &mut out,
            json!({"type": "response.output_item.added", "output_index": index, "item": item}),
        );
        let mut text = String::new();
        for i in 0..400 {
            let piece = if index % 3 == 2 {
                if i == 0 {
                    "{\"text\": \""
                } else {
                    "more text \\n "
                }
            } else {
                PIECES[i % PIECES.len()]
            };
            text.push_str(piece);
            push(
                &mut out,
                json!({"type": delta_type, "output_index": index, "delta": piece, "sequence_number": i}),
            );
        }
        let done = match index % 3 {
            0 => {
                json!({"type": "reasoning", "id": format!("rs_{index}"), "summary": [{"type": "summary_text", "text": text}]})
            }
            1 => {
                json!({"type": "message", "id": format!("msg_{index}"), "content": [{"type": "output_text", "text": text}]})
            }
            _ => {
                text.push_str("\"}");
                json!({"type": "function_call", "id": format!("fc_{index}"), "call_id": format!("call_{index}"), "name": "read", "arguments": text})
            }
        };
        push(
            &mut out,
            json!({"type": "response.output_item.done", "output_index": index, "item": done}),
        );
        index += 1;
    }
    push(
        &mut out,
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": {"input_tokens": 10, "output_tokens": 999, "total_tokens": 1009}}}),
    );
    out.into_bytes()
}

fn google_body() -> Vec<u8> {
    let mut out = String::new();
    let mut i = 0usize;
    while out.len() < TARGET_BYTES {
        let part = match i % 10 {
            0..=2 => json!({"text": PIECES[i % PIECES.len()], "thought": true}),
            3..=8 => json!({"text": PIECES[i % PIECES.len()]}),
            _ => {
                json!({"functionCall": {"id": format!("call_{i}"), "name": "read", "args": {"path": "src/lib.rs", "offset": i}}})
            }
        };
        let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}], "responseId": "r1"});
        out.push_str("data: ");
        out.push_str(&chunk.to_string());
        out.push_str("\r\n\r\n");
        i += 1;
    }
    let last = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "."}]}, "finishReason": "STOP"}],
                      "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 999, "totalTokenCount": 1009}});
    out.push_str(&format!("data: {last}\r\n\r\n"));
    out.into_bytes()
}

fn main() {
    type Case = (&'static str, &'static str, fn() -> Vec<u8>);
    let cases: [Case; 4] = [
        ("anthropic-messages", "anthropic-messages", anthropic_body),
        ("openai-completions", "openai-completions", completions_body),
        ("openai-responses", "openai-responses", responses_body),
        ("google-generative-ai", "google-generative-ai", google_body),
    ];
    println!(
        "{:<22} {:>6} {:>8} {:>10} {:>12} {:>10} {:>11}",
        "api", "MB", "events", "median ms", "median MB/s", "best MB/s", "CPU MB/s"
    );
    let only = std::env::var("BENCH_ONLY").ok();
    for (name, api_name, make) in cases {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let body = make();
        let m = model(api_name);
        let mut times = Vec::with_capacity(RUNS);
        let mut cpu = Vec::with_capacity(RUNS);
        let mut events = 0;
        for _ in 0..RUNS {
            let cpu_start = thread_cpu_seconds();
            let start = Instant::now();
            let (message, n) =
                parse_recorded(&m, &body, READ_SIZE).unwrap_or_else(|err| panic!("{name}: {err}"));
            times.push(start.elapsed().as_secs_f64());
            if let (Some(a), Some(b)) = (cpu_start, thread_cpu_seconds()) {
                cpu.push(b - a);
            }
            assert!(
                !matches!(message.stop_reason, StopReason::Error | StopReason::Pending),
                "{name}: {:?}",
                message.error_message
            );
            events = n;
        }
        times.sort_by(f64::total_cmp);
        let median = times[RUNS / 2];
        let mb = body.len() as f64 / (1024.0 * 1024.0);
        cpu.sort_by(f64::total_cmp);
        let cpu_rate = cpu
            .get(cpu.len() / 2)
            .filter(|c| **c > 0.0)
            .map_or_else(|| "n/a".to_string(), |c| format!("{:.1}", mb / c));
        println!(
            "{name:<22} {mb:>6.1} {events:>8} {:>10.1} {:>12.1} {:>10.1} {cpu_rate:>11}",
            median * 1000.0,
            mb / median,
            mb / times[0]
        );
    }
}
