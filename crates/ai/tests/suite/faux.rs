//! The faux provider: event contract, chunking, determinism, usage, errors and aborts.

use std::time::{Duration, Instant};

use arbor_ai::event::{AssistantMessageEvent as E, MessageAccumulator};
use arbor_ai::faux::*;
use arbor_ai::types::{AssistantMessage, ContentBlock, Context, Message, StopReason, Tool};
use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn context(messages: Vec<Message>) -> Context {
    Context {
        system_prompt: None,
        messages: messages.into(),
        tools: None,
    }
}

fn hello() -> Context {
    context(vec![Message::user("hello", 1)])
}

/// Drains a faux stream; every stream read this way is checked against the contract.
async fn collect(faux: &FauxProvider, ctx: &Context, options: FauxStreamOptions) -> Vec<E> {
    let events: Vec<E> = faux.stream(&faux.model(), ctx, options).collect().await;
    check_contract(&events);
    events
}

/// Checks the event contract (DECISIONS §9.20) shared with the provider tests and, on top, the faux provider's
/// own shape (one block open at a time); returns the final message.
fn check_contract(events: &[E]) -> AssistantMessage {
    super::providers_common::check_contract(events);
    let terminal = events.iter().filter(|e| e.is_terminal()).count();
    assert_eq!(terminal, 1, "exactly one terminal event: {events:?}");
    assert!(
        events.last().unwrap().is_terminal(),
        "terminal event is last"
    );
    let final_message = events.last().unwrap().final_message().unwrap().clone();
    if events.len() == 1 {
        // A lone terminal event (setup failure, abort before the first event).
        return final_message;
    }
    assert!(matches!(events[0], E::Start { .. }), "start first");
    // Per index: start, deltas, end, in that order, indices increasing from 0.
    let mut open: Option<usize> = None;
    let mut next_index = 0;
    for e in &events[1..events.len() - 1] {
        match e {
            E::TextStart { content_index }
            | E::ThinkingStart { content_index }
            | E::ToolcallStart { content_index, .. } => {
                assert_eq!(open, None, "previous block closed");
                assert_eq!(*content_index, next_index);
                open = Some(*content_index);
                next_index += 1;
            }
            E::TextDelta { content_index, .. }
            | E::ThinkingDelta { content_index, .. }
            | E::ToolcallDelta { content_index, .. } => assert_eq!(open, Some(*content_index)),
            E::TextEnd { content_index, .. }
            | E::ThinkingEnd { content_index, .. }
            | E::ToolcallEnd { content_index, .. } => {
                assert_eq!(open, Some(*content_index));
                open = None;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    final_message
}

/// The partial rebuilt from every non-terminal event.
fn accumulate(events: &[E]) -> AssistantMessage {
    let mut acc = MessageAccumulator::new();
    for e in events.iter().filter(|e| !e.is_terminal()) {
        acc.apply(e);
    }
    acc.partial().clone()
}

#[tokio::test]
async fn text_response_streams_in_token_chunks() {
    let faux = FauxProvider::new();
    let text = "The quick brown fox jumps over the lazy dog, again and again and again.";
    faux.push(FauxResponse::text(text));
    let events = collect(&faux, &hello(), FauxStreamOptions::default()).await;
    let message = check_contract(&events);

    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            E::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert!(deltas.len() >= 3, "{deltas:?}");
    assert_eq!(deltas.concat(), text);
    for d in &deltas[..deltas.len() - 1] {
        let n = d.chars().count();
        assert!((12..=20).contains(&n), "3–5 tokens of 4 chars: {d:?}");
    }
    assert!(
        matches!(&events[events.len() - 2], E::TextEnd { content_index: 0, content } if content == text)
    );
    let E::Done { reason, .. } = events.last().unwrap() else {
        panic!()
    };
    assert_eq!(*reason, StopReason::Stop);

    assert_eq!(message.content, vec![ContentBlock::text(text)]);
    assert_eq!(
        (
            message.api.as_str(),
            message.provider.as_str(),
            message.model.as_str()
        ),
        ("faux", "faux", "faux-1")
    );
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert!(message.error_message.is_none());
    assert_eq!(message.duration_ms, None, "faux replies are untimed");
    // "user:hello" = 10 chars → 3 tokens; the 72-char text → 18 tokens.
    assert_eq!(
        (message.usage.input, message.usage.output),
        (3, text.len().div_ceil(4) as u64)
    );
    assert_eq!(
        message.usage.total_tokens,
        Some(3 + text.len().div_ceil(4) as u64)
    );
}

#[tokio::test]
async fn thinking_text_and_tool_calls_in_order() {
    let faux = FauxProvider::new();
    faux.push(
        FauxResponse::new()
            .with_thinking("Let me look at the files first, then decide.")
            .with_text("I'll list them.")
            .with_tool_call("bash", json!({"command": "ls -la", "timeout": 30}))
            .with_tool_call_id("my-id", "read", json!({"path": "README.md"})),
    );
    let events = collect(&faux, &hello(), FauxStreamOptions::default()).await;
    let message = check_contract(&events);
    let kinds: Vec<&str> = events
        .iter()
        .map(E::type_name)
        .filter(|t| !t.ends_with("delta"))
        .collect();
    assert_eq!(
        kinds,
        [
            "start",
            "thinking_start",
            "thinking_end",
            "text_start",
            "text_end",
            "toolcall_start",
            "toolcall_end",
            "toolcall_start",
            "toolcall_end",
            "done"
        ]
    );
    let E::Done { reason, .. } = events.last().unwrap() else {
        panic!()
    };
    assert_eq!(*reason, StopReason::ToolUse, "tool calls imply toolUse");

    // Tool-call deltas are the JSON text of the arguments.
    let args: String = events
        .iter()
        .filter_map(|e| match e {
            E::ToolcallDelta {
                content_index: 2,
                delta,
            } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(args, r#"{"command":"ls -la","timeout":30}"#);
    let calls: Vec<_> = message
        .tool_calls()
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    assert_eq!(calls, [("faux_call_0_0", "bash"), ("my-id", "read")]);
}

#[tokio::test]
async fn accumulated_partial_equals_the_final_message() {
    let faux = FauxProvider::new();
    faux.push(
        FauxResponse::new()
            .with_signed_thinking("secret plan ".repeat(20), "sig-123")
            .with_text("héllo wörld 🎉 ".repeat(15))
            .with_tool_call(
                "edit",
                json!({"path": "a.rs", "edits": [{"old": "x", "new": "y"}]}),
            )
            .response_id("resp_1"),
    );
    let events = collect(&faux, &hello(), FauxStreamOptions::default()).await;
    let final_message = check_contract(&events);
    let rebuilt = accumulate(&events);
    assert_eq!(rebuilt.content.len(), final_message.content.len());
    // The thinking signature is not streamed as an event; everything else is rebuilt exactly.
    assert_eq!(rebuilt.content[1..], final_message.content[1..]);
    let (ContentBlock::Thinking(a), ContentBlock::Thinking(b)) =
        (&rebuilt.content[0], &final_message.content[0])
    else {
        panic!()
    };
    assert_eq!(a.thinking, b.thinking);
    assert_eq!(b.thinking_signature.as_deref(), Some("sig-123"));
    assert_eq!(rebuilt.api, final_message.api);
    assert_eq!(rebuilt.model, final_message.model);
    assert_eq!(
        rebuilt.usage, final_message.usage,
        "start carries the usage"
    );
    assert_eq!(rebuilt.response_id.as_deref(), Some("resp_1"));
    assert_eq!(rebuilt.timestamp, final_message.timestamp);
}

#[tokio::test]
async fn same_seed_same_events_different_seed_different_chunks() {
    let text = "lorem ipsum dolor sit amet ".repeat(40);
    let run = |seed| {
        let text = text.clone();
        async move {
            let faux = FauxProvider::builder().seed(seed).build();
            faux.push(FauxResponse::text(text));
            let events = collect(&faux, &hello(), FauxStreamOptions::default()).await;
            events
                .into_iter()
                .filter(|e| !e.is_terminal() && !matches!(e, E::Start { .. }))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(run(7).await, run(7).await);
    assert_ne!(run(7).await, run(8).await);
}

#[tokio::test]
async fn token_size_is_configurable() {
    let faux = FauxProvider::builder().token_size(1, 1).build();
    faux.push(FauxResponse::text("abcdefghij"));
    let events = collect(&faux, &hello(), FauxStreamOptions::default()).await;
    let deltas: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            E::TextDelta { delta, .. } => Some(delta.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["abcd", "efgh", "ij"]);
}

#[tokio::test]
async fn empty_text_still_sends_one_delta() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text(""));
    let events = collect(&faux, &hello(), FauxStreamOptions::default()).await;
    check_contract(&events);
    assert_eq!(
        events.iter().map(E::type_name).collect::<Vec<_>>(),
        ["start", "text_start", "text_delta", "text_end", "done"]
    );
}

#[tokio::test]
async fn scripted_error_after_content() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("partial answer").error("503 overloaded"));
    let events = collect(&faux, &hello(), FauxStreamOptions::default()).await;
    let message = check_contract(&events);
    let E::Error { reason, error } = events.last().unwrap() else {
        panic!()
    };
    assert_eq!(*reason, StopReason::Error);
    assert_eq!(error.error_message.as_deref(), Some("503 overloaded"));
    assert_eq!(message.content, vec![ContentBlock::text("partial answer")]);
    assert!(arbor_ai::retry::is_retryable_assistant_error(&message));
}

#[tokio::test]
async fn setup_error_is_a_lone_error_event() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::setup_error("401 invalid x-api-key"));
    let events = collect(&faux, &hello(), FauxStreamOptions::default()).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let E::Error { reason, error } = &events[0] else {
        panic!()
    };
    assert_eq!(*reason, StopReason::Error);
    assert_eq!(
        error.error_message.as_deref(),
        Some("401 invalid x-api-key")
    );
    assert!(error.content.is_empty());
}

#[tokio::test]
async fn empty_queue_is_an_error_not_a_panic() {
    let faux = FauxProvider::new();
    let events = collect(&faux, &hello(), FauxStreamOptions::default()).await;
    assert_eq!(events.len(), 1);
    let E::Error { error, .. } = &events[0] else {
        panic!()
    };
    assert_eq!(error.error_message.as_deref(), Some(NO_MORE_RESPONSES));
    assert_eq!(error.stop_reason, StopReason::Error);
    assert_eq!(error.usage.input, 3, "the prompt was still 'sent'");
}

#[tokio::test]
async fn scripted_context_overflow_is_detected() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::setup_error(
        "prompt is too long: 213462 tokens > 200000 maximum",
    ));
    let events = collect(&faux, &hello(), FauxStreamOptions::default()).await;
    let message = events.last().unwrap().final_message().unwrap();
    assert!(arbor_ai::overflow::is_context_overflow(
        message,
        Some(200_000)
    ));
}

