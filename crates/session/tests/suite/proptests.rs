//! Property tests on random session trees (memory backend): projections stay on the active
//! path, the cached projection equals a from-scratch one, moving back restores a context
//! exactly, and reopening changes nothing.

use std::collections::HashMap;
use std::sync::Arc;

use arbor_ai::{Content, Message};
use arbor_session::context::projection::{
    ancestry_in, bounded_branch, build_session_context, build_session_context_from_window,
    derive_state, recovered_leaf,
};
use arbor_session::context::{ContextOptions, SessionContext};
use arbor_session::message::AgentMessage;
use arbor_session::{
    BranchSummaryDraft, CompactionDraft, MemoryStorage, Session, SessionEntry, SessionStorage,
};
use proptest::prelude::*;
use serde_json::json;

use super::context_support::{assistant, system, user};

#[derive(Debug, Clone)]
enum Op {
    User,
    Assistant(u8),
    System,
    Model(u8),
    Thinking(u8),
    Tools(u8),
    Custom,
    CustomMessage,
    Label(usize),
    Name,
    /// Move to entry #n of the log (or to no entry), maybe with a summary.
    MoveTo(Option<usize>, bool),
    /// Compaction keeping from active-path entry #n, maybe with retainedTail / systemMessage.
    Compaction(usize, bool, bool),
    /// Edit active-path entry #n: replace (true) or remove.
    Edit(usize, bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => Just(Op::User),
        6 => any::<u8>().prop_map(Op::Assistant),
        1 => Just(Op::System),
        1 => any::<u8>().prop_map(Op::Model),
        1 => any::<u8>().prop_map(Op::Thinking),
        1 => any::<u8>().prop_map(Op::Tools),
        1 => Just(Op::Custom),
        1 => Just(Op::CustomMessage),
        1 => any::<usize>().prop_map(Op::Label),
        1 => Just(Op::Name),
        3 => (proptest::option::of(any::<usize>()), any::<bool>()).prop_map(|(t, s)| Op::MoveTo(t, s)),
        2 => (any::<usize>(), any::<bool>(), any::<bool>()).prop_map(|(k, r, s)| Op::Compaction(k, r, s)),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(k, r)| Op::Edit(k, r)),
    ]
}

const PROVIDERS: [(&str, &str); 3] = [
    ("anthropic", "claude-sonnet-4-5"),
    ("openai", "gpt-5"),
    ("google", "gemini-2.5-pro"),
];

/// Applies one op; every piece of text carries a unique `⟦n⟧` token so the context can be
/// traced back to the entries it came from.
async fn apply(s: &Session, op: &Op, n: &mut u32) {
    *n += 1;
    let tok = format!("⟦{n}⟧");
    let log = s.entries().await.unwrap();
    let path = s.ancestry(None).await.unwrap();
    let r = match op {
        Op::User => s.append_message(user(&tok, i64::from(*n))).await.map(drop),
        Op::Assistant(p) => {
            let (prov, model) = PROVIDERS[*p as usize % 3];
            s.append_message(assistant(&tok, prov, model, i64::from(*n)))
                .await
                .map(drop)
        }
        Op::System => s
            .append_message(system(&tok, i64::from(*n)))
            .await
            .map(drop),
        Op::Model(p) => {
            let (prov, model) = PROVIDERS[*p as usize % 3];
            s.append_model_change(prov, model).await.map(drop)
        }
        Op::Thinking(l) => s
            .append_thinking_level_change(["off", "low", "high", "xhigh"][*l as usize % 4])
            .await
            .map(drop),
        Op::Tools(k) => {
            let names: Vec<String> = ["read", "bash", "edit"]
                .iter()
                .take(*k as usize % 4)
                .map(std::string::ToString::to_string)
                .collect();
            s.append_active_tools_change(&names).await.map(drop)
        }
        Op::Custom => s
            .append_custom_entry("state", Some(json!({"tok": tok})))
            .await
            .map(drop),
        Op::CustomMessage => s
            .append_custom_message("note", Content::text(&tok), false, None)
            .await
            .map(drop),
        Op::Label(i) if !log.is_empty() => s
            .append_label(&log[i % log.len()].id, Some(&tok))
            .await
            .map(drop),
        Op::Name => s.append_session_name(&tok).await.map(drop),
        Op::MoveTo(t, summarize) => {
            let target = match t {
                Some(i) if !log.is_empty() => Some(log[i % log.len()].id.clone()),
                _ => None,
            };
            let summary = summarize.then(|| BranchSummaryDraft {
                summary: tok.clone(),
                ..Default::default()
            });
            s.move_to(target.as_deref(), summary).await.map(drop)
        }
        Op::Compaction(k, retained, sys) if !path.is_empty() => {
            let kept = path[k % path.len()].id.clone();
            let sys_msg = match system(&format!("sys{tok}"), 1) {
                AgentMessage::Llm(m @ Message::System(_)) => m,
                other => panic!("{other:?}"),
            };
            s.append_compaction(CompactionDraft {
                summary: tok.clone(),
                first_kept_entry_id: Some(kept),
                tokens_before: 1,
                retained_tail: retained.then(|| vec![user(&format!("tail{tok}"), 1)]),
                system_message: sys.then_some(sys_msg),
                ..Default::default()
            })
            .await
            .map(drop)
        }
        Op::Edit(k, replace) if !path.is_empty() => {
            let target = &path[k % path.len()];
            // Invalid targets are refused; that is part of what is being exercised.
            let _ = s
                .append_context_edit(
                    &target.id,
                    replace.then(|| Content::text(format!("edit{tok}"))),
                )
                .await;
            Ok(())
        }
        _ => Ok(()),
    };
    r.unwrap_or_else(|e| panic!("{op:?}: {e}"));
}

