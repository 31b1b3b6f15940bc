//! Responses managed effort (`compat.supportsMidConvoEffort`, DECISIONS §26.55): the effort of
//! each replayed turn and of the request travels in `configuration_update` input items, the
//! request-level `reasoning.effort` stays fixed, and the reply records its effort.
//!
//! `tests/data/parity/responses_effort.jsonl` holds hand-written contexts with the bodies pi-ai
//! 1.6.0's `streamSimple` sent for them and the `providerThinkingLevel` of its reply (recorded
//! with `xtask/parity/driver.mjs`).

use arbor_ai::providers::build_request;
use arbor_ai::{
    stream, AssistantMessageEvent, Context, Message, Model, SimpleStreamOptions, StreamOptions,
};
use arbor_test_support::{sse_events, MockResponse};
use serde_json::{json, Value};

use super::providers_common::{collect, model, server_with, user};

fn fixtures() -> Vec<Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/parity/responses_effort.jsonl");
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn managed(base_url: &str) -> Model {
    let mut m = model("openai-responses", "openai", "gpt-test", base_url);
    m.compat = Some(json!({"supportsMidConvoEffort": true}));
    m
}

fn assistant(m: &Model, text: &str, level: Option<&str>) -> Message {
    let mut value = json!({"role": "assistant", "content": [{"type": "text", "text": text}],
        "api": m.api, "provider": m.provider, "model": m.id,
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop", "timestamp": 1_700_000_000_600_i64});
    if let Some(level) = level {
        value["providerThinkingLevel"] = json!(level);
    }
    serde_json::from_value(value).unwrap()
}

fn with_effort(effort: &str) -> StreamOptions {
    let mut options = StreamOptions::default().with_api_key("sk-test".into());
    options.openai.reasoning_effort = Some(effort.into());
    options
}

#[test]
fn replayed_turns_and_the_request_carry_their_effort_in_configuration_updates() {
    let m = managed("https://api.openai.com/v1");
    let ctx = Context {
        system_prompt: None,
        messages: vec![
            user("first"),
            assistant(&m, "one", Some("low")),
            user("second"),
            assistant(&m, "two", None),
            user("third"),
        ]
        .into(),
        tools: None,
    };
    let body = build_request(&m, &ctx, &with_effort("xhigh")).unwrap().body;
    assert_eq!(
        body["reasoning"],
        json!({"effort": "medium", "summary": "auto"})
    );
    let input = body["input"].as_array().unwrap();
    assert_eq!(
        input[1],
        json!({"type": "configuration_update", "reasoning": {"effort": "low"}})
    );
    assert_eq!(input[2]["id"], json!("msg_pi_1"));
    // A turn without a recorded level gets no update; the request's effort comes last.
    assert_eq!(input[4]["type"], json!("message"));
    assert_eq!(
        input.last(),
        Some(&json!({"type": "configuration_update", "reasoning": {"effort": "xhigh"}}))
    );
    assert_eq!(input.len(), 7);

    // Without the compat the effort is the request's, and nothing is added.
    let mut plain = m.clone();
    plain.compat = None;
    let body = build_request(&plain, &ctx, &with_effort("xhigh"))
        .unwrap()
        .body;
    assert_eq!(body["reasoning"]["effort"], json!("xhigh"));
    assert_eq!(body["input"].as_array().unwrap().len(), 5);
}

/// Every recorded pi body, compared whole (URL too) with what Arbor builds on the
/// `streamSimple` path: managed, signed in with ChatGPT (no updates), thinking off, a mapped
/// level with foreign turns, and a model without reasoning.
#[test]
fn recorded_pi_bodies_match() {
    let cases = fixtures();
    for case in &cases {
        let model: Model = serde_json::from_value(case["model"].clone()).unwrap();
        let context: Context = serde_json::from_value(case["context"].clone()).unwrap();
        let options = SimpleStreamOptions::from_pi_json(&case["options"]).unwrap();
        let request =
            arbor_ai::providers::simple::build_simple_request(&model, &context, options).unwrap();
        assert_eq!(
            request.body, case["expected"]["body"],
            "{}: body differs from pi's",
            case["id"]
        );
        assert_eq!(request.url, case["expected"]["url"].as_str().unwrap());
    }
    assert_eq!(cases.len(), 5);
}

/// The reply records the effort it ran at, as pi's does (the level after the model's map), and
/// the next request replays it.
#[tokio::test]
async fn the_reply_records_its_effort_for_the_next_request() {
    let events = [
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 0, "delta": "hi"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}}),
        json!({"type": "response.completed", "response": {"id": "r", "status": "completed", "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}}),
    ];
    let named: Vec<(Option<&str>, String)> = events
        .iter()
        .map(|e| (e["type"].as_str(), e.to_string()))
        .collect();
    let server = server_with(
        MockResponse::sse().body(sse_events(named.iter().map(|(n, d)| (*n, d.as_str())))),
    )
    .await;
    let mut m = managed(&server.url());
    m.thinking_level_map = serde_json::from_value(json!({"high": "high-x"})).unwrap();
    let ctx = Context {
        system_prompt: None,
        messages: vec![user("first")].into(),
        tools: None,
    };
    let events = collect(stream(&m, &ctx, with_effort("high"))).await;
    let Some(AssistantMessageEvent::Done { message, .. }) = events.last() else {
        panic!("expected done, got {:?}", events.last());
    };
    assert_eq!(message.extra["providerThinkingLevel"], json!("high-x"));
    let next = Context {
        system_prompt: None,
        messages: vec![user("a"), Message::Assistant(message.clone()), user("b")].into(),
        tools: None,
    };
    let body = build_request(&m, &next, &with_effort("low")).unwrap().body;
    assert_eq!(
        body["input"][1],
        json!({"type": "configuration_update", "reasoning": {"effort": "high-x"}})
    );
    // Without a managed effort the reply records none.
    let server = server_with(
        MockResponse::sse().body(sse_events(named.iter().map(|(n, d)| (*n, d.as_str())))),
    )
    .await;
    let mut plain = m.clone();
    plain.base_url = server.url();
    plain.compat = None;
    let events = collect(stream(&plain, &ctx, with_effort("high"))).await;
    let Some(AssistantMessageEvent::Done { message, .. }) = events.last() else {
        panic!("expected done");
    };
    assert!(message.extra.get("providerThinkingLevel").is_none());
}
