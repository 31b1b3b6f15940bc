//! Anthropic message threads continued (DECISIONS §26.40): later requests of a session send
//! only the new messages with `thread: {type: "continue", previous_message_id}`, rejections
//! about the thread are resent in full, and an endpoint without threads turns them off for
//! the session.

use arbor_ai::{stream, AssistantMessage, AssistantMessageEvent, Context, Message, Model};
use arbor_ai::{StreamOptions, Tool};
use arbor_test_support::{sse_events, MockResponse, MockServer};
use serde_json::{json, Value};

use super::providers_common::{collect, model, user};

/// A threads model on the mock server (`compat.supportsMessageThreads`: the URL is not
/// Anthropic's own).
fn threads_model(server: &MockServer) -> Model {
    let mut m = model(
        "anthropic-messages",
        "anthropic",
        "claude-thread",
        &server.url(),
    );
    m.compat = Some(json!({"supportsMessageThreads": true}));
    m
}

fn options(session: &str) -> StreamOptions {
    StreamOptions::default()
        .with_api_key("k".into())
        .with_session_id(session.into())
}

fn read_tool() -> Tool {
    Tool {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        extra: Default::default(),
    }
}

/// A streamed text reply with message id `id`, answered by `model_id`.
fn reply(id: &str, model_id: &str, text: &str) -> MockResponse {
    let events = [
        json!({"type": "message_start", "message": {"id": id, "model": model_id,
               "usage": {"input_tokens": 10, "output_tokens": 0}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
        json!({"type": "message_stop"}),
    ];
    let named: Vec<(Option<&str>, String)> = events
        .iter()
        .map(|e| (e["type"].as_str(), e.to_string()))
        .collect();
    MockResponse::sse().body(sse_events(named.iter().map(|(n, d)| (*n, d.as_str()))))
}

fn rejection(status: u16, code: Option<&str>, message: &str) -> MockResponse {
    let mut error = json!({"type": "invalid_request_error", "message": message});
    if let Some(code) = code {
        error["details"] = json!({"error_code": code});
    }
    MockResponse::json(status, &json!({"type": "error", "error": error}))
}

fn context(messages: Vec<Message>) -> Context {
    Context {
        system_prompt: Some("Be brief.".into()),
        messages: messages.into(),
        tools: Some(vec![read_tool()]),
    }
}

async fn turn(m: &Model, ctx: &Context, session: &str) -> AssistantMessage {
    let events = collect(stream(m, ctx, options(session))).await;
    match events.last() {
        Some(AssistantMessageEvent::Done { message, .. }) => message.clone(),
        Some(AssistantMessageEvent::Error { error, .. }) => error.clone(),
        other => panic!("no terminal event: {other:?}"),
    }
}

#[tokio::test]
async fn later_requests_continue_the_thread_with_only_the_new_messages() {
    let server = MockServer::start().await.unwrap();
    server.push(reply("msg_a", "claude-thread", "one"));
    server.push(reply("msg_b", "claude-thread", "two"));
    server.push(reply("msg_c", "claude-thread", "three"));
    let m = threads_model(&server);
    let session = "threads-continue";

    let mut messages = vec![user("first")];
    let first = turn(&m, &context(messages.clone()), session).await;
    assert_eq!(first.response_id.as_deref(), Some("msg_a"));
    messages.extend([Message::Assistant(first), user("second")]);
    let second = turn(&m, &context(messages.clone()), session).await;
    messages.extend([Message::Assistant(second), user("third")]);
    turn(&m, &context(messages.clone()), session).await;

    let bodies: Vec<Value> = server
        .requests()
        .iter()
        .map(arbor_test_support::RecordedRequest::json)
        .collect();
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[0]["thread"], json!({"type": "create"}));
    assert!(bodies[0].get("system").is_some() && bodies[0].get("tools").is_some());
    // The second request: only the new user message, no system prompt, no tools.
    assert_eq!(
        bodies[1],
        json!({
            "model": "claude-thread",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "second",
                "cache_control": {"type": "ephemeral"}}]}],
            "max_tokens": bodies[0]["max_tokens"],
            "stream": true,
            "thread": {"type": "continue", "previous_message_id": "msg_a"}
        })
    );
    // The third continues after the second reply.
    assert_eq!(
        bodies[2]["thread"],
        json!({"type": "continue", "previous_message_id": "msg_b"})
    );
    assert_eq!(
        bodies[2]["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "third",
            "cache_control": {"type": "ephemeral"}}]}])
    );
    insta::assert_json_snapshot!("threads_continue_requests", bodies);
}

