//! The seeds' walk-throughs on a real `Session` (memory backend), one reviewed snapshot per
//! scenario, plus the validation rules of DECISIONS §2–§3.

use std::collections::HashMap;
use std::sync::Arc;

use arbor_ai::{Content, Message};
use arbor_session::context::{ContextOptions, SessionContext};
use arbor_session::message::AgentMessage;
use arbor_session::{
    BranchSummaryDraft, CompactionDraft, EntryKind, MemoryStorage, Session, SessionEntry,
    SessionStorage,
};
use serde_json::{json, Value};

use super::context_support::{assistant, msg, normalize, system, tool_call, tool_result, user};

fn new_session() -> (Session, Arc<MemoryStorage>) {
    let storage = Arc::new(MemoryStorage::new("/work/project"));
    (Session::new(storage.clone()), storage)
}

/// Entry ids → `e1`, `e2`, … in log order, so snapshots read like the seeds.
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

/// One line per log entry: `e6 leaf parent=e5 target=e3`.
fn log_line(e: &SessionEntry, names: &HashMap<String, String>) -> String {
    let n = |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_string());
    let mut line = format!("{} {}", n(&e.id), e.entry_type());
    if let EntryKind::Message(m) = &e.kind {
        line.push_str(&format!("({})", m.message.role()));
    }
    line.push_str(&format!(
        " parent={}",
        e.parent_id
            .as_deref()
            .map(n)
            .unwrap_or_else(|| "null".into())
    ));
    if let Some(t) = e.kind.target_id() {
        line.push_str(&format!(" target={}", n(t)));
    }
    if let EntryKind::BranchSummary(b) = &e.kind {
        line.push_str(&format!(" fromId={}", n(&b.from_id)));
    }
    line
}

fn context_value(ctx: &SessionContext) -> Value {
    json!({
        "messages": ctx.messages.as_slice(),
        "model": ctx.model,
        "thinkingLevel": ctx.thinking_level,
        "activeToolNames": ctx.active_tool_names,
    })
}

/// The scenario's log, leaf and projected context, normalized for a snapshot.
async fn scenario(session: &Session) -> Value {
    let names = names(session).await;
    let log: Vec<String> = session
        .entries()
        .await
        .unwrap()
        .iter()
        .map(|e| log_line(e, &names))
        .collect();
    let ctx = session
        .build_context(&ContextOptions::default())
        .await
        .unwrap();
    normalize(
        json!({
            "log": log,
            "leaf": session.leaf_id().await.unwrap(),
            "context": context_value(&ctx),
        }),
        &names,
    )
}

fn texts(ctx: &SessionContext) -> Vec<String> {
    ctx.llm_messages()
        .iter()
        .map(|m| match m {
            Message::User(u) => format!("user:{}", u.content.joined_text("+")),
            Message::Assistant(a) => format!("assistant:{}", a.text()),
            Message::ToolResult(t) => format!("toolResult:{}", t.content.joined_text("+")),
            Message::System(s) => format!("system:{}", s.content.joined_text("+")),
        })
        .collect()
}

