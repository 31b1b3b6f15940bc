//! Anthropic Messages client against the mock server.

use arbor_ai::stream::{AnthropicOptions, CacheRetention};
use arbor_ai::{stream, Context, StopReason, StreamOptions};
use arbor_test_support::{sse_events, Ending, MockResponse};
use serde_json::json;

use super::providers_common::*;

fn anthropic_model(base: &str) -> arbor_ai::Model {
    model("anthropic-messages", "anthropic", "claude-test-4", base)
}

fn opts() -> StreamOptions {
    StreamOptions::default().with_api_key("sk-ant-test".into())
}

fn ev(name: &'static str, data: serde_json::Value) -> (Option<&'static str>, String) {
    (Some(name), data.to_string())
}

fn body(events: &[(Option<&'static str>, String)]) -> String {
    sse_events(events.iter().map(|(n, d)| (*n, d.as_str())))
}

fn message_start(input: u64) -> (Option<&'static str>, String) {
    ev(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test-4",
            "content": [], "stop_reason": null,
            "usage": {"input_tokens": input, "output_tokens": 1}
        }}),
    )
}

fn message_end(stop: &str, output: u64) -> Vec<(Option<&'static str>, String)> {
    vec![
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": output}}),
        ),
        ev("message_stop", json!({"type": "message_stop"})),
    ]
}

fn text_turn(text_parts: &[&str], stop: &str) -> String {
    let mut events = vec![
        message_start(25),
        (Some("ping"), json!({"type": "ping"}).to_string()),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
    ];
    for part in text_parts {
        events.push(ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": part}}),
        ));
    }
    events.push(ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    events.extend(message_end(stop, 12));
    body(&events)
}

#[tokio::test]
async fn text_turn_events_message_and_request() {
    let server =
        server_with(MockResponse::sse().body(text_turn(&["Hello", " wörld"], "end_turn"))).await;
    let model = anthropic_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let message = check_contract(&events);
    insta::assert_snapshot!("anthropic_text_events", render(&events));
    insta::assert_json_snapshot!("anthropic_text_message", stable(&message));

    let request = server.single_request();
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/messages?beta=true");
    assert_eq!(request.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("anthropic-beta"), None);
    assert_eq!(request.header("authorization"), None);
    insta::assert_json_snapshot!("anthropic_text_request", body_of(&request));
}

#[tokio::test]
async fn history_with_thinking_budget_cache_and_images_request() {
    let server = server_with(MockResponse::sse().body(text_turn(&["ok"], "end_turn"))).await;
    let mut model = anthropic_model(&server.url());
    model.provider = "openrouter".into(); // session-affinity header default
    let ctx = history_context(&model, "sig-abc", "toolu_01");
    let options = opts()
        .with_cache_retention(CacheRetention::Long)
        .with_session_id("session-1".into())
        // Dropped from the body: thinking is on.
        .with_temperature(0.2)
        .with_max_tokens(4000)
        .with_metadata(serde_json::from_value(json!({"user_id": "u-1"})).unwrap())
        .with_tool_choice(json!("auto"))
        .with_anthropic(
            AnthropicOptions::default()
                .with_thinking_enabled(true)
                .with_thinking_budget_tokens(2048),
        );
    let events = collect(stream(&model, &ctx, options)).await;
    check_contract(&events);
    let request = server.single_request();
    assert_eq!(
        request.header("anthropic-beta"),
        Some("interleaved-thinking-2025-05-14")
    );
    assert_eq!(request.header("x-session-id"), Some("session-1"));
    insta::assert_json_snapshot!("anthropic_history_request", body_of(&request));
}

#[tokio::test]
async fn thinking_with_signature_and_redacted_thinking() {
    let events = vec![
        message_start(10),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me think"}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": " harder."}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCkYIBRgC"}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "KkA=="}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "ENCRYPTED-BLOB"}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": "Answer"}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "."}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 2}),
        ),
    ];
    let mut all = events;
    all.extend(message_end("end_turn", 40));
    let server = server_with(MockResponse::sse().body(body(&all))).await;
    let model = anthropic_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let message = check_contract(&events);
    insta::assert_snapshot!("anthropic_thinking_events", render(&events));
    insta::assert_json_snapshot!("anthropic_thinking_message", stable(&message));
}

