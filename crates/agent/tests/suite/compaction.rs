//! `compact` and branch summaries end to end against the faux provider: the exact summary
//! requests (reviewed snapshots), the entries written, the projection afterwards, repeated and
//! split-turn compactions, nothing to compact, and failures and aborts that leave the session
//! as it was.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbor_agent::branch_summary::{
    collect_entries_for_branch_summary, generate_branch_summary, BranchSummaryError,
    BranchSummaryOptions,
};
use arbor_agent::compaction::{
    compact, prepare_compaction, CompactionError, CompactionSettings, SummaryEvent, SummaryOptions,
};
use arbor_agent::context::ContextOptions;
use arbor_agent::message::AgentMessage;
use arbor_agent::session::{EntryKind, MemoryStorage, Session, SessionEntry};
use arbor_ai::faux::{FauxProvider, FauxResponse};
use arbor_ai::retry::RetryPolicy;
use arbor_ai::stream::{ApiProvider, CacheRetention, SimpleStreamOptions, StreamOptions};
use arbor_ai::{
    AssistantMessageEventStream, Context, Message, Model, StopReason, ThinkingLevel, Usage,
};
use serde_json::{json, Value};

use super::message_support::{msg, normalize, user};

/// What one summary request asked for, besides its context.
#[derive(Debug, Clone)]
struct Seen {
    context: Context,
    cache_retention: Option<CacheRetention>,
    session_id: Option<String>,
    reasoning: Option<ThinkingLevel>,
    max_tokens: Option<u64>,
}

/// The faux provider behind a recorder of the request options.
struct Recording {
    faux: FauxProvider,
    seen: Mutex<Vec<Seen>>,
}

impl Recording {
    fn new(responses: Vec<FauxResponse>) -> Arc<Self> {
        let faux = FauxProvider::new();
        faux.set_responses(responses);
        Arc::new(Recording {
            faux,
            seen: Mutex::new(Vec::new()),
        })
    }
    fn model(&self) -> Model {
        self.faux.model()
    }
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl ApiProvider for Recording {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        self.faux.stream(model, context, {
            let mut o = arbor_ai::faux::FauxStreamOptions::default();
            o.cancel = options.cancel.clone();
            o.session_id = options.session_id.clone();
            o.cache = options.resolved_cache_retention() != CacheRetention::None;
            o
        })
    }
    fn stream_simple(
        &self,
        model: &Model,
        context: &Context,
        options: SimpleStreamOptions,
    ) -> AssistantMessageEventStream {
        self.seen.lock().unwrap().push(Seen {
            context: context.clone(),
            cache_retention: options.base.cache_retention,
            session_id: options.base.session_id.clone(),
            reasoning: options.reasoning,
            max_tokens: options.base.max_tokens,
        });
        self.stream(model, context, options.base)
    }
}

fn usage(input: u64, output: u64) -> Usage {
    serde_json::from_value(json!({
        "input": input, "output": output, "cacheRead": 0, "cacheWrite": 0,
        "totalTokens": input + output,
        "cost": {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003}
    }))
    .unwrap()
}

