//! Lone UTF-16 surrogate escapes (`"\ud83d"`, a string cut inside an emoji) in provider SSE
//! JSON: JavaScript's `JSON.parse` takes them, serde_json refuses them. Every provider reads
//! the event with each one replaced by U+FFFD instead of failing the stream (DECISIONS §9.19).

use arbor_ai::{stream, StopReason, StreamOptions};
use arbor_test_support::MockResponse;

use super::providers_common::*;

fn opts() -> StreamOptions {
    StreamOptions::default().with_api_key("k".into())
}

/// Streams `body` from a mock server to `api` and returns the final message.
async fn run(
    api: &str,
    provider: &str,
    id: &str,
    suffix: &str,
    body: &str,
) -> arbor_ai::AssistantMessage {
    let server = server_with(MockResponse::sse().body(body.to_string())).await;
    let m = model(api, provider, id, &format!("{}{suffix}", server.url()));
    let events = collect(stream(&m, &simple_context(), opts())).await;
    final_message(&events).clone()
}

const CUT: &str = "cut \u{FFFD} and \u{FFFD}\u{1F600}";

#[tokio::test]
async fn anthropic() {
    let body = concat!(
        "event: message_start\n",
        r#"data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}}"#,
        "\n\nevent: content_block_start\n",
        r#"data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        "\n\nevent: content_block_delta\n",
        r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"cut \ud83d and \ude00\ud83d\ude00"}}"#,
        "\n\nevent: content_block_stop\n",
        r#"data: {"type":"content_block_stop","index":0}"#,
        "\n\nevent: message_delta\n",
        r#"data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}"#,
        "\n\nevent: message_stop\n",
        r#"data: {"type":"message_stop"}"#,
        "\n\n"
    );
    let last = run("anthropic-messages", "anthropic", "claude-test-4", "", body).await;
    assert_eq!(
        last.stop_reason,
        StopReason::Stop,
        "{:?}",
        last.error_message
    );
    assert_eq!(last.text(), CUT);
}

#[tokio::test]
async fn openai_completions() {
    let body = concat!(
        r#"data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"cut \ud83d and \ude00\ud83d\ude00"},"finish_reason":null}]}"#,
        "\n\n",
        r#"data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        "\n\ndata: [DONE]\n\n"
    );
    let last = run("openai-completions", "openai", "gpt-test", "/v1", body).await;
    assert_eq!(
        last.stop_reason,
        StopReason::Stop,
        "{:?}",
        last.error_message
    );
    assert_eq!(last.text(), CUT);
}

#[tokio::test]
async fn openai_responses() {
    let body = concat!(
        "event: response.output_item.added\n",
        r#"data: {"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"m","role":"assistant","content":[]}}"#,
        "\n\nevent: response.output_text.delta\n",
        r#"data: {"type":"response.output_text.delta","output_index":0,"delta":"cut \ud83d and \ude00\ud83d\ude00"}"#,
        "\n\nevent: response.completed\n",
        r#"data: {"type":"response.completed","response":{"id":"r1","status":"completed","output":[],"usage":{"input_tokens":3,"output_tokens":5,"total_tokens":8}}}"#,
        "\n\n"
    );
    let last = run("openai-responses", "openai", "gpt-test", "/v1", body).await;
    assert_eq!(
        last.stop_reason,
        StopReason::Stop,
        "{:?}",
        last.error_message
    );
    assert_eq!(last.text(), CUT);
}

#[tokio::test]
async fn google() {
    let body = concat!(
        r#"data: {"candidates":[{"content":{"role":"model","parts":[{"text":"cut \ud83d and \ude00\ud83d\ude00"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":5,"totalTokenCount":8}}"#,
        "\r\n\r\n"
    );
    let last = run(
        "google-generative-ai",
        "google",
        "gemini-2.5-flash",
        "/v1beta",
        body,
    )
    .await;
    assert_eq!(
        last.stop_reason,
        StopReason::Stop,
        "{:?}",
        last.error_message
    );
    assert_eq!(last.text(), CUT);
}

/// A payload that is malformed for another reason still fails with the parser's message.
#[tokio::test]
async fn other_malformed_json_still_fails() {
    let body = concat!(
        r#"data: {"id":"c1","choices":[{"index":0,"delta":{"content":"\ud83d"#,
        "\n\ndata: [DONE]\n\n"
    );
    let last = run("openai-completions", "openai", "gpt-test", "/v1", body).await;
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(
        last.error_message.as_deref(),
        Some("Error reading response: malformed server-sent event JSON.")
    );
}

