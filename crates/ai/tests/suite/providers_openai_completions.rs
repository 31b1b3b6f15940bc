//! OpenAI Chat Completions client (and OpenAI-compatible servers) against the mock server.

use arbor_ai::providers::build_request;
use arbor_ai::providers::{compat_for, ThinkingFormat};
use arbor_ai::stream::{CacheRetention, OpenAiOptions};
use arbor_ai::{stream, StopReason, StreamOptions};
use arbor_test_support::{sse_data, Ending, MockResponse};
use serde_json::{json, Value};

use super::providers_common::*;

fn oa_model(base: &str) -> arbor_ai::Model {
    let mut m = model(
        "openai-completions",
        "openai",
        "gpt-test",
        &format!("{base}/v1"),
    );
    m.reasoning = false;
    m
}

fn opts() -> StreamOptions {
    StreamOptions::default().with_api_key("sk-test".into())
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn usage_chunk(usage: Value) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
           "choices": [], "usage": usage})
}

fn with_done(values: &[Value]) -> String {
    let mut s = sse_data(values);
    s.push_str("data: [DONE]\n\n");
    s
}

fn text_stream(finish: &str) -> String {
    with_done(&[
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": "Hel"}), None),
        chunk(json!({"content": "lo"}), None),
        chunk(json!({}), Some(finish)),
        usage_chunk(json!({"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25})),
    ])
}

#[tokio::test]
async fn text_turn_events_message_and_request() {
    let server = server_with(MockResponse::sse().body(text_stream("stop"))).await;
    let model = oa_model(&server.url());
    let options = opts()
        .with_max_tokens(1000)
        .with_temperature(0.5)
        .with_session_id("s-1".into());
    let events = collect(stream(&model, &simple_context(), options)).await;
    let message = check_contract(&events);
    insta::assert_snapshot!("completions_text_events", render(&events));
    insta::assert_json_snapshot!("completions_text_message", stable(&message));
    let request = server.single_request();
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    insta::assert_json_snapshot!("completions_text_request", body_of(&request));
}

#[tokio::test]
async fn history_request_with_reasoning_replay() {
    let server = server_with(MockResponse::sse().body(text_stream("stop"))).await;
    let mut model = oa_model(&server.url());
    model.provider = "deepseek".into();
    model.reasoning = true;
    let ctx = history_context(&model, "reasoning_content", "call_1");
    let options = opts().with_openai(OpenAiOptions::default().with_reasoning_effort("high".into()));
    check_contract(&collect(stream(&model, &ctx, options)).await);
    insta::assert_json_snapshot!(
        "completions_history_request",
        body_of(&server.single_request())
    );
}

#[tokio::test]
async fn reasoning_content_then_text_and_reasoning_details() {
    // llama.cpp / DeepSeek style `reasoning_content`.
    let body = with_done(&[
        chunk(json!({"reasoning_content": "Think"}), None),
        chunk(json!({"reasoning_content": "ing."}), None),
        chunk(json!({"content": "Done."}), None),
        chunk(json!({}), Some("stop")),
    ]);
    let server = server_with(MockResponse::sse().body(body)).await;
    let model = oa_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let message = check_contract(&events);
    insta::assert_snapshot!("completions_reasoning_events", render(&events));
    assert_eq!(
        serde_json::to_value(&message.content[0]).unwrap(),
        json!({"type": "thinking", "thinking": "Thinking.", "thinkingSignature": "reasoning_content"})
    );

    // OpenRouter style `reasoning` + `reasoning_details` (merged and kept as the signature).
    let body = with_done(&[
        chunk(
            json!({"reasoning": "A", "reasoning_details": [{"type": "reasoning.text", "text": "A", "index": 0}]}),
            None,
        ),
        chunk(
            json!({"reasoning": "B", "reasoning_details": [{"type": "reasoning.text", "text": "B", "signature": "sig", "index": 0}]}),
            None,
        ),
        chunk(
            json!({"reasoning_details": [{"type": "reasoning.encrypted", "data": "ENC", "id": "r1"}]}),
            None,
        ),
        chunk(json!({"content": "ok"}), Some("stop")),
    ]);
    let server = server_with(MockResponse::sse().body(body)).await;
    let mut model = oa_model(&server.url());
    model.provider = "openrouter".into();
    let message = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    insta::assert_json_snapshot!("completions_reasoning_details_message", stable(&message));
}

#[tokio::test]
async fn parallel_tool_calls_split_mid_token_and_mid_utf8() {
    let body = with_done(&[
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_A", "type": "function", "function": {"name": "read", "arguments": ""}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "id": "call_B", "type": "function", "function": {"name": "bash", "arguments": "{\"comm"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"pa"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "th\": \"é😀"}}, {"index": 1, "function": {"arguments": "and\": \"ls 日本"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": ".txt\"}"}}, {"index": 1, "function": {"arguments": "語\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ]);
    let offsets: Vec<usize> = body
        .char_indices()
        .filter(|(_, c)| c.len_utf8() > 1)
        .map(|(i, _)| i + 1)
        .collect();
    let server = server_with(MockResponse::sse().body_split_at(body.as_bytes(), &offsets)).await;
    let model = oa_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let message = check_contract(&events);
    insta::assert_snapshot!("completions_tool_calls_events", render(&events));
    assert_eq!(message.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn usage_with_cache_read_and_write() {
    let body = with_done(&[
        chunk(json!({"content": "x"}), Some("stop")),
        usage_chunk(
            json!({"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
            "prompt_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 100},
            "completion_tokens_details": {"reasoning_tokens": 20}}),
        ),
    ]);
    let server = server_with(MockResponse::sse().body(body)).await;
    let model = oa_model(&server.url());
    let message = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    let u = &message.usage;
    assert_eq!(
        (u.input, u.output, u.cache_read, u.cache_write),
        (300, 50, 600, 100)
    );
    assert_eq!((u.reasoning, u.total_tokens), (Some(20), Some(1050)));
    let expected = (3.0 * 300.0 + 15.0 * 50.0 + 0.3 * 600.0 + 3.75 * 100.0) / 1e6;
    assert!((u.cost.total.get() - expected).abs() < 1e-12);

    // DeepSeek reports cache hits as `prompt_cache_hit_tokens`.
    let body = with_done(&[
        chunk(json!({"content": "x"}), Some("stop")),
        usage_chunk(
            json!({"prompt_tokens": 100, "completion_tokens": 5, "prompt_cache_hit_tokens": 40}),
        ),
    ]);
    let server = server_with(MockResponse::sse().body(body)).await;
    let model = oa_model(&server.url());
    let message = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    assert_eq!((message.usage.input, message.usage.cache_read), (60, 40));
}

#[tokio::test]
async fn every_finish_reason() {
    let cases = [
        ("stop", StopReason::Stop, None),
        ("end", StopReason::Stop, None),
        ("length", StopReason::Length, None),
        ("tool_calls", StopReason::ToolUse, None),
        ("function_call", StopReason::ToolUse, None),
        (
            "content_filter",
            StopReason::Error,
            Some("Provider finish_reason: content_filter"),
        ),
        (
            "network_error",
            StopReason::Error,
            Some("Provider finish_reason: network_error"),
        ),
        (
            "weird",
            StopReason::Error,
            Some("Provider finish_reason: weird"),
        ),
    ];
    for (raw, expected, message) in cases {
        let server = server_with(MockResponse::sse().body(text_stream(raw))).await;
        let model = oa_model(&server.url());
        let last = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
        assert_eq!(last.stop_reason, expected, "{raw}");
        assert_eq!(last.error_message.as_deref(), message, "{raw}");
        assert_eq!(last.extra.get("rawStopReason"), Some(&json!(raw)));
    }
}

#[tokio::test]
async fn http_errors_use_status_and_error_member() {
    let ctx_err = json!({"error": {"message": "This model's maximum context length is 128000 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}});
    let rate = json!({"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}});
    let cases = vec![
        (
            MockResponse::json(400, &ctx_err),
            format!("400: {}", ctx_err["error"]),
        ),
        (
            MockResponse::json(429, &rate),
            format!("429: {}", rate["error"]),
        ),
        (
            MockResponse::json(503, &json!({"detail": "overloaded"})),
            "503: {\"detail\":\"overloaded\"}".to_string(),
        ),
        (
            MockResponse::text(500, "upstream exploded"),
            "500 upstream exploded".to_string(),
        ),
        (
            MockResponse::new(404),
            "404 status code (no body)".to_string(),
        ),
    ];
    for (response, expected) in cases {
        let server = server_with(response).await;
        let model = oa_model(&server.url());
        let events = collect(stream(&model, &simple_context(), opts())).await;
        let last = check_contract(&events);
        assert_eq!(events.len(), 1);
        assert_eq!(last.error_message.as_deref(), Some(expected.as_str()));
    }
}

#[tokio::test]
async fn in_stream_error_object() {
    let body = sse_data(&[
        chunk(json!({"content": "par"}), None),
        json!({"error": {"message": "Provider returned error", "code": 502, "metadata": {"raw": "upstream overloaded"}}}),
    ]);
    let server = server_with(MockResponse::sse().body(body)).await;
    let model = oa_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let last = check_contract(&events);
    insta::assert_snapshot!("completions_stream_error_events", render(&events));
    assert_eq!(
        last.error_message.as_deref(),
        Some("Provider returned error\nupstream overloaded")
    );
    assert_eq!(last.text(), "par");
}

#[tokio::test]
async fn cut_off_and_malformed_streams() {
    // Body ends without finish_reason.
    let body = sse_data(&[chunk(
        json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "read", "arguments": "{\"path\":\"a"}}]}),
        None,
    )]);
    let server = server_with(MockResponse::sse().body(body.clone())).await;
    let model = oa_model(&server.url());
    let last = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    assert_eq!(
        last.error_message.as_deref(),
        Some("Stream ended without finish_reason")
    );
    // The blocks were ended (arguments parsed strictly: the cut-off JSON reads as `{}`) before
    // the missing finish_reason was reported, and the error keeps them (DECISIONS §26.15).
    assert_eq!(
        last.tool_calls().next().map(|c| c.arguments.clone()),
        Some(json!({}))
    );

    // Connection dropped mid-transfer.
    let server = server_with(MockResponse::sse().body(body).ending(Ending::CutOff)).await;
    let model = oa_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let last = check_contract(&events);
    assert_eq!(
        last.error_message.as_deref(),
        Some("Stream ended without finish_reason")
    );
    assert!(arbor_ai::retry::is_retryable_assistant_error(&last));
    assert!(events
        .iter()
        .any(|e| matches!(e, arbor_ai::AssistantMessageEvent::ToolcallEnd { .. })));

    // Malformed JSON in a data line.
    let server =
        server_with(MockResponse::sse().body("data: {\"id\": \"x\", \"choices\": [\n\n")).await;
    let model = oa_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let last = check_contract(&events);
    assert_eq!(events.len(), 2, "start + error");
    assert_eq!(
        last.error_message.as_deref(),
        Some("Error reading response: malformed server-sent event JSON.")
    );
}

#[test]
fn compat_detection_table() {
    let cases: &[(&str, &str, bool, &str, ThinkingFormat, bool)] = &[
        // provider, base url, store, max tokens field, thinking format, reasoning_effort
        (
            "openai",
            "https://api.openai.com/v1",
            true,
            "max_completion_tokens",
            ThinkingFormat::OpenAi,
            true,
        ),
        (
            "openrouter",
            "https://openrouter.ai/api/v1",
            true,
            "max_completion_tokens",
            ThinkingFormat::OpenRouter,
            true,
        ),
        (
            "deepseek",
            "https://api.deepseek.com",
            false,
            "max_tokens",
            ThinkingFormat::DeepSeek,
            true,
        ),
        (
            "custom",
            "https://API.DeepSeek.com/v1",
            false,
            "max_tokens",
            ThinkingFormat::DeepSeek,
            true,
        ),
        (
            "groq",
            "https://api.groq.com/openai/v1",
            true,
            "max_completion_tokens",
            ThinkingFormat::OpenAi,
            true,
        ),
        (
            "xai",
            "https://api.x.ai/v1",
            false,
            "max_completion_tokens",
            ThinkingFormat::OpenAi,
            false,
        ),
        (
            "zai",
            "https://api.z.ai/api/paas/v4",
            false,
            "max_tokens",
            ThinkingFormat::Zai,
            false,
        ),
        (
            "together",
            "https://api.together.xyz/v1",
            false,
            "max_tokens",
            ThinkingFormat::Together,
            false,
        ),
        (
            "cerebras",
            "https://api.cerebras.ai/v1",
            false,
            "max_completion_tokens",
            ThinkingFormat::OpenAi,
            true,
        ),
        (
            "ollama",
            "http://localhost:11434/v1",
            false,
            "max_tokens",
            ThinkingFormat::OpenAi,
            true,
        ),
        (
            "local",
            "http://127.0.0.1:11434/v1",
            false,
            "max_tokens",
            ThinkingFormat::OpenAi,
            true,
        ),
        (
            "llama.cpp",
            "http://127.0.0.1:8080/v1",
            false,
            "max_tokens",
            ThinkingFormat::OpenAi,
            true,
        ),
        (
            "lmstudio",
            "http://127.0.0.1:1234/v1",
            false,
            "max_tokens",
            ThinkingFormat::OpenAi,
            true,
        ),
        (
            "vllm",
            "http://gpu-box:8000/v1",
            false,
            "max_completion_tokens",
            ThinkingFormat::OpenAi,
            true,
        ),
        (
            "nvidia",
            "https://integrate.api.nvidia.com/v1",
            false,
            "max_tokens",
            ThinkingFormat::OpenAi,
            false,
        ),
    ];
    for (provider, url, store, field, format, effort) in cases {
        let m = model("openai-completions", provider, "m", url);
        let c = compat_for(&m);
        assert_eq!(c.supports_store, *store, "{provider} store");
        assert_eq!(c.max_tokens_field, *field, "{provider} field");
        assert_eq!(c.thinking_format, *format, "{provider} format");
        assert_eq!(c.supports_reasoning_effort, *effort, "{provider} effort");
        assert_eq!(
            c.supports_developer_role,
            *provider == "openai",
            "{provider} developer"
        );
        assert_eq!(
            c.requires_reasoning_content_on_assistant_messages,
            format == &ThinkingFormat::DeepSeek
        );
    }
    // Explicit compat wins field by field.
    let mut m = model(
        "openai-completions",
        "openai",
        "m",
        "https://api.openai.com/v1",
    );
    m.compat = Some(
        json!({"supportsStore": false, "thinkingFormat": "qwen", "maxTokensField": "max_tokens"}),
    );
    let c = compat_for(&m);
    assert!(!c.supports_store);
    assert_eq!(c.thinking_format, ThinkingFormat::Qwen);
    assert_eq!(c.max_tokens_field, "max_tokens");
    assert!(
        c.supports_developer_role,
        "untouched fields keep the detected value"
    );
}

/// Reasoning fields per thinking format, on and off, as request bodies.
#[test]
fn reasoning_fields_per_format() {
    let mut out = serde_json::Map::new();
    for (provider, url, compat) in [
        ("openai", "https://api.openai.com/v1", None),
        ("openrouter", "https://openrouter.ai/api/v1", None),
        ("deepseek", "https://api.deepseek.com", None),
        ("zai", "https://api.z.ai/api/paas/v4", None),
        ("together", "https://api.together.xyz/v1", None),
        (
            "qwen",
            "https://dashscope.example/v1",
            Some(json!({"thinkingFormat": "qwen"})),
        ),
        (
            "qwen-template",
            "http://127.0.0.1:8000/v1",
            Some(json!({"thinkingFormat": "qwen-chat-template"})),
        ),
        (
            "string",
            "https://example.test/v1",
            Some(json!({"thinkingFormat": "string-thinking"})),
        ),
        (
            "budget",
            "https://example.test/v1",
            Some(json!({"supportsThinkingTokenBudget": true})),
        ),
    ] {
        for effort in [None, Some("medium")] {
            let mut m = model("openai-completions", provider, "m", url);
            m.compat = compat.clone();
            let options = StreamOptions::default()
                .with_api_key("k".into())
                .with_max_tokens(4096)
                .with_openai({
                    let mut o = OpenAiOptions::default();
                    o.reasoning_effort = effort.map(str::to_string);
                    o
                });
            let request = build_request(&m, &arbor_ai::Context::default(), &options).unwrap();
            let mut body = request.body.as_object().cloned().unwrap();
            for k in [
                "model",
                "messages",
                "stream",
                "stream_options",
                "store",
                "max_tokens",
                "max_completion_tokens",
            ] {
                body.shift_remove(k);
            }
            out.insert(
                format!("{provider}/{}", effort.unwrap_or("off")),
                Value::Object(body),
            );
        }
    }
    insta::assert_json_snapshot!("completions_reasoning_formats", out);
}

#[test]
fn openrouter_claude_cache_control_and_affinity_headers() {
    let mut m = model(
        "openai-completions",
        "openrouter",
        "anthropic/claude-x",
        "https://openrouter.ai/api/v1",
    );
    m.reasoning = false;
    let options = StreamOptions::default()
        .with_api_key("k".into())
        .with_session_id("sess".into())
        .with_cache_retention(CacheRetention::Long);
    let request = build_request(&m, &history_context(&m, "reasoning", "call_1"), &options).unwrap();
    assert_eq!(request.header("x-session-id"), Some("sess"));
    insta::assert_json_snapshot!("completions_openrouter_claude_request", request.body);
}

#[test]
fn missing_key_is_a_setup_error_but_local_servers_need_none() {
    let m = model(
        "openai-completions",
        "groq",
        "m",
        "https://api.groq.com/openai/v1",
    );
    let err = build_request(&m, &simple_context(), &StreamOptions::default()).unwrap_err();
    assert!(
        matches!(&err, arbor_ai::AiError::NoApiKey(p) if p == "groq"),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "No API key for provider: groq");
    let m = model(
        "openai-completions",
        "llama.cpp",
        "m",
        "http://127.0.0.1:8080/v1",
    );
    let request = build_request(&m, &simple_context(), &StreamOptions::default()).unwrap();
    assert_eq!(request.header("authorization"), None);
}

#[tokio::test]
async fn invalid_arguments_become_arguments_error_and_finish_reason_inference() {
    // Arguments that are not an object, and a server that never sends finish_reason.
    let body = with_done(&[
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "read", "arguments": "[1, 2]"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "id": "c2", "function": {"name": "bash", "arguments": "{\"command\": \"C:\\dir\"}"}}]}),
            None,
        ),
    ]);
    let server = server_with(MockResponse::sse().body(body)).await;
    let mut model = oa_model(&server.url());
    model.compat = Some(json!({"supportsFinishReason": false}));
    let events = collect(stream(&model, &simple_context(), opts())).await;
    let message = check_contract(&events);
    assert_eq!(
        message.stop_reason,
        StopReason::ToolUse,
        "inferred from the tool calls"
    );
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls[0].arguments, json!({}));
    assert_eq!(
        calls[0].arguments_error.as_deref(),
        Some("Tool arguments must be a JSON object\n\nReceived arguments:\n[1, 2]")
    );
    // A bad escape (`\d`) is repaired, not an error.
    assert_eq!(calls[1].arguments, json!({"command": "C:\\dir"}));
    assert_eq!(calls[1].arguments_error, None);

    // `stop` with tool calls stays `stop` (pi does not upgrade it for this API).
    let body = with_done(&[
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "read", "arguments": "{}"}}]}),
            None,
        ),
        chunk(json!({}), Some("stop")),
    ]);
    let server = server_with(MockResponse::sse().body(body)).await;
    let model = oa_model(&server.url());
    let message = check_contract(&collect(stream(&model, &simple_context(), opts())).await);
    assert_eq!(message.stop_reason, StopReason::Stop);
}