fn assistant_text(text: &str, ts: i64) -> AgentMessage {
    msg(json!({
        "role": "assistant", "content": [{"type": "text", "text": text}],
        "api": "faux", "provider": "faux", "model": "faux-1",
        "usage": {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop", "timestamp": ts
    }))
}

fn assistant_call(id: &str, tool: &str, path: &str, ts: i64) -> AgentMessage {
    msg(json!({
        "role": "assistant",
        "content": [{"type": "text", "text": format!("I will {tool} {path}.")},
                    {"type": "toolCall", "id": id, "name": tool, "arguments": {"path": path}}],
        "api": "faux", "provider": "faux", "model": "faux-1",
        "usage": {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "toolUse", "timestamp": ts
    }))
}

fn result(id: &str, tool: &str, text: &str, ts: i64) -> AgentMessage {
    msg(json!({
        "role": "toolResult", "toolCallId": id, "toolName": tool,
        "content": [{"type": "text", "text": text}], "isError": false, "timestamp": ts
    }))
}

fn new_session() -> Session {
    Session::new(Arc::new(MemoryStorage::new("/work/project")))
}

/// Three turns: read a file, edit it, then a question; about 60 estimated tokens each.
async fn three_turns(session: &Session) {
    let pad = "The numbers matter here. ".repeat(6);
    let mut ts = 1_800_000_000_000;
    let mut next = || {
        ts += 1000;
        ts
    };
    session
        .append_message(user(&format!("Read src/lib.rs please. {pad}"), next()))
        .await
        .unwrap();
    session
        .append_message(assistant_call("c1", "read", "src/lib.rs", next()))
        .await
        .unwrap();
    session
        .append_message(result(
            "c1",
            "read",
            &format!("fn main() {{}} {pad}"),
            next(),
        ))
        .await
        .unwrap();
    session
        .append_message(assistant_text(&format!("It holds main. {pad}"), next()))
        .await
        .unwrap();
    session
        .append_message(user(&format!("Rename main to start. {pad}"), next()))
        .await
        .unwrap();
    session
        .append_message(assistant_call("c2", "edit", "src/lib.rs", next()))
        .await
        .unwrap();
    session
        .append_message(result("c2", "edit", "edited", next()))
        .await
        .unwrap();
    session
        .append_message(assistant_text(&format!("Renamed. {pad}"), next()))
        .await
        .unwrap();
    session
        .append_message(user(&format!("What is next? {pad}"), next()))
        .await
        .unwrap();
    session
        .append_message(assistant_text(&format!("Tests. {pad}"), next()))
        .await
        .unwrap();
}

const SUMMARY: &str = "## Goal\nRename main.\n\n## Progress\n### Done\n- [x] renamed";

fn keep(tokens: u64) -> CompactionSettings {
    CompactionSettings {
        keep_recent_tokens: tokens,
        ..Default::default()
    }
}

async fn names(session: &Session) -> HashMap<String, String> {
    session
        .entries()
        .await
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.clone(), format!("e{}", i + 1)))
        .collect()
}

fn request_value(seen: &Seen) -> Value {
    let Message::User(u) = &seen.context.messages[0] else {
        panic!("a summary request is one user message");
    };
    assert_eq!(seen.context.messages.len(), 1);
    assert!(seen.context.tools.is_none());
    json!({
        "systemPrompt": seen.context.system_prompt,
        "user": u.content.joined_text(""),
        "cacheRetention": format!("{:?}", seen.cache_retention),
        "reasoning": seen.reasoning.map(arbor_ai::ThinkingLevel::as_str),
        "maxTokens": seen.max_tokens,
    })
}

fn entry_value(e: &SessionEntry) -> Value {
    let mut v = serde_json::to_value(e).unwrap();
    v.as_object_mut().unwrap().remove("timestamp");
    v
}

#[tokio::test]
async fn compact_writes_a_pi_compatible_entry_and_the_context_starts_at_the_summary() {
    let session = new_session();
    three_turns(&session).await;
    let provider = Recording::new(vec![FauxResponse::text(SUMMARY).usage(usage(900, 40))]);
    let path = session.ancestry(None).await.unwrap();
    let prep = prepare_compaction(&path, &keep(60))
        .unwrap()
        .expect("something to compact");
    assert!(!prep.is_split_turn);
    assert!(prep.previous_summary.is_none());
    let result = compact(
        &prep,
        provider.as_ref(),
        &provider.model(),
        &SummaryOptions::default(),
    )
    .await
    .unwrap();
    let seen = provider.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].cache_retention, Some(CacheRetention::None));
    assert!(seen[0].session_id.as_deref().is_some_and(|s| s.len() == 36));
    insta::assert_snapshot!(
        "initial_summary_request",
        request_value(&seen[0])["user"].as_str().unwrap()
    );
    insta::assert_json_snapshot!("initial_summary_request_shape", {
        let mut v = request_value(&seen[0]);
        v["user"] = json!("<snapshot initial_summary_request>");
        v
    });

    session.append_compaction(result.to_draft()).await.unwrap();
    let names = names(&session).await;
    let entries = session.entries().await.unwrap();
    let entry = entries.last().unwrap();
    insta::assert_json_snapshot!("compaction_entry", normalize(entry_value(entry), &names));
    let ctx = session
        .build_context(&ContextOptions::default())
        .await
        .unwrap();
    insta::assert_json_snapshot!(
        "context_after_compaction",
        normalize(json!(ctx.llm_messages()), &names)
    );
}

