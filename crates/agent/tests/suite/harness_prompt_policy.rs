//! The prompt policy through the harness (`prompt_with_policy`, DECISIONS §22.12): a
//! compaction after a run that crossed the threshold, one compaction and one retry of the
//! prompt on a context-overflow error (a second overflow is reported as is), retries of a
//! transient error with the failed attempts hidden, and the switches a client flips.

use std::sync::{Arc, Mutex};

use arbor_agent::agent::AgentError;
use arbor_agent::compaction::CompactionSettings;
use arbor_agent::context::ContextOptions;
use arbor_agent::harness::{
    PolicyControl, PolicyObserver, PromptPolicy, PromptRetry, RETRY_CANCELLED,
};
use arbor_agent::message::AgentMessage;
use arbor_agent::session::{EntryKind, MemoryStorage, Session};
use arbor_ai::faux::FauxResponse;
use arbor_ai::{AssistantMessage, Message, StopReason, Usage};
use serde_json::{json, Value};

use super::harness_support::*;

fn policy() -> PromptPolicy {
    PromptPolicy {
        retry: PromptRetry {
            enabled: true,
            max_retries: 2,
            base_delay_ms: 1,
            max_agent_delay_ms: 5,
        },
        auto_compaction: true,
        reserve_tokens: 16_384,
    }
}

/// A harness whose compactions keep almost nothing verbatim (as the policy's settings say), so
/// a short session has something to summarize.
fn rig() -> Rig {
    let faux = faux();
    let session = Arc::new(Session::new(Arc::new(MemoryStorage::new("/work/p"))));
    let opts = {
        let mut o = options(&faux);
        o.compaction = CompactionSettings {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 5,
        };
        o
    };
    rig_on(faux, session, Some(opts))
}

/// Records what the policy announces, one line per call.
#[derive(Default)]
struct Said(Mutex<Vec<String>>);

impl Said {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl PolicyObserver for Said {
    fn retry_scheduled(&self, attempt: u32, max_attempts: u32, _delay_ms: u64, error: &str) {
        self.0
            .lock()
            .unwrap()
            .push(format!("retry {attempt}/{max_attempts}: {error}"));
    }
    fn retry_finished(&self, success: bool, attempt: u32, final_error: Option<&str>) {
        self.0.lock().unwrap().push(format!(
            "retry end {success} {attempt} {}",
            final_error.unwrap_or("-")
        ));
    }
    fn compacting(&self, reason: &str) {
        self.0.lock().unwrap().push(format!("compacting: {reason}"));
    }
    fn compaction_failed(&self, error: &AgentError) {
        self.0
            .lock()
            .unwrap()
            .push(format!("compaction failed: {error}"));
    }
}

async fn send(r: &Rig, text: &str, said: &Said) -> AssistantMessage {
    let policy = policy();
    let control = PolicyControl::new(&policy);
    r.harness
        .prompt_with_policy(text, &[], &policy, said, &control)
        .await
        .unwrap()
}

fn big_usage(total: u64) -> Usage {
    serde_json::from_value(json!({"input": total - 10, "output": 10, "cacheRead": 0, "cacheWrite": 0,
        "totalTokens": total, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}))
    .unwrap()
}

fn events_of(r: &Rig, kind: &str) -> Vec<Value> {
    r.events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == kind)
        .cloned()
        .collect()
}

async fn warm_up(r: &Rig) {
    r.faux.push(FauxResponse::text("hi"));
    r.harness.prompt("hello", &[]).await.unwrap();
    r.faux.push(FauxResponse::text("A it is"));
    r.harness.prompt("plan A", &[]).await.unwrap();
    r.clear_events();
}

/// Context edits that hide an entry (no replacement).
async fn omissions(r: &Rig) -> usize {
    let entries = r.session.entries().await.unwrap();
    entries
        .iter()
        .filter(|e| matches!(&e.kind, EntryKind::ContextEdit(c) if c.replacement.is_null()))
        .count()
}

async fn no_failed_answer_in_context(r: &Rig) -> bool {
    let ctx = r
        .session
        .build_context(&ContextOptions::default())
        .await
        .unwrap();
    ctx.messages.iter().all(|m| {
        !matches!(m, AgentMessage::Llm(Message::Assistant(a)) if a.stop_reason == StopReason::Error)
    })
}

