//! The TUI's code restores beyond `/tree` (issue 16): `/fork` asks what to restore, a restore
//! says how to undo it and `/undo-restore` does; `branchSummary.skipPrompt` skips "Summarize
//! branch?"; `/resume` lists every folder's sessions on Tab. Driven by keys through the driver
//! over a real harness, real git repositories and a real session store.

use std::path::{Path, PathBuf};

use arbor_agent::session::{CreateOptions, EntryKind, JsonlRepository, SessionRepository};
use arbor_ai::faux::FauxResponse;
use arbor_coding_agent::checkpoints::RestoreMode;
use arbor_coding_agent::tui::state::{Effect, Overlay};
use crossterm::event::KeyCode;
use serde_json::json;

use super::tui_app::{git, key, rig_over, rig_with_settings, two_exchanges, Rig};

/// A committed repository with `app.txt` = "v1", and a home for sessions and checkpoints.
fn repo() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    git(&root, &["init", "-q"]);
    std::fs::write(root.join("app.txt"), "v1\n").unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "init"]);
    (dir, root, home)
}

async fn stored_rig(root: &Path, home: &Path, settings: serde_json::Value) -> Rig {
    let storage = JsonlRepository::new(home.join("sessions"))
        .create(CreateOptions::new(root.display().to_string()))
        .await
        .unwrap();
    rig_over(storage, root, home, settings).await
}

fn settings() -> serde_json::Value {
    json!({"retry": {"enabled": false}})
}

fn app(root: &Path) -> String {
    std::fs::read_to_string(root.join("app.txt")).unwrap()
}

/// Plan A writes `app.txt`, then plan B overwrites it.
async fn plan_a_then_b(r: &mut Rig, root: &Path) {
    for plan in ["A", "B"] {
        r.faux.push(FauxResponse::tool_call(
            "write",
            json!({"path": "app.txt", "content": format!("plan {plan}\n")}),
        ));
        r.faux.push(FauxResponse::text(format!("{plan} done")));
        r.send(&format!("plan {plan}")).await;
        r.driver.settle().await;
    }
    assert_eq!(app(root), "plan B\n");
}

/// `/fork`, then Enter on the newest user message ("plan B").
async fn fork_before_plan_b(r: &mut Rig) {
    r.send("/fork").await;
    assert!(matches!(r.driver.state.overlay, Some(Overlay::Fork(_))));
    r.driver.dispatch(key(KeyCode::Enter)).await;
}

#[tokio::test]
async fn fork_with_both_restores_the_code_in_the_fork_and_undo_restore_puts_it_back() {
    let (_dir, root, home) = repo();
    let mut r = stored_rig(&root, &home, settings()).await;
    plan_a_then_b(&mut r, &root).await;
    fork_before_plan_b(&mut r).await;
    assert!(
        matches!(r.driver.state.overlay, Some(Overlay::ForkRestore { .. })),
        "{:?}",
        r.driver.state.overlay
    );
    let screen = r.screen(80, 20);
    assert!(screen.contains("Restore what?"), "{screen}");
    assert!(!screen.contains("Summarize branch?"), "{screen}");
    // The overlay only: the footer below names the temporary directory.
    let overlay: Vec<&str> = screen.lines().take_while(|l| !l.starts_with('─')).collect();
    insta::assert_snapshot!(overlay.join("\n").trim_end());
    // Conversation only, code only, both.
    r.driver.dispatch(key(KeyCode::Down)).await;
    r.driver.dispatch(key(KeyCode::Down)).await;
    r.driver.dispatch(key(KeyCode::Enter)).await;
    r.driver.settle().await;
    let effects = r.driver.take_terminal_effects();
    let Some(Effect::ForkAt {
        entry_id, restore, ..
    }) = effects.first()
    else {
        panic!("no fork: {effects:?}")
    };
    assert_eq!(*restore, RestoreMode::Both);
    // Nothing moved yet: the files change in the forked session, as the app loop does it.
    assert_eq!(app(&root), "plan B\n");
    let plan = r.driver.take_fork_restore();
    assert!(plan.is_some());
    let path = r.driver.fork_file(Some(entry_id)).await.unwrap().unwrap();
    let storage = JsonlRepository::flat(PathBuf::from(&path).parent().unwrap().to_path_buf())
        .open(&path)
        .await
        .unwrap();
    let mut fork = rig_over(storage, &root, &home, settings()).await;
    fork.driver.finish_fork_restore(plan).await;
    fork.driver.settle().await;
    assert_eq!(app(&root), "plan A\n");
    let screen = fork.screen(100, 24);
    assert!(
        screen.contains("Workspace restored to checkpoint"),
        "{screen}"
    );
    assert!(screen.contains("/undo-restore puts them back"), "{screen}");
    // The fork holds the restore; its conversation ends before "plan B".
    let entries = fork.driver.app.session.entries().await.unwrap();
    assert!(entries.iter().any(|e| matches!(&e.kind,
        EntryKind::Custom(c) if c.custom_type == arbor_coding_agent::checkpoints::RESTORE_TYPE)));
    assert_eq!(fork.user_texts().await, vec!["plan A".to_owned()]);
    // Undo, from the TUI: the files plan B left are back.
    fork.send("/undo-restore").await;
    fork.driver.settle().await;
    assert_eq!(app(&root), "plan B\n");
    let screen = fork.screen(100, 24);
    assert!(screen.contains("Workspace back to checkpoint"), "{screen}");
    // Again: back to plan A's files (undo of the undo).
    fork.send("/undo-restore").await;
    fork.driver.settle().await;
    assert_eq!(app(&root), "plan A\n");
}