#[tokio::test]
async fn a_second_compaction_updates_the_previous_summary() {
    let session = new_session();
    three_turns(&session).await;
    let provider = Recording::new(vec![
        FauxResponse::text(SUMMARY),
        FauxResponse::text("## Goal\nRename main, then test."),
    ]);
    let model = provider.model();
    let path = session.ancestry(None).await.unwrap();
    let prep = prepare_compaction(&path, &keep(60)).unwrap().unwrap();
    let first = compact(&prep, provider.as_ref(), &model, &SummaryOptions::default())
        .await
        .unwrap();
    session.append_compaction(first.to_draft()).await.unwrap();
    three_turns(&session).await;

    let path = session.ancestry(None).await.unwrap();
    let prep = prepare_compaction(&path, &keep(60)).unwrap().unwrap();
    assert_eq!(
        prep.previous_summary.as_deref(),
        Some(first.summary.as_str())
    );
    let options = SummaryOptions {
        custom_instructions: Some("keep the file names".into()),
        ..Default::default()
    };
    let second = compact(&prep, provider.as_ref(), &model, &options)
        .await
        .unwrap();
    let seen = provider.seen();
    let text = request_value(&seen[1])["user"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains(&format!(
        "<previous-summary>\n{}\n</previous-summary>\n\n",
        first.summary
    )));
    assert!(text.ends_with("\n\nAdditional focus: keep the file names"));
    insta::assert_snapshot!("update_summary_request", text);
    // The files of the first compaction carry over into the second one's details.
    assert_eq!(
        second.details.modified_files,
        vec!["src/lib.rs".to_string()]
    );
    assert_ne!(seen[0].session_id, seen[1].session_id);
    session.append_compaction(second.to_draft()).await.unwrap();
    let ctx = session
        .build_context(&ContextOptions::default())
        .await
        .unwrap();
    match &ctx.messages[0] {
        AgentMessage::CompactionSummary(c) => {
            assert!(c.summary.starts_with("## Goal\nRename main, then test."))
        }
        other => panic!("context must open with the new summary, got {other:?}"),
    }
}

#[tokio::test]
async fn a_split_turn_gets_a_prefix_summary_and_the_usages_add_up() {
    let session = new_session();
    let big = "x".repeat(400);
    let mut ts = 1_800_000_000_000;
    let mut next = || {
        ts += 1000;
        ts
    };
    session
        .append_message(user("Earlier question.", next()))
        .await
        .unwrap();
    session
        .append_message(assistant_text("Earlier answer.", next()))
        .await
        .unwrap();
    session
        .append_message(user("Read three files.", next()))
        .await
        .unwrap();
    for (i, f) in ["a.rs", "b.rs", "c.rs"].iter().enumerate() {
        let id = format!("r{i}");
        session
            .append_message(assistant_call(&id, "read", f, next()))
            .await
            .unwrap();
        session
            .append_message(result(&id, "read", &big, next()))
            .await
            .unwrap();
    }
    session
        .append_message(assistant_text("Done reading.", next()))
        .await
        .unwrap();

    let path = session.ancestry(None).await.unwrap();
    let prep = prepare_compaction(&path, &keep(150)).unwrap().unwrap();
    assert!(prep.is_split_turn, "the cut lands inside the last turn");
    assert!(!prep.turn_prefix_messages.is_empty());
    let provider = Recording::new(vec![
        FauxResponse::text("## Goal\nEarlier.").usage(usage(1, 2)),
        FauxResponse::text("## Original Request\nRead three files.").usage(usage(5, 6)),
    ]);
    let result = compact(
        &prep,
        provider.as_ref(),
        &provider.model(),
        &SummaryOptions::default(),
    )
    .await
    .unwrap();
    let seen = provider.seen();
    assert_eq!(seen.len(), 2);
    assert_ne!(
        seen[0].session_id, seen[1].session_id,
        "each request routes on its own"
    );
    assert!(seen
        .iter()
        .all(|s| s.cache_retention == Some(CacheRetention::None)));
    insta::assert_snapshot!(
        "turn_prefix_request",
        request_value(&seen[1])["user"].as_str().unwrap()
    );
    assert!(result
        .summary
        .starts_with("## Goal\nEarlier.\n\n---\n\n**Turn Context (split turn):**\n\n## Original Request\nRead three files."));
    assert!(result
        .summary
        .ends_with("<read-files>\na.rs\nb.rs\n</read-files>"));
    assert_eq!(
        (
            result.usage.input,
            result.usage.output,
            result.usage.total()
        ),
        (6, 8, 14)
    );
}