/// The projection recomputed from nothing but the raw log.
async fn from_scratch(
    storage: &MemoryStorage,
) -> (Option<String>, SessionContext, Vec<SessionEntry>) {
    let page = storage.entries(None, None).await.unwrap();
    let log: Vec<SessionEntry> = page.entries.into_iter().map(|(_, e)| e).collect();
    let leaf = recovered_leaf(&log);
    let by_id: HashMap<&str, &SessionEntry> = log.iter().map(|e| (e.id.as_str(), e)).collect();
    let path: Vec<SessionEntry> = ancestry_in(&by_id, leaf.as_deref())
        .unwrap()
        .into_iter()
        .cloned()
        .collect();
    let ctx = build_session_context(&path, &ContextOptions::default());
    (leaf, ctx, path)
}

/// Every `⟦n⟧` token in the context must come from an entry on the active path.
fn tokens_on_path(ctx: &SessionContext, path: &[SessionEntry]) -> Result<(), String> {
    let ctx_text = serde_json::to_string(ctx.messages.as_slice()).unwrap();
    let path_text = serde_json::to_string(path).unwrap();
    for piece in ctx_text.split('⟦').skip(1) {
        let tok = format!("⟦{}⟧", piece.split('⟧').next().unwrap_or(""));
        if !path_text.contains(&tok) {
            return Err(format!(
                "{tok} is in the context but not on the active path"
            ));
        }
    }
    Ok(())
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn projection_stays_on_the_active_path_and_matches_a_fresh_projection(ops in proptest::collection::vec(op(), 1..60)) {
        rt().block_on(async {
            let storage = Arc::new(MemoryStorage::new("/p"));
            let s = Session::new(storage.clone());
            let mut n = 0;
            for op in &ops {
                apply(&s, op, &mut n).await;
                let cached = s.build_context(&ContextOptions::default()).await.unwrap();
                let (leaf, fresh, path) = from_scratch(&storage).await;
                assert_eq!(s.leaf_id().await.unwrap(), leaf);
                assert_eq!(&cached, &fresh, "cached projection diverged after {op:?}");
                tokens_on_path(&cached, &path).unwrap();
                // A session opened now starts from the bounded branch (DECISIONS §22.50) and
                // gives the same context and ancestry.
                let reopened = Session::new(storage.clone());
                let resumed = reopened.build_context(&ContextOptions::default()).await.unwrap();
                assert_eq!(&resumed, &fresh, "resumed projection after {op:?}");
                let ids = |p: &[SessionEntry]| p.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
                assert_eq!(ids(&reopened.ancestry(None).await.unwrap()), ids(&path), "resumed ancestry after {op:?}");
                // The bounded window plus full-ancestry settings gives the same context.
                let windowed = build_session_context_from_window(
                    bounded_branch(&path).to_vec(),
                    derive_state(&path),
                    &ContextOptions::default(),
                );
                assert_eq!(&windowed, &fresh, "window projection after {op:?}");
                // getBranch(): our bounded path agrees with the storage's own walk.
                let ours: Vec<String> = bounded_branch(&path).iter().map(|e| e.id.clone()).collect();
                let theirs: Vec<String> = storage.path_to_root_or_compaction(leaf.as_deref()).await.unwrap().into_iter().map(|e| e.id).collect();
                assert_eq!(ours, theirs, "bounded branch after {op:?}");
            }
        });
    }

    #[test]
    fn every_op_on_a_resumed_window_matches_a_fresh_projection(ops in proptest::collection::vec(op(), 1..60)) {
        // Each op runs on a session opened just before it, whose cache starts from the
        // bounded branch (DECISIONS §22.50): appends, edits, compactions and moves must then
        // extend, retreat or rebuild that window to the same context as a full replay.
        rt().block_on(async {
            let storage = Arc::new(MemoryStorage::new("/p"));
            let mut n = 0;
            for op in &ops {
                let s = Session::new(storage.clone());
                let before = s.build_context(&ContextOptions::default()).await.unwrap();
                apply(&s, op, &mut n).await;
                let cached = s.build_context(&ContextOptions::default()).await.unwrap();
                let (leaf, fresh, path) = from_scratch(&storage).await;
                assert_eq!(s.leaf_id().await.unwrap(), leaf);
                assert_eq!(&cached, &fresh, "windowed projection diverged after {op:?} (was {before:?})");
                tokens_on_path(&cached, &path).unwrap();
            }
        });
    }

    #[test]
    fn appending_then_moving_back_restores_the_context_exactly(
        before in proptest::collection::vec(op(), 0..30),
        after in proptest::collection::vec(op(), 1..30),
    ) {
        rt().block_on(async {
            let storage = Arc::new(MemoryStorage::new("/p"));
            let s = Session::new(storage.clone());
            let mut n = 0;
            for op in &before {
                apply(&s, op, &mut n).await;
            }
            let leaf = s.leaf_id().await.unwrap();
            let saved = s.build_context(&ContextOptions::default()).await.unwrap();
            for op in &after {
                apply(&s, op, &mut n).await;
            }
            s.move_to(leaf.as_deref(), None).await.unwrap();
            assert_eq!(s.build_context(&ContextOptions::default()).await.unwrap(), saved);
            // ...and a fresh Session over the same storage (reopen) agrees.
            let reopened = Session::new(storage.clone());
            assert_eq!(reopened.build_context(&ContextOptions::default()).await.unwrap(), saved);
        });
    }

    #[test]
    fn projection_is_deterministic_and_reopen_stable(ops in proptest::collection::vec(op(), 1..60)) {
        rt().block_on(async {
            let storage = Arc::new(MemoryStorage::new("/p"));
            let s = Session::new(storage.clone());
            let mut n = 0;
            for op in &ops {
                apply(&s, op, &mut n).await;
            }
            let a = s.build_context(&ContextOptions::default()).await.unwrap();
            let b = s.build_context(&ContextOptions::default()).await.unwrap();
            assert_eq!(&a, &b);
            let reopened = Session::new(storage.clone());
            assert_eq!(reopened.build_context(&ContextOptions::default()).await.unwrap(), a.clone());
            assert_eq!(reopened.leaf_id().await.unwrap(), s.leaf_id().await.unwrap());
        });
    }

    #[test]
    fn jsonl_sessions_move_back_and_reopen_to_the_same_context(
        ops in proptest::collection::vec(op(), 1..30),
        more in proptest::collection::vec(op(), 0..15),
    ) {
        use arbor_session::jsonl::JsonlRepository;
        use arbor_session::{CreateOptions, SessionRepository};
        rt().block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let repo = JsonlRepository::flat(dir.path());
            let storage = repo.create(CreateOptions::new("/p")).await.unwrap();
            let path = storage.location();
            let s = Session::new(Arc::new(storage));
            let mut n = 0;
            for op in &ops {
                apply(&s, op, &mut n).await;
            }
            let live = s.build_context(&ContextOptions::default()).await.unwrap();
            let leaf = s.leaf_id().await.unwrap();
            for op in &more {
                apply(&s, op, &mut n).await;
            }
            s.move_to(leaf.as_deref(), None).await.unwrap();
            assert_eq!(s.build_context(&ContextOptions::default()).await.unwrap(), live.clone());
            let reopened = Session::new(Arc::new(repo.open_read_only(&path).await.unwrap()));
            assert_eq!(reopened.leaf_id().await.unwrap(), leaf);
            assert_eq!(reopened.build_context(&ContextOptions::default()).await.unwrap(), live);
        });
    }
}