#[tokio::test]
async fn scripted_provider_abort_and_explicit_stop_reasons() {
    let faux = FauxProvider::new();
    faux.push_responses([
        FauxResponse::text("cut").aborted(),
        FauxResponse::text("long").stop_reason(StopReason::Length),
    ]);
    let aborted = collect(&faux, &hello(), FauxStreamOptions::default()).await;
    check_contract(&aborted);
    let E::Error { reason, error } = aborted.last().unwrap() else {
        panic!()
    };
    assert_eq!(
        (*reason, error.error_message.as_deref()),
        (StopReason::Aborted, Some(ABORTED_MESSAGE))
    );
    let length = collect(&faux, &hello(), FauxStreamOptions::default()).await;
    let E::Done { reason, .. } = length.last().unwrap() else {
        panic!()
    };
    assert_eq!(*reason, StopReason::Length);
}

#[tokio::test]
async fn cancel_mid_stream_ends_with_the_partial_message_aborted() {
    let faux = FauxProvider::new();
    let text = "word ".repeat(100);
    faux.push(FauxResponse::text(text.clone()).stall_after(2));
    let token = CancellationToken::new();
    let mut stream = faux.stream(
        &faux.model(),
        &hello(),
        FauxStreamOptions::default().with_cancel(token.clone()),
    );
    let mut seen = Vec::new();
    while let Some(e) = stream.next().await {
        let is_delta = matches!(e, E::TextDelta { .. });
        seen.push(e);
        if is_delta
            && seen
                .iter()
                .filter(|e| matches!(e, E::TextDelta { .. }))
                .count()
                == 2
        {
            token.cancel();
        }
    }
    let message = check_contract(&seen);
    let E::Error { reason, error } = seen.last().unwrap() else {
        panic!("{seen:?}")
    };
    assert_eq!(*reason, StopReason::Aborted);
    assert_eq!(error.error_message.as_deref(), Some(ABORTED_MESSAGE));
    let streamed: String = seen
        .iter()
        .filter_map(|e| match e {
            E::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        message.content,
        vec![ContentBlock::text(streamed.clone())],
        "the partial text so far"
    );
    assert!(streamed.len() < text.len());
    assert!(
        !seen.iter().any(|e| matches!(e, E::TextEnd { .. })),
        "no block end after an abort"
    );
}

#[tokio::test]
async fn cancel_before_the_first_event_is_a_lone_abort() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("never"));
    let token = CancellationToken::new();
    token.cancel();
    let events = collect(
        &faux,
        &hello(),
        FauxStreamOptions::default().with_cancel(token),
    )
    .await;
    assert_eq!(events.len(), 1);
    let E::Error { reason, error } = &events[0] else {
        panic!()
    };
    assert_eq!(*reason, StopReason::Aborted);
    assert!(error.content.is_empty());
    assert_eq!(error.usage.input, 0, "nothing was generated");
}