#[tokio::test]
async fn a_split_turn_with_no_history_keeps_the_previous_summary() {
    let session = new_session();
    let big = "y".repeat(400);
    let mut ts = 1_800_000_000_000;
    let mut next = || {
        ts += 1000;
        ts
    };
    session
        .append_message(user("Read files.", next()))
        .await
        .unwrap();
    for i in 0..3 {
        let id = format!("r{i}");
        session
            .append_message(assistant_call(&id, "read", "f.rs", next()))
            .await
            .unwrap();
        session
            .append_message(result(&id, "read", &big, next()))
            .await
            .unwrap();
    }
    let path = session.ancestry(None).await.unwrap();
    let mut prep = prepare_compaction(&path, &keep(150)).unwrap().unwrap();
    assert!(prep.is_split_turn && prep.messages_to_summarize.is_empty());
    prep.previous_summary = Some("OLD SUMMARY".into());
    let provider = Recording::new(vec![FauxResponse::text("PREFIX")]);
    let result = compact(
        &prep,
        provider.as_ref(),
        &provider.model(),
        &SummaryOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        provider.seen().len(),
        1,
        "no history request without history"
    );
    assert!(result
        .summary
        .starts_with("OLD SUMMARY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX"));
}

#[tokio::test]
async fn nothing_to_compact() {
    let session = new_session();
    assert!(prepare_compaction::<SessionEntry>(&[], &keep(60))
        .unwrap()
        .is_none());
    session
        .append_message(user("hi", 1_800_000_000_000))
        .await
        .unwrap();
    session
        .append_message(assistant_text("hello", 1_800_000_001_000))
        .await
        .unwrap();
    // Everything fits in the kept tail.
    let path = session.ancestry(None).await.unwrap();
    assert!(prepare_compaction(&path, &keep(20_000)).unwrap().is_none());
    // A leaf that is a compaction: already compacted.
    three_turns(&session).await;
    let path = session.ancestry(None).await.unwrap();
    let prep = prepare_compaction(&path, &keep(60)).unwrap().unwrap();
    let provider = Recording::new(vec![FauxResponse::text(SUMMARY)]);
    let r = compact(
        &prep,
        provider.as_ref(),
        &provider.model(),
        &SummaryOptions::default(),
    )
    .await
    .unwrap();
    session.append_compaction(r.to_draft()).await.unwrap();
    let path = session.ancestry(None).await.unwrap();
    assert!(prepare_compaction(&path, &keep(60)).unwrap().is_none());
}

#[tokio::test]
async fn a_broken_path_is_refused_with_the_entry_named() {
    let session = new_session();
    three_turns(&session).await;
    let mut path = session.ancestry(None).await.unwrap();
    path.remove(3);
    let err = prepare_compaction(&path, &keep(60)).unwrap_err();
    assert!(matches!(err, CompactionError::InvalidPath(_)), "{err}");
    assert!(err.to_string().contains(&path[3].id), "{err}");
}

async fn entry_count(session: &Session) -> usize {
    session.entries().await.unwrap().len()
}

