//! The agent loop and `AgentHarness` on the faux provider: one reviewed event-stream snapshot
//! per scenario of issue 9, and after each scenario the check that
//! the session projects to exactly what the model is sent on the next turn.

use std::sync::Arc;
use std::time::Duration;

use arbor_agent::agent::{
    AgentError, ToolCallDecision, ToolCallRequest, ToolCallResult, ToolResultPatch,
};
use arbor_agent::harness::{HarnessHook, HookResult, Phase, QueueMode};
use arbor_ai::faux::FauxResponse;
use arbor_ai::{ContentBlock, StopReason, ThinkingLevel};
use serde_json::{json, Value};

use super::harness_support::*;

#[tokio::test]
async fn text_only() {
    let r = rig();
    r.faux.push(FauxResponse::text("Hello there"));
    let reply = r.harness.prompt("Hi", &[]).await.unwrap();
    assert_eq!(reply.text(), "Hello there");
    assert_eq!(reply.stop_reason, StopReason::Stop);
    assert_eq!(r.harness.phase(), Phase::Idle);
    insta::assert_snapshot!(r.event_lines());
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn parallel_tool_calls_complete_out_of_order_results_in_source_order() {
    let r = rig();
    r.faux.push(
        FauxResponse::new()
            .with_tool_call("echo", json!({"text": "slow", "delayMs": 60}))
            .with_tool_call("echo", json!({"text": "fast", "delayMs": 1, "updates": 2})),
    );
    r.faux.push(FauxResponse::text("both done"));
    r.harness.prompt("run both", &[]).await.unwrap();
    let lines = r.event_lines();
    // Ends in completion order (fast first), results in source order (slow first).
    let ends: Vec<&str> = lines
        .lines()
        .filter(|l| l.contains("\"tool_execution_end\""))
        .collect();
    assert!(
        ends[0].contains("fast") && ends[1].contains("slow"),
        "{lines}"
    );
    insta::assert_snapshot!(lines);
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn a_sequential_tool_makes_the_batch_sequential() {
    let r = rig();
    r.faux.push(
        FauxResponse::new()
            .with_tool_call("echo", json!({"text": "first", "delayMs": 30}))
            .with_tool_call("seq", json!({"text": "second"})),
    );
    r.faux.push(FauxResponse::text("done"));
    r.harness.prompt("go", &[]).await.unwrap();
    let types = r.types();
    let seq: Vec<&str> = types
        .iter()
        .map(String::as_str)
        .filter(|t| t.starts_with("tool_execution") || *t == "message_end")
        .collect();
    // start, end, result per call: no overlap.
    assert_eq!(
        &seq[2..8],
        [
            "tool_execution_start",
            "tool_execution_end",
            "message_end",
            "tool_execution_start",
            "tool_execution_end",
            "message_end"
        ],
        "{types:?}"
    );
    insta::assert_snapshot!(r.event_lines());
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn a_tool_that_fails_becomes_an_error_result() {
    let r = rig();
    r.faux.push(FauxResponse::tool_call("fail", json!({})));
    r.faux.push(FauxResponse::text("sorry"));
    r.harness.prompt("try", &[]).await.unwrap();
    insta::assert_snapshot!(r.event_lines());
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn validation_coerces_then_reports_pi_text() {
    let r = rig();
    r.faux.push(
        FauxResponse::new()
            .with_tool_call(
                "count",
                json!({"n": "3", "tags": "solo", "verbose": "true"}),
            )
            .with_tool_call("count", json!({"n": -1, "tags": ["a"], "extra": 1})),
    );
    r.faux.push(FauxResponse::text("ok"));
    r.harness.prompt("count", &[]).await.unwrap();
    let lines = r.event_lines();
    assert!(
        lines.contains(r#"{\"n\":3,\"tags\":[\"solo\"],\"verbose\":true}"#),
        "{lines}"
    );
    assert!(
        lines.contains(r#"Validation failed for tool \"count\":\n  - "#),
        "{lines}"
    );
    assert!(lines.contains("Received arguments:"), "{lines}");
    insta::assert_snapshot!(lines);
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn unknown_tool_is_an_error_result() {
    let r = rig();
    r.faux
        .push(FauxResponse::tool_call("teleport", json!({"to": "mars"})));
    r.faux.push(FauxResponse::text("cannot"));
    r.harness.prompt("go", &[]).await.unwrap();
    let lines = r.event_lines();
    assert!(lines.contains("Tool teleport not found"), "{lines}");
    insta::assert_snapshot!(lines);
    r.assert_next_turn_matches_session().await;
}

/// pi-agent-core's rule (DECISIONS §31.14): a call that ran carries `durationMs` on its end
/// event and its stored result; one settled without running carries none.
#[tokio::test]
async fn a_call_that_ran_records_its_duration_and_one_that_did_not_records_none() {
    let r = rig();
    r.faux.push(
        FauxResponse::new()
            .with_tool_call("echo", json!({"text": "hi", "delayMs": 30}))
            .with_tool_call("teleport", json!({})),
    );
    r.faux.push(FauxResponse::text("done"));
    r.harness.prompt("go", &[]).await.unwrap();
    let events = r.events.lock().unwrap().clone();
    let duration = |kind: &str, name: &str| -> Option<u64> {
        let e = events
            .iter()
            .find(|e| {
                e["type"] == kind
                    && (e["toolName"] == name
                        || e.pointer("/message/toolName") == Some(&json!(name)))
            })
            .unwrap_or_else(|| panic!("no {kind} for {name}"));
        e.get("durationMs")
            .or_else(|| e.pointer("/message/durationMs"))
            .map(|d| d.as_u64().unwrap())
    };
    assert!(duration("tool_execution_end", "echo").unwrap() >= 30);
    assert!(duration("message_end", "echo").unwrap() >= 30);
    assert_eq!(duration("tool_execution_end", "teleport"), None);
    assert_eq!(duration("message_end", "teleport"), None);
    let stored: Vec<Value> = r
        .session
        .entries()
        .await
        .unwrap()
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .filter(|e| e.pointer("/message/role") == Some(&json!("toolResult")))
        .collect();
    assert_eq!(stored.len(), 2);
    assert!(
        stored[0].pointer("/message/durationMs").is_some(),
        "{stored:?}"
    );
    assert!(
        stored[1].pointer("/message/durationMs").is_none(),
        "{stored:?}"
    );
}

#[tokio::test]
async fn length_stop_fails_every_call_without_running_it() {
    let r = rig();
    r.faux.push(
        FauxResponse::new()
            .with_tool_call("echo", json!({"text": "a"}))
            .with_tool_call("fail", json!({}))
            .stop_reason(StopReason::Length),
    );
    r.faux.push(FauxResponse::text("retrying"));
    r.harness.prompt("go", &[]).await.unwrap();
    let lines = r.event_lines();
    assert_eq!(
        lines
            .matches("was not executed: the response hit the output token limit")
            .count(),
        10,
        "{lines}"
    );
    assert!(!lines.contains("disk on fire"), "{lines}");
    insta::assert_snapshot!(lines);
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn steering_is_taken_after_the_tool_batch() {
    let r = rig();
    r.faux.push(FauxResponse::tool_call(
        "echo",
        json!({"text": "x", "delayMs": 80}),
    ));
    r.faux.push(FauxResponse::text("steered"));
    let h = r.harness.clone();
    let steer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        h.steer("actually, stop", &[]).unwrap();
    });
    r.harness.prompt("work", &[]).await.unwrap();
    steer.await.unwrap();
    // The second request carries the steering message after the tool result.
    let req = r.faux.requests()[1].clone();
    let roles: Vec<&str> = req
        .context
        .messages
        .iter()
        .map(arbor_ai::Message::role)
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "user"]);
    insta::assert_snapshot!(r.event_lines());
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn follow_ups_run_when_the_agent_would_stop() {
    let r = rig();
    r.faux
        .push(FauxResponse::text("first").delay(Duration::from_millis(40)));
    r.faux.push(FauxResponse::text("second"));
    r.faux.push(FauxResponse::text("third"));
    r.harness.set_follow_up_mode(QueueMode::OneAtATime);
    let h = r.harness.clone();
    let q = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        h.follow_up("and then?", &[]).unwrap();
        h.follow_up("and finally?", &[]).unwrap();
    });
    let reply = r.harness.prompt("start", &[]).await.unwrap();
    q.await.unwrap();
    assert_eq!(reply.text(), "third");
    assert_eq!(r.faux.call_count(), 3);
    insta::assert_snapshot!(r.event_lines());
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn next_turn_queue_is_prepended_to_the_next_prompt() {
    let r = rig();
    r.harness.next_turn("context first", &[]);
    assert!(r.harness.steer("x", &[]).is_err());
    r.faux.push(FauxResponse::text("got both"));
    r.harness.prompt("the prompt", &[]).await.unwrap();
    let req = r.faux.last_request().unwrap();
    let texts: Vec<String> = req
        .context
        .messages
        .iter()
        .map(|m| {
            serde_json::to_value(m).unwrap()["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(texts, ["context first", "the prompt"]);
    insta::assert_snapshot!(r.event_lines());
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn abort_mid_stream_ends_promptly_with_aborted() {
    let r = rig();
    r.faux.push(
        FauxResponse::text("a very long answer that streams slowly ".repeat(20))
            .chunk_delay(Duration::from_millis(5)),
    );
    let h = r.harness.clone();
    let aborter = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        let started = std::time::Instant::now();
        h.abort().await;
        started.elapsed()
    });
    let reply = r.harness.prompt("talk", &[]).await.unwrap();
    let took = aborter.await.unwrap();
    assert!(took < Duration::from_millis(500), "abort took {took:?}");
    assert_eq!(reply.stop_reason, StopReason::Aborted);
    let types = r.types();
    assert_eq!(
        &types[types.len() - 6..],
        [
            "message_end",
            "turn_end",
            "save_point",
            "agent_end",
            "settled",
            "abort"
        ],
        "{types:?}"
    );
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn abort_mid_tool_ends_the_tool_and_the_run() {
    let r = rig();
    r.faux.push(FauxResponse::tool_call("hang", json!({})));
    let h = r.harness.clone();
    let aborter = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        h.abort().await
    });
    let reply = tokio::time::timeout(Duration::from_secs(5), r.harness.prompt("hang", &[]))
        .await
        .expect("abort ends a tool that ignores cancellation")
        .unwrap();
    aborter.await.unwrap();
    assert_eq!(reply.stop_reason, StopReason::Aborted);
    // No request after the abort.
    assert_eq!(r.faux.call_count(), 1);
    insta::assert_snapshot!(r.event_lines());
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn setters_while_busy_land_after_turn_end() {
    let r = rig();
    r.faux.push(FauxResponse::tool_call(
        "echo",
        json!({"text": "x", "delayMs": 60}),
    ));
    r.faux.push(FauxResponse::text("done"));
    let h = r.harness.clone();
    let setter = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        h.set_thinking_level(ThinkingLevel::High).await.unwrap();
        h.set_active_tools(vec!["echo".into(), "count".into()])
            .await
            .unwrap();
        assert_eq!(h.pending_writes().len(), 2);
    });
    r.harness.prompt("go", &[]).await.unwrap();
    setter.await.unwrap();
    let lines = r.event_lines();
    assert!(
        lines.contains(r#"{"type":"save_point","hadPendingMutations":true}"#),
        "{lines}"
    );
    // The second request already uses the new settings.
    let reqs = r.faux.requests();
    let names: Vec<String> = reqs[1]
        .context
        .tools
        .as_ref()
        .unwrap()
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(names, ["echo", "count"]);
    // Entry order: the writes land after the first turn's messages.
    let types: Vec<String> = r
        .session
        .entries()
        .await
        .unwrap()
        .iter()
        .map(|e| e.entry_type().to_string())
        .collect();
    assert_eq!(
        types,
        [
            "message",
            "message",
            "message",
            "thinking_level_change",
            "active_tools_change",
            "message"
        ]
    );
    insta::assert_snapshot!(lines);
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn provider_error_turn() {
    let r = rig();
    r.faux
        .push(FauxResponse::text("partial").error("529 overloaded"));
    let reply = r.harness.prompt("hi", &[]).await.unwrap();
    assert_eq!(reply.stop_reason, StopReason::Error);
    assert_eq!(reply.error_message.as_deref(), Some("529 overloaded"));
    insta::assert_snapshot!(r.event_lines());
    r.assert_next_turn_matches_session().await;
}

struct Guard;

#[async_trait::async_trait]
impl HarnessHook for Guard {
    async fn tool_call(&self, request: ToolCallRequest<'_>) -> HookResult<ToolCallDecision> {
        Ok((request.call.name == "fail").then(|| ToolCallDecision {
            block: true,
            reason: Some("fail is not allowed here".into()),
            terminate: false,
            arguments: None,
        }))
    }
    async fn tool_result(&self, result: ToolCallResult<'_>) -> HookResult<ToolResultPatch> {
        Ok((result.call.name == "echo").then(|| ToolResultPatch {
            content: Some(vec![ContentBlock::text("[patched] echo ran")]),
            ..ToolResultPatch::default()
        }))
    }
}

/// Registered after `Guard`: its opinion wins where it has one.
struct Lenient;

#[async_trait::async_trait]
impl HarnessHook for Lenient {
    async fn tool_result(&self, result: ToolCallResult<'_>) -> HookResult<ToolResultPatch> {
        let _: Result<(), AgentError> = Ok(());
        Ok((result.call.name == "seq").then(|| ToolResultPatch {
            is_error: Some(true),
            ..ToolResultPatch::default()
        }))
    }
}

#[tokio::test]
async fn hooks_block_a_tool_and_patch_a_result() {
    let r = rig();
    r.harness.add_hook(Arc::new(Guard));
    r.harness.add_hook(Arc::new(Lenient));
    r.faux.push(
        FauxResponse::new()
            .with_tool_call("fail", json!({}))
            .with_tool_call("echo", json!({"text": "hi"})),
    );
    r.faux.push(FauxResponse::text("ok"));
    r.harness.prompt("go", &[]).await.unwrap();
    let lines = r.event_lines();
    assert!(lines.contains("fail is not allowed here"), "{lines}");
    assert!(lines.contains("[patched] echo ran"), "{lines}");
    assert!(!lines.contains("disk on fire"), "{lines}");
    insta::assert_snapshot!(lines);
    r.assert_next_turn_matches_session().await;
}
