//! `navigate_tree`, `compact` and resuming on the faux provider (DECISIONS §20.6–§20.7,
//! §20.11), each with a reviewed event snapshot and the check that the
//! session projects to what the model is sent next.

use std::sync::Arc;
use std::time::Duration;

use arbor_agent::agent::ErrorCode;
use arbor_agent::compaction::CompactionSettings;
use arbor_agent::context::ContextOptions;
use arbor_agent::harness::{
    AgentHarness, BeforeTreeResult, HarnessHook, HookResult, HookSummary, NavigateOptions,
    TreePreparation,
};
use arbor_agent::message::AgentMessage;
use arbor_agent::session::CreateOptions;
use arbor_agent::session::{EntryKind, JsonlRepository, Session, SessionRepository, SyncPolicy};
use arbor_ai::faux::FauxResponse;
use arbor_ai::{Message, ThinkingLevel};

use super::harness_support::*;

/// Two exchanges: "hello" → "hi", "plan A" → "A it is".
async fn two_exchanges(r: &Rig) {
    r.faux.push(FauxResponse::text("hi"));
    r.harness.prompt("hello", &[]).await.unwrap();
    r.faux.push(FauxResponse::text("A it is"));
    r.harness.prompt("plan A", &[]).await.unwrap();
    r.clear_events();
}

/// The id of the message entry whose user or assistant text is `text`.
async fn entry_with_text(r: &Rig, text: &str) -> String {
    for e in r.session.entries().await.unwrap() {
        if let EntryKind::Message(m) = &e.kind {
            let t = match &m.message {
                AgentMessage::Llm(Message::User(u)) => u.content.joined_text(""),
                AgentMessage::Llm(Message::Assistant(a)) => a.text(),
                _ => continue,
            };
            if t == text {
                return e.id.clone();
            }
        }
    }
    panic!("no entry with text {text:?}");
}

/// The roles and texts the session projects for the current leaf.
async fn projected(r: &Rig) -> Vec<String> {
    let ctx = r
        .session
        .build_context(&ContextOptions::default())
        .await
        .unwrap();
    ctx.messages
        .iter()
        .map(|m| {
            let v = serde_json::to_value(m).unwrap();
            let text = v["content"][0]["text"]
                .as_str()
                .or(v["summary"].as_str())
                .unwrap_or("")
                .chars()
                .take(40)
                .collect::<String>();
            format!("{}: {text}", m.role())
        })
        .collect()
}