#[tokio::test]
async fn header_overrides_model_headers_and_removal() {
    let server = server_with(MockResponse::sse().body(text_stream("stop"))).await;
    let mut model = oa_model(&server.url());
    model.headers = serde_json::from_value(json!({"X-Model": "m", "X-Gone": "g"})).ok();
    let options = opts().with_headers(vec![
        ("user-agent".into(), Some("custom-agent/1".into())),
        ("x-gone".into(), None),
        ("X-Extra".into(), Some("e".into())),
    ]);
    check_contract(&collect(stream(&model, &simple_context(), options)).await);
    let request = server.single_request();
    assert_eq!(request.header("user-agent"), Some("custom-agent/1"));
    assert_eq!(request.header("x-model"), Some("m"));
    assert_eq!(request.header("x-gone"), None);
    assert_eq!(request.header("x-extra"), Some("e"));
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
}

/// Message-conversion quirks switched on through `model.compat`.
#[test]
fn conversion_quirks_from_compat() {
    let mut m = model(
        "openai-completions",
        "custom",
        "m",
        "https://example.test/v1",
    );
    m.input = vec!["text".into()];
    m.compat = Some(json!({
        "requiresAssistantAfterToolResult": true,
        "requiresToolResultName": true,
        "requiresThinkingAsText": true,
        "requiresToolsWithToolHistory": true,
        "supportsStrictMode": true,
        "supportsUsageInStreaming": false,
        "supportsStore": false
    }));
    let mut ctx = history_context(&m, "reasoning_content", "call_1");
    ctx.tools = None;
    let options = StreamOptions::default().with_api_key("k".into());
    let request = build_request(&m, &ctx, &options).unwrap();
    insta::assert_json_snapshot!("completions_compat_quirks_request", request.body);
}