async fn ctx(session: &Session) -> SessionContext {
    session
        .build_context(&ContextOptions::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn seed_e1_to_e7_branch_walk_with_leaf_entry() {
    let (s, storage) = new_session();
    let e1 = s.append_message(user("解释这个项目", 1)).await.unwrap();
    let e2 = s
        .append_message(assistant(
            "这是一个博客项目",
            "anthropic",
            "claude-sonnet-4-5",
            2,
        ))
        .await
        .unwrap();
    let e3 = s.append_model_change("openai", "gpt-5").await.unwrap();
    s.append_message(user("旧分支问题", 3)).await.unwrap();
    let e5 = s
        .append_message(assistant("旧分支回答", "openai", "gpt-5", 4))
        .await
        .unwrap();
    assert_eq!(s.leaf_id().await.unwrap().as_deref(), Some(e5.as_str()));
    // moveTo(e3) writes e6 = leaf{parent: e5-old, target: e3}; e7 continues from e3.
    assert_eq!(s.move_to(Some(&e3), None).await.unwrap(), None);
    assert_eq!(s.leaf_id().await.unwrap().as_deref(), Some(e3.as_str()));
    let e7 = s.append_message(user("新分支问题", 5)).await.unwrap();
    let e7_entry = s.get_entry(&e7).await.unwrap().unwrap();
    assert_eq!(e7_entry.parent_id.as_deref(), Some(e3.as_str()));

    let snap = scenario(&s).await;
    insta::assert_json_snapshot!("seed_e1_to_e7_branch_walk_with_leaf_entry", snap);

    // Recovery: a fresh Session over the same storage (reopen) sees the same leaf and context.
    let reopened = Session::new(storage.clone());
    assert_eq!(
        reopened.leaf_id().await.unwrap().as_deref(),
        Some(e7.as_str())
    );
    assert_eq!(ctx(&reopened).await, ctx(&s).await);
    let path: Vec<String> = reopened
        .branch_since_compaction(None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(path, [e1, e2, e3, e7]);
}

#[tokio::test]
async fn seed_plan_a_plan_b_reedit_user_message() {
    let (s, _) = new_session();
    s.append_message(user("重构登录流程", 1)).await.unwrap();
    let a1 = s
        .append_message(assistant("好的", "anthropic", "claude-sonnet-4-5", 2))
        .await
        .unwrap();
    let plan_a = s
        .append_message(user("请用方案 A 重构登录流程。", 3))
        .await
        .unwrap();
    let plan_a_done = s
        .append_message(assistant(
            "方案 A 完成",
            "anthropic",
            "claude-sonnet-4-5",
            4,
        ))
        .await
        .unwrap();
    // Re-editing the plan A message: the leaf goes to its parent, not to the message itself.
    let parent = s.get_entry(&plan_a).await.unwrap().unwrap().parent_id;
    assert_eq!(parent.as_deref(), Some(a1.as_str()));
    s.move_to(parent.as_deref(), None).await.unwrap();
    let plan_b = s
        .append_message(user("请用方案 B 重构登录流程。", 5))
        .await
        .unwrap();
    s.append_message(assistant(
        "方案 B 完成",
        "anthropic",
        "claude-sonnet-4-5",
        6,
    ))
    .await
    .unwrap();
    // Plan A and plan B are siblings.
    let b_entry = s.get_entry(&plan_b).await.unwrap().unwrap();
    assert_eq!(b_entry.parent_id.as_deref(), Some(a1.as_str()));

    let snap = scenario(&s).await;
    insta::assert_json_snapshot!("seed_plan_a_plan_b_reedit_user_message", snap);

    // Plan A is still there and can be switched back to.
    s.move_to(Some(&plan_a_done), None).await.unwrap();
    assert_eq!(
        texts(&ctx(&s).await),
        [
            "user:重构登录流程",
            "assistant:好的",
            "user:请用方案 A 重构登录流程。",
            "assistant:方案 A 完成"
        ]
    );
}

#[tokio::test]
async fn seed_branch_summary_placement() {
    let (s, _) = new_session();
    s.append_message(user("q1", 1)).await.unwrap();
    s.append_message(assistant("a1", "anthropic", "claude-sonnet-4-5", 2))
        .await
        .unwrap();
    let e3 = s.append_message(user("q2", 3)).await.unwrap();
    s.append_message(assistant(
        "a2 (explored)",
        "anthropic",
        "claude-sonnet-4-5",
        4,
    ))
    .await
    .unwrap();
    s.append_message(user("q3 (explored)", 5)).await.unwrap();
    s.append_message(assistant(
        "a3 (explored)",
        "anthropic",
        "claude-sonnet-4-5",
        6,
    ))
    .await
    .unwrap();
    let e7 = s.append_message(user("q4 (explored)", 7)).await.unwrap();
    let summary = s
        .move_to(
            Some(&e3),
            Some(BranchSummaryDraft {
                summary: "The API was unavailable; two files changed.".into(),
                details: Some(json!({"readFiles": [], "modifiedFiles": ["a.rs"]})),
                ..Default::default()
            }),
        )
        .await
        .unwrap()
        .expect("summary id");
    let entry = s.get_entry(&summary).await.unwrap().unwrap();
    assert_eq!(
        entry.parent_id.as_deref(),
        Some(e3.as_str()),
        "summary hangs under the target"
    );
    match &entry.kind {
        EntryKind::BranchSummary(b) => assert_eq!(b.from_id, e7, "fromId is the leaf we left"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        s.leaf_id().await.unwrap().as_deref(),
        Some(summary.as_str())
    );
    s.append_message(user("q2 continued", 8)).await.unwrap();

    let snap = scenario(&s).await;
    insta::assert_json_snapshot!("seed_branch_summary_placement", snap);
    let t = texts(&ctx(&s).await);
    assert!(
        t.iter().all(|x| !x.contains("explored)")),
        "old branch excluded: {t:?}"
    );
}

#[tokio::test]
async fn branch_summary_from_no_leaf_says_root() {
    let (s, _) = new_session();
    let id = s
        .move_to(
            None,
            Some(BranchSummaryDraft {
                summary: "s".into(),
                ..Default::default()
            }),
        )
        .await
        .unwrap()
        .unwrap();
    let e = s.get_entry(&id).await.unwrap().unwrap();
    assert_eq!(e.parent_id, None);
    match e.kind {
        EntryKind::BranchSummary(b) => assert_eq!(b.from_id, "root"),
        other => panic!("{other:?}"),
    }
}

/// u1 a1 u2 a2 — the history every compaction scenario starts from.
async fn four_turns(s: &Session) -> Vec<String> {
    vec![
        s.append_message(user("u1", 1)).await.unwrap(),
        s.append_message(assistant("a1", "anthropic", "claude-sonnet-4-5", 2))
            .await
            .unwrap(),
        s.append_message(user("u2", 3)).await.unwrap(),
        s.append_message(assistant("a2", "anthropic", "claude-sonnet-4-5", 4))
            .await
            .unwrap(),
    ]
}

#[tokio::test]
async fn compaction_with_first_kept() {
    let (s, _) = new_session();
    let ids = four_turns(&s).await;
    s.append_compaction(CompactionDraft {
        summary: "u1/a1 summarized".into(),
        first_kept_entry_id: Some(ids[2].clone()),
        tokens_before: 1234,
        ..Default::default()
    })
    .await
    .unwrap();
    s.append_message(user("u3", 5)).await.unwrap();
    insta::assert_json_snapshot!("compaction_with_first_kept", scenario(&s).await);
    // getBranch() starts at firstKept; the log keeps everything.
    assert_eq!(s.branch_since_compaction(None).await.unwrap()[0].id, ids[2]);
    assert_eq!(s.entries().await.unwrap().len(), 6);
}

#[tokio::test]
async fn compaction_with_retained_tail() {
    let (s, _) = new_session();
    let ids = four_turns(&s).await;
    let c = s
        .append_compaction(CompactionDraft {
            summary: "everything summarized".into(),
            first_kept_entry_id: Some(ids[0].clone()),
            tokens_before: 999,
            retained_tail: Some(vec![
                user("u2 (retained)", 3),
                assistant("a2 (retained)", "anthropic", "claude-sonnet-4-5", 4),
            ]),
            ..Default::default()
        })
        .await
        .unwrap();
    s.append_message(user("u3", 5)).await.unwrap();
    insta::assert_json_snapshot!("compaction_with_retained_tail", scenario(&s).await);
    assert_eq!(
        s.branch_since_compaction(None).await.unwrap()[0].id,
        c,
        "a retained tail makes the compaction the start"
    );
}

#[tokio::test]
async fn compaction_with_system_message() {
    let (s, _) = new_session();
    s.append_message(system("prompt v1", 1)).await.unwrap();
    let u1 = s.append_message(user("u1", 2)).await.unwrap();
    s.append_message(system("prompt v2 (diff)", 3))
        .await
        .unwrap();
    s.append_message(assistant("a1", "anthropic", "claude-sonnet-4-5", 4))
        .await
        .unwrap();
    let snapshot = match system("prompt v2 (full checkpoint)", 5) {
        AgentMessage::Llm(m) => m,
        other => panic!("{other:?}"),
    };
    s.append_compaction(CompactionDraft {
        summary: "summary".into(),
        first_kept_entry_id: Some(u1),
        tokens_before: 10,
        system_message: Some(snapshot),
        ..Default::default()
    })
    .await
    .unwrap();
    s.append_message(system("prompt v3 (diff)", 6))
        .await
        .unwrap();
    s.append_message(user("u2", 7)).await.unwrap();
    insta::assert_json_snapshot!("compaction_with_system_message", scenario(&s).await);
}

#[tokio::test]
async fn compaction_twice_in_a_row() {
    let (s, _) = new_session();
    let ids = four_turns(&s).await;
    for (summary, kept) in [("first summary", &ids[1]), ("second summary", &ids[2])] {
        s.append_compaction(CompactionDraft {
            summary: summary.into(),
            first_kept_entry_id: Some(kept.clone()),
            tokens_before: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    }
    s.append_message(user("u3", 5)).await.unwrap();
    insta::assert_json_snapshot!("compaction_twice_in_a_row", scenario(&s).await);
    assert_eq!(
        texts(&ctx(&s).await).len(),
        4,
        "second summary, u2, a2, u3 — the first compaction adds nothing"
    );
}

#[tokio::test]
async fn settings_change_on_one_branch_only() {
    let (s, _) = new_session();
    s.append_model_change("anthropic", "claude-sonnet-4-5")
        .await
        .unwrap();
    s.append_thinking_level_change("low").await.unwrap();
    s.append_message(user("u1", 1)).await.unwrap();
    let fork = s
        .append_message(assistant("a1", "anthropic", "claude-sonnet-4-5", 2))
        .await
        .unwrap();
    // Branch A changes model, thinking level and tools.
    s.append_model_change("openai", "gpt-5").await.unwrap();
    s.append_thinking_level_change("high").await.unwrap();
    s.append_active_tools_change(&["read".to_string(), "bash".to_string()])
        .await
        .unwrap();
    let a_leaf = s.append_message(user("on branch A", 3)).await.unwrap();
    let branch_a = ctx(&s).await;
    // Branch B from a1 keeps the earlier settings.
    s.move_to(Some(&fork), None).await.unwrap();
    s.append_message(user("on branch B", 4)).await.unwrap();
    let branch_b = ctx(&s).await;
    let names = names(&s).await;
    insta::assert_json_snapshot!(
        "settings_change_on_one_branch_only",
        normalize(
            json!({"branchA": context_value(&branch_a), "branchB": context_value(&branch_b)}),
            &names
        )
    );
    // And back on A they come back.
    s.move_to(Some(&a_leaf), None).await.unwrap();
    assert_eq!(ctx(&s).await, branch_a);
}

#[tokio::test]
async fn context_edit_replace_remove_superseded() {
    let (s, _) = new_session();
    let u1 = s
        .append_message(user("a very long paste ...", 1))
        .await
        .unwrap();
    let call = s
        .append_message(tool_call("call_1", "read", 2))
        .await
        .unwrap();
    let result = s
        .append_message(tool_result("call_1", "read", "10 000 lines of output", 3))
        .await
        .unwrap();
    let fork = s
        .append_message(assistant("done", "anthropic", "claude-sonnet-4-5", 4))
        .await
        .unwrap();
    s.append_context_edit(&u1, Some(Content::text("first edit")))
        .await
        .unwrap();
    s.append_context_edit(&u1, Some(Content::text("(paste elided)")))
        .await
        .unwrap(); // supersedes
    s.append_context_edit(&result, Some(Content::text("(output elided)")))
        .await
        .unwrap(); // string → block
    s.append_context_edit(&call, None).await.unwrap(); // removed
    s.append_message(user("next", 5)).await.unwrap();
    insta::assert_json_snapshot!("context_edit_replace_remove_superseded", scenario(&s).await);

    // Edits are branch-relative: a sibling branch sees the original messages.
    s.move_to(Some(&fork), None).await.unwrap();
    s.append_message(user("other branch", 6)).await.unwrap();
    assert_eq!(texts(&ctx(&s).await)[0], "user:a very long paste ...");
}

#[tokio::test]
async fn custom_projectors_and_entry_transforms() {
    let storage = Arc::new(MemoryStorage::new("/work/project"));
    let options = ContextOptions::default().with_projector("todo-list", |e: &SessionEntry| match &e.kind {
        EntryKind::Custom(c) => vec![msg(json!({
            "role": "custom", "customType": "todo-list",
            "content": format!("Open todos: {}", c.data.as_ref().map(|d| d["open"].to_string()).unwrap_or_default()),
            "display": false, "timestamp": 50
        }))],
        _ => Vec::new(),
    });
    let s = Session::with_options(storage, options);
    s.append_message(user("u1", 1)).await.unwrap();
    s.append_custom_entry("todo-list", Some(json!({"open": 3})))
        .await
        .unwrap();
    s.append_custom_entry("ui-state", Some(json!({"collapsed": true})))
        .await
        .unwrap(); // no projector
    s.append_custom_message("reminder", Content::text("remember the tests"), true, None)
        .await
        .unwrap();
    s.append_message(assistant("a1", "anthropic", "claude-sonnet-4-5", 2))
        .await
        .unwrap();
    let plain = ctx(&s).await;
    // A per-call transform drops custom_message entries, then a second one keeps only the
    // last three context entries: transforms run in order.
    let per_call = ContextOptions::default()
        .with_transform(|es: Vec<SessionEntry>| {
            es.into_iter()
                .filter(|e| e.entry_type() != "custom_message")
                .collect()
        })
        .with_transform(|es: Vec<SessionEntry>| {
            let n = es.len().saturating_sub(3);
            es.into_iter().skip(n).collect()
        });
    let transformed = s.build_context(&per_call).await.unwrap();
    let names = names(&s).await;
    insta::assert_json_snapshot!(
        "custom_projectors_and_entry_transforms",
        normalize(
            json!({"projected": context_value(&plain), "transformed": context_value(&transformed)}),
            &names
        )
    );
}

#[tokio::test]
async fn tree_view_orders_children_resolves_labels_marks_the_path_and_hides_leaf_entries() {
    let (s, _) = new_session();
    let u1 = s.append_message(user("u1", 1)).await.unwrap();
    let a1 = s
        .append_message(assistant("a1", "anthropic", "claude-sonnet-4-5", 2))
        .await
        .unwrap();
    s.append_message(user("plan A", 3)).await.unwrap();
    s.move_to(Some(&a1), None).await.unwrap();
    let b = s.append_message(user("plan B", 4)).await.unwrap();
    s.append_label(&u1, Some("start")).await.unwrap();
    s.append_label(&b, Some("  plan-b  ")).await.unwrap();
    s.append_label(&u1, Some("first question")).await.unwrap();
    let tree = s.tree().await.unwrap();
    let names = names(&s).await;
    let entries = s.entries().await.unwrap();
    let entry = |id: &str| entries.iter().find(|e| e.id == id).unwrap();
    let rows: Vec<String> = tree
        .walk()
        .into_iter()
        .map(|(i, depth)| {
            let n = &tree.nodes[i];
            format!(
                "{}{}{}{}{}",
                "  ".repeat(depth),
                log_line(entry(n.id()), &names),
                n.label
                    .as_ref()
                    .map(|l| format!(" [{l}]"))
                    .unwrap_or_default(),
                if n.on_active_path { " *" } else { "" },
                if n.is_leaf { " <- leaf" } else { "" },
            )
        })
        .collect();
    insta::assert_snapshot!("tree_view_after_plan_b", rows.join("\n"));
    assert!(tree.nodes.iter().all(|n| !n.row.is_leaf_entry()));
}

#[tokio::test]
async fn appends_are_validated() {
    let (s, _) = new_session();
    let u1 = s.append_message(user("u1", 1)).await.unwrap();
    let sys = s.append_message(system("prompt", 2)).await.unwrap();
    let model = s.append_model_change("openai", "gpt-5").await.unwrap();
    s.move_to(Some(&u1), None).await.unwrap();
    let a1 = s
        .append_message(assistant("a1", "openai", "gpt-5", 3))
        .await
        .unwrap();

    let code = |r: arbor_session::Result<String>| r.unwrap_err().code();
    assert_eq!(code(s.append_label("nope", Some("x")).await), "not_found");
    assert_eq!(
        s.move_to(Some("nope"), None).await.unwrap_err().code(),
        "not_found"
    );
    // context_edit: off-branch, wrong kind, missing target.
    assert_eq!(
        code(s.append_context_edit(&sys, None).await),
        "invalid_entry"
    );
    assert_eq!(
        code(s.append_context_edit(&model, None).await),
        "invalid_entry"
    );
    assert_eq!(
        code(s.append_context_edit("nope", None).await),
        "invalid_entry"
    );
    let err = s
        .append_context_edit(&sys, None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&sys) && err.contains("not on the active branch"),
        "{err}"
    );
    // assistant string replacement is stored as one text block
    let edit = s
        .append_context_edit(&a1, Some(Content::text("short")))
        .await
        .unwrap();
    let e = s.get_entry(&edit).await.unwrap().unwrap();
    match e.kind {
        EntryKind::ContextEdit(c) => {
            assert_eq!(
                c.replacement,
                json!({"content": [{"type": "text", "text": "short"}]})
            )
        }
        other => panic!("{other:?}"),
    }
    // user replacement may not carry tool calls
    let bad: Content = serde_json::from_value(
        json!([{"type": "toolCall", "id": "c", "name": "n", "arguments": {}}]),
    )
    .unwrap();
    assert_eq!(
        code(s.append_context_edit(&u1, Some(bad)).await),
        "invalid_entry"
    );
    // settings and compaction
    assert_eq!(
        code(s.append_thinking_level_change("extreme").await),
        "invalid_entry"
    );
    assert_eq!(code(s.append_model_change("", "m").await), "invalid_entry");
    let off_branch = CompactionDraft {
        summary: "s".into(),
        first_kept_entry_id: Some(sys.clone()),
        ..Default::default()
    };
    assert_eq!(code(s.append_compaction(off_branch).await), "invalid_entry");
    // A failed append changes nothing.
    assert_eq!(s.leaf_id().await.unwrap(), Some(edit));
    assert_eq!(s.entries().await.unwrap().len(), 6);
}

#[tokio::test]
async fn session_name_collapses_line_breaks_and_labels_trim() {
    let (s, _) = new_session();
    s.append_session_name("  fix the\r\n\nlogin   flow\n")
        .await
        .unwrap();
    assert_eq!(
        s.name().await.unwrap().as_deref(),
        Some("fix the login   flow")
    );
    s.append_session_name(" \n ").await.unwrap();
    assert_eq!(s.name().await.unwrap(), None, "empty clears the name");
    let u = s.append_message(user("u", 1)).await.unwrap();
    s.append_label(&u, Some("  keep  ")).await.unwrap();
    assert_eq!(s.label(&u).await.unwrap().as_deref(), Some("keep"));
    let v = s.append_message(user("v", 2)).await.unwrap();
    s.append_label(&v, Some("second")).await.unwrap();
    assert_eq!(
        s.labels().await.unwrap(),
        [
            (u.clone(), "keep".to_string()),
            (v.clone(), "second".to_string())
        ]
    );
    s.append_label(&u, None).await.unwrap();
    assert_eq!(s.label(&u).await.unwrap(), None);
    assert_eq!(s.labels().await.unwrap(), [(v, "second".to_string())]);
    assert_eq!(
        s.branch_since_compaction(Some("nope"))
            .await
            .unwrap_err()
            .code(),
        "not_found"
    );
    let stats = s.stats().await.unwrap();
    assert_eq!(stats.message_count, 2);
}

#[tokio::test]
async fn build_context_follows_appends_made_through_the_storage_directly() {
    let (s, storage) = new_session();
    s.append_message(user("u1", 1)).await.unwrap();
    let first = ctx(&s).await;
    // Another writer appends; the cached projection must notice.
    storage
        .append(arbor_session::EntryDraft::new(EntryKind::message(
            match assistant("a1", "x", "y", 2) {
                AgentMessage::Llm(m) => m,
                other => panic!("{other:?}"),
            },
        )))
        .await
        .unwrap();
    let second = ctx(&s).await;
    assert_eq!(first.messages.len(), 1);
    assert_eq!(second.messages.len(), 2);
    assert_eq!(second.model.unwrap().provider, "x");
    storage.set_leaf(None).await.unwrap();
    assert!(ctx(&s).await.messages.is_empty());
}

/// The seed walk on the JSONL backend: the file holds the `leaf` entry, and reopening the
/// file (a new process would do the same) recovers the leaf and the context.
#[tokio::test]
async fn seed_e1_to_e7_recovers_after_reopening_the_jsonl_file() {
    use arbor_session::jsonl::JsonlRepository;
    use arbor_session::{CreateOptions, SessionRepository};
    let dir = tempfile::tempdir().unwrap();
    let repo = JsonlRepository::flat(dir.path());
    let storage = repo.create(CreateOptions::new("/work/blog")).await.unwrap();
    let path = storage.location();
    let s = Session::new(Arc::new(storage));
    s.append_message(user("解释这个项目", 1)).await.unwrap();
    s.append_message(assistant(
        "这是一个博客项目",
        "anthropic",
        "claude-sonnet-4-5",
        2,
    ))
    .await
    .unwrap();
    let e3 = s.append_model_change("openai", "gpt-5").await.unwrap();
    s.append_message(user("旧分支问题", 3)).await.unwrap();
    s.append_message(assistant("旧分支回答", "openai", "gpt-5", 4))
        .await
        .unwrap();
    s.move_to(Some(&e3), None).await.unwrap();
    let e7 = s.append_message(user("新分支问题", 5)).await.unwrap();
    s.storage().save_point().await.unwrap();
    let before = ctx(&s).await;
    drop(s);

    let text = std::fs::read_to_string(&path).unwrap();
    let types: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        types,
        [
            "session",
            "message",
            "message",
            "model_change",
            "message",
            "message",
            "leaf",
            "message"
        ]
    );

    let reopened = Session::new(Arc::new(repo.open(&path).await.unwrap()));
    assert_eq!(
        reopened.leaf_id().await.unwrap().as_deref(),
        Some(e7.as_str())
    );
    assert_eq!(ctx(&reopened).await, before);
    // Moving back, reopening again: the leaf entry alone carries the position.
    reopened.move_to(Some(&e3), None).await.unwrap();
    let at_e3 = ctx(&reopened).await;
    drop(reopened);
    let again = Session::new(Arc::new(repo.open(&path).await.unwrap()));
    assert_eq!(again.leaf_id().await.unwrap().as_deref(), Some(e3.as_str()));
    assert_eq!(ctx(&again).await, at_e3);
}