/// Streamed tool arguments are JSON inside the event JSON: a lone surrogate there reaches the
/// argument parser, which reads it the same way.
#[test]
fn tool_arguments_with_a_lone_surrogate_parse() {
    let parsed = arbor_ai::json_stream::parse_tool_arguments(r#"{"path":"a\ud83d.txt"}"#);
    assert_eq!(parsed.arguments_error, None);
    assert_eq!(
        parsed.arguments,
        serde_json::json!({"path": "a\u{FFFD}.txt"})
    );
}

/// A context handed over as JSON text with lone surrogates (a JavaScript caller's string cut
/// inside an emoji): they are dropped, as pi-ai's `sanitizeSurrogates` drops them from what it
/// sends, and every API's request body carries the rest of the text (DECISIONS §26.57).
#[test]
fn a_context_with_lone_surrogates_is_sent_without_them() {
    let text = r#"{
        "systemPrompt": "sys \ud83d end",
        "messages": [
            {"role": "user", "content": "cut \ud83d and \ude00 kept \ud83d\ude00", "timestamp": 1},
            {"role": "assistant", "content": [{"type": "text", "text": "reply \udc00"}],
             "api": "anthropic-messages", "provider": "anthropic", "model": "claude-test-4",
             "stopReason": "stop", "timestamp": 2},
            {"role": "user", "content": [{"type": "text", "text": "next \ud83d"}], "timestamp": 3}
        ]
    }"#;
    let context = arbor_ai::Context::from_json_str(text).unwrap();
    let serialized = serde_json::to_string(&context).unwrap();
    assert!(!serialized.contains("\\ud"), "{serialized}");
    let mut bodies = String::new();
    for (api, provider, id) in [
        ("anthropic-messages", "anthropic", "claude-test-4"),
        ("openai-completions", "openrouter", "m"),
        ("openai-responses", "openai", "gpt-test"),
        ("google-generative-ai", "google", "gemini-test"),
    ] {
        let m = model(api, provider, id, "http://127.0.0.1:9");
        let request = arbor_ai::providers::build_request(&m, &context, &opts()).unwrap();
        bodies.push_str(&format!(
            "{api}:\n{}\n",
            serde_json::to_string_pretty(&request.body).unwrap()
        ));
    }
    insta::assert_snapshot!(bodies);
}

#[test]
fn a_context_that_is_not_json_names_the_fault() {
    let err = arbor_ai::Context::from_json_str(r#"{"messages": 3}"#).unwrap_err();
    assert!(err.to_string().starts_with("context: messages"), "{err}");
    let err = arbor_ai::Context::from_json_str("[]").unwrap_err();
    assert_eq!(
        err.to_string(),
        "context: expected an object, found an array"
    );
    let err = arbor_ai::Context::from_json_str(r#"{"messages": [] "#).unwrap_err();
    assert!(err.to_string().starts_with("context: EOF"), "{err}");
}

/// The same contexts as pi-ai 1.6.0 got them (JSON text with lone surrogates, parsed into
/// JavaScript strings) and the bodies pi sent, recorded once through `xtask/parity/driver.mjs`:
/// Arbor's simple-stream requests equal pi's byte for byte in content (DECISIONS §26.57).
#[test]
fn lone_surrogate_contexts_are_sent_as_pi_sends_them() {
    let fixture = include_str!("../data/parity/surrogates.jsonl");
    let mut checked = 0;
    for line in fixture.lines().filter(|l| !l.trim().is_empty()) {
        let case: serde_json::Value = serde_json::from_str(line).unwrap();
        let model: arbor_ai::Model = serde_json::from_value(case["model"].clone()).unwrap();
        let context =
            arbor_ai::Context::from_json_str(case["contextText"].as_str().unwrap()).unwrap();
        let options = arbor_ai::SimpleStreamOptions::from_pi_json(&case["options"]).unwrap();
        let request =
            arbor_ai::providers::simple::build_simple_request(&model, &context, options).unwrap();
        assert_eq!(request.url, case["piUrl"], "{}", case["id"]);
        assert_eq!(request.body, case["piBody"], "{}", case["id"]);
        checked += 1;
    }
    assert_eq!(checked, 4);
}
