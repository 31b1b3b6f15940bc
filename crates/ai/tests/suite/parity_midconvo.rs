//! pi 1.6.0 mid-conversation features found missing by the parity run (issue 11 items 8–11):
//! later system messages sent in place (DECISIONS §26.20), Anthropic managed effort (§26.21),
//! native tool changes (§26.22), message threads (§26.23) and server-side fallbacks (§26.24).

use arbor_ai::providers::{build_request, parse_recorded};
use arbor_ai::stream::{AnthropicOptions, CacheRetention};
use arbor_ai::{stream, AssistantMessage, Context, Message, Model, StreamOptions, Tool};
use arbor_test_support::{sse_events, MockResponse};
use serde_json::{json, Value};

use super::providers_common::{collect, model, server_with, user};

fn with_compat(mut m: Model, compat: Value) -> Model {
    m.compat = Some(compat);
    m
}

fn tool(name: &str) -> Tool {
    Tool {
        name: name.into(),
        description: format!("{name} tool"),
        parameters: json!({"type": "object", "properties": {"p": {"type": "string"}}, "required": ["p"]}),
        extra: Default::default(),
    }
}

fn system(value: Value) -> Message {
    let mut value = value;
    value["role"] = json!("system");
    value["timestamp"] = json!(1_700_000_000_500_i64);
    serde_json::from_value(value).unwrap()
}

