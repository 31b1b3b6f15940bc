//! Automatic compaction through the harness (`prompt_with_auto_compaction`, DECISIONS
//! §20.22–§20.23): on the threshold after a run, and on a context-overflow error with one
//! compaction and one retry of the turn (a second overflow reports that recovery failed).

use arbor_agent::compaction::OVERFLOW_RECOVERY_FAILED;
use arbor_agent::compaction::{AutoCompaction, CompactionSettings};
use arbor_agent::context::ContextOptions;
use arbor_agent::message::AgentMessage;
use arbor_agent::session::EntryKind;
use arbor_ai::faux::FauxResponse;
use arbor_ai::{Message, StopReason, Usage};
use serde_json::{json, Value};

use super::harness_support::*;

fn policy() -> AutoCompaction {
    AutoCompaction::new(CompactionSettings {
        enabled: true,
        reserve_tokens: 16_384,
        keep_recent_tokens: 5,
    })
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

#[tokio::test]
async fn crossing_the_threshold_compacts_after_the_run() {
    let r = rig();
    warm_up(&r).await;
    let mut auto = policy();
    // 128,000-token window, 16,384 reserve: 120,000 crosses it.
    r.faux
        .push(FauxResponse::text("long answer").usage(big_usage(120_000)));
    r.faux
        .push(FauxResponse::text("## Goal\nsay hello, plan A"));
    let last = r
        .harness
        .prompt_with_auto_compaction("and now?", &[], &mut auto)
        .await
        .unwrap();
    assert_eq!(last.stop_reason, StopReason::Stop);
    assert_eq!(
        events_of(&r, "compaction_start"),
        vec![json!({"type": "compaction_start", "reason": "threshold"})]
    );
    let end = &events_of(&r, "compaction_end")[0];
    assert_eq!(
        (
            end["reason"].clone(),
            end["aborted"].clone(),
            end["willRetry"].clone()
        ),
        (json!("threshold"), json!(false), json!(false))
    );
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
    r.harness
        .prompt_with_auto_compaction("small", &[], &mut auto)
        .await
        .unwrap();
    assert!(events_of(&r, "compaction_start").is_empty());
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn an_overflow_error_compacts_once_and_retries_the_turn() {
    let r = rig();
    warm_up(&r).await;
    let mut auto = policy();
    r.faux
        .push(FauxResponse::new().error("prompt is too long: 200000 tokens > 128000 maximum"));
    r.faux
        .push(FauxResponse::text("## Goal\nsummary before retry"));
    // The cut splits the "plan A" turn: a history and a turn-prefix summary.
    r.faux
        .push(FauxResponse::text("## Original Request\nplan A"));
    r.faux.push(FauxResponse::text("recovered"));
    let last = r
        .harness
        .prompt_with_auto_compaction("big question", &[], &mut auto)
        .await
        .unwrap();
    assert_eq!(last.text(), "recovered");
    assert_eq!(
        events_of(&r, "compaction_start"),
        vec![json!({"type": "compaction_start", "reason": "overflow"})]
    );
    let end = &events_of(&r, "compaction_end")[0];
    assert_eq!(end["willRetry"], json!(true));
    assert!(end["result"].is_object());
    // The failed reply is hidden by a context edit and the retry sees the summary.
    let entries = r.session.entries().await.unwrap();
    let edit = entries.iter().find_map(|e| match &e.kind {
        EntryKind::ContextEdit(c) => Some(c.clone()),
        _ => None,
    });
    let edit = edit.expect("the failed attempt is omitted");
    assert!(edit.replacement.is_null());
    let retry_request = r.faux.requests().pop().unwrap();
    let first = &retry_request.context.messages[0];
    let Message::User(u) = first else {
        panic!("{first:?}")
    };
    assert!(u.content.joined_text("").contains("summary before retry"));
    assert!(retry_request
        .context
        .messages
        .iter()
        .all(|m| !matches!(m, Message::Assistant(a) if a.stop_reason == StopReason::Error)));
    let ctx = r
        .session
        .build_context(&ContextOptions::default())
        .await
        .unwrap();
    assert!(ctx.messages.iter().all(|m| !matches!(m, AgentMessage::Llm(Message::Assistant(a)) if a.stop_reason == StopReason::Error)));
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn a_second_overflow_reports_that_recovery_failed() {
    let r = rig();
    warm_up(&r).await;
    let mut auto = policy();
    r.faux
        .push(FauxResponse::new().error("prompt is too long: 200000 tokens > 128000 maximum"));
    r.faux.push(FauxResponse::text("## Goal\nsummary"));
    r.faux
        .push(FauxResponse::text("## Original Request\nplan A"));
    r.faux
        .push(FauxResponse::new().error("prompt is too long: 190000 tokens > 128000 maximum"));
    let last = r
        .harness
        .prompt_with_auto_compaction("big question", &[], &mut auto)
        .await
        .unwrap();
    assert_eq!(last.stop_reason, StopReason::Error);
    let ends = events_of(&r, "compaction_end");
    assert_eq!(ends.len(), 2, "{ends:?}");
    assert_eq!(ends[1]["errorMessage"], json!(OVERFLOW_RECOVERY_FAILED));
    assert_eq!(ends[1]["willRetry"], json!(false));
    assert_eq!(
        events_of(&r, "compaction_start").len(),
        1,
        "one compaction only"
    );
    assert_eq!(
        r.faux.call_count(),
        6,
        "2 warm-up, the failure, 2 summary requests, the retry"
    );
}