#[tokio::test]
async fn cancel_during_the_first_byte_delay() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("slow").delay(Duration::from_secs(30)));
    let token = CancellationToken::new();
    let canceller = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let events = collect(
        &faux,
        &hello(),
        FauxStreamOptions::default().with_cancel(token),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the wait was interrupted"
    );
    assert_eq!(events.len(), 1);
    assert!(matches!(
        &events[0],
        E::Error {
            reason: StopReason::Aborted,
            ..
        }
    ));
}

#[tokio::test]
async fn chunk_delay_paces_the_deltas() {
    let faux = FauxProvider::builder().token_size(1, 1).build();
    faux.push(FauxResponse::text("a".repeat(20)).chunk_delay(Duration::from_millis(10)));
    let started = Instant::now();
    let events = collect(&faux, &hello(), FauxStreamOptions::default()).await;
    check_contract(&events);
    // Five chunks of four characters, each after a 10 ms wait: at least 50 ms in total.
    assert!(started.elapsed() >= Duration::from_millis(50));
}

#[tokio::test]
async fn stall_without_a_token_never_finishes() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("hang").stall_after(0));
    let mut stream = faux.stream(&faux.model(), &hello(), FauxStreamOptions::default());
    assert!(matches!(stream.next().await, Some(E::Start { .. })));
    assert!(matches!(stream.next().await, Some(E::TextStart { .. })));
    let next = tokio::time::timeout(Duration::from_millis(50), stream.next()).await;
    assert!(next.is_err(), "stalled until cancelled");
}

