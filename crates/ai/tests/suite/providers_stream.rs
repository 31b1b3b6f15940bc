//! Stream-level behaviour shared by all providers: cancellation, retries, timeouts, the
//! registry, `complete`, request-setup failures.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor_ai::stream::{register_api_provider, unregister_api_provider, ApiProvider};
use arbor_ai::{
    complete, stream, AssistantMessageEvent, AssistantMessageEventStream, Context, Model,
    StopReason, StreamOptions,
};
use arbor_test_support::{sse_data, Ending, MockResponse, MockServer};
use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::providers_common::*;

fn oa_model(base: &str) -> Model {
    let mut m = model(
        "openai-completions",
        "openai",
        "gpt-test",
        &format!("{base}/v1"),
    );
    m.reasoning = false;
    m
}

fn first_chunks() -> String {
    sse_data(&[
        json!({"id": "c", "choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": null}]}),
        json!({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "read", "arguments": "{\"path\": \"x"}}]}, "finish_reason": null}]}),
    ])
}

fn ok_stream() -> String {
    let mut s = sse_data(&[
        json!({"id": "c", "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}),
    ]);
    s.push_str("data: [DONE]\n\n");
    s
}

#[tokio::test]
async fn cancellation_aborts_promptly_and_closes_the_connection() {
    let server = MockServer::start().await.unwrap();
    server.push(
        MockResponse::sse()
            .body(first_chunks())
            .ending(Ending::Hang),
    );
    let model = oa_model(&server.url());
    let cancel = CancellationToken::new();
    let options = StreamOptions::default()
        .with_api_key("k".into())
        .with_cancel(cancel.clone());
    let mut events = stream(&model, &simple_context(), options);
    let mut seen = Vec::new();
    // Read until the tool-call delta arrived, then cancel while the server keeps the body open.
    while let Some(event) = events.next().await {
        let is_tool_delta = matches!(event, AssistantMessageEvent::ToolcallDelta { .. });
        seen.push(event);
        if is_tool_delta {
            break;
        }
    }
    let started = Instant::now();
    cancel.cancel();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("stream ends promptly after cancel")
    {
        seen.push(event);
    }
    assert!(started.elapsed() < Duration::from_secs(2));
    let last = check_contract(&seen);
    insta::assert_snapshot!("stream_cancel_events", render(&seen));
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(last.error_message.as_deref(), Some("Request was aborted"));
    assert_eq!(last.text(), "Hel");
    assert_eq!(
        last.tool_calls().next().map(|c| c.arguments.clone()),
        Some(json!({"path": "x"})),
        "partial arguments are kept on abort"
    );
    assert!(
        server.wait_for_client_close(Duration::from_secs(5)).await,
        "the mock server saw the connection close"
    );
}

#[tokio::test]
async fn cancellation_before_headers_is_a_lone_abort() {
    let server = MockServer::start().await.unwrap();
    server.push(
        MockResponse::sse()
            .delay_headers(Duration::from_secs(30))
            .body(ok_stream()),
    );
    let model = oa_model(&server.url());
    let cancel = CancellationToken::new();
    let options = StreamOptions::default()
        .with_api_key("k".into())
        .with_cancel(cancel.clone());
    let handle =
        tokio::spawn(async move { collect(stream(&model, &simple_context(), options)).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    cancel.cancel();
    let events = tokio::time::timeout(Duration::from_secs(5), handle)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(events.len(), 1, "no start without headers");
    let last = check_contract(&events);
    assert_eq!(last.stop_reason, StopReason::Aborted);

    // An already-cancelled token never sends a request.
    let cancel = CancellationToken::new();
    cancel.cancel();
    let server = MockServer::start().await.unwrap();
    let model = oa_model(&server.url());
    let options = StreamOptions::default()
        .with_api_key("k".into())
        .with_cancel(cancel);
    let last = check_contract(&collect(stream(&model, &simple_context(), options)).await);
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let server = MockServer::start().await.unwrap();
    server.push(
        MockResponse::sse()
            .body(first_chunks())
            .ending(Ending::Hang),
    );
    let model = oa_model(&server.url());
    let options = StreamOptions::default().with_api_key("k".into());
    let mut events = stream(&model, &simple_context(), options);
    assert!(matches!(
        events.next().await,
        Some(AssistantMessageEvent::Start { .. })
    ));
    drop(events);
    assert!(server.wait_for_client_close(Duration::from_secs(5)).await);
}

#[tokio::test]
async fn retries_are_off_by_default_and_follow_retry_after_when_enabled() {
    let rate = json!({"error": {"message": "Rate limited", "type": "rate_limit"}});
    // Default: one attempt.
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::json(429, &rate).header("retry-after-ms", "10"));
    server.push(MockResponse::sse().body(ok_stream()));
    let model = oa_model(&server.url());
    let opts = |retries| {
        StreamOptions::default()
            .with_api_key("k".into())
            .with_max_retries(retries)
    };
    let last = check_contract(&collect(stream(&model, &simple_context(), opts(0))).await);
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(server.requests().len(), 1);

    // Enabled: 429 and 503 are retried, then the stream succeeds.
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::json(429, &rate).header("retry-after-ms", "10"));
    server.push(MockResponse::text(503, "busy").header("retry-after", "0"));
    server.push(MockResponse::sse().body(ok_stream()));
    let model = oa_model(&server.url());
    let events = collect(stream(&model, &simple_context(), opts(3))).await;
    let last = check_contract(&events);
    assert_eq!(last.stop_reason, StopReason::Stop);
    assert_eq!(server.requests().len(), 3);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, AssistantMessageEvent::Start { .. }))
            .count(),
        1
    );

    // Not retryable: 400, and `x-should-retry: false` wins over the status.
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::json(400, &rate));
    let model = oa_model(&server.url());
    check_contract(&collect(stream(&model, &simple_context(), opts(3))).await);
    assert_eq!(server.requests().len(), 1);
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::json(500, &rate).header("x-should-retry", "false"));
    let model = oa_model(&server.url());
    check_contract(&collect(stream(&model, &simple_context(), opts(3))).await);
    assert_eq!(server.requests().len(), 1);

    // A server-requested delay above the cap fails at once with pi's text.
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::json(429, &rate).header("retry-after", "120"));
    let model = oa_model(&server.url());
    let last = check_contract(&collect(stream(&model, &simple_context(), opts(3))).await);
    assert_eq!(
        last.error_message.as_deref(),
        Some("Server requested 120s retry delay (max: 60s). 429: {\"message\":\"Rate limited\",\"type\":\"rate_limit\"}")
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn connection_refused_and_header_timeout() {
    // Bind and drop a listener to get a port nobody listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let model = oa_model(&format!("http://127.0.0.1:{port}"));
    let options = StreamOptions::default().with_api_key("k".into());
    let events = collect(stream(&model, &simple_context(), options)).await;
    let last = check_contract(&events);
    assert_eq!(events.len(), 1);
    let text = last.error_message.unwrap_or_default();
    assert!(text.starts_with("Connection error.: "), "{text}");
    // Which server could not be reached (DECISIONS §9.40).
    assert!(
        text.ends_with(&format!("(http://127.0.0.1:{port}/v1/chat/completions)")),
        "{text}"
    );

    let server = MockServer::start().await.unwrap();
    server.push(
        MockResponse::sse()
            .delay_headers(Duration::from_secs(30))
            .body(ok_stream()),
    );
    let model = oa_model(&server.url());
    let options = StreamOptions::default()
        .with_api_key("k".into())
        .with_timeout(Duration::from_millis(100));
    let last = check_contract(&collect(stream(&model, &simple_context(), options)).await);
    assert_eq!(last.error_message.as_deref(), Some("Request timed out."));
}

#[tokio::test]
async fn a_stream_that_stalls_after_it_starts_times_out_and_a_steady_one_does_not() {
    // Headers and one delta, then silence: the idle timeout ends the stream after `start`.
    let server = MockServer::start().await.unwrap();
    server.push(
        MockResponse::sse()
            .body(first_chunks())
            .ending(Ending::Hang),
    );
    let model = oa_model(&server.url());
    let options = StreamOptions::default()
        .with_api_key("k".into())
        .with_timeout(Duration::from_millis(200));
    let started = Instant::now();
    let events = tokio::time::timeout(
        Duration::from_secs(10),
        collect(stream(&model, &simple_context(), options)),
    )
    .await
    .expect("the stalled stream must end by itself");
    let took = started.elapsed();
    assert!(matches!(
        events.first(),
        Some(AssistantMessageEvent::Start { .. })
    ));
    let last = check_contract(&events);
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(last.error_message.as_deref(), Some("Request timed out."));
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(
        arbor_ai::retry::is_retryable_assistant_error(&last),
        "a stall is worth a retry"
    );

    // Gaps shorter than the timeout, a whole stream longer than it: nothing is cut.
    let server = MockServer::start().await.unwrap();
    server.push(
        MockResponse::sse()
            .body(first_chunks())
            .delay(Duration::from_millis(150))
            .body(sse_data(&[
                json!({"id": "c", "choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": null}]}),
            ]))
            .delay(Duration::from_millis(150))
            .body(ok_stream()),
    );
    let model = oa_model(&server.url());
    let options = StreamOptions::default()
        .with_api_key("k".into())
        .with_timeout(Duration::from_millis(250));
    let last = check_contract(&collect(stream(&model, &simple_context(), options)).await);
    assert_ne!(
        last.stop_reason,
        StopReason::Error,
        "{:?}",
        last.error_message
    );
}

