//! The checkpoint hook on a real `AgentHarness` with the faux provider: the seed-001 plan A /
//! plan B switch driven by model tool calls (`write`, `bash` with `sed`), navigated with
//! `navigate_tree` plus the recorder's restore steps.

use arbor_agent::harness::{AgentHarness, NavigateOptions};
use arbor_agent::session::Session;
use arbor_ai::faux::FauxResponse;
use arbor_coding_agent::checkpoints::{navigation_leaf, Recorder, RestoreMode};
use serde_json::json;

use super::checkpoint_support::{files, id_of_text, repo_with, rig, shape};

async fn navigate(
    harness: &AgentHarness,
    recorder: &Recorder,
    session: &Session,
    target: &str,
    mode: RestoreMode,
) {
    let leaf = navigation_leaf(session, Some(target)).await.unwrap();
    let plan = recorder
        .prepare_restore(session, leaf.as_deref(), mode)
        .await
        .unwrap();
    let result = harness
        .navigate_tree(Some(target), NavigateOptions::default())
        .await
        .unwrap();
    assert!(!result.cancelled);
    assert_eq!(session.leaf_id().await.unwrap(), leaf);
    if let Some(plan) = plan {
        recorder.finish_restore(session, plan).await.unwrap();
    }
}

#[tokio::test]
async fn the_hook_captures_harness_turns_and_navigation_switches_plans() {
    let (_repo, root) = repo_with(&[
        ("src/login.rs", "fn login() { password() }\n"),
        ("config.toml", "mode = \"password\"\n"),
        ("README.md", "# login\n"),
    ]);
    let initial = files(&root);

    let r = rig(&root).await;
    let (session, faux, harness, recorder, hook) =
        (&r.session, &r.faux, &r.harness, &r.recorder, &r.hook);

    // Plan A: a write and a bash sed in one batch.
    faux.push(
        FauxResponse::tool_call(
            "write",
            json!({"path": "src/token.rs", "content": "pub fn t() {}\n"}),
        )
        .with_tool_call(
            "bash",
            json!({"command": "sed -i 's/password/token/' config.toml src/login.rs"}),
        ),
    );
    faux.push(FauxResponse::text("plan A done"));
    harness
        .prompt("请用方案 A 重构登录流程。", &[])
        .await
        .unwrap();
    let files_a = files(&root);
    assert_ne!(files_a, initial);
    let plan_a_tip = session.leaf_id().await.unwrap().unwrap();
    assert_eq!(
        shape(session).await,
        [
            "cp:turn_start",
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "cp:tool_batch",
            "assistant"
        ]
    );
    assert!(hook.take_notices().is_empty());

    // Edit the plan A prompt: back to its parent, code included.
    let prompt_a = id_of_text(session, "方案 A").await;
    navigate(harness, recorder, session, &prompt_a, RestoreMode::Both).await;
    assert_eq!(files(&root), initial);

    faux.push(FauxResponse::tool_call(
        "bash",
        json!({"command": "rm README.md && echo 'fn login() { sso() }' > src/login.rs"}),
    ));
    faux.push(FauxResponse::text("plan B done"));
    harness
        .prompt("请用方案 B 重构登录流程。", &[])
        .await
        .unwrap();
    let files_b = files(&root);
    let plan_b_tip = session.leaf_id().await.unwrap().unwrap();

    navigate(harness, recorder, session, &plan_a_tip, RestoreMode::Both).await;
    assert_eq!(files(&root), files_a, "plan A's files, byte for byte");
    // The next prompt continues plan A with plan A's code (the restore entry is on the path).
    faux.push(FauxResponse::text("continuing A"));
    harness.prompt("继续", &[]).await.unwrap();
    let continued = session.leaf_id().await.unwrap().unwrap();

    navigate(harness, recorder, session, &plan_b_tip, RestoreMode::Both).await;
    assert_eq!(files(&root), files_b, "plan B's files, byte for byte");
    navigate(
        harness,
        recorder,
        session,
        &continued,
        RestoreMode::ConversationOnly,
    )
    .await;
    assert_eq!(files(&root), files_b, "conversation only leaves the files");
}