#[tokio::test]
async fn navigate_to_a_user_message_reedits_it() {
    let r = rig();
    two_exchanges(&r).await;
    let target = entry_with_text(&r, "plan A").await;
    let hi = entry_with_text(&r, "hi").await;
    let res = r
        .harness
        .navigate_tree(Some(&target), NavigateOptions::default())
        .await
        .unwrap();
    assert!(!res.cancelled);
    assert_eq!(res.editor_text.as_deref(), Some("plan A"));
    assert_eq!(
        r.session.leaf_id().await.unwrap().as_deref(),
        Some(hi.as_str())
    );
    assert_eq!(projected(&r).await, ["user: hello", "assistant: hi"]);
    insta::assert_snapshot!(r.events_and_log().await);
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn navigate_to_an_assistant_message_keeps_it() {
    let r = rig();
    two_exchanges(&r).await;
    let hi = entry_with_text(&r, "hi").await;
    let res = r
        .harness
        .navigate_tree(Some(&hi), NavigateOptions::default())
        .await
        .unwrap();
    assert_eq!(res.editor_text, None);
    assert_eq!(
        r.session.leaf_id().await.unwrap().as_deref(),
        Some(hi.as_str())
    );
    insta::assert_snapshot!(r.events_and_log().await);
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn navigate_to_root_empties_the_context() {
    let r = rig();
    two_exchanges(&r).await;
    let res = r
        .harness
        .navigate_tree(None, NavigateOptions::default())
        .await
        .unwrap();
    assert!(!res.cancelled);
    assert_eq!(r.session.leaf_id().await.unwrap(), None);
    assert!(projected(&r).await.is_empty());
    insta::assert_snapshot!(r.events_and_log().await);
    r.assert_next_turn_matches_session().await;
    assert_eq!(r.faux.last_request().unwrap().context.messages.len(), 1);
}

#[tokio::test]
async fn navigate_with_summary_writes_it_under_the_new_position() {
    let r = rig();
    two_exchanges(&r).await;
    let hi = entry_with_text(&r, "hi").await;
    r.faux
        .push(FauxResponse::text("## Goal\nPlan A was explored."));
    let res = r
        .harness
        .navigate_tree(
            Some(&hi),
            NavigateOptions::default()
                .with_summarize(true)
                .with_custom_instructions("focus on plans"),
        )
        .await
        .unwrap();
    let summary = res.summary_entry.expect("summary entry");
    assert_eq!(summary.parent_id.as_deref(), Some(hi.as_str()));
    assert_eq!(
        r.session.leaf_id().await.unwrap().as_deref(),
        Some(summary.id.as_str())
    );
    let req = r.faux.last_request().unwrap();
    let prompt = serde_json::to_string(&req.context.messages).unwrap();
    assert!(
        prompt.contains("plan A") && prompt.contains("focus on plans"),
        "{prompt}"
    );
    let p = projected(&r).await;
    assert_eq!(p.len(), 3, "{p:?}");
    assert!(p[2].starts_with("branchSummary: "), "{p:?}");
    insta::assert_snapshot!(r.events_and_log().await);
    r.assert_next_turn_matches_session().await;
}

struct SummaryFromHook;

#[async_trait::async_trait]
impl HarnessHook for SummaryFromHook {
    async fn session_before_tree(&self, p: &TreePreparation) -> HookResult<BeforeTreeResult> {
        Ok(Some(BeforeTreeResult {
            summary: Some(HookSummary {
                summary: format!("hook summary of {} entries", p.entries_to_summarize.len()),
                ..HookSummary::default()
            }),
            ..BeforeTreeResult::default()
        }))
    }
}

#[tokio::test]
async fn a_hook_summary_is_used_even_without_summarize() {
    let r = rig();
    two_exchanges(&r).await;
    r.harness.add_hook(Arc::new(SummaryFromHook));
    let hi = entry_with_text(&r, "hi").await;
    let res = r
        .harness
        .navigate_tree(Some(&hi), NavigateOptions::default())
        .await
        .unwrap();
    let entry = res.summary_entry.unwrap();
    match &entry.kind {
        EntryKind::BranchSummary(b) => {
            assert_eq!(b.summary, "hook summary of 2 entries");
            assert_eq!(b.from_hook, Some(true));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.faux.call_count(), 2, "no model call for a hook summary");
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn summary_failure_is_an_error_and_the_leaf_stays() {
    let r = rig();
    two_exchanges(&r).await;
    let leaf = r.session.leaf_id().await.unwrap();
    let hi = entry_with_text(&r, "hi").await;
    r.faux
        .push(FauxResponse::text("").error("summary model down"));
    let err = r
        .harness
        .navigate_tree(Some(&hi), NavigateOptions::default().with_summarize(true))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::BranchSummary);
    assert!(err.message().contains("summary model down"), "{err}");
    assert_eq!(r.session.leaf_id().await.unwrap(), leaf);
    assert_eq!(r.harness.phase(), arbor_agent::harness::Phase::Idle);
    insta::assert_snapshot!(r.events_and_log().await);
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn abort_cancels_a_running_branch_summary() {
    let r = rig();
    two_exchanges(&r).await;
    let leaf = r.session.leaf_id().await.unwrap();
    let hi = entry_with_text(&r, "hi").await;
    r.faux.push(
        FauxResponse::text("slow summary ".repeat(50)).chunk_delay(Duration::from_millis(10)),
    );
    let h = r.harness.clone();
    let aborter = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(40)).await;
        h.abort().await
    });
    let res = r
        .harness
        .navigate_tree(Some(&hi), NavigateOptions::default().with_summarize(true))
        .await
        .unwrap();
    aborter.await.unwrap();
    assert!(res.cancelled);
    assert_eq!(r.session.leaf_id().await.unwrap(), leaf);
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn navigate_requires_idle_and_an_existing_target() {
    let r = rig();
    two_exchanges(&r).await;
    let err = r
        .harness
        .navigate_tree(Some("nope1234"), NavigateOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert_eq!(err.message(), "Entry nope1234 not found");
    r.faux
        .push(FauxResponse::text("slow").delay(Duration::from_millis(100)));
    let h = r.harness.clone();
    let run = tokio::spawn(async move { h.prompt("busy", &[]).await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let busy = r
        .harness
        .navigate_tree(None, NavigateOptions::default())
        .await
        .unwrap_err();
    assert_eq!(busy.code(), ErrorCode::Busy);
    assert_eq!(busy.message(), "navigateTree() requires idle harness");
    let busy = r.harness.compact(None).await.unwrap_err();
    assert_eq!(busy.message(), "compact() requires idle harness");
    let busy = r.harness.prompt("again", &[]).await.unwrap_err();
    assert_eq!(busy.message(), "AgentHarness is busy");
    run.await.unwrap().unwrap();
}

fn small_compaction(r: &Rig) -> AgentHarness {
    let mut opts = options(&r.faux);
    opts.compaction = CompactionSettings {
        enabled: true,
        reserve_tokens: 100,
        keep_recent_tokens: 5,
    };
    AgentHarness::new(r.session.clone(), Arc::new(r.faux.clone()), opts).unwrap()
}

#[tokio::test]
async fn compact_writes_a_compaction_and_the_next_turn_sees_the_summary() {
    let mut r = rig();
    two_exchanges(&r).await;
    r.harness = small_compaction(&r);
    r.events = record(&r.harness);
    r.faux
        .push(FauxResponse::text("## Goal\nsay hello, pick plan A"));
    let entry = r.harness.compact(Some("keep plans")).await.unwrap();
    assert!(matches!(entry.kind, EntryKind::Compaction(_)));
    let p = projected(&r).await;
    assert!(p[0].starts_with("compactionSummary: "), "{p:?}");
    insta::assert_snapshot!(r.events_and_log().await);
    r.assert_next_turn_matches_session().await;
}

#[tokio::test]
async fn compact_retries_a_transient_summary_failure_when_configured() {
    let mut r = rig();
    two_exchanges(&r).await;
    let mut opts = options(&r.faux);
    opts.compaction = CompactionSettings {
        enabled: true,
        reserve_tokens: 100,
        keep_recent_tokens: 5,
    };
    opts.summary_retry = Some(
        arbor_ai::retry::RetryPolicy::default()
            .with_enabled(true)
            .with_max_retries(2)
            .with_base_delay_ms(1),
    );
    r.harness = AgentHarness::new(r.session.clone(), Arc::new(r.faux.clone()), opts).unwrap();
    r.events = record(&r.harness);
    r.faux
        .push(FauxResponse::new().error("503 service unavailable"));
    r.faux.push(FauxResponse::text("## Goal\nsay hello"));
    let entry = r.harness.compact(None).await.unwrap();
    assert!(matches!(entry.kind, EntryKind::Compaction(_)));
    let types: Vec<String> = r
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| e["type"].as_str().map(str::to_string))
        .filter(|t| t.starts_with("retry_"))
        .collect();
    assert_eq!(
        types,
        ["retry_scheduled", "retry_attempt_start", "retry_finished"],
        "one retry of the summary request"
    );
}

#[tokio::test]
async fn compact_without_summary_retry_fails_on_the_first_error() {
    let r = rig();
    two_exchanges(&r).await;
    let mut opts = options(&r.faux);
    opts.compaction = CompactionSettings {
        enabled: true,
        reserve_tokens: 100,
        keep_recent_tokens: 5,
    };
    let harness = AgentHarness::new(r.session.clone(), Arc::new(r.faux.clone()), opts).unwrap();
    r.faux
        .push(FauxResponse::new().error("503 service unavailable"));
    let before = r.session.storage().leaf_id().await.unwrap();
    let err = harness.compact(None).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Compaction);
    assert_eq!(r.session.storage().leaf_id().await.unwrap(), before);
}

#[tokio::test]
async fn compact_on_an_empty_session_has_nothing_to_do() {
    let r = rig();
    let err = r.harness.compact(None).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Compaction);
    assert_eq!(err.message(), "Nothing to compact (session too small)");
    // pi announces even this compaction: a start, then an end naming why (DECISIONS §31.15).
    let types = r.types();
    let at = types
        .iter()
        .position(|t| t == "compaction_start")
        .unwrap_or_else(|| panic!("{types:?}"));
    assert_eq!(types[at + 1], "compaction_end", "{types:?}");
    let end = r
        .events
        .lock()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "compaction_end")
        .cloned()
        .unwrap();
    assert_eq!(end["aborted"], false);
    assert_eq!(
        end["errorMessage"],
        "Nothing to compact (session too small)"
    );
}

#[tokio::test]
async fn a_second_compact_in_a_row_says_already_compacted() {
    let mut r = rig();
    two_exchanges(&r).await;
    r.harness = small_compaction(&r);
    r.faux.push(FauxResponse::text("## Goal\nsummary"));
    r.harness.compact(None).await.unwrap();
    let err = r.harness.compact(None).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Compaction);
    assert_eq!(err.message(), "Already compacted");
}

