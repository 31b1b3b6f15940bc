//! The request messages the harness keeps across turns (DECISIONS §20.13) equal the ones
//! built from scratch — the session's entries walked from the leaf, projected, converted and
//! transformed for the request's model — for every request of scripted sessions with prompts,
//! tool batches, an aborted batch, model switches, navigation, compaction and a context edit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbor_agent::compaction::CompactionSettings;
use arbor_agent::context::convert::convert_to_llm;
use arbor_agent::context::projection::build_session_context_owned;
use arbor_agent::context::ContextOptions;
use arbor_agent::harness::{AgentHarness, NavigateOptions};
use arbor_agent::session::entry::SessionEntry;
use arbor_agent::session::{MemoryStorage, Session};
use arbor_ai::event::AssistantMessageEventStream;
use arbor_ai::faux::{FauxProvider, FauxResponse};
use arbor_ai::stream::{ApiProvider, StreamOptions};
use arbor_ai::transform::transform_messages;
use arbor_ai::{Context, Message, Model};
use futures::StreamExt;
use proptest::prelude::*;
use serde_json::{json, Value};

use super::harness_support::options;

/// Delegates to the faux provider after comparing the request with the from-scratch one.
struct Checking {
    faux: FauxProvider,
    session: Arc<Session>,
    /// One line per request: "ok <n>" or the mismatch.
    log: Arc<Mutex<Vec<String>>>,
}

/// Synthetic results carry the time they were made; everything else must be equal.
fn comparable(messages: &[Message]) -> Value {
    let mut v = serde_json::to_value(messages).unwrap();
    if let Value::Array(items) = &mut v {
        for m in items {
            if m["role"] == "toolResult" {
                m["timestamp"] = json!(0);
            }
        }
    }
    v
}

async fn from_scratch(session: &Session, model: &Model) -> Vec<Message> {
    let entries = session.entries().await.unwrap();
    let by_id: HashMap<&str, &SessionEntry> = entries.iter().map(|e| (e.id.as_str(), e)).collect();
    let mut path = Vec::new();
    let mut at = session.leaf_id().await.unwrap();
    while let Some(id) = at {
        let e = by_id[id.as_str()];
        path.push(e.clone());
        at = e.parent_id.clone();
    }
    path.reverse();
    let ctx = build_session_context_owned(path, &ContextOptions::default());
    transform_messages(&convert_to_llm(&ctx.messages), model)
}

impl ApiProvider for Checking {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        let sent = context.messages.to_vec();
        let (session, log, model_c) = (self.session.clone(), self.log.clone(), model.clone());
        // Summaries (compaction, branch) are requests of their own, not the transcript.
        let is_summary = context
            .system_prompt
            .as_deref()
            .is_some_and(|p| !p.starts_with("You are a test agent."));
        let inner = ApiProvider::stream(&self.faux, model, context, options);
        let check = async move {
            if !is_summary {
                let expected = from_scratch(&session, &model_c).await;
                let line = if comparable(&sent) == comparable(&expected) {
                    format!("ok {}", sent.len())
                } else {
                    format!(
                        "MISMATCH\n sent     {}\n expected {}",
                        comparable(&sent),
                        comparable(&expected)
                    )
                };
                log.lock().unwrap().push(line);
            }
            inner
        };
        Box::pin(futures::stream::once(check).flatten())
    }
}

struct Script {
    faux: FauxProvider,
    session: Arc<Session>,
    harness: AgentHarness,
    log: Arc<Mutex<Vec<String>>>,
    models: [Model; 3],
}

fn script() -> Script {
    let faux = FauxProvider::builder().seed(11).build();
    let session = Arc::new(Session::new(Arc::new(MemoryStorage::new("/work/p"))));
    let log = Arc::new(Mutex::new(Vec::new()));
    let checking = Checking {
        faux: faux.clone(),
        session: session.clone(),
        log: log.clone(),
    };
    let mut opts = options(&faux);
    opts.compaction = CompactionSettings {
        enabled: true,
        reserve_tokens: 100,
        keep_recent_tokens: 5,
    };
    let base = faux.model();
    // Same API, another id: assistant messages of `base` become foreign (thinking dropped,
    // tool-call ids normalized), so the transform differs and the cache must start over.
    let mut other = base.clone();
    other.id = format!("{}-other", base.id);
    let mut text_only = base.clone();
    text_only.input = vec!["text".into()];
    let harness = AgentHarness::new(session.clone(), Arc::new(checking), opts).unwrap();
    Script {
        faux,
        session,
        harness,
        log,
        models: [base, other, text_only],
    }
}

#[derive(Debug, Clone)]
enum Step {
    Text,
    Tools,
    ParallelTools,
    AbortedTool,
    Model(usize),
    NavigateBack,
    NavigateRoot,
    Compact,
    Edit,
    Steer,
}

async fn entry_of_role(s: &Script, role: &str, nth_from_end: usize) -> Option<String> {
    let path = s.session.ancestry(None).await.unwrap();
    path.iter()
        .rev()
        .filter(|e| serde_json::to_value(e).unwrap().pointer("/message/role") == Some(&json!(role)))
        .nth(nth_from_end)
        .map(|e| e.id.clone())
}