fn assistant(model: &Model, text: &str, level: Option<&str>) -> Message {
    let mut value = json!({"role": "assistant", "content": [{"type": "text", "text": text}],
        "api": model.api, "provider": model.provider, "model": model.id,
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop", "timestamp": 1_700_000_000_600_i64});
    if let Some(level) = level {
        value["providerThinkingLevel"] = json!(level);
    }
    serde_json::from_value(value).unwrap()
}

fn opts() -> StreamOptions {
    StreamOptions::default().with_api_key("k".into())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// A conversation with a system update between two user turns and one after the last
/// assistant turn.
fn updated_context(m: &Model) -> Context {
    Context {
        system_prompt: Some("Base prompt.".into()),
        messages: vec![
            user("first"),
            assistant(m, "one", None),
            system(json!({"content": "Be terse.", "sections": {"env": "cwd=/x", "old": null}})),
            user("second"),
            assistant(m, "two", None),
            user("third"),
        ]
        .into(),
        tools: None,
    }
}

#[test]
fn responses_sends_later_system_messages_in_place() {
    let m = with_compat(
        model(
            "openai-responses",
            "openai",
            "gpt-test",
            "https://api.openai.com/v1",
        ),
        json!({"supportsMidConvoSystemMessages": true}),
    );
    let body = build_request(&m, &updated_context(&m), &opts())
        .unwrap()
        .body;
    // The update is a developer item where it was; `msg_pi_<n>` counts it.
    insta::assert_json_snapshot!("midconvo_responses_input", body["input"]);

    // Without the compat the update is folded into the leading prompt, as before.
    let plain = model(
        "openai-responses",
        "openai",
        "gpt-test",
        "https://api.openai.com/v1",
    );
    let body = build_request(&plain, &updated_context(&plain), &opts())
        .unwrap()
        .body;
    assert_eq!(
        body["input"][0]["content"],
        json!("Base prompt.\n\nBe terse.\n\ncwd=/x")
    );
    assert_eq!(body["input"].as_array().unwrap().len(), 6);
}

#[test]
fn responses_declares_tool_changes_in_additional_tools_items() {
    let m = with_compat(
        model(
            "openai-responses",
            "openai",
            "gpt-test",
            "https://api.openai.com/v1",
        ),
        json!({"supportsMidConvoSystemMessages": true, "supportsAdditionalTools": true}),
    );
    let ctx = Context {
        system_prompt: Some("Base prompt.".into()),
        messages: vec![
            user("first"),
            system(json!({"content": "Less tools.", "toolsRemoved": [{"name": "read"}, {"name": "bash"}],
                          "toolsAdded": [tool("bash")]})),
            user("second"),
            system(json!({"content": "", "toolsAdded": [tool("grep")]})),
        ]
        .into(),
        tools: Some(vec![tool("read"), tool("bash")]),
    };
    let body = build_request(&m, &ctx, &opts()).unwrap().body;
    // No top-level list: every tool is declared in the input, removals are announced.
    assert!(body.get("tools").is_none());
    insta::assert_json_snapshot!("midconvo_responses_additional_tools", body["input"]);
}

#[test]
fn chat_completions_sends_later_system_messages_in_place() {
    let m = with_compat(
        model(
            "openai-completions",
            "deepseek",
            "deepseek-test",
            "https://api.deepseek.com",
        ),
        json!({"supportsMidConvoSystemMessages": true}),
    );
    let body = build_request(&m, &updated_context(&m), &opts())
        .unwrap()
        .body;
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "system",
            "user",
            "assistant",
            "user"
        ]
    );
    assert_eq!(
        body["messages"][3]["content"],
        json!("Be terse.\n\nUpdated system prompt section \"env\":\n\ncwd=/x\n\nRemoved system prompt section \"old\".")
    );
}

fn managed_model() -> Model {
    with_compat(
        model(
            "anthropic-messages",
            "anthropic",
            "claude-managed",
            "https://example.test",
        ),
        json!({"forceAdaptiveThinking": true, "supportsMidConvoEffort": true,
               "supportsMidConvoSystemMessages": true, "supportsMidConvoToolChanges": true}),
    )
}

#[test]
fn anthropic_managed_effort_marks_replayed_turns_and_the_request() {
    let m = managed_model();
    let ctx = Context {
        system_prompt: Some("Base prompt.".into()),
        messages: vec![
            user("first"),
            assistant(&m, "one", Some("xhigh")),
            user("second"),
            // Not an effort: no marker.
            assistant(&m, "two", Some("minimal")),
            user("third"),
        ]
        .into(),
        tools: None,
    };
    let options = opts()
        .with_temperature(0.5)
        .with_cache_retention(CacheRetention::Short)
        .with_anthropic(
            AnthropicOptions::default()
                .with_thinking_enabled(true)
                .with_effort("medium".into()),
        );
    let request = build_request(&m, &ctx, &options).unwrap();
    insta::assert_json_snapshot!("midconvo_anthropic_effort_body", request.body);
    assert_eq!(
        header(&request.headers, "anthropic-beta"),
        Some("mid-conversation-output-config-2026-07-01,thinking-binding-controls-2026-08-01")
    );

    // Thinking off: no markers, no binding, thinking disabled.
    let off = opts().with_anthropic(AnthropicOptions::default().with_thinking_enabled(false));
    let body = build_request(&m, &ctx, &off).unwrap().body;
    assert_eq!(body["thinking"], json!({"type": "disabled"}));
    assert!(body.get("output_config").is_none());
    assert_eq!(body["messages"].as_array().unwrap().len(), 5);
}

#[test]
fn anthropic_native_tool_changes_keep_the_tool_list_fixed() {
    let m = managed_model();
    let ctx = Context {
        system_prompt: Some("Base prompt.".into()),
        messages: vec![
            user("first"),
            system(
                json!({"content": "", "toolsRemoved": [{"name": "read"}, {"name": "bash"}],
                          "toolsAdded": [tool("bash"), tool("grep")]}),
            ),
            // Held until the next assistant message that is sent.
            user("second"),
            assistant(&m, "one", None),
            user("third"),
            system(json!({"content": "Tools changed."})),
        ]
        .into(),
        tools: Some(vec![tool("read"), tool("bash")]),
    };
    let options = opts()
        .with_cache_retention(CacheRetention::Short)
        .with_anthropic(AnthropicOptions::default().with_thinking_enabled(false));
    let request = build_request(&m, &ctx, &options).unwrap();
    insta::assert_json_snapshot!("midconvo_anthropic_tool_changes_body", request.body);
    assert_eq!(
        header(&request.headers, "anthropic-beta"),
        Some("mid-conversation-output-config-2026-07-01,thinking-binding-controls-2026-08-01,inline-tools-2026-09-15")
    );
}

#[test]
fn anthropic_threads_open_on_the_first_party_endpoint_with_a_session() {
    let m = model(
        "anthropic-messages",
        "anthropic",
        "claude-test",
        "https://api.anthropic.com",
    );
    let ctx = Context {
        system_prompt: None,
        messages: vec![user("hi")].into(),
        tools: None,
    };
    let with_session = opts().with_session_id("s-1".into());
    let request = build_request(&m, &ctx, &with_session).unwrap();
    assert_eq!(request.body["thread"], json!({"type": "create"}));
    assert_eq!(
        header(&request.headers, "anthropic-beta"),
        Some("message-threads-2026-08-12")
    );
    // No caching, no session, or a gateway: no thread.
    let no_cache = with_session
        .clone()
        .with_cache_retention(CacheRetention::None);
    assert!(build_request(&m, &ctx, &no_cache)
        .unwrap()
        .body
        .get("thread")
        .is_none());
    assert!(build_request(&m, &ctx, &opts())
        .unwrap()
        .body
        .get("thread")
        .is_none());
    let gateway = model(
        "anthropic-messages",
        "proxy",
        "claude-test",
        "https://gw.test",
    );
    assert!(build_request(&gateway, &ctx, &with_session)
        .unwrap()
        .body
        .get("thread")
        .is_none());
    let opted_in = with_compat(gateway, json!({"supportsMessageThreads": true}));
    assert_eq!(
        build_request(&opted_in, &ctx, &with_session).unwrap().body["thread"],
        json!({"type": "create"})
    );
}

fn fallback_model(base: &str) -> Model {
    with_compat(
        model("anthropic-messages", "anthropic", "claude-main", base),
        json!({"allowedFallbackModels": [
            {"model": "claude-backup"},
            {"provider": "anthropic", "model": "claude-cheap",
             "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}}]}),
    )
}

fn reply_from(model_id: &str) -> String {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "model": model_id,
               "usage": {"input_tokens": 1_000_000, "output_tokens": 0}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1_000_000}}),
        json!({"type": "message_stop"}),
    ];
    let named: Vec<(Option<&str>, String)> = events
        .iter()
        .map(|e| (e["type"].as_str(), e.to_string()))
        .collect();
    sse_events(named.iter().map(|(n, d)| (*n, d.as_str())))
}

#[test]
fn anthropic_fallbacks_are_requested_and_priced() {
    let m = fallback_model("https://example.test");
    let ctx = Context {
        system_prompt: None,
        messages: vec![user("hi")].into(),
        tools: None,
    };
    let request = build_request(&m, &ctx, &opts()).unwrap();
    assert_eq!(
        request.body["fallbacks"],
        json!([{"model": "claude-backup"}, {"model": "claude-cheap"}])
    );
    assert_eq!(
        header(&request.headers, "anthropic-beta"),
        Some("server-side-fallback-2026-07-01")
    );

    // The priced fallback answered: its rates apply (1 + 2 per million).
    let (message, _) = parse_recorded(&m, reply_from("claude-cheap").as_bytes(), 17).unwrap();
    assert_eq!(message.response_model.as_deref(), Some("claude-cheap"));
    assert_eq!(message.usage.cost.total.get(), 3.0);
    // An unpriced fallback keeps the model's own rates (3 + 15).
    let (message, _) = parse_recorded(&m, reply_from("claude-backup").as_bytes(), 17).unwrap();
    assert_eq!(message.usage.cost.total.get(), 18.0);
}

#[tokio::test]
async fn the_reply_records_the_managed_effort() {
    let server = server_with(MockResponse::sse().body(reply_from("claude-managed"))).await;
    let mut m = managed_model();
    m.base_url = server.url();
    let options = opts().with_anthropic(
        AnthropicOptions::default()
            .with_thinking_enabled(true)
            .with_effort("xhigh".into()),
    );
    let events = collect(stream(&m, &updated_context(&m), options)).await;
    let last: &AssistantMessage = match events.last() {
        Some(arbor_ai::AssistantMessageEvent::Done { message, .. }) => message,
        other => panic!("expected done, got {other:?}"),
    };
    assert_eq!(last.extra["providerThinkingLevel"], json!("xhigh"));
    // And it is replayed as the marker of that turn next time.
    let next = Context {
        system_prompt: None,
        messages: vec![user("a"), Message::Assistant(last.clone()), user("b")].into(),
        tools: None,
    };
    let body = build_request(&m, &next, &opts()).unwrap().body;
    assert_eq!(
        body["messages"][1],
        json!({"role": "system", "content": [], "output_config": {"effort": "xhigh"}})
    );
}

fn prefer_tool(name: &str) -> Tool {
    let mut t = tool(name);
    t.extra.insert(
        "constrainedSampling".into(),
        json!({"type": "json_schema", "strict": "prefer"}),
    );
    t
}

#[tokio::test]
async fn a_strict_limits_rejection_is_resent_once_without_preferred_strict_tools() {
    let server = arbor_test_support::MockServer::start().await.unwrap();
    server.push(MockResponse::json(
        400,
        &json!({"type": "error", "error": {"type": "invalid_request_error",
                "message": "Too many strict tools (21). The maximum is 20."}}),
    ));
    server.push(MockResponse::sse().body(reply_from("claude-strict")));
    let m = with_compat(
        model(
            "anthropic-messages",
            "anthropic",
            "claude-strict",
            &server.url(),
        ),
        json!({"supportsStrictTools": true}),
    );
    let ctx = Context {
        system_prompt: None,
        messages: vec![user("hi")].into(),
        tools: Some(vec![prefer_tool("read")]),
    };
    let options = opts().with_session_id("strict-resend-session".into());
    let events = collect(stream(&m, &ctx, options.clone())).await;
    let Some(arbor_ai::AssistantMessageEvent::Done { message, .. }) = events.last() else {
        panic!("expected done, got {:?}", events.last());
    };
    assert_eq!(
        message.extra["diagnostics"][0]["type"],
        json!("anthropic_strict_tools_fallback")
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].json()["tools"][0]["strict"], json!(true));
    assert!(requests[1].json()["tools"][0].get("strict").is_none());
    // The session keeps sending the tool non-strict.
    let again = build_request(&m, &ctx, &options).unwrap().body;
    assert!(again["tools"][0].get("strict").is_none());
    // Other sessions still try strict.
    let other = opts().with_session_id("another-session".into());
    assert_eq!(
        build_request(&m, &ctx, &other).unwrap().body["tools"][0]["strict"],
        json!(true)
    );
}