/// Two tool calls whose argument deltas break inside JSON tokens, and a byte stream cut inside
/// multibyte characters.
#[tokio::test]
async fn parallel_tool_calls_split_mid_token_and_mid_utf8() {
    let mut events = vec![
        message_start(50),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_A", "name": "read", "input": {}}}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_B", "name": "bash", "input": {}}}),
        ),
    ];
    for (index, part) in [
        (0, "{\"pa"),
        (1, "{\"comm"),
        (0, "th\": \"dir/é"),
        (1, "and\": \"echo 日本"),
        (0, "😀.txt\"}"),
        (1, "語\"}"),
    ] {
        events.push(ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": part}}),
        ));
    }
    events.push(ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    events.push(ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 1}),
    ));
    events.extend(message_end("tool_use", 30));
    let text = body(&events);
    let bytes = text.as_bytes();
    // Cut inside every multibyte character (after its first byte).
    let offsets: Vec<usize> = text
        .char_indices()
        .filter(|(_, c)| c.len_utf8() > 1)
        .map(|(i, _)| i + 1)
        .collect();
    assert!(offsets.len() >= 5);
    let server = server_with(MockResponse::sse().body_split_at(bytes, &offsets)).await;
    let model = anthropic_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let message = check_contract(&events);
    insta::assert_snapshot!("anthropic_tool_calls_events", render(&events));
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls[0].arguments, json!({"path": "dir/é😀.txt"}));
    assert_eq!(calls[1].arguments, json!({"command": "echo 日本語"}));
}

#[tokio::test]
async fn usage_with_cache_read_and_write_and_cost() {
    let events = vec![
        ev(
            "message_start",
            json!({"type": "message_start", "message": {
                "id": "msg_02", "model": "claude-test-4-20990101", "content": [],
                "usage": {"input_tokens": 100, "output_tokens": 1, "cache_read_input_tokens": 2000,
                          "cache_creation_input_tokens": 500, "cache_creation": {"ephemeral_1h_input_tokens": 200}}
            }}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "x"}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 300, "output_tokens_details": {"thinking_tokens": 120}}}),
        ),
        ev("message_stop", json!({"type": "message_stop"})),
    ];
    let server = server_with(MockResponse::sse().body(body(&events))).await;
    let model = anthropic_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let message = check_contract(&events);
    let u = &message.usage;
    assert_eq!(
        (u.input, u.output, u.cache_read, u.cache_write),
        (100, 300, 2000, 500)
    );
    assert_eq!(u.cache_write_1h, Some(200));
    assert_eq!(u.reasoning, Some(120));
    assert_eq!(u.total_tokens, Some(2900));
    // 3/M input, 15/M output, 0.3/M cache read, 3.75/M short writes, 2×3/M for 1h writes.
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    assert!(close(u.cost.input.get(), 0.0003));
    assert!(close(u.cost.output.get(), 0.0045));
    assert!(close(u.cost.cache_read.get(), 0.0006));
    assert!(close(
        u.cost.cache_write.get(),
        (3.75 * 300.0 + 6.0 * 200.0) / 1e6
    ));
    assert!(close(
        u.cost.total.get(),
        0.0003 + 0.0045 + 0.0006 + (3.75 * 300.0 + 6.0 * 200.0) / 1e6
    ));
    assert_eq!(message.response_id.as_deref(), Some("msg_02"));
    assert_eq!(
        message.response_model.as_deref(),
        Some("claude-test-4-20990101")
    );
}

