//! `stream_simple`: unified thinking levels mapped to each API's parameters.

use arbor_ai::providers::build_request;
use arbor_ai::providers::simple::{clamp_max_tokens_to_context, to_stream_options};
use arbor_ai::thinking::clamp_level as clamp_thinking_level;
use arbor_ai::{
    complete_simple, Context, Model, SimpleStreamOptions, StopReason, StreamOptions,
    ThinkingBudgets, ThinkingLevel,
};
use serde_json::{json, Map, Value};

use super::providers_common::*;

fn simple(level: Option<ThinkingLevel>) -> SimpleStreamOptions {
    {
        let mut o = SimpleStreamOptions::default();
        o.base = StreamOptions::default().with_api_key("k".into());
        o.reasoning = level;
        o.thinking_budgets = ThinkingBudgets::default();
        o
    }
}

fn level_map(pairs: Value) -> Option<Map<String, Value>> {
    pairs.as_object().cloned()
}

/// The body fields that carry the thinking configuration.
fn thinking_fields(m: &Model, level: Option<ThinkingLevel>) -> Value {
    let ctx = Context {
        messages: vec![user("hi")].into(),
        ..Context::default()
    };
    let native = to_stream_options(m, &ctx, simple(level)).expect("options");
    let request = build_request(m, &ctx, &native).expect("request");
    let keep = [
        "max_tokens",
        "thinking",
        "output_config",
        "reasoning_effort",
        "reasoning",
        "include",
        "max_completion_tokens",
        "max_output_tokens",
        "generationConfig",
    ];
    let mut out = Map::new();
    for (k, v) in request.body.as_object().expect("object") {
        if keep.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        }
    }
    if let Some(beta) = request.header("anthropic-beta") {
        out.insert("anthropic-beta".into(), json!(beta));
    }
    Value::Object(out)
}

#[test]
fn clamping_follows_the_level_map() {
    let mut m = model(
        "openai-completions",
        "openai",
        "m",
        "https://api.openai.com/v1",
    );
    assert_eq!(
        clamp_thinking_level(&m, ThinkingLevel::Xhigh),
        ThinkingLevel::High,
        "xhigh needs a mapping"
    );
    m.thinking_level_map = level_map(json!({"minimal": null, "xhigh": "xhigh"}));
    assert_eq!(
        clamp_thinking_level(&m, ThinkingLevel::Minimal),
        ThinkingLevel::Low,
        "scan upwards first"
    );
    assert_eq!(
        clamp_thinking_level(&m, ThinkingLevel::Xhigh),
        ThinkingLevel::Xhigh
    );
    assert_eq!(
        clamp_thinking_level(&m, ThinkingLevel::Max),
        ThinkingLevel::Xhigh,
        "then downwards"
    );
    m.reasoning = false;
    assert_eq!(
        clamp_thinking_level(&m, ThinkingLevel::High),
        ThinkingLevel::Off
    );
}

#[test]
fn max_tokens_are_clamped_to_the_context_window() {
    let mut m = model(
        "openai-completions",
        "openai",
        "m",
        "https://api.openai.com/v1",
    );
    m.context_window = 16_000;
    m.max_tokens = 32_000;
    let ctx = Context {
        messages: vec![user(&"x".repeat(35_000))].into(), // 10 000 estimated tokens
        ..Context::default()
    };
    // room = min(32768, 16000 - 10000 - 4096) = 1904
    assert_eq!(clamp_max_tokens_to_context(&m, &ctx, 32_000), 1904);
    assert_eq!(clamp_max_tokens_to_context(&m, &ctx, 1000), 1000);
}