#[tokio::test]
async fn a_changed_prefix_opens_a_new_thread() {
    let server = MockServer::start().await.unwrap();
    server.push(reply("msg_a", "claude-thread", "one"));
    server.push(reply("msg_b", "claude-thread", "two"));
    server.push(reply("msg_c", "claude-thread", "three"));
    let m = threads_model(&server);
    let session = "threads-changed";
    let first = turn(&m, &context(vec![user("first")]), session).await;
    // The system prompt changed: the thread's own cannot be replaced by a `continue`.
    let mut changed = context(vec![user("first"), Message::Assistant(first), user("2")]);
    changed.system_prompt = Some("Be verbose.".into());
    let second = turn(&m, &changed, session).await;
    // An edited earlier message is another conversation too.
    let edited = context(vec![
        user("first, edited"),
        Message::Assistant(second),
        user("3"),
    ]);
    turn(&m, &edited, session).await;
    let bodies: Vec<Value> = server
        .requests()
        .iter()
        .map(arbor_test_support::RecordedRequest::json)
        .collect();
    assert_eq!(bodies[1]["thread"], json!({"type": "create"}));
    assert_eq!(bodies[1]["messages"].as_array().map(Vec::len), Some(3));
    assert_eq!(bodies[2]["thread"], json!({"type": "create"}));
    assert_eq!(bodies[2]["system"][0]["text"], json!("Be brief."));
}

#[tokio::test]
async fn a_reply_from_a_fallback_model_or_an_error_is_not_continued() {
    let server = MockServer::start().await.unwrap();
    server.push(reply("msg_a", "claude-other", "one"));
    server.push(rejection(500, None, "overloaded"));
    server.push(reply("msg_c", "claude-thread", "three"));
    let m = threads_model(&server);
    let session = "threads-fallback";
    let first = turn(&m, &context(vec![user("1")]), session).await;
    assert_eq!(first.response_model.as_deref(), Some("claude-other"));
    let ctx = context(vec![user("1"), Message::Assistant(first), user("2")]);
    let failed = turn(&m, &ctx, session).await;
    assert!(failed.error_message.is_some());
    turn(&m, &ctx, session).await;
    let bodies: Vec<Value> = server
        .requests()
        .iter()
        .map(arbor_test_support::RecordedRequest::json)
        .collect();
    assert_eq!(bodies.len(), 3);
    for body in &bodies {
        assert_eq!(body["thread"], json!({"type": "create"}));
    }
}