#[tokio::test]
async fn requests_are_recorded_and_dynamic_steps_see_them() {
    let faux = FauxProvider::new();
    faux.set_responses([
        FauxStep::from(FauxResponse::text("first")),
        FauxStep::dynamic(|req| {
            let last = req.context.messages.last().map(|m| match m {
                Message::User(u) => u.content.joined_text(""),
                _ => String::new(),
            });
            FauxResponse::text(format!("echo: {}", last.unwrap_or_default()))
        }),
    ]);
    assert_eq!(faux.pending_responses(), 2);
    collect(&faux, &hello(), FauxStreamOptions::default()).await;
    let ctx = context(vec![Message::user("hello", 1), Message::user("ping", 2)]);
    let events = collect(
        &faux,
        &ctx,
        FauxStreamOptions::default().with_session_id("s".into()),
    )
    .await;
    let message = events.last().unwrap().final_message().unwrap();
    assert_eq!(message.text(), "echo: ping");
    assert_eq!(faux.call_count(), 2);
    assert_eq!(faux.pending_responses(), 0);
    let requests = faux.requests();
    assert_eq!(requests[1].index, 1);
    assert_eq!(requests[1].context, ctx);
    assert_eq!(requests[1].session_id.as_deref(), Some("s"));
    assert_eq!(faux.last_request().unwrap().model.id, "faux-1");
}

#[tokio::test]
async fn usage_counts_system_prompt_and_tools() {
    let faux = FauxProvider::new();
    faux.push(FauxResponse::text("hi there"));
    let ctx = Context {
        system_prompt: Some("sys".into()),
        ..hello()
    };
    let events = collect(&faux, &ctx, FauxStreamOptions::default()).await;
    let usage = &events.last().unwrap().final_message().unwrap().usage;
    // "system:sys" + "\n\n" + "user:hello" = 22 chars → 6 tokens; "hi there" → 2 tokens.
    assert_eq!((usage.input, usage.output), (6, 2));

    faux.push(FauxResponse::text("x"));
    let tool: Tool = serde_json::from_value(
        json!({"name": "bash", "description": "run", "parameters": {"type": "object"}}),
    )
    .unwrap();
    let with_tools = Context {
        tools: Some(vec![tool]),
        ..ctx
    };
    let events = collect(&faux, &with_tools, FauxStreamOptions::default()).await;
    let usage = &events.last().unwrap().final_message().unwrap().usage;
    assert!(usage.input > 6, "tools add prompt tokens: {}", usage.input);
}

