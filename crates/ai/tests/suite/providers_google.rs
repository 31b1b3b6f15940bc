//! Google Generative AI client against the mock server.

use arbor_ai::stream::{GoogleOptions, GoogleThinking};
use arbor_ai::{stream, StopReason, StreamOptions};
use arbor_test_support::{sse_data, Ending, MockResponse};
use serde_json::{json, Value};

use super::providers_common::*;

fn g_model(base: &str) -> arbor_ai::Model {
    model(
        "google-generative-ai",
        "google",
        "gemini-2.5-flash",
        &format!("{base}/v1beta"),
    )
}

fn opts() -> StreamOptions {
    StreamOptions::default().with_api_key("g-key".into())
}

fn chunk(parts: Value, finish: Option<&str>, usage: Option<Value>) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = json!(f);
    }
    let mut c = json!({"candidates": [candidate], "responseId": "resp-g1", "modelVersion": "gemini-2.5-flash"});
    if let Some(u) = usage {
        c["usageMetadata"] = u;
    }
    c
}

#[tokio::test]
async fn thinking_text_and_parallel_calls() {
    let body = sse_data(&[
        chunk(json!([{"text": "Consider", "thought": true}]), None, None),
        chunk(
            json!([{"text": " é.", "thought": true, "thoughtSignature": "c2lnMQ=="}]),
            None,
            None,
        ),
        chunk(json!([{"text": "Calling tools: 日本"}]), None, None),
        chunk(
            json!([
                {"functionCall": {"name": "read", "args": {"path": "é.txt"}}, "thoughtSignature": "c2lnMg=="},
                {"functionCall": {"id": "fixed-id", "name": "bash", "args": {"command": "ls"}}}
            ]),
            Some("STOP"),
            Some(
                json!({"promptTokenCount": 100, "candidatesTokenCount": 20, "thoughtsTokenCount": 7, "cachedContentTokenCount": 60, "totalTokenCount": 127}),
            ),
        ),
    ]);
    let offsets: Vec<usize> = body
        .char_indices()
        .filter(|(_, c)| c.len_utf8() > 1)
        .map(|(i, _)| i + 1)
        .collect();
    let server = server_with(MockResponse::sse().body_split_at(body.as_bytes(), &offsets)).await;
    let model = g_model(&server.url());
    let options = opts()
        .with_max_tokens(2048)
        .with_temperature(0.1)
        .with_tool_choice(json!("any"))
        .with_google(
            GoogleOptions::default().with_thinking(
                GoogleThinking::default()
                    .with_enabled(true)
                    .with_budget_tokens(8192),
            ),
        );
    let events = collect(stream(&model, &simple_context(), options)).await;
    let mut message = check_contract(&events);
    // The generated id embeds the clock; check its shape, then fix it for the snapshot.
    let rendered = render(&events);
    let generated = message
        .tool_calls()
        .next()
        .map(|c| c.id.clone())
        .unwrap_or_default();
    assert!(
        generated.starts_with("read_") && generated.ends_with("_1"),
        "{generated}"
    );
    if let Some(arbor_ai::ContentBlock::ToolCall(c)) = message.content.get_mut(2) {
        c.id = "read_<ms>_1".into();
    }
    insta::assert_snapshot!(
        "google_turn_events",
        rendered.replace(&generated, "read_<ms>_1")
    );
    insta::assert_json_snapshot!("google_turn_message", stable(&message));
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let request = server.single_request();
    assert_eq!(
        request.path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(request.header("x-goog-api-key"), Some("g-key"));
    insta::assert_json_snapshot!("google_turn_request", body_of(&request));
}

#[tokio::test]
async fn history_request_gemini3_with_signatures_and_images() {
    let server = server_with(MockResponse::sse().body(sse_data(&[chunk(
        json!([{"text": "ok"}]),
        Some("STOP"),
        None,
    )])))
    .await;
    let mut model = g_model(&server.url());
    model.id = "gemini-3-pro-preview".into();
    let ctx = history_context(&model, "c2lnbmF0dXJl", "call_7");
    check_contract(&collect(stream(&model, &ctx, opts())).await);
    insta::assert_json_snapshot!("google_history_request", body_of(&server.single_request()));
}

#[tokio::test]
async fn finish_reasons() {
    let cases = [
        ("STOP", StopReason::Stop, None),
        ("MAX_TOKENS", StopReason::Length, None),
        (
            "SAFETY",
            StopReason::Error,
            Some("Provider stopped with: SAFETY"),
        ),
        (
            "MALFORMED_FUNCTION_CALL",
            StopReason::Error,
            Some("Provider stopped with: MALFORMED_FUNCTION_CALL"),
        ),
    ];
    for (raw, expected, message) in cases {
        let server = server_with(MockResponse::sse().body(sse_data(&[chunk(
            json!([{"text": "x"}]),
            Some(raw),
            None,
        )])))
        .await;
        let model = g_model(&server.url());
        let last = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
        assert_eq!(last.stop_reason, expected, "{raw}");
        assert_eq!(last.error_message.as_deref(), message, "{raw}");
        assert_eq!(last.extra.get("rawStopReason"), Some(&json!(raw)));
    }
}

#[tokio::test]
async fn errors_cut_offs_and_malformed_chunks() {
    let body = json!({"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}});
    let server = server_with(MockResponse::json(429, &body)).await;
    let model = g_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let last = check_contract(&events);
    assert_eq!(events.len(), 1);
    assert_eq!(last.error_message, Some(body.to_string()));

    let server = server_with(MockResponse::text(503, "Service Unavailable")).await;
    let model = g_model(&server.url());
    let last = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    assert_eq!(
        last.error_message.as_deref(),
        Some(
            r#"{"error":{"message":"Service Unavailable","code":503,"status":"Service Unavailable"}}"#
        )
    );

    // In-stream error chunk.
    let server = server_with(MockResponse::sse().body(sse_data(&[
        chunk(json!([{"text": "par"}]), None, None),
        json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
    ])))
    .await;
    let model = g_model(&server.url());
    let last = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    assert_eq!(
        last.error_message.as_deref(),
        Some(
            r#"got status: UNAVAILABLE. {"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#
        )
    );
    assert_eq!(last.text(), "par");

    // No finish reason, then a dropped connection.
    let partial = sse_data(&[chunk(json!([{"text": "half"}]), None, None)]);
    let server = server_with(MockResponse::sse().body(partial.clone())).await;
    let model = g_model(&server.url());
    let last = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    assert_eq!(
        last.error_message.as_deref(),
        Some("Google stream ended without a finish reason")
    );
    let server = server_with(MockResponse::sse().body(partial).ending(Ending::CutOff)).await;
    let model = g_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let last = check_contract(&events);
    assert_eq!(
        last.error_message.as_deref(),
        Some("Google stream ended without a finish reason")
    );
    assert!(arbor_ai::retry::is_retryable_assistant_error(&last));
    // The open text block is closed before the error, as at a clean early end.
    assert!(events
        .iter()
        .any(|e| matches!(e, arbor_ai::AssistantMessageEvent::TextEnd { .. })));

    let server = server_with(MockResponse::sse().body("data: {\"candidates\": [\n\n")).await;
    let model = g_model(&server.url());
    let last = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    // pi surfaces JavaScript's parser message (bug 5).
    assert_eq!(
        last.error_message.as_deref(),
        Some("Unexpected end of JSON input")
    );

    // A body ending inside an unterminated event: @google/genai's refusal.
    let server = server_with(MockResponse::sse().body("data: {\"candidates\": [")).await;
    let model = g_model(&server.url());
    let last = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    assert_eq!(
        last.error_message.as_deref(),
        Some("Incomplete JSON segment at the end")
    );

    // An unknown finishReason fails at once, the open block left unclosed (bug 5).
    let body = sse_data(&[
        chunk(json!([{"text": "hi"}]), None, None),
        chunk(json!([{"text": "!"}]), Some("FINISH_REASON_NEW"), None),
    ]);
    let server = server_with(MockResponse::sse().body(body)).await;
    let model = g_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let last = check_contract(&events);
    assert_eq!(
        last.error_message.as_deref(),
        Some("Unhandled stop reason: FINISH_REASON_NEW")
    );
    assert!(!events
        .iter()
        .any(|e| matches!(e, arbor_ai::AssistantMessageEvent::TextEnd { .. })));
}
