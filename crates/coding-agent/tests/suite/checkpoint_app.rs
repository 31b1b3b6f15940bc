//! Checkpoints in the app (DECISIONS §27.13–§27.15): the `checkpoints::navigate` entry point
//! the TUI calls for `/tree` and `/fork`, the capture after an aborted tool batch, automatic
//! pruning, and `arbor --fork … --restore` through the real binary against a 127.0.0.1 mock.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use arbor_agent::harness::NavigateOptions;
use arbor_agent::session::{EntryKind, JsonlRepository};
use arbor_ai::faux::FauxResponse;
use arbor_checkpoint::CheckpointSettings;
use arbor_coding_agent::checkpoints::{housekeeping, navigate, RestoreMode, Trigger};
use arbor_test_support::scripts::{openai_text, openai_tool_calls};
use arbor_test_support::MockServer;
use serde_json::{json, Value};

use super::checkpoint_support::{
    checkpoint_refs as refs, id_of_text, new_session, read, recorder, repo_with, rig, shape,
};

#[tokio::test]
async fn navigate_moves_the_conversation_the_code_or_both() {
    let (_dir, root) = repo_with(&[("app.txt", "v1\n")]);
    let r = rig(&root).await;
    r.faux.push(FauxResponse::tool_call(
        "write",
        json!({"path": "app.txt", "content": "plan A\n"}),
    ));
    r.faux.push(FauxResponse::text("A done"));
    r.harness.prompt("do plan A", &[]).await.unwrap();
    let tip_a = r.session.leaf_id().await.unwrap();
    let prompt_a = id_of_text(&r.session, "do plan A").await;
    assert_eq!(read(&root, "app.txt").as_deref(), Some("plan A\n"));

    // Code only: the files of the node before the prompt, the leaf stays.
    let moved = navigate(
        &r.harness,
        Some(&r.hook),
        Some(&prompt_a),
        RestoreMode::CodeOnly,
        NavigateOptions::default(),
    )
    .await
    .unwrap();
    assert!(moved.navigation.is_none());
    assert!(moved.restore.unwrap().entry_id.is_some());
    assert_eq!(read(&root, "app.txt").as_deref(), Some("v1\n"));
    let after_code = r.session.leaf_id().await.unwrap();
    assert_ne!(
        after_code, tip_a,
        "the restore entry is appended at the leaf"
    );

    // Conversation only: the leaf moves, the files stay.
    let moved = navigate(
        &r.harness,
        Some(&r.hook),
        Some(&prompt_a),
        RestoreMode::ConversationOnly,
        NavigateOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        moved.navigation.unwrap().editor_text.as_deref(),
        Some("do plan A")
    );
    assert!(moved.restore.is_none());
    assert_eq!(read(&root, "app.txt").as_deref(), Some("v1\n"));

    // Both, to plan A's tip: plan A's files and plan A's conversation.
    let tip_a = tip_a.unwrap();
    let moved = navigate(
        &r.harness,
        Some(&r.hook),
        Some(&tip_a),
        RestoreMode::Both,
        NavigateOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(moved.navigation.unwrap().editor_text, None);
    let report = moved.restore.unwrap();
    assert_eq!(read(&root, "app.txt").as_deref(), Some("plan A\n"));
    let restore_entry = r
        .session
        .get_entry(report.entry_id.as_deref().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(restore_entry.parent_id.as_deref(), Some(tip_a.as_str()));
    assert_eq!(
        shape(&r.session).await,
        [
            "cp:turn_start",
            "user",
            "assistant",
            "toolResult",
            "cp:tool_batch",
            "assistant",
            "restore:code",
            // The files already are what the new leaf's path records: nothing to capture.
            "restore:both"
        ]
    );

    // Without checkpoints only the conversation moves, and the error says why.
    let err = navigate(
        &r.harness,
        None,
        Some(&prompt_a),
        RestoreMode::Both,
        NavigateOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("checkpoints.enabled"), "{err}");
    // A restore above the first checkpoint has nothing to go back to.
    let err = navigate(
        &r.harness,
        Some(&r.hook),
        None,
        RestoreMode::Both,
        NavigateOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("no workspace checkpoint"), "{err}");
    assert_eq!(read(&root, "app.txt").as_deref(), Some("plan A\n"));
}

#[tokio::test]
async fn navigate_refuses_while_busy() {
    let (_dir, root) = repo_with(&[("app.txt", "v1\n")]);
    let r = rig(&root).await;
    r.faux
        .push(FauxResponse::text("slow").delay(Duration::from_millis(300)));
    let h = r.harness.clone();
    let run = tokio::spawn(async move { h.prompt("busy", &[]).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let err = navigate(
        &r.harness,
        Some(&r.hook),
        None,
        RestoreMode::CodeOnly,
        NavigateOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("busy"), "{err}");
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn an_aborted_tool_batch_is_captured() {
    let (_dir, root) = repo_with(&[("app.txt", "v1\n")]);
    let r = rig(&root).await;
    r.faux.push(FauxResponse::tool_call(
        "bash",
        json!({"command": "echo half > app.txt && echo new > extra.txt", "sleepMs": 30_000}),
    ));
    let h = r.harness.clone();
    let run = tokio::spawn(async move { h.prompt("slow edit", &[]).await });
    // Wait until the command has written, then abort mid-tool.
    for _ in 0..200 {
        if read(&root, "extra.txt").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    r.harness.abort().await;
    run.await.unwrap().unwrap();
    assert_eq!(
        shape(&r.session).await,
        [
            "cp:turn_start",
            "user",
            "assistant",
            "toolResult",
            // The loop ends the aborted run with an aborted assistant message, then
            // `agent_end` captures what the batch wrote.
            "assistant",
            "cp:tool_batch"
        ]
    );
    let entries = r.session.entries().await.unwrap();
    let last = entries.last().unwrap();
    let EntryKind::Custom(c) = &last.kind else {
        panic!("{last:?}")
    };
    let changed = serde_json::to_string(&c.data.as_ref().unwrap()["changed"]).unwrap();
    assert!(
        changed.contains("app.txt") && changed.contains("extra.txt"),
        "{changed}"
    );
    // And the aborted batch's files can be taken back.
    let prompt = id_of_text(&r.session, "slow edit").await;
    navigate(
        &r.harness,
        Some(&r.hook),
        Some(&prompt),
        RestoreMode::Both,
        NavigateOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(read(&root, "app.txt").as_deref(), Some("v1\n"));
    assert_eq!(read(&root, "extra.txt"), None);
}

#[tokio::test]
async fn auto_prune_runs_once_per_interval_and_drops_deleted_sessions() {
    let (_dir, root) = repo_with(&[("app.txt", "v1\n")]);
    let home = tempfile::tempdir().unwrap();
    let sessions = JsonlRepository::new(home.path().join("sessions"));
    let settings = CheckpointSettings::default();
    let mut files = Vec::new();
    for text in ["one\n", "two\n"] {
        let (session, sid, file) = new_session(home.path(), &root).await;
        files.push(file);
        std::fs::write(root.join("app.txt"), text).unwrap();
        recorder(&root, &sid, home.path())
            .capture(&session, Trigger::Manual)
            .await
            .unwrap();
    }
    assert_eq!(refs(&root).len(), 2);
    std::fs::remove_file(&files[0]).unwrap();

    let off = CheckpointSettings {
        auto_prune_hours: 0,
        ..settings.clone()
    };
    let now = SystemTime::now();
    let none = housekeeping::auto_prune(&root, &sessions, &off, home.path(), now)
        .await
        .unwrap();
    assert!(none.is_none(), "autoPruneHours 0 never prunes");
    assert_eq!(refs(&root).len(), 2);

    let pruned = housekeeping::auto_prune(&root, &sessions, &settings, home.path(), now)
        .await
        .unwrap()
        .expect("due on the first start");
    assert_eq!(pruned.deleted_sessions, 1);
    assert_eq!(refs(&root).len(), 1);

    // Within the interval nothing runs; a day later it is due again.
    let soon = now + Duration::from_secs(3600);
    assert!(
        housekeeping::auto_prune(&root, &sessions, &settings, home.path(), soon)
            .await
            .unwrap()
            .is_none()
    );
    let later = now + Duration::from_secs(25 * 3600);
    assert!(
        housekeeping::auto_prune(&root, &sessions, &settings, home.path(), later)
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        refs(&root).len(),
        1,
        "the live session keeps its checkpoint"
    );
}

// ---- the binary ----------------------------------------------------------------------------

struct Lab {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    home: PathBuf,
    repo: PathBuf,
}

fn lab(server: &MockServer) -> Lab {
    let home_dir = tempfile::tempdir().unwrap();
    let home = home_dir.path().to_path_buf();
    let (repo_dir, repo) = repo_with(&[("app.txt", "v1\n")]);
    let models = json!({"providers": {
        "mock": {"baseUrl": format!("{}/v1", server.url()), "api": "openai-completions", "apiKey": "test-key",
                 "models": [{"id": "mock-model", "name": "Mock Model", "contextWindow": 32000, "maxTokens": 4096}]}
    }});
    std::fs::write(home.join("models.json"), models.to_string()).unwrap();
    Lab {
        _dirs: (home_dir, repo_dir),
        home,
        repo,
    }
}

impl Lab {
    async fn run(&self, args: &[&str]) -> (i32, String) {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_arbor"))
            .env("ARBOR_HOME", &self.home)
            .env("HOME", self.home.join("user"))
            .env_remove("OPENAI_API_KEY")
            .current_dir(&self.repo)
            .stdin(Stdio::null())
            .args(args)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(60), out)
            .await
            .unwrap()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn sessions(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for d in std::fs::read_dir(self.home.join("sessions"))
            .unwrap()
            .flatten()
        {
            for f in std::fs::read_dir(d.path()).unwrap().flatten() {
                out.push(f.path());
            }
        }
        out.sort();
        out
    }
}

fn custom_types(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            match v["type"].as_str() {
                Some("custom") => Some(v["customType"].as_str().unwrap().to_string()),
                Some("message") => Some(v["message"]["role"].as_str().unwrap().to_string()),
                _ => None,
            }
        })
        .collect()
}

#[tokio::test]
async fn fork_with_restore_takes_the_code_of_the_fork_point() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    server.push(openai_tool_calls(&[(
        "call_1",
        "write",
        json!({"path": "app.txt", "content": "plan A\n"}),
    )]));
    server.push(openai_text("A done"));
    let (code, err) = lab
        .run(&["-p", "--model", "mock/mock-model", "plan A"])
        .await;
    assert_eq!(code, 0, "{err}");
    let source = lab.sessions()[0].clone();
    assert_eq!(
        custom_types(&source),
        [
            "arbor.checkpoint",
            "user",
            "assistant",
            "toolResult",
            "arbor.checkpoint",
            "assistant"
        ],
        "the app captures at turn start and after the writing batch"
    );
    // The user moves on by hand.
    std::fs::write(lab.repo.join("app.txt"), "by hand\n").unwrap();
    std::fs::write(lab.repo.join("notes.txt"), "mine\n").unwrap();

    let src = source.display().to_string();
    server.push(openai_text("forked"));
    let (code, err) = lab
        .run(&["--fork", &src, "--restore", "both", "-p", "go on"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("Restored the workspace"), "{err}");
    // The untracked file it removed is named, with the checkpoint that keeps it (§27.43).
    assert!(
        err.contains("(2 paths changed; removed untracked file notes.txt, kept in checkpoint "),
        "{err}"
    );
    assert_eq!(read(&lab.repo, "app.txt").as_deref(), Some("plan A\n"));
    assert_eq!(read(&lab.repo, "notes.txt"), None);
    let forked = lab.sessions().into_iter().find(|f| *f != source).unwrap();
    let types = custom_types(&forked);
    // The source's six entries, then: the hand edits captured, the restore, the turn (whose
    // start capture finds the restored state unchanged).
    assert_eq!(
        types[6..],
        [
            "arbor.checkpoint",
            "arbor.workspace_restore",
            "user",
            "assistant"
        ],
        "{types:?}"
    );
    // The hand edits were captured before the restore: undo can bring them back.
    let before = std::fs::read_to_string(&forked).unwrap();
    assert!(before.contains("\"before_restore\""), "{before}");
    assert!(before.contains("notes.txt"), "{before}");

    // Code only: a new empty session, the fork point's code.
    std::fs::write(lab.repo.join("app.txt"), "again by hand\n").unwrap();
    server.push(openai_text("fresh"));
    let (code, err) = lab
        .run(&["--fork", &src, "--restore", "code", "-p", "fresh start"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(read(&lab.repo, "app.txt").as_deref(), Some("plan A\n"));
    let newest = lab
        .sessions()
        .into_iter()
        .filter(|f| *f != source && *f != forked)
        .collect::<Vec<_>>();
    assert_eq!(newest.len(), 1);
    let roles: Vec<String> = custom_types(&newest[0])
        .into_iter()
        .filter(|t| !t.starts_with("arbor."))
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant"],
        "none of the source's conversation"
    );
}

#[tokio::test]
async fn fork_with_restore_refuses_without_a_checkpoint_and_writes_nothing() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    std::fs::write(
        lab.home.join("settings.json"),
        r#"{"checkpoints": {"enabled": false}}"#,
    )
    .unwrap();
    server.push(openai_text("no checkpoints"));
    let (code, err) = lab
        .run(&["-p", "--model", "mock/mock-model", "hello"])
        .await;
    assert_eq!(code, 0, "{err}");
    std::fs::remove_file(lab.home.join("settings.json")).unwrap();
    let source = lab.sessions()[0].display().to_string();
    let (code, err) = lab
        .run(&["--fork", &source, "--restore", "both", "-p", "x"])
        .await;
    assert_ne!(code, 0);
    assert!(
        err.contains("has no workspace checkpoint at or above its leaf"),
        "{err}"
    );
    assert_eq!(lab.sessions().len(), 1, "no fork was written");
    let (code, err) = lab.run(&["--restore", "both", "-p", "x"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("--fork"), "{err}");
}

#[tokio::test]
async fn session_fork_with_restore_moves_the_files_too_or_only() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    server.push(openai_tool_calls(&[(
        "call_1",
        "write",
        json!({"path": "app.txt", "content": "plan A\n"}),
    )]));
    server.push(openai_text("A done"));
    let (code, err) = lab
        .run(&["-p", "--model", "mock/mock-model", "plan A"])
        .await;
    assert_eq!(code, 0, "{err}");
    let source = lab.sessions()[0].clone();
    let src = source.display().to_string();
    let prompt = std::fs::read_to_string(&source)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["message"]["role"] == "user")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();

    // Both, forking before the prompt: the fork ends above it, the files are from before it.
    let (code, err) = lab
        .run(&[
            "session",
            "fork",
            &src,
            "--entry",
            &prompt,
            "--restore",
            "both",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("restored the workspace"), "{err}");
    assert_eq!(read(&lab.repo, "app.txt").as_deref(), Some("v1\n"));
    assert_eq!(lab.sessions().len(), 2);
    let forked = lab.sessions().into_iter().find(|f| *f != source).unwrap();
    let types = custom_types(&forked);
    assert_eq!(
        types.last().map(String::as_str),
        Some("arbor.workspace_restore"),
        "{types:?}"
    );
    assert!(!types.contains(&"user".to_string()), "{types:?}");

    // Code only, at the source's leaf: nothing forked, the restore recorded in the source.
    let before = custom_types(&source).len();
    let (code, err) = lab
        .run(&["session", "fork", &src, "--restore", "code"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(read(&lab.repo, "app.txt").as_deref(), Some("plan A\n"));
    assert_eq!(lab.sessions().len(), 2, "code only forks nothing");
    let after = custom_types(&source);
    assert_eq!(after.len(), before + 2, "{after:?}");
    assert_eq!(
        after[before..],
        ["arbor.checkpoint", "arbor.workspace_restore"]
    );
}