#[tokio::test]
async fn every_stop_reason() {
    let cases = [
        ("end_turn", StopReason::Stop, None),
        ("pause_turn", StopReason::Stop, None),
        ("stop_sequence", StopReason::Stop, None),
        ("max_tokens", StopReason::Length, None),
        ("tool_use", StopReason::ToolUse, None),
        (
            "refusal",
            StopReason::Error,
            Some("The model refused to complete the request"),
        ),
        (
            "sensitive",
            StopReason::Error,
            Some("Provider stopped with: sensitive"),
        ),
        (
            "brand_new",
            StopReason::Error,
            Some("Unhandled stop reason: brand_new"),
        ),
    ];
    for (raw, expected, message) in cases {
        let server = server_with(MockResponse::sse().body(text_turn(&["hi"], raw))).await;
        let model = anthropic_model(&server.url());
        let events = collect(stream(&model, &simple_context(), opts())).await;
        let last = check_contract(&events);
        assert_eq!(last.stop_reason, expected, "{raw}");
        assert_eq!(last.error_message.as_deref(), message, "{raw}");
        if expected != StopReason::Error || raw != "brand_new" {
            assert_eq!(last.extra.get("rawStopReason"), Some(&json!(raw)), "{raw}");
        }
    }
    // A refusal with an explanation uses it.
    let mut events = vec![message_start(1)];
    events.push(ev(
        "message_delta",
        json!({"type": "message_delta",
        "delta": {"stop_reason": "refusal", "stop_details": {"explanation": "Not allowed."}}}),
    ));
    events.push(ev("message_stop", json!({"type": "message_stop"})));
    let server = server_with(MockResponse::sse().body(body(&events))).await;
    let model = anthropic_model(&server.url());
    let last = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    assert_eq!(last.error_message.as_deref(), Some("Not allowed."));
}

#[tokio::test]
async fn http_errors_are_lone_error_events_with_sdk_texts() {
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let too_long = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "prompt is too long: 210000 tokens > 200000 maximum"}});
    let rate = json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}});
    let cases = vec![
        (
            MockResponse::json(400, &too_long),
            format!("400 {too_long}"),
        ),
        (MockResponse::json(429, &rate), format!("429 {rate}")),
        (
            MockResponse::json(529, &overloaded),
            format!("529 {overloaded}"),
        ),
        (
            MockResponse::text(502, "Bad gateway"),
            "502 Bad gateway".to_string(),
        ),
        (
            MockResponse::new(500),
            "500 status code (no body)".to_string(),
        ),
    ];
    for (response, expected) in cases {
        let server = server_with(response).await;
        let model = anthropic_model(&server.url());
        let events = collect(stream(&model, &simple_context(), opts())).await;
        let last = check_contract(&events);
        assert_eq!(events.len(), 1, "no start before an HTTP error");
        assert_eq!(last.stop_reason, StopReason::Error);
        assert_eq!(last.error_message.as_deref(), Some(expected.as_str()));
        assert_eq!(server.requests().len(), 1, "no retries by default");
    }
}

#[tokio::test]
async fn in_stream_error_event_after_content() {
    let mut events = vec![
        message_start(5),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Partial"}}),
        ),
    ];
    let err =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    events.push(ev("error", err.clone()));
    let server = server_with(MockResponse::sse().body(body(&events))).await;
    let model = anthropic_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let last = check_contract(&events);
    insta::assert_snapshot!("anthropic_stream_error_events", render(&events));
    assert_eq!(
        last.error_message.as_deref(),
        Some(err.to_string().as_str())
    );
    assert_eq!(last.text(), "Partial");
    assert_eq!(
        last.usage.input, 5,
        "usage from message_start survives the error"
    );
}

#[tokio::test]
async fn stream_cut_off_before_message_stop() {
    let partial = vec![
        message_start(5),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_X", "name": "read", "input": {}}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"sr"}}),
        ),
    ];
    // Clean end of body without message_stop.
    let server = server_with(MockResponse::sse().body(body(&partial))).await;
    let model = anthropic_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let last = check_contract(&events);
    assert_eq!(
        last.error_message.as_deref(),
        Some("Anthropic stream ended before message_stop")
    );
    // The unfinished call shows its best-effort arguments.
    let call = last.tool_calls().next().expect("partial tool call");
    assert_eq!(call.arguments, json!({"path": "sr"}));

    // Connection dropped mid-body (chunked transfer never finished).
    let server = server_with(
        MockResponse::sse()
            .body(body(&partial))
            .ending(Ending::CutOff),
    )
    .await;
    let model = anthropic_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let last = check_contract(&events);
    assert_eq!(last.stop_reason, StopReason::Error);
    // Reported like an early end of the body, in pi's retryable words (DECISIONS §26.3).
    assert_eq!(
        last.error_message.as_deref(),
        Some("Anthropic stream ended before message_stop")
    );
    assert!(arbor_ai::retry::is_retryable_assistant_error(&last));
}