#[tokio::test]
async fn abort_cancels_a_running_compaction() {
    let mut r = rig();
    two_exchanges(&r).await;
    r.harness = small_compaction(&r);
    r.events = record(&r.harness);
    let leaf = r.session.leaf_id().await.unwrap();
    r.faux
        .push(FauxResponse::text("slow ".repeat(100)).chunk_delay(Duration::from_millis(10)));
    let h = r.harness.clone();
    let aborter = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(40)).await;
        h.abort().await
    });
    let err = r.harness.compact(None).await.unwrap_err();
    aborter.await.unwrap();
    assert_eq!(err.message(), "Compaction cancelled");
    assert_eq!(r.session.leaf_id().await.unwrap(), leaf);
    insta::assert_snapshot!(r.events_and_log().await);
}

#[tokio::test]
async fn resume_takes_settings_from_the_session_with_an_explicit_model_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let repo = JsonlRepository::flat(dir.path()).with_sync(SyncPolicy::SavePoint);
    let storage = repo.create(CreateOptions::new("/work/p")).await.unwrap();
    let path = storage.path().to_path_buf();
    let faux = faux();
    {
        let r = rig_on(
            faux.clone(),
            Arc::new(Session::new(Arc::new(storage))),
            None,
        );
        r.harness
            .set_thinking_level(ThinkingLevel::Medium)
            .await
            .unwrap();
        r.harness
            .set_active_tools(vec!["echo".into()])
            .await
            .unwrap();
        r.faux.push(FauxResponse::text("remembered"));
        r.harness.prompt("remember this", &[]).await.unwrap();
    }
    let reopen = || async {
        Arc::new(Session::new(Arc::new(
            repo.open(path.to_str().unwrap()).await.unwrap(),
        )))
    };
    // Unknown stored model: the fallback is used and reported.
    let mut fallback = faux.model();
    fallback.id = "fallback-model".into();
    let mut opts = options(&faux);
    opts.model = fallback.clone();
    let (h, report) = AgentHarness::resume(reopen().await, Arc::new(faux.clone()), opts)
        .await
        .unwrap();
    assert_eq!(report.unknown_model.unwrap().model_id, "faux-1");
    assert_eq!(h.model().id, "fallback-model");
    assert_eq!(h.thinking_level(), ThinkingLevel::Medium);
    assert_eq!(h.active_tool_names(), ["echo"]);
    drop(h);
    // Known stored model: resolved.
    let known = faux.model();
    let mut opts = options(&faux);
    opts.model = fallback;
    opts.models = Some(Arc::new(move |r| {
        (r.model_id == known.id).then(|| known.clone())
    }));
    let (h, report) = AgentHarness::resume(reopen().await, Arc::new(faux.clone()), opts)
        .await
        .unwrap();
    assert_eq!(report.unknown_model, None);
    assert_eq!(h.model().id, "faux-1");
    // The harness continues from the leaf.
    let r = Rig {
        faux: faux.clone(),
        session: h.session().clone(),
        events: record(&h),
        harness: h,
    };
    r.assert_next_turn_matches_session().await;
    let req = r.faux.last_request().unwrap();
    assert_eq!(req.context.messages.len(), 3);
}