#[tokio::test]
async fn an_event_that_never_ends_is_cut_at_the_event_limit() {
    // A line that never ends: 70 MiB without a newline, then the connection stays open.
    let server = MockServer::start().await.unwrap();
    let mut body = first_chunks().into_bytes();
    body.extend_from_slice(b"data: ");
    body.extend(std::iter::repeat_n(b'a', 70 << 20));
    server.push(MockResponse::sse().body(body).ending(Ending::Hang));
    let model = oa_model(&server.url());
    let options = StreamOptions::default().with_api_key("k".into());
    let events = tokio::time::timeout(
        Duration::from_secs(60),
        collect(stream(&model, &simple_context(), options)),
    )
    .await
    .expect("the endless event must end the stream");
    let last = check_contract(&events);
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(
        last.error_message.as_deref(),
        Some("The provider's stream sent an event over 64 MiB without ending it")
    );
    assert!(!arbor_ai::retry::is_retryable_assistant_error(&last));
}

#[tokio::test]
async fn a_response_that_never_ends_is_cut_at_the_response_limit() {
    // Well-formed deltas forever: no event is large, the whole response is.
    let server = MockServer::start().await.unwrap();
    let delta = sse_data(&[
        json!({"id": "c", "choices": [{"index": 0, "delta": {"content": "flood "}, "finish_reason": null}]}),
    ])
    .repeat(200);
    server.push(
        MockResponse::sse()
            .body(first_chunks())
            .body(delta)
            .ending(Ending::RepeatLast),
    );
    let model = oa_model(&server.url());
    let options = StreamOptions::default()
        .with_api_key("k".into())
        .with_max_response_bytes(2 << 20)
        .with_max_retries(2);
    let started = Instant::now();
    let events = tokio::time::timeout(
        Duration::from_secs(30),
        collect(stream(&model, &simple_context(), options)),
    )
    .await
    .expect("the flood must end the stream");
    let last = check_contract(&events);
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(
        last.error_message.as_deref(),
        Some("The provider's response went over the limit of 2 MiB (maxResponseBytes); the reply was cut there")
    );
    assert!(!arbor_ai::retry::is_retryable_assistant_error(&last));
    assert_eq!(
        server.requests().len(),
        1,
        "a body-level failure is not resent"
    );
    // What arrived before the limit is kept on the message, under the limit.
    let text: usize = last
        .content
        .iter()
        .map(|b| match b {
            arbor_ai::ContentBlock::Text(t) => t.text.len(),
            _ => 0,
        })
        .sum();
    assert!(text > 0 && text < 2 << 20, "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(server.wait_for_client_close(Duration::from_secs(5)).await);

    // The per-event limit is configurable as well.
    let server = MockServer::start().await.unwrap();
    let mut body = first_chunks().into_bytes();
    body.extend_from_slice(b"data: ");
    body.extend(std::iter::repeat_n(b'a', 4096));
    server.push(MockResponse::sse().body(body).ending(Ending::Hang));
    let options = StreamOptions::default()
        .with_api_key("k".into())
        .with_max_event_bytes(1000);
    let model = oa_model(&server.url());
    let last = check_contract(&collect(stream(&model, &simple_context(), options)).await);
    assert_eq!(
        last.error_message.as_deref(),
        Some("The provider's stream sent an event over 1000 bytes without ending it")
    );
}

#[tokio::test]
async fn setup_failures_are_lone_error_events_and_complete_returns_the_message() {
    let model = model(
        "openai-completions",
        "groq",
        "m",
        "https://api.groq.invalid/v1",
    );
    let events = collect(stream(&model, &simple_context(), StreamOptions::default())).await;
    assert_eq!(events.len(), 1);
    let last = check_contract(&events);
    assert_eq!(
        last.error_message.as_deref(),
        Some("No API key for provider: groq")
    );

    let unknown = arbor_ai::Model {
        api: "carrier-pigeon".into(),
        ..model.clone()
    };
    let message = complete(&unknown, &Context::default(), StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("No API provider registered for api: carrier-pigeon")
    );

    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::sse().body(ok_stream()));
    let model = oa_model(&server.url());
    let options = StreamOptions::default().with_api_key("k".into());
    let message = complete(&model, &simple_context(), options).await;
    assert_eq!(
        (message.stop_reason, message.text()),
        (StopReason::Stop, "ok".to_string())
    );
    assert!(message.duration_ms.is_some());
}