#[tokio::test]
async fn other_400s_are_not_resent() {
    let server = arbor_test_support::MockServer::start().await.unwrap();
    server.push(MockResponse::json(
        400,
        &json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long"}}),
    ));
    let m = with_compat(
        model(
            "anthropic-messages",
            "anthropic",
            "claude-strict",
            &server.url(),
        ),
        json!({"supportsStrictTools": true}),
    );
    let ctx = Context {
        system_prompt: None,
        messages: vec![user("hi")].into(),
        tools: Some(vec![prefer_tool("read")]),
    };
    let events = collect(stream(&m, &ctx, opts())).await;
    assert!(matches!(
        events.last(),
        Some(arbor_ai::AssistantMessageEvent::Error { .. })
    ));
    assert_eq!(server.requests().len(), 1);
}

fn grammar_tool() -> Tool {
    let mut t = Tool {
        name: "apply".into(),
        description: "Apply a patch".into(),
        parameters: json!({"type": "object", "properties": {"patch": {"type": "string"}}, "required": ["patch"]}),
        extra: Default::default(),
    };
    t.extra.insert(
        "constrainedSampling".into(),
        json!({"type": "grammar", "variants": {"openai_lark": "start: /.+/s", "openai_regex": "^x$"}}),
    );
    t
}