#[tokio::test]
async fn a_lost_thread_is_resent_as_a_new_thread() {
    let server = MockServer::start().await.unwrap();
    server.push(reply("msg_a", "claude-thread", "one"));
    server.push(rejection(
        404,
        Some("thread_not_found"),
        "thread msg_a not found",
    ));
    server.push(reply("msg_b", "claude-thread", "two"));
    server.push(reply("msg_c", "claude-thread", "three"));
    let m = threads_model(&server);
    let session = "threads-lost";
    let first = turn(&m, &context(vec![user("1")]), session).await;
    let mut messages = vec![user("1"), Message::Assistant(first), user("2")];
    let second = turn(&m, &context(messages.clone()), session).await;
    assert_eq!(second.stop_reason, arbor_ai::StopReason::Stop);
    let diagnostic = &second.extra["diagnostics"][0];
    assert_eq!(diagnostic["type"], json!("anthropic_thread_fallback"));
    assert_eq!(diagnostic["details"], json!({"reason": "thread_not_found"}));
    assert!(diagnostic["error"]["message"]
        .as_str()
        .is_some_and(|m| m.starts_with("404 ")));
    messages.extend([Message::Assistant(second), user("3")]);
    turn(&m, &context(messages), session).await;
    let bodies: Vec<Value> = server
        .requests()
        .iter()
        .map(arbor_test_support::RecordedRequest::json)
        .collect();
    assert_eq!(bodies.len(), 4);
    assert_eq!(bodies[1]["thread"]["type"], json!("continue"));
    // The resend is the complete request as a new thread…
    assert_eq!(bodies[2]["thread"], json!({"type": "create"}));
    assert_eq!(bodies[2]["messages"].as_array().map(Vec::len), Some(3));
    assert!(bodies[2].get("system").is_some());
    // …whose reply the next request continues.
    assert_eq!(
        bodies[3]["thread"],
        json!({"type": "continue", "previous_message_id": "msg_b"})
    );
}

#[tokio::test]
async fn an_endpoint_without_threads_turns_them_off_for_the_session() {
    let server = MockServer::start().await.unwrap();
    server.push(rejection(
        400,
        Some("thread_unsupported_request"),
        "threads are not available",
    ));
    server.push(reply("msg_a", "claude-thread", "one"));
    server.push(reply("msg_b", "claude-thread", "two"));
    server.push(rejection(400, None, "prompt is too long"));
    let m = threads_model(&server);
    let session = "threads-off";
    let first = turn(&m, &context(vec![user("1")]), session).await;
    assert_eq!(
        first.extra["diagnostics"][0]["details"],
        json!({"reason": "thread_unsupported_request"})
    );
    let ctx = context(vec![user("1"), Message::Assistant(first), user("2")]);
    turn(&m, &ctx, session).await;
    // Another session still opens threads; other 400s are not resent.
    let other = turn(&m, &context(vec![user("1")]), "threads-off-other").await;
    assert!(other.extra.get("diagnostics").is_none());
    let requests = server.requests();
    let bodies: Vec<Value> = requests
        .iter()
        .map(arbor_test_support::RecordedRequest::json)
        .collect();
    assert_eq!(bodies.len(), 4);
    assert_eq!(bodies[0]["thread"], json!({"type": "create"}));
    // The resend and the session's later requests: complete, without `thread`, with the beta.
    for (i, body) in bodies.iter().enumerate().take(3).skip(1) {
        assert!(body.get("thread").is_none(), "request {i}: {body}");
        assert!(body.get("system").is_some());
        assert!(requests[i]
            .header("anthropic-beta")
            .is_some_and(|b| b.contains("message-threads-2026-08-12")));
    }
    assert_eq!(bodies[2]["messages"].as_array().map(Vec::len), Some(3));
    assert_eq!(bodies[3]["thread"], json!({"type": "create"}));
}

#[tokio::test]
async fn an_unknown_thread_field_is_an_endpoint_without_threads() {
    let server = MockServer::start().await.unwrap();
    server.push(rejection(
        400,
        None,
        "thread: Extra inputs are not permitted",
    ));
    server.push(reply("msg_a", "claude-thread", "one"));
    let m = threads_model(&server);
    let first = turn(&m, &context(vec![user("1")]), "threads-extra-inputs").await;
    assert_eq!(first.stop_reason, arbor_ai::StopReason::Stop);
    assert_eq!(
        first.extra["diagnostics"][0]["details"],
        json!({"reason": "400"})
    );
    let bodies: Vec<Value> = server
        .requests()
        .iter()
        .map(arbor_test_support::RecordedRequest::json)
        .collect();
    assert!(bodies[1].get("thread").is_none());
}