#[tokio::test]
async fn failures_leave_the_session_unchanged() {
    let session = new_session();
    three_turns(&session).await;
    let before = entry_count(&session).await;
    let path = session.ancestry(None).await.unwrap();
    let prep = prepare_compaction(&path, &keep(60)).unwrap().unwrap();
    let cases: Vec<(FauxResponse, &str)> = vec![
        (
            FauxResponse::text("partial").error("boom"),
            "Summarization failed: boom",
        ),
        (
            FauxResponse::text("cut off").stop_reason(StopReason::Length),
            "Summarization failed: generation hit the token cap and the summary is incomplete",
        ),
        (
            FauxResponse::tool_call("read", json!({"path": "x"})),
            "Summarization attempted to call a tool",
        ),
    ];
    for (response, message) in cases {
        let provider = Recording::new(vec![response]);
        let err = compact(
            &prep,
            provider.as_ref(),
            &provider.model(),
            &SummaryOptions::default(),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, CompactionError::SummarizationFailed(_)));
        assert_eq!(err.to_string(), message);
    }
    assert_eq!(entry_count(&session).await, before);
}

#[tokio::test]
async fn an_abort_is_its_own_error_and_leaves_the_session_unchanged() {
    let session = new_session();
    three_turns(&session).await;
    let before = entry_count(&session).await;
    let path = session.ancestry(None).await.unwrap();
    let prep = prepare_compaction(&path, &keep(60)).unwrap().unwrap();
    // Cancelled while the summary streams.
    let provider = Recording::new(vec![
        FauxResponse::text("words ".repeat(200)).chunk_delay(Duration::from_millis(5))
    ]);
    let options = SummaryOptions::default();
    let cancel = options.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        cancel.cancel();
    });
    let err = compact(&prep, provider.as_ref(), &provider.model(), &options)
        .await
        .unwrap_err();
    assert!(err.is_aborted(), "{err}");
    // The provider reporting an abort.
    let provider = Recording::new(vec![FauxResponse::text("x").aborted()]);
    let err = compact(
        &prep,
        provider.as_ref(),
        &provider.model(),
        &SummaryOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CompactionError::Aborted(_)));
    assert_eq!(entry_count(&session).await, before);
}

#[tokio::test]
async fn transient_failures_are_retried_with_events() {
    let session = new_session();
    three_turns(&session).await;
    let path = session.ancestry(None).await.unwrap();
    let prep = prepare_compaction(&path, &keep(60)).unwrap().unwrap();
    let provider = Recording::new(vec![
        FauxResponse::new().error("503 service unavailable"),
        FauxResponse::text(SUMMARY),
    ]);
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let options = SummaryOptions {
        retry: Some(
            RetryPolicy::default()
                .with_enabled(true)
                .with_max_retries(2)
                .with_base_delay_ms(1),
        ),
        on_event: Some(Arc::new(move |e: &SummaryEvent| {
            if !matches!(e, SummaryEvent::TextDelta { .. }) {
                sink.lock().unwrap().push(serde_json::to_value(e).unwrap());
            }
        })),
        ..Default::default()
    };
    let r = compact(&prep, provider.as_ref(), &provider.model(), &options)
        .await
        .unwrap();
    assert!(r.summary.starts_with(SUMMARY));
    let seen = provider.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[0].session_id, seen[1].session_id,
        "retries of one request share its id"
    );
    insta::assert_json_snapshot!("retry_events", *events.lock().unwrap());
}

#[tokio::test]
async fn reasoning_is_sent_only_to_reasoning_models() {
    let session = new_session();
    three_turns(&session).await;
    let path = session.ancestry(None).await.unwrap();
    let prep = prepare_compaction(&path, &keep(60)).unwrap().unwrap();
    let options = SummaryOptions {
        thinking_level: Some(ThinkingLevel::High),
        ..Default::default()
    };
    let provider = Recording::new(vec![FauxResponse::text("a"), FauxResponse::text("b")]);
    let mut model = provider.model();
    model.reasoning = false;
    compact(&prep, provider.as_ref(), &model, &options)
        .await
        .unwrap();
    model.reasoning = true;
    compact(&prep, provider.as_ref(), &model, &options)
        .await
        .unwrap();
    let seen = provider.seen();
    assert_eq!(seen[0].reasoning, None);
    assert_eq!(seen[1].reasoning, Some(ThinkingLevel::High));
}

