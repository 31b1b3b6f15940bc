//! OpenAI Responses client against the mock server.

use arbor_ai::stream::{CacheRetention, OpenAiOptions};
use arbor_ai::{stream, StopReason, StreamOptions};
use arbor_test_support::{sse_events, MockResponse};
use serde_json::{json, Value};

use super::providers_common::*;

fn resp_model(base: &str) -> arbor_ai::Model {
    model(
        "openai-responses",
        "openai",
        "gpt-test",
        &format!("{base}/v1"),
    )
}

fn opts() -> StreamOptions {
    StreamOptions::default().with_api_key("sk-test".into())
}

/// Each event as `event: <type>` + `data: <json>`, like OpenAI sends them.
fn sse(values: &[Value]) -> String {
    let pairs: Vec<(String, String)> = values
        .iter()
        .map(|v| (v["type"].as_str().unwrap_or("").to_string(), v.to_string()))
        .collect();
    sse_events(pairs.iter().map(|(n, d)| (Some(n.as_str()), d.as_str())))
}

fn completed(status: &str, extra: Value) -> Value {
    let mut response = json!({"id": "resp_1", "status": status, "output": [],
        "usage": {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150,
                  "input_tokens_details": {"cached_tokens": 100},
                  "output_tokens_details": {"reasoning_tokens": 10}}});
    if let (Some(r), Some(e)) = (response.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            r.insert(k.clone(), v.clone());
        }
    }
    let kind = if status == "incomplete" {
        "response.incomplete"
    } else {
        "response.completed"
    };
    json!({"type": kind, "response": response})
}

fn reasoning_text_and_call() -> Vec<Value> {
    let reasoning_item = json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan it."}], "encrypted_content": "ENC"});
    vec![
        json!({"type": "response.created", "response": {"id": "resp_1"}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "Plan"}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": " it."}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning_item}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 1, "delta": "Reading"}),
        json!({"type": "response.output_text.delta", "output_index": 1, "delta": " now."}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "message", "id": "msg_1", "role": "assistant", "phase": "commentary", "content": [{"type": "output_text", "text": "Reading now."}]}}),
        json!({"type": "response.output_item.added", "output_index": 2, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": ""}}),
        json!({"type": "response.output_item.added", "output_index": 3, "item": {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "bash", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "{\"pa"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 3, "delta": "{\"command\": \"ls 日"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "th\": \"é"}),
        json!({"type": "response.function_call_arguments.done", "output_index": 2, "arguments": "{\"path\": \"é.txt\"}"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 3, "delta": "本\"}"}),
        json!({"type": "response.output_item.done", "output_index": 2, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": "{\"path\": \"é.txt\"}"}}),
        json!({"type": "response.output_item.done", "output_index": 3, "item": {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "bash", "arguments": "{\"command\": \"ls 日本\"}"}}),
        completed("completed", json!({})),
    ]
}

#[tokio::test]
async fn reasoning_text_and_tool_call_turn() {
    let body = sse(&reasoning_text_and_call());
    let offsets: Vec<usize> = body
        .char_indices()
        .filter(|(_, c)| c.len_utf8() > 1)
        .map(|(i, _)| i + 1)
        .collect();
    let server = server_with(MockResponse::sse().body_split_at(body.as_bytes(), &offsets)).await;
    let model = resp_model(&server.url());
    let options = opts()
        .with_session_id("sess-1".into())
        .with_max_tokens(8)
        .with_openai(OpenAiOptions::default().with_reasoning_effort("high".into()));
    let events = collect(stream(&model, &simple_context(), options)).await;
    let message = check_contract(&events);
    insta::assert_snapshot!("responses_turn_events", render(&events));
    insta::assert_json_snapshot!("responses_turn_message", stable(&message));
    let request = server.single_request();
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.header("session-id"), Some("sess-1"));
    assert_eq!(request.header("x-client-request-id"), Some("sess-1"));
    insta::assert_json_snapshot!("responses_turn_request", body_of(&request));
}

#[tokio::test]
async fn history_replays_reasoning_items_and_ids() {
    let server =
        server_with(MockResponse::sse().body(sse(&[completed("completed", json!({}))]))).await;
    let model = resp_model(&server.url());
    let reasoning =
        json!({"type": "reasoning", "id": "rs_9", "summary": [], "encrypted_content": "ENC"})
            .to_string();
    let ctx = history_context(&model, &reasoning, "call_9|fc_9");
    let options = opts()
        .with_cache_retention(CacheRetention::Long)
        .with_session_id("s".repeat(80));
    check_contract(&collect(stream(&model, &ctx, options)).await);
    insta::assert_json_snapshot!(
        "responses_history_request",
        body_of(&server.single_request())
    );
}

#[tokio::test]
async fn usage_cache_and_service_tier_pricing() {
    let server = server_with(MockResponse::sse().body(sse(&[completed(
        "completed",
        json!({"service_tier": "flex"}),
    )])))
    .await;
    let model = resp_model(&server.url());
    let message = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    let u = &message.usage;
    assert_eq!(
        (
            u.input,
            u.output,
            u.cache_read,
            u.cache_write,
            u.total_tokens
        ),
        (20, 30, 100, 0, Some(150))
    );
    assert_eq!(u.reasoning, Some(10));
    let full = (3.0 * 20.0 + 15.0 * 30.0 + 0.3 * 100.0) / 1e6;
    assert!(
        (u.cost.total.get() - full * 0.5).abs() < 1e-12,
        "flex halves the price"
    );

    // The requested tier applies when the response names none, and is sent in the body.
    let server =
        server_with(MockResponse::sse().body(sse(&[completed("completed", json!({}))]))).await;
    let model = resp_model(&server.url());
    let options = opts().with_openai(OpenAiOptions::default().with_service_tier("priority".into()));
    let message = check_contract(&collect(stream(&model, &simple_context(), options)).await);
    assert!(
        (message.usage.cost.total.get() - full * 2.0).abs() < 1e-12,
        "priority doubles"
    );
    assert_eq!(
        body_of(&server.single_request())["service_tier"],
        json!("priority")
    );
}

#[tokio::test]
async fn status_mapping() {
    let cases = [
        (
            completed("completed", json!({})),
            StopReason::Stop,
            None,
            "completed",
        ),
        (
            completed(
                "incomplete",
                json!({"incomplete_details": {"reason": "max_output_tokens"}}),
            ),
            StopReason::Length,
            None,
            "incomplete.max_output_tokens",
        ),
        (
            completed(
                "incomplete",
                json!({"incomplete_details": {"reason": "content_filter"}}),
            ),
            StopReason::Error,
            Some("Response incomplete: content_filter"),
            "incomplete.content_filter",
        ),
        (
            completed("incomplete", json!({})),
            StopReason::Error,
            Some("Response incomplete without a provider reason"),
            "incomplete",
        ),
        (
            json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "server_error", "message": "The server had an error"}}}),
            StopReason::Error,
            Some("server_error: The server had an error"),
            "failed",
        ),
    ];
    for (terminal, expected, message, raw) in cases {
        let server = server_with(MockResponse::sse().body(sse(&[
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "m", "content": []}}),
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "x"}),
            terminal,
        ])))
        .await;
        let model = resp_model(&server.url());
        let last = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
        assert_eq!(last.stop_reason, expected, "{raw}");
        assert_eq!(last.error_message.as_deref(), message, "{raw}");
        assert_eq!(last.extra.get("rawStopReason"), Some(&json!(raw)));
    }
}