struct CountingProvider(Arc<AtomicUsize>);

impl ApiProvider for CountingProvider {
    fn stream(&self, model: &Model, _: &Context, _: StreamOptions) -> AssistantMessageEventStream {
        self.0.fetch_add(1, Ordering::SeqCst);
        let mut message = arbor_ai::AssistantMessage {
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            stop_reason: StopReason::Stop,
            ..Default::default()
        };
        message.content.push(text_block("from registry"));
        Box::pin(futures::stream::iter(vec![AssistantMessageEvent::Done {
            reason: StopReason::Stop,
            message,
        }]))
    }
}

#[tokio::test]
async fn registered_providers_serve_their_api() {
    let calls = Arc::new(AtomicUsize::new(0));
    register_api_provider(
        "test-registry-api",
        Arc::new(CountingProvider(calls.clone())),
    );
    let m = model("test-registry-api", "p", "m", "http://unused");
    let message = complete(&m, &Context::default(), StreamOptions::default()).await;
    assert_eq!(message.text(), "from registry");
    let simple = arbor_ai::complete_simple(&m, &Context::default(), Default::default()).await;
    assert_eq!(simple.text(), "from registry");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(unregister_api_provider("test-registry-api"));
}

#[tokio::test]
async fn faux_provider_plugs_into_stream() {
    use arbor_ai::faux::{FauxProvider, FauxResponse};
    let faux = FauxProvider::default();
    faux.push(FauxResponse::text("hello from faux"));
    register_api_provider(faux.api(), Arc::new(faux.clone()));
    let m = faux.model();
    let message = complete(&m, &simple_context(), StreamOptions::default()).await;
    assert_eq!(message.text(), "hello from faux");
    assert_eq!(faux.call_count(), 1);
}