#[tokio::test]
async fn fork_with_code_only_restores_the_files_in_place_and_keeps_the_conversation() {
    let (_dir, root, home) = repo();
    let mut r = stored_rig(&root, &home, settings()).await;
    plan_a_then_b(&mut r, &root).await;
    let before = r.driver.app.session.entries().await.unwrap().len();
    fork_before_plan_b(&mut r).await;
    r.driver.dispatch(key(KeyCode::Down)).await;
    r.driver.dispatch(key(KeyCode::Enter)).await;
    r.driver.settle().await;
    assert!(
        r.driver.take_terminal_effects().is_empty(),
        "no new session"
    );
    assert_eq!(app(&root), "plan A\n");
    assert_eq!(r.driver.state.editor.text(), "");
    assert_eq!(
        r.user_texts().await,
        vec!["plan A".to_owned(), "plan B".to_owned()]
    );
    // Only checkpoint bookkeeping was appended (the capture before and the restore).
    let entries = r.driver.app.session.entries().await.unwrap();
    assert!(entries[before..]
        .iter()
        .all(|e| matches!(e.kind, EntryKind::Custom(_))));
    let screen = r.screen(100, 24);
    assert!(screen.contains("/undo-restore puts them back"), "{screen}");
    r.send("/undo-restore").await;
    r.driver.settle().await;
    assert_eq!(app(&root), "plan B\n");
}

#[tokio::test]
async fn fork_with_conversation_only_changes_no_file() {
    let (_dir, root, home) = repo();
    let mut r = stored_rig(&root, &home, settings()).await;
    plan_a_then_b(&mut r, &root).await;
    fork_before_plan_b(&mut r).await;
    r.driver.dispatch(key(KeyCode::Enter)).await;
    let effects = r.driver.take_terminal_effects();
    assert!(
        matches!(
            effects.first(),
            Some(Effect::ForkAt {
                restore: RestoreMode::ConversationOnly,
                ..
            })
        ),
        "{effects:?}"
    );
    assert!(r.driver.take_fork_restore().is_none());
    assert_eq!(app(&root), "plan B\n");
}

#[tokio::test]
async fn undo_restore_without_a_restore_says_so() {
    let (_dir, root, home) = repo();
    let mut r = stored_rig(&root, &home, settings()).await;
    plan_a_then_b(&mut r, &root).await;
    r.send("/undo-restore").await;
    r.driver.settle().await;
    let screen = r.screen(100, 24);
    assert!(
        screen.contains("no workspace restore on the active path to undo"),
        "{screen}"
    );
    assert_eq!(app(&root), "plan B\n");
    // No background operation is left hanging: the next prompt goes out.
    assert!(r.driver.state.background.is_none());
}

#[tokio::test]
async fn skip_prompt_setting_moves_without_asking_for_a_summary() {
    let mut r = rig_with_settings(json!({
        "retry": {"enabled": false},
        "branchSummary": {"skipPrompt": true}
    }))
    .await;
    let _ = two_exchanges(&mut r).await;
    assert!(
        !matches!(r.driver.state.overlay, Some(Overlay::Summarize { .. })),
        "{:?}",
        r.driver.state.overlay
    );
    r.driver.settle().await;
    assert!(r.driver.state.overlay.is_none());
    assert_eq!(r.driver.state.editor.text(), "plan A");
    let entries = r.driver.app.session.entries().await.unwrap();
    assert!(!entries
        .iter()
        .any(|e| matches!(e.kind, EntryKind::BranchSummary(_))));
}