#[test]
fn levels_to_native_parameters_per_api() {
    let mut out = Map::new();
    let anthropic = model(
        "anthropic-messages",
        "anthropic",
        "claude-budget",
        "https://api.anthropic.com",
    );
    let mut adaptive = anthropic.clone();
    adaptive.id = "claude-adaptive".into();
    adaptive.compat = Some(json!({"forceAdaptiveThinking": true}));
    adaptive.thinking_level_map = level_map(json!({"xhigh": "xhigh"}));
    let completions = {
        let mut m = model(
            "openai-completions",
            "openai",
            "gpt-x",
            "https://api.openai.com/v1",
        );
        m.thinking_level_map = level_map(json!({"off": "none", "high": "max-effort"}));
        m
    };
    let responses = model(
        "openai-responses",
        "openai",
        "gpt-r",
        "https://api.openai.com/v1",
    );
    let flash = model(
        "google-generative-ai",
        "google",
        "gemini-2.5-flash",
        "https://g.test/v1beta",
    );
    let gemini3 = model(
        "google-generative-ai",
        "google",
        "gemini-3-pro-preview",
        "https://g.test/v1beta",
    );
    let mut gemini3_no_off = gemini3.clone();
    gemini3_no_off.thinking_level_map = level_map(json!({"off": null}));
    let cases: Vec<(&str, &Model, Option<ThinkingLevel>)> = vec![
        ("anthropic/off", &anthropic, None),
        ("anthropic/medium", &anthropic, Some(ThinkingLevel::Medium)),
        ("anthropic/max", &anthropic, Some(ThinkingLevel::Max)),
        (
            "anthropic-adaptive/low",
            &adaptive,
            Some(ThinkingLevel::Low),
        ),
        (
            "anthropic-adaptive/xhigh",
            &adaptive,
            Some(ThinkingLevel::Xhigh),
        ),
        ("completions/off", &completions, None),
        ("completions/high", &completions, Some(ThinkingLevel::High)),
        (
            "completions/xhigh",
            &completions,
            Some(ThinkingLevel::Xhigh),
        ),
        ("responses/off", &responses, None),
        (
            "responses/minimal",
            &responses,
            Some(ThinkingLevel::Minimal),
        ),
        ("google-2.5-flash/off", &flash, None),
        (
            "google-2.5-flash/minimal",
            &flash,
            Some(ThinkingLevel::Minimal),
        ),
        (
            "google-2.5-flash/medium",
            &flash,
            Some(ThinkingLevel::Medium),
        ),
        ("google-3-pro/high", &gemini3, Some(ThinkingLevel::High)),
        ("google-3-pro/off", &gemini3, None),
        (
            "google-3-pro-no-off/off",
            &gemini3_no_off,
            Some(ThinkingLevel::Off),
        ),
    ];
    for (name, m, level) in cases {
        out.insert(name.into(), thinking_fields(m, level));
    }
    insta::assert_json_snapshot!("simple_thinking_levels", out);
}

#[tokio::test]
async fn invalid_google_level_mapping_is_an_error_event() {
    let mut m = model(
        "google-generative-ai",
        "google",
        "gemini-3-pro",
        "http://127.0.0.1:9/v1beta",
    );
    m.thinking_level_map = level_map(json!({"high": "ultra"}));
    let ctx = Context::default();
    let message = complete_simple(&m, &ctx, simple(Some(ThinkingLevel::High))).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Unsupported Google thinking level mapping for google/gemini-3-pro: high -> ultra")
    );
}

#[test]
fn caller_budgets_win() {
    let m = model(
        "google-generative-ai",
        "google",
        "gemini-2.5-pro",
        "https://g.test/v1beta",
    );
    let ctx = Context::default();
    let mut options = simple(Some(ThinkingLevel::Low));
    options.thinking_budgets.low = Some(777);
    let native = to_stream_options(&m, &ctx, options).unwrap();
    let body = build_request(&m, &ctx, &native).unwrap().body;
    assert_eq!(
        body["generationConfig"]["thinkingConfig"]["thinkingBudget"],
        json!(777)
    );
}

#[tokio::test]
async fn stream_simple_sends_the_mapped_parameters() {
    use arbor_test_support::{sse_events, MockResponse};
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "m", "model": "claude-budget", "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    let data: Vec<(Option<&str>, String)> = events
        .iter()
        .map(|(n, v)| (Some(*n), v.to_string()))
        .collect();
    let body = sse_events(data.iter().map(|(n, d)| (*n, d.as_str())));
    let server = server_with(MockResponse::sse().body(body)).await;
    let m = model(
        "anthropic-messages",
        "anthropic",
        "claude-budget",
        &server.url(),
    );
    let ctx = Context {
        messages: vec![user("hi")].into(),
        ..Context::default()
    };
    let mut options = simple(Some(ThinkingLevel::Low));
    options.base.max_tokens = Some(1000);
    let message = complete_simple(&m, &ctx, options).await;
    assert_eq!(message.stop_reason, StopReason::Stop);
    let request = server.single_request();
    let body = body_of(&request);
    // 1000 + low budget 2048 (within the model's 8192); the budget then leaves 1024 answer
    // tokens: min(2048, 3048 - 1024) = 2024.
    assert_eq!(body["max_tokens"], json!(3048));
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2024, "display": "summarized"})
    );
    assert_eq!(
        request.header("anthropic-beta"),
        Some("interleaved-thinking-2025-05-14")
    );
}