#[tokio::test]
async fn http_and_stream_errors() {
    let err = json!({"error": {"message": "Rate limit reached", "type": "requests", "param": null, "code": "rate_limit_exceeded"}});
    let server = server_with(MockResponse::json(429, &err)).await;
    let model = resp_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let last = check_contract(&events);
    assert_eq!(events.len(), 1);
    assert_eq!(
        last.error_message,
        Some(format!("OpenAI API error (429): {}", err["error"]))
    );

    // Another provider's name is used as the prefix.
    let server = server_with(MockResponse::text(503, "busy")).await;
    let mut model = resp_model(&server.url());
    model.provider = "azure".into();
    let last = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    assert_eq!(
        last.error_message.as_deref(),
        Some("azure API error (503): 503 busy")
    );

    // `event: error` mid-stream.
    let server = server_with(MockResponse::sse().body(sse(&[
        json!({"type": "response.created", "response": {"id": "r"}}),
        json!({"type": "error", "code": "server_error", "message": "Overloaded, retry later", "param": null}),
    ])))
    .await;
    let model = resp_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let last = check_contract(&events);
    assert_eq!(events.len(), 2);
    assert_eq!(
        last.error_message.as_deref(),
        Some("Overloaded, retry later")
    );

    // A data-only error object.
    let server = server_with(MockResponse::sse().body(arbor_test_support::sse_data(&[
        json!({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down"}),
    ])))
    .await;
    let model = resp_model(&server.url());
    let last = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    assert_eq!(
        last.error_message.as_deref(),
        Some("Error Code rate_limit_exceeded: Slow down")
    );
}

#[tokio::test]
async fn cut_off_and_malformed_streams() {
    let mut events = reasoning_text_and_call();
    events.truncate(14); // inside the tool calls' arguments, before any terminal event
    let server = server_with(MockResponse::sse().body(sse(&events))).await;
    let model = resp_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let last = check_contract(&events);
    insta::assert_snapshot!("responses_cut_off_events", render(&events));
    assert_eq!(
        last.tool_calls().next().map(|c| c.arguments.clone()),
        Some(json!({"path": "é"}))
    );

    // Completed while a tool call never finished.
    let server = server_with(MockResponse::sse().body(sse(&[
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "bash", "arguments": ""}}),
        completed("completed", json!({})),
    ])))
    .await;
    let model = resp_model(&server.url());
    let last = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    assert_eq!(
        last.error_message.as_deref(),
        Some("OpenAI Responses stream completed with an unfinished tool call: bash (call_2|fc_2)")
    );

    let server =
        server_with(MockResponse::sse().body("event: response.created\ndata: {not json}\n\n"))
            .await;
    let model = resp_model(&server.url());
    let last = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    assert_eq!(
        last.error_message.as_deref(),
        Some("Error reading response: malformed server-sent event JSON.")
    );
}