fn grammar_model(base: &str) -> Model {
    with_compat(
        model("openai-responses", "openai", "gpt-grammar", base),
        json!({"supportsOpenAIGrammarTools": true}),
    )
}

#[test]
fn responses_sends_grammar_tools_as_custom_tools() {
    let m = grammar_model("https://api.openai.com/v1");
    let call: Message = serde_json::from_value(json!({"role": "assistant",
        "content": [{"type": "toolCall", "id": "call_1|ctc_1", "name": "apply", "arguments": {"patch": "*** x"}}],
        "api": "openai-responses", "provider": "openai", "model": "gpt-grammar",
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "toolUse", "timestamp": 1})).unwrap();
    let result: Message = serde_json::from_value(json!({"role": "toolResult", "toolCallId": "call_1|ctc_1",
        "toolName": "apply", "content": [{"type": "text", "text": "done"}], "isError": false, "timestamp": 2})).unwrap();
    let ctx = Context {
        system_prompt: None,
        messages: vec![user("patch it"), call, result].into(),
        tools: Some(vec![grammar_tool()]),
    };
    let body = build_request(&m, &ctx, &opts()).unwrap().body;
    insta::assert_json_snapshot!(
        "midconvo_responses_grammar",
        json!({"tools": body["tools"], "input": body["input"]})
    );
    // Without the compat it is an ordinary function tool.
    let plain = model(
        "openai-responses",
        "openai",
        "gpt-grammar",
        "https://api.openai.com/v1",
    );
    let body = build_request(&plain, &ctx, &opts()).unwrap().body;
    assert_eq!(body["tools"][0]["type"], json!("function"));
    // A grammar tool whose schema has no single required string fails before sending.
    let mut bad = grammar_tool();
    bad.parameters = json!({"type": "object", "properties": {}});
    let ctx = Context {
        tools: Some(vec![bad]),
        ..ctx
    };
    let err = build_request(&m, &ctx, &opts()).unwrap_err().to_string();
    assert!(
        err.contains("Tool \"apply\" cannot use grammar constrained sampling: grammar constrained sampling requires exactly one required string property."),
        "{err}"
    );
}