#[tokio::test]
async fn malformed_and_repairable_sse_payloads() {
    // A raw newline inside a JSON string is repaired; a truncated payload is an error.
    let raw = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\\q\"}}\n\n";
    let mut text = body(&[
        message_start(1),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
    ]);
    text.push_str(raw);
    text.push_str(
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\n\n",
    );
    let server = server_with(MockResponse::sse().body(text)).await;
    let model = anthropic_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let last = check_contract(&events);
    insta::assert_snapshot!("anthropic_malformed_events", render(&events));
    assert_eq!(last.text(), "a\\q");
    let msg = last.error_message.unwrap_or_default();
    assert!(
        msg.starts_with(
            "Could not parse Anthropic SSE event content_block_delta: Expected double-quoted property name in JSON at position 40"
        ),
        "{msg}"
    );
    assert!(msg.ends_with("; data={\"type\":\"content_block_delta\",\"index\":0,; raw=event: content_block_delta\\ndata: {\"type\":\"content_block_delta\",\"index\":0,"), "{msg}");
}

#[tokio::test]
async fn oauth_tokens_use_bearer_claude_code_identity_and_tool_names() {
    let mut events = vec![
        message_start(1),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
    ];
    events.extend(message_end("tool_use", 3));
    let server = server_with(MockResponse::sse().body(body(&events))).await;
    let model = anthropic_model(&server.url());
    let options = StreamOptions::default()
        .with_api_key("sk-ant-oat01-secret".into())
        .with_cache_retention(CacheRetention::None);
    let last = check_contract(&collect(stream(&model, &simple_context(), options)).await);
    assert_eq!(
        last.tool_calls().next().map(|c| c.name.as_str()),
        Some("read")
    );
    let request = server.single_request();
    assert_eq!(
        request.header("authorization"),
        Some("Bearer sk-ant-oat01-secret")
    );
    assert_eq!(request.header("x-api-key"), None);
    assert_eq!(
        request.header("anthropic-beta"),
        Some("claude-code-20250219,oauth-2025-04-20")
    );
    let body = body_of(&request);
    assert_eq!(
        body["system"][0]["text"],
        json!("You are Claude Code, Anthropic's official CLI for Claude.")
    );
    assert_eq!(body["tools"][0]["name"], json!("Read"));
    assert!(
        body["system"][0].get("cache_control").is_none(),
        "retention none: no markers"
    );
}

#[tokio::test]
async fn tool_use_with_complete_input_and_no_deltas_keeps_input() {
    let mut events = vec![
        message_start(1),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
    ];
    events.extend(message_end("tool_use", 3));
    let server = server_with(MockResponse::sse().body(body(&events))).await;
    let model = anthropic_model(&server.url());
    let last = check_contract(&collect(stream(&model, &Context::default(), opts())).await);
    assert_eq!(
        last.tool_calls().next().map(|c| c.arguments.clone()),
        Some(json!({"path": "a"}))
    );
}

#[tokio::test]
async fn events_without_names_fall_back_to_the_data_type() {
    // Some gateways drop the `event:` lines; the payload's `type` still identifies the event.
    let named = text_turn(&["Hi"], "end_turn");
    let nameless: String = named
        .lines()
        .filter(|l| !l.starts_with("event:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let server = server_with(MockResponse::sse().body(nameless)).await;
    let model = anthropic_model(&server.url());
    let last = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    assert_eq!(
        (last.stop_reason, last.text()),
        (StopReason::Stop, "Hi".to_string())
    );
}