async fn run(s: &Script, step: &Step, n: usize) {
    let h = &s.harness;
    match step {
        Step::Text => {
            s.faux.push(FauxResponse::text(format!("reply {n}")));
            h.prompt(&format!("prompt {n}"), &[]).await.unwrap();
        }
        Step::Tools => {
            s.faux.push(
                FauxResponse::new()
                    .with_thinking("thinking about it")
                    .with_tool_call("echo", json!({"text": format!("t{n}")})),
            );
            s.faux.push(FauxResponse::text("done"));
            h.prompt(&format!("tools {n}"), &[]).await.unwrap();
        }
        Step::ParallelTools => {
            s.faux.push(
                FauxResponse::tool_call("echo", json!({"text": "a", "delayMs": 5}))
                    .with_tool_call("fail", json!({}))
                    .with_tool_call("missing_tool", json!({})),
            );
            s.faux.push(FauxResponse::text("after batch"));
            h.prompt(&format!("batch {n}"), &[]).await.unwrap();
        }
        Step::AbortedTool => {
            s.faux.push(FauxResponse::tool_call("hang", json!({})));
            let h2 = h.clone();
            let p = format!("hang {n}");
            let run = tokio::spawn(async move { h2.prompt(&p, &[]).await });
            tokio::time::sleep(Duration::from_millis(30)).await;
            h.abort().await;
            run.await.unwrap().unwrap();
        }
        Step::Model(i) => h.set_model(s.models[*i].clone()).await.unwrap(),
        Step::NavigateBack => {
            if let Some(id) = entry_of_role(s, "user", 1).await {
                h.navigate_tree(Some(&id), NavigateOptions::default())
                    .await
                    .unwrap();
            }
        }
        Step::NavigateRoot => {
            h.navigate_tree(None, NavigateOptions::default())
                .await
                .unwrap();
        }
        Step::Compact => {
            s.faux
                .push(FauxResponse::text(format!("## Goal\nsummary {n}")));
            // Nothing to compact on a short path is a fine outcome.
            let _ = h.compact(None).await;
        }
        Step::Edit => {
            if let Some(id) = entry_of_role(s, "assistant", 0).await {
                s.session
                    .append_context_edit(&id, Some(arbor_ai::Content::Text(format!("edited {n}"))))
                    .await
                    .unwrap();
            }
        }
        Step::Steer => {
            s.faux.push(FauxResponse::tool_call(
                "echo",
                json!({"text": "slow", "delayMs": 40}),
            ));
            s.faux.push(FauxResponse::text("steered"));
            let h2 = h.clone();
            let p = format!("steer {n}");
            let run = tokio::spawn(async move { h2.prompt(&p, &[]).await });
            tokio::time::sleep(Duration::from_millis(15)).await;
            let _ = h.steer("also this", &[]);
            run.await.unwrap().unwrap();
        }
    }
}

async fn play(steps: &[Step]) -> Vec<String> {
    let s = script();
    for (n, step) in steps.iter().enumerate() {
        // A step may leave a reply unused (a compaction with nothing to compact, an abort that
        // came first): start each step on an empty queue so no later prompt takes a stale reply
        // (a leftover `hang` tool call would block the next prompt forever).
        s.faux.set_responses(Vec::<FauxResponse>::new());
        run(&s, step, n).await;
        s.faux.set_responses(Vec::<FauxResponse>::new());
        // Every step ends with a request, so each state is compared at least once.
        s.faux.push(FauxResponse::text("ack"));
        s.harness.prompt(&format!("check {n}"), &[]).await.unwrap();
    }
    let log = s.log.lock().unwrap().clone();
    log
}

fn assert_all_ok(log: &[String]) {
    let bad: Vec<&String> = log.iter().filter(|l| !l.starts_with("ok ")).collect();
    assert!(
        bad.is_empty(),
        "{} of {} requests differ: {bad:#?}",
        bad.len(),
        log.len()
    );
}

#[tokio::test]
async fn scripted_session_sends_what_a_full_rebuild_would() {
    use Step::*;
    let steps = [
        Text,
        Tools,
        ParallelTools,
        Steer,
        Model(1),
        Tools,
        Text,
        AbortedTool,
        Text,
        Model(2),
        Text,
        NavigateBack,
        Text,
        Edit,
        Text,
        Compact,
        Tools,
        Model(0),
        Text,
        NavigateRoot,
        Text,
    ];
    let log = play(&steps).await;
    assert_all_ok(&log);
    // One check per step, plus the steps' own requests (two per tool step).
    assert!(log.len() >= steps.len() + 15, "{}", log.len());
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => Just(Step::Text),
        2 => Just(Step::Tools),
        1 => Just(Step::ParallelTools),
        1 => Just(Step::AbortedTool),
        1 => (0usize..3).prop_map(Step::Model),
        1 => Just(Step::NavigateBack),
        1 => Just(Step::NavigateRoot),
        1 => Just(Step::Compact),
        1 => Just(Step::Edit),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn random_sessions_send_what_a_full_rebuild_would(steps in prop::collection::vec(step(), 1..10)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let log = rt.block_on(play(&steps));
        assert_all_ok(&log);
    }
}