#[tokio::test]
async fn responses_streams_custom_tool_input_into_the_grammar_property() {
    let events = [
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "apply", "input": "a"}}),
        json!({"type": "response.custom_tool_call_input.delta", "output_index": 0, "delta": "\"b\n"}),
        json!({"type": "response.custom_tool_call_input.done", "output_index": 0, "input": "a\"b\nc"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "apply", "input": "a\"b\nc"}}),
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
    let m = grammar_model(&server.url());
    let ctx = Context {
        system_prompt: None,
        messages: vec![user("patch it")].into(),
        tools: Some(vec![grammar_tool()]),
    };
    let events = collect(stream(&m, &ctx, opts())).await;
    let deltas: String = events
        .iter()
        .filter_map(|e| match e {
            arbor_ai::AssistantMessageEvent::ToolcallDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    // The deltas spell the JSON of the arguments.
    assert_eq!(deltas, r#"{"patch":"a\"b\nc"}"#);
    let Some(arbor_ai::AssistantMessageEvent::Done { message, .. }) = events.last() else {
        panic!("expected done");
    };
    let arbor_ai::ContentBlock::ToolCall(call) = &message.content[0] else {
        panic!("expected a tool call");
    };
    assert_eq!(call.id, "call_1|ctc_1");
    assert_eq!(call.arguments, json!({"patch": "a\"b\nc"}));
}