#[tokio::test]
async fn skip_prompt_setting_still_asks_what_to_restore() {
    let (_dir, root, home) = repo();
    let mut r = stored_rig(
        &root,
        &home,
        json!({"retry": {"enabled": false}, "branchSummary": {"skipPrompt": true}}),
    )
    .await;
    plan_a_then_b(&mut r, &root).await;
    let target = r.entry_with_text("plan B").await;
    r.send("/tree").await;
    r.select_in_tree(&target).await;
    r.driver.dispatch(key(KeyCode::Enter)).await;
    let screen = r.screen(80, 20);
    assert!(screen.contains("Restore what?"), "{screen}");
    // Both: no "Summarize branch?" follows.
    r.driver.dispatch(key(KeyCode::Char('3'))).await;
    let screen = r.screen(80, 20);
    assert!(!screen.contains("Summarize branch?"), "{screen}");
    r.driver.settle().await;
    assert!(r.driver.state.overlay.is_none());
    assert_eq!(app(&root), "plan A\n");
    assert_eq!(r.driver.state.editor.text(), "plan B");
}

#[tokio::test]
async fn fork_points_without_a_checkpoint_fork_straight_away() {
    let mut r = rig_with_settings(settings()).await;
    r.faux.push(FauxResponse::text("hi"));
    r.send("hello").await;
    r.driver.settle().await;
    r.send("/fork").await;
    r.driver.dispatch(key(KeyCode::Enter)).await;
    assert!(r.driver.state.overlay.is_none());
    let effects = r.driver.take_terminal_effects();
    assert!(
        matches!(effects.first(), Some(Effect::ForkAt { text, .. }) if text == "hello"),
        "{effects:?}"
    );
}

/// `/resume` through the driver over a real per-folder session store: the current folder's
/// sessions first, Tab lists every folder's (each with its cwd), a fork threaded under its
/// source, and a search finds a first message in another folder.
#[tokio::test]
async fn resume_lists_this_folder_then_every_folder_on_tab() {
    use arbor_agent::session::{ForkOptions, JsonlRepository};
    let home = tempfile::tempdir().unwrap();
    let repo = JsonlRepository::new(home.path().join("sessions"));
    let mut r = rig_with_settings(settings()).await;
    let here = r.driver.app.cwd.display().to_string();
    let mut locations = Vec::new();
    for (cwd, first) in [
        (here.as_str(), "fix the parser here"),
        ("/elsewhere/api", "write the api docs"),
    ] {
        let s = repo.create(CreateOptions::new(cwd)).await.unwrap();
        let session = arbor_agent::session::Session::new(std::sync::Arc::new(s));
        session
            .append_message(arbor_agent::message::AgentMessage::Llm(
                arbor_ai::Message::User(arbor_ai::types::UserMessage {
                    content: arbor_ai::Content::Text(first.into()),
                    timestamp: 1.into(),
                    ..Default::default()
                }),
            ))
            .await
            .unwrap();
        session.storage().save_point().await.unwrap();
        locations.push(arbor_agent::session::SessionStorage::location(
            session.storage().as_ref(),
        ));
    }
    let fork = repo
        .fork(&locations[1], ForkOptions::default())
        .await
        .unwrap();
    let fork_id = arbor_agent::session::SessionStorage::header(&fork)
        .await
        .unwrap()
        .id;
    drop(fork);
    r.driver.app.repo = Some(repo);
    r.send("/resume").await;
    let Some(Overlay::Sessions(p)) = &r.driver.state.overlay else {
        panic!("no picker: {:?}", r.driver.state.overlay)
    };
    assert_eq!(p.shown().count(), 1);
    let screen = r.screen(90, 14);
    assert!(screen.contains("[current folder]"), "{screen}");
    assert!(screen.contains("fix the parser here"), "{screen}");
    assert!(!screen.contains("write the api docs"), "{screen}");
    r.driver.dispatch(key(KeyCode::Tab)).await;
    let Some(Overlay::Sessions(p)) = &r.driver.state.overlay else {
        panic!("the picker closed")
    };
    let shown: Vec<(String, usize)> = p.shown().map(|(id, d)| (id.to_owned(), d)).collect();
    assert_eq!(shown.len(), 3, "{shown:?}");
    assert!(
        shown.contains(&(fork_id, 1)),
        "the fork is threaded: {shown:?}"
    );
    let screen = r.screen(90, 14);
    assert!(screen.contains("[all folders]"), "{screen}");
    assert!(screen.contains("/elsewhere/api"), "{screen}");
    assert!(screen.contains(&here), "{screen}");
    r.type_text("api docs").await;
    let Some(Overlay::Sessions(p)) = &r.driver.state.overlay else {
        panic!("the picker closed")
    };
    assert_eq!(p.shown().count(), 2, "the source and its fork match");
}
