//! "A 1,000-turn session stays O(1) per turn" without timing: the request path tallies its
//! per-message work (`arbor_ai::work`: messages converted, transformed, estimated, projected,
//! copied), and the tallies of a window of prompts must be the same at prompt 100 as at prompt
//! 2,000 (DECISIONS §20.21). Any pass over the whole context on the turn path — a re-projection,
//! a re-conversion, a token estimate of the transcript, a copy of a shared list — makes the late
//! window's tallies larger and fails this test.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arbor_agent::agent::{AgentEvent, ToolRef};
use arbor_agent::compaction::CompactionSettings;
use arbor_agent::harness::{
    AgentHarness, HarnessOptions, PolicyControl, PolicyObserver, PromptPolicy, PromptRetry,
};
use arbor_agent::session::{MemoryStorage, Session};
use arbor_ai::event::{AssistantMessageEvent, AssistantMessageEventStream};
use arbor_ai::stream::{ApiProvider, StreamOptions};
use arbor_ai::work::{Tally, Work};
use arbor_ai::{AssistantMessage, ContentBlock, Context, Model, StopReason, ToolCall};
use serde_json::json;

use super::harness_support::EchoTool;

/// Answers every other request with an `echo` call and the rest with text, reporting usage the
/// way real providers do. Keeps nothing of the request (a provider that kept the message list
/// would make the next append copy it).
struct ToolThenText {
    requests: AtomicU64,
}

impl ApiProvider for ToolThenText {
    fn stream(
        &self,
        model: &Model,
        _context: &Context,
        _options: StreamOptions,
    ) -> AssistantMessageEventStream {
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        let partial = AssistantMessage {
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            stop_reason: StopReason::Pending,
            timestamp: arbor_ai::time::now_ms().into(),
            ..AssistantMessage::default()
        };
        let mut done = partial.clone();
        if n.is_multiple_of(2) {
            done.content = vec![ContentBlock::ToolCall(ToolCall::new(
                format!("call_{n}"),
                "echo",
                json!({"text": "x"}),
            ))];
            done.stop_reason = StopReason::ToolUse;
        } else {
            done.content = vec![ContentBlock::text("ok")];
            done.stop_reason = StopReason::Stop;
        }
        done.usage.input = 100 + n;
        done.usage.output = 1;
        let reason = done.stop_reason;
        Box::pin(futures::stream::iter([
            AssistantMessageEvent::Start { partial },
            AssistantMessageEvent::Done {
                reason,
                message: done,
            },
        ]))
    }
}

fn harness() -> AgentHarness {
    let session = Arc::new(Session::new(Arc::new(MemoryStorage::new("/work/p"))));
    let model = arbor_ai::faux::FauxProvider::new().model();
    let tools: Vec<ToolRef> = vec![Arc::new(EchoTool)];
    let h = AgentHarness::new(
        session,
        Arc::new(ToolThenText {
            requests: AtomicU64::new(0),
        }),
        HarnessOptions::new(model).with_tools(tools),
    )
    .unwrap();
    // A subscriber like the app's: it sees every event (and drops it).
    let seen = Arc::new(AtomicU64::new(0));
    h.subscribe(move |_e: &AgentEvent| {
        seen.fetch_add(1, Ordering::Relaxed);
    });
    h
}

/// How each prompt is sent.
#[derive(Clone, Copy)]
enum Send {
    Prompt,
    /// The app's path: the prompt policy's checks after each run (never triggered here).
    Policy,
}

/// Says nothing: no retry or compaction happens in these runs.
struct Silent;

impl PolicyObserver for Silent {
    fn retry_scheduled(&self, _: u32, _: u32, _: u64, _: &str) {}
    fn retry_finished(&self, _: bool, _: u32, _: Option<&str>) {}
    fn compacting(&self, _: &str) {}
    fn compaction_failed(&self, _: &arbor_agent::agent::AgentError) {}
}

async fn send(h: &AgentHarness, how: Send, policy: &PromptPolicy) {
    let reply = match how {
        Send::Prompt => h.prompt("hi", &[]).await.map_err(|e| e.to_string()),
        Send::Policy => h
            .prompt_with_policy("hi", &[], policy, &Silent, &PolicyControl::new(policy))
            .await
            .map_err(|e| e.to_string()),
    }
    .unwrap();
    assert_eq!(reply.stop_reason, StopReason::Stop);
}

/// The work tallied over `n` prompts.
async fn window(h: &AgentHarness, how: Send, policy: &PromptPolicy, n: u32) -> Tally {
    let before = Tally::now();
    for _ in 0..n {
        send(h, how, policy).await;
    }
    Tally::now().since(&before)
}

async fn assert_constant_per_turn(how: Send) {
    let h = harness();
    let policy = PromptPolicy {
        retry: PromptRetry {
            enabled: true,
            max_retries: 3,
            base_delay_ms: 2000,
            max_agent_delay_ms: 60_000,
        },
        auto_compaction: true,
        reserve_tokens: CompactionSettings::default().reserve_tokens,
    };
    for _ in 0..100 {
        send(&h, how, &policy).await;
    }
    let early = window(&h, how, &policy, 20).await;
    for _ in 0..1880 {
        send(&h, how, &policy).await;
    }
    let late = window(&h, how, &policy, 20).await;
    // Four messages per prompt (user, tool call, tool result, reply), over 8,000 in the end.
    let context = h
        .session()
        .build_context(&Default::default())
        .await
        .unwrap();
    assert_eq!(context.messages.len(), 2020 * 4);
    assert_eq!(
        early,
        late,
        "per-prompt work grew with the session: prompts 101-120 {:?}, prompts 2001-2020 {:?}",
        early.entries(),
        late.entries()
    );
    eprintln!("work of 20 prompts at prompt 2,000: {:?}", late.entries());
    assert_eq!(late.get(Work::Copied), 0, "a shared list was copied");
    for (work, count) in late.entries() {
        assert!(
            count <= 20 * 12,
            "{work:?}: {count} messages in 20 prompts of four messages each"
        );
    }
    // The counters count: every prompt converts, estimates and projects its own messages.
    for work in [Work::Converted, Work::Estimated, Work::Projected] {
        assert!(
            late.get(work) >= 20 * 4,
            "{work:?} counted {}",
            late.get(work)
        );
    }
}

#[tokio::test]
async fn per_turn_work_of_prompt_is_the_same_at_prompt_100_and_2000() {
    assert_constant_per_turn(Send::Prompt).await;
}

#[tokio::test]
async fn per_turn_work_with_the_prompt_policy_is_the_same_at_prompt_100_and_2000() {
    assert_constant_per_turn(Send::Policy).await;
}