#[tokio::test]
async fn session_prompt_cache_reads_the_common_prefix() {
    let faux = FauxProvider::new();
    faux.push_responses([FauxResponse::text("hi"), FauxResponse::text("ok")]);
    let opts = || FauxStreamOptions::default().with_session_id("sess".into());

    let first = collect(&faux, &hello(), opts()).await;
    let u = &first.last().unwrap().final_message().unwrap().usage;
    assert_eq!(
        (u.input, u.cache_read, u.cache_write),
        (0, 0, 3),
        "everything written to the cache"
    );

    let assistant: AssistantMessage = first.last().unwrap().final_message().unwrap().clone();
    let ctx = context(vec![
        Message::user("hello", 1),
        Message::Assistant(assistant),
        Message::user("more", 3),
    ]);
    let second = collect(&faux, &ctx, opts()).await;
    let u = &second.last().unwrap().final_message().unwrap().usage;
    // Prompt "user:hello\n\nassistant:hi\n\nuser:more" = 35 chars → 9 tokens; prefix 10 → 3.
    assert_eq!((u.input, u.cache_read, u.cache_write), (0, 3, 6));
    assert_eq!(u.total_tokens, Some(3 + 6 + 1));

    // Caching off: plain input.
    faux.push(FauxResponse::text("z"));
    let third = collect(&faux, &ctx, opts().with_cache(false)).await;
    let u = &third.last().unwrap().final_message().unwrap().usage;
    assert_eq!((u.input, u.cache_read, u.cache_write), (9, 0, 0));
}

#[tokio::test]
async fn explicit_usage_and_model_prices_give_a_cost() {
    let mut spec = FauxModelSpec::new("priced");
    spec.cost = [3.0, 15.0, 0.3, 3.75];
    spec.context_window = 1000;
    let faux = FauxProvider::builder()
        .provider("fake")
        .api("fake-api")
        .model(spec)
        .build();
    assert_eq!(faux.model().id, "priced");
    assert_eq!(faux.get_model("priced").unwrap().provider, "fake");
    assert!(faux.get_model("faux-1").is_none());
    let usage: arbor_ai::types::Usage = serde_json::from_value(json!({
        "input": 1_000_000, "output": 1_000_000, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2_000_000,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    })).unwrap();
    faux.push(FauxResponse::text("paid").usage(usage));
    let events = collect(&faux, &hello(), FauxStreamOptions::default()).await;
    let m = events.last().unwrap().final_message().unwrap();
    assert_eq!((m.api.as_str(), m.provider.as_str()), ("fake-api", "fake"));
    assert_eq!(m.usage.cost.total.get(), 18.0);
}

#[tokio::test]
async fn from_message_replays_a_recorded_reply() {
    let recorded: AssistantMessage = serde_json::from_value(json!({
        "role": "assistant", "api": "anthropic-messages", "provider": "anthropic", "model": "claude",
        "content": [{"type": "text", "text": "recorded"}, {"type": "toolCall", "id": "t1", "name": "ls", "arguments": {}}],
        "stopReason": "toolUse", "timestamp": 5,
        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    })).unwrap();
    let faux = FauxProvider::new();
    faux.push(FauxResponse::from_message(&recorded));
    let events = collect(&faux, &hello(), FauxStreamOptions::default()).await;
    let m = check_contract(&events);
    assert_eq!(m.content, recorded.content);
    assert_eq!(m.stop_reason, StopReason::ToolUse);
    assert_eq!((m.usage.input, m.usage.output), (10, 5));
    assert_eq!(m.provider, "faux", "the requested model's identity");
}

#[tokio::test]
async fn clones_share_the_queue_and_streams_are_send() {
    let faux = FauxProvider::new();
    let clone = faux.clone();
    clone.push(FauxResponse::text("shared"));
    let model = faux.model();
    let ctx = hello();
    let stream = faux.stream(&model, &ctx, FauxStreamOptions::default());
    let events: Vec<E> = tokio::spawn(async move { stream.collect().await })
        .await
        .unwrap();
    check_contract(&events);
    assert_eq!(
        events.last().unwrap().final_message().unwrap().text(),
        "shared"
    );
    assert_eq!(clone.call_count(), 1);
}

#[tokio::test]
async fn blocks_that_cannot_stream_are_left_out() {
    let faux = FauxProvider::new();
    let image: ContentBlock =
        serde_json::from_value(json!({"type": "image", "data": "AA", "mimeType": "image/png"}))
            .unwrap();
    let unknown: ContentBlock =
        serde_json::from_value(json!({"type": "server_tool_use", "id": "s"})).unwrap();
    faux.push(
        FauxResponse::new()
            .with_block(image)
            .with_text("a")
            .with_block(unknown)
            .with_text("b"),
    );
    let events = collect(&faux, &hello(), FauxStreamOptions::default()).await;
    let message = check_contract(&events);
    assert_eq!(
        message.content,
        vec![ContentBlock::text("a"), ContentBlock::text("b")]
    );
    assert_eq!(accumulate(&events).content, message.content);
}