/// root ─ u1 ─ a1 ─┬─ u2 ─ a2(edit) ─ r2 ─ a2b   (old leaf)
///                 └─ (target: a1)
async fn branched() -> (Session, String, String) {
    let session = new_session();
    let ts = 1_800_000_000_000;
    session
        .append_message(user("Start the task.", ts))
        .await
        .unwrap();
    let a1 = session
        .append_message(assistant_text("Started.", ts + 1000))
        .await
        .unwrap();
    session
        .append_message(user("Try approach B.", ts + 2000))
        .await
        .unwrap();
    session
        .append_message(assistant_call("e1", "edit", "src/b.rs", ts + 3000))
        .await
        .unwrap();
    session
        .append_message(result("e1", "edit", "ok", ts + 4000))
        .await
        .unwrap();
    let leaf = session
        .append_message(assistant_text("Approach B fails with E0308.", ts + 5000))
        .await
        .unwrap();
    (session, a1, leaf)
}

#[tokio::test]
async fn a_branch_summary_is_written_under_the_target_with_the_old_leaf_as_from_id() {
    let (session, a1, old_leaf) = branched().await;
    let collection = collect_entries_for_branch_summary(&session, Some(&old_leaf), &a1)
        .await
        .unwrap();
    assert_eq!(collection.common_ancestor_id.as_deref(), Some(a1.as_str()));
    assert_eq!(collection.entries.len(), 4);
    let provider = Recording::new(vec![
        FauxResponse::text("## Goal\nApproach B.").usage(usage(50, 10))
    ]);
    let options = BranchSummaryOptions {
        summary: SummaryOptions {
            custom_instructions: Some("the compiler error".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let r = generate_branch_summary(
        &collection.entries,
        provider.as_ref(),
        &provider.model(),
        &options,
    )
    .await
    .unwrap();
    let seen = provider.seen();
    assert_eq!(seen[0].cache_retention, Some(CacheRetention::None));
    insta::assert_snapshot!(
        "branch_summary_request",
        request_value(&seen[0])["user"].as_str().unwrap()
    );
    assert!(r.summary.starts_with(
        "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n## Goal\nApproach B."
    ));
    let summary_id = session
        .move_to(Some(&a1), Some(r.to_draft()))
        .await
        .unwrap()
        .unwrap();
    let entry = session.get_entry(&summary_id).await.unwrap().unwrap();
    let names = names(&session).await;
    insta::assert_json_snapshot!(
        "branch_summary_entry",
        normalize(entry_value(&entry), &names)
    );
    match &entry.kind {
        EntryKind::BranchSummary(b) => assert_eq!(b.from_id, old_leaf),
        other => panic!("{other:?}"),
    }
    let ctx = session
        .build_context(&ContextOptions::default())
        .await
        .unwrap();
    assert!(matches!(
        ctx.messages.last(),
        Some(AgentMessage::BranchSummary(_))
    ));
}

#[tokio::test]
async fn branch_summary_replace_instructions_and_abort() {
    let (session, a1, old_leaf) = branched().await;
    let collection = collect_entries_for_branch_summary(&session, Some(&old_leaf), &a1)
        .await
        .unwrap();
    let provider = Recording::new(vec![FauxResponse::text("only this")]);
    let options = BranchSummaryOptions {
        summary: SummaryOptions {
            custom_instructions: Some("List the files only.".into()),
            ..Default::default()
        },
        replace_instructions: true,
        ..Default::default()
    };
    generate_branch_summary(
        &collection.entries,
        provider.as_ref(),
        &provider.model(),
        &options,
    )
    .await
    .unwrap();
    let text = request_value(&provider.seen()[0])["user"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.ends_with("</conversation>\n\nList the files only."),
        "{text}"
    );

    let provider = Recording::new(vec![FauxResponse::text("x").aborted()]);
    let err = generate_branch_summary(
        &collection.entries,
        provider.as_ref(),
        &provider.model(),
        &BranchSummaryOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, BranchSummaryError::Aborted(_)), "{err}");

    // Nothing to summarize: no model call.
    let provider = Recording::new(vec![]);
    let r = generate_branch_summary(
        &[],
        provider.as_ref(),
        &provider.model(),
        &BranchSummaryOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(r.summary, "No content to summarize");
    assert!(provider.seen().is_empty());
}