#[tokio::test]
async fn crossing_the_threshold_compacts_after_the_run() {
    let r = rig();
    warm_up(&r).await;
    let said = Said::default();
    // 128,000-token window, 16,384 reserve: 120,000 crosses it.
    r.faux
        .push(FauxResponse::text("long answer").usage(big_usage(120_000)));
    r.faux
        .push(FauxResponse::text("## Goal\nsay hello, plan A"));
    let last = send(&r, "and now?", &said).await;
    assert_eq!(last.stop_reason, StopReason::Stop);
    assert_eq!(said.lines(), ["compacting: context above the threshold"]);
    assert_eq!(events_of(&r, "compaction_start").len(), 1);
    let end = &events_of(&r, "compaction_end")[0];
    assert_eq!(end["aborted"], json!(false));
    assert!(end["result"]["summary"]
        .as_str()
        .unwrap()
        .starts_with("## Goal\nsay hello, plan A"));
    assert!(end.get("errorMessage").is_none());
    let ctx = r
        .session
        .build_context(&ContextOptions::default())
        .await
        .unwrap();
    assert!(matches!(
        ctx.messages[0],
        AgentMessage::CompactionSummary(_)
    ));
    assert_eq!(
        r.faux.call_count(),
        4,
        "two warm-up turns, the prompt, one summary"
    );

    // Below the threshold: no compaction.
    r.clear_events();
    r.faux
        .push(FauxResponse::text("short").usage(big_usage(2_000)));
    send(&r, "small", &said).await;
    assert!(events_of(&r, "compaction_start").is_empty());
    assert_eq!(said.lines().len(), 1);
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn an_overflow_error_compacts_once_and_retries_the_prompt() {
    let r = rig();
    warm_up(&r).await;
    let said = Said::default();
    r.faux
        .push(FauxResponse::new().error("prompt is too long: 200000 tokens > 128000 maximum"));
    // The failed attempt is hidden before the compaction, so the cut falls between whole
    // turns: one summary request.
    r.faux
        .push(FauxResponse::text("## Goal\nsummary before retry"));
    r.faux.push(FauxResponse::text("recovered"));
    let last = send(&r, "big question", &said).await;
    assert_eq!(last.text(), "recovered");
    assert_eq!(said.lines(), ["compacting: context overflow"]);
    assert_eq!(events_of(&r, "compaction_start").len(), 1);
    assert!(events_of(&r, "compaction_end")[0]["result"].is_object());
    // The failed attempt (the prompt and its answer) is hidden by context edits, and the
    // retried prompt goes out once, after the summary.
    assert_eq!(omissions(&r).await, 2);
    let retry_request = r.faux.requests().pop().unwrap();
    let first = &retry_request.context.messages[0];
    let Message::User(u) = first else {
        panic!("{first:?}")
    };
    assert!(u.content.joined_text("").contains("summary before retry"));
    let prompts = retry_request
        .context
        .messages
        .iter()
        .filter(|m| matches!(m, Message::User(u) if u.content.joined_text("") == "big question"))
        .count();
    assert_eq!(prompts, 1);
    assert!(retry_request
        .context
        .messages
        .iter()
        .all(|m| !matches!(m, Message::Assistant(a) if a.stop_reason == StopReason::Error)));
    assert!(no_failed_answer_in_context(&r).await);
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn a_second_overflow_is_reported_as_is() {
    let r = rig();
    warm_up(&r).await;
    let said = Said::default();
    r.faux
        .push(FauxResponse::new().error("prompt is too long: 200000 tokens > 128000 maximum"));
    r.faux.push(FauxResponse::text("## Goal\nsummary"));
    r.faux
        .push(FauxResponse::new().error("prompt is too long: 190000 tokens > 128000 maximum"));
    let last = send(&r, "big question", &said).await;
    assert_eq!(last.stop_reason, StopReason::Error);
    assert_eq!(said.lines(), ["compacting: context overflow"]);
    assert_eq!(
        events_of(&r, "compaction_start").len(),
        1,
        "one compaction only"
    );
    let calls = r.faux.call_count();
    assert_eq!(calls, 5, "2 warm-up, the failure, the summary, the retry");
}

#[tokio::test]
async fn a_transient_error_is_retried_with_the_failed_attempt_hidden() {
    let r = rig();
    warm_up(&r).await;
    let said = Said::default();
    r.faux
        .push(FauxResponse::new().error("503 Service Unavailable: overloaded"));
    r.faux.push(FauxResponse::text("fine now"));
    let last = send(&r, "try", &said).await;
    assert_eq!(last.text(), "fine now");
    let lines = said.lines();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("retry 1/2: "), "{lines:?}");
    assert_eq!(lines[1], "retry end true 1 -");
    // Only the failed answer is hidden; the prompt is stored once (DECISIONS §29.1).
    assert_eq!(omissions(&r).await, 1);
    assert_eq!(prompts_stored(&r, "try").await, 1);
    assert!(no_failed_answer_in_context(&r).await);
    r.assert_next_turn_matches_session().await;
}

/// How many user messages with exactly `text` the session holds.
async fn prompts_stored(r: &Rig, text: &str) -> usize {
    r.session
        .entries()
        .await
        .unwrap()
        .iter()
        .filter(|e| {
            matches!(&e.kind, EntryKind::Message(m)
                if matches!(&m.message, AgentMessage::Llm(Message::User(u)) if u.content.joined_text("") == text))
        })
        .count()
}

#[tokio::test]
async fn two_failed_attempts_store_the_prompt_once_and_resend_the_same_request() {
    let r = rig();
    warm_up(&r).await;
    let said = Said::default();
    r.faux
        .push(FauxResponse::new().error("503 Service Unavailable: overloaded"));
    r.faux
        .push(FauxResponse::new().error("502 Bad Gateway: upstream connect error"));
    r.faux.push(FauxResponse::text("fine now"));
    let last = send(&r, "try", &said).await;
    assert_eq!(last.text(), "fine now");
    assert_eq!(said.lines().len(), 3, "{:?}", said.lines());
    assert_eq!(prompts_stored(&r, "try").await, 1);
    assert_eq!(
        omissions(&r).await,
        2,
        "one context_edit per failed attempt"
    );
    // The user message events went out once: a UI shows the prompt once.
    let user_ends = r
        .events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "user")
        .count();
    assert_eq!(user_ends, 1);
    let requests = r.faux.requests();
    let n = requests.len();
    assert_eq!(
        requests[n - 3].context.messages,
        requests[n - 1].context.messages,
        "every attempt sends the same messages"
    );
    assert!(no_failed_answer_in_context(&r).await);
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn retries_stop_after_the_limit_and_when_switched_off() {
    let r = rig();
    warm_up(&r).await;
    let said = Said::default();
    for _ in 0..3 {
        r.faux
            .push(FauxResponse::new().error("503 Service Unavailable: overloaded"));
    }
    let last = send(&r, "try", &said).await;
    assert_eq!(last.stop_reason, StopReason::Error);
    let lines = said.lines();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[2].starts_with("retry end false 2 "), "{lines:?}");

    // Switched off: the failure stands at once.
    let policy = policy();
    let control = PolicyControl::new(&policy);
    control.set_auto_retry(false);
    let quiet = Said::default();
    r.faux
        .push(FauxResponse::new().error("503 Service Unavailable: overloaded"));
    let last = r
        .harness
        .prompt_with_policy("again", &[], &policy, &quiet, &control)
        .await
        .unwrap();
    assert_eq!(last.stop_reason, StopReason::Error);
    assert!(quiet.lines().is_empty());
}

#[tokio::test]
async fn abort_retry_ends_the_wait_and_the_failure_stands() {
    let r = rig();
    warm_up(&r).await;
    let said = Said::default();
    let mut policy = policy();
    policy.retry.base_delay_ms = 60_000;
    policy.retry.max_agent_delay_ms = 60_000;
    let control = PolicyControl::new(&policy);
    r.faux
        .push(FauxResponse::new().error("503 Service Unavailable: overloaded"));
    let run = r
        .harness
        .prompt_with_policy("try", &[], &policy, &said, &control);
    let abort = async {
        while said.lines().is_empty() {
            tokio::task::yield_now().await;
        }
        control.abort_retry();
    };
    let (last, ()) = tokio::join!(run, abort);
    assert_eq!(last.unwrap().stop_reason, StopReason::Error);
    assert_eq!(
        said.lines()[1],
        format!("retry end false 1 {RETRY_CANCELLED}")
    );
}
