//! Workspace checkpoints on the entry tree: the seed-001 scenario end to end on a temporary git
//! repository, user edits outside the agent, a plain directory, the inspect commands, and the
//! session file as pi sees it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arbor_agent::message::AgentMessage;
use arbor_agent::session::{JsonlRepository, Session, SessionRepository};
use arbor_checkpoint::CheckpointSettings;
use arbor_coding_agent::checkpoints::{Recorded, Recorder, RestoreMode};
use serde_json::{json, Value};

use super::checkpoint_support::{
    checkpoint_refs, files, git, new_session, recorder, repo_with, sh, write,
};
use super::{arbor, ok, pi_script, Run};

/// Branches, tags, stash, HEAD and its reflog, and the index file's bytes.
fn user_state(root: &Path) -> (String, String, String, Option<Vec<u8>>, Option<Vec<u8>>) {
    (
        git(
            root,
            &["for-each-ref", "refs/heads", "refs/tags", "refs/stash"],
        ),
        git(root, &["stash", "list"]),
        std::fs::read_to_string(root.join(".git/HEAD")).unwrap(),
        std::fs::read(root.join(".git/logs/HEAD")).ok(),
        std::fs::read(root.join(".git/index")).ok(),
    )
}

fn msg(v: Value) -> AgentMessage {
    serde_json::from_value(v).unwrap()
}

fn user(text: &str, ts: i64) -> AgentMessage {
    msg(json!({"role": "user", "content": text, "timestamp": ts}))
}

fn usage() -> Value {
    json!({"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
           "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}})
}

fn assistant_text(text: &str, ts: i64) -> AgentMessage {
    msg(
        json!({"role": "assistant", "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
        "usage": usage(), "stopReason": "stop", "timestamp": ts}),
    )
}

fn assistant_calls(calls: &[(&str, &str, Value)], ts: i64) -> AgentMessage {
    let content: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| json!({"type": "toolCall", "id": id, "name": name, "arguments": args}))
        .collect();
    msg(json!({"role": "assistant", "content": content,
        "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
        "usage": usage(), "stopReason": "toolUse", "timestamp": ts}))
}

fn tool_result(id: &str, name: &str, ts: i64) -> AgentMessage {
    msg(
        json!({"role": "toolResult", "toolCallId": id, "toolName": name,
        "content": [{"type": "text", "text": "ok"}], "isError": false, "timestamp": ts}),
    )
}

/// One agent turn: turn start capture, the prompt, one tool batch that runs `tools` (each a
/// tool name and what it does to the files), the batch-end capture, the final answer.
async fn turn(
    rec: &Recorder,
    session: &Session,
    prompt: &str,
    ts: i64,
    tools: &[(&str, &dyn Fn())],
) -> String {
    rec.turn_start(session).await.unwrap();
    session.append_message(user(prompt, ts)).await.unwrap();
    let calls: Vec<(String, String, Value)> = tools
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (format!("call_{ts}_{i}"), name.to_string(), json!({})))
        .collect();
    let refs: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.clone()))
        .collect();
    session
        .append_message(assistant_calls(&refs, ts + 1))
        .await
        .unwrap();
    for ((id, name, _), (_, run)) in calls.iter().zip(tools) {
        rec.tool_started(name);
        run();
        session
            .append_message(tool_result(id, name, ts + 2))
            .await
            .unwrap();
    }
    let recorded = rec.tool_batch_end(session).await.unwrap();
    assert!(
        matches!(recorded, Some(Recorded::Created { .. })),
        "{recorded:?}"
    );
    session
        .append_message(assistant_text(&format!("done: {prompt}"), ts + 3))
        .await
        .unwrap()
}

/// The login repository (committed, plus an ignored `build.log`), a home and a fresh session
/// for it.
struct Login {
    _repo: tempfile::TempDir,
    home: tempfile::TempDir,
    root: PathBuf,
    session: Session,
    sid: String,
    path: PathBuf,
}

async fn login() -> Login {
    let (repo, root) = repo_with(&[
        (".gitignore", "*.log\n"),
        (
            "src/login.rs",
            "fn login(user: &str) -> bool {\n    check_password(user)\n}\n",
        ),
        ("src/config.toml", "timeout = 30\nmode = \"password\"\n"),
        ("README.md", "# Login\n"),
    ]);
    write(&root, "build.log", b"ignored output\n");
    let home = tempfile::tempdir().unwrap();
    let (session, sid, path) = new_session(home.path(), &root).await;
    Login {
        _repo: repo,
        home,
        root,
        session,
        sid,
        path,
    }
}

struct Seed {
    _repo: tempfile::TempDir,
    home: tempfile::TempDir,
    root: PathBuf,
    session: Session,
    path: PathBuf,
    plan_a_tip: String,
    plan_b_tip: String,
    files_a: Vec<(String, Vec<u8>)>,
    files_b: Vec<(String, Vec<u8>)>,
}

/// Seed 001: plan A (write + edit + a bash `sed`), back to before the plan A prompt with the
/// code, plan B (edits, a deleted file, a binary file).
async fn seed_001() -> (Seed, Recorder) {
    let Login {
        _repo: repo,
        home,
        root,
        session,
        sid,
        path,
    } = login().await;
    let rec = recorder(&root, &sid, home.path());
    let initial = files(&root);

    let r = root.clone();
    let (w, e, s) = (r.clone(), r.clone(), r.clone());
    let plan_a_tip = turn(
        &rec,
        &session,
        "请用方案 A 重构登录流程。",
        1000,
        &[
            ("write", &move || {
                write(
                    &w,
                    "src/token.rs",
                    b"pub fn issue() -> String { String::new() }\n",
                )
            }),
            ("edit", &move || {
                write(
                    &e,
                    "src/login.rs",
                    b"fn login(user: &str) -> bool {\n    token::verify(user)\n}\n",
                )
            }),
            ("bash", &move || {
                sh(&s, "sed -i 's/password/token/' src/config.toml")
            }),
        ],
    )
    .await;
    let files_a = files(&root);
    assert_ne!(files_a, initial);
    assert!(
        String::from_utf8_lossy(&std::fs::read(root.join("src/config.toml")).unwrap())
            .contains("token")
    );

    // Back to before the plan A prompt, code and conversation: the new leaf is the prompt's
    // parent (what navigate_tree does for a user message).
    let entries = session.entries().await.unwrap();
    let prompt_a = entries
        .iter()
        .find(|e| e.to_json().contains("方案 A"))
        .unwrap();
    let before_a = prompt_a.parent_id.clone();
    let report = rec
        .navigate(&session, before_a.as_deref(), RestoreMode::Both)
        .await
        .unwrap();
    assert!(report.is_some_and(|r| r.entry_id.is_some()));
    assert_eq!(files(&root), initial, "plan A's changes are gone");

    let (e, s, b) = (r.clone(), r.clone(), r.clone());
    let plan_b_tip = turn(
        &rec,
        &session,
        "请用方案 B 重构登录流程。",
        2000,
        &[
            ("edit", &move || {
                write(
                    &e,
                    "src/login.rs",
                    b"fn login(user: &str) -> bool {\n    sso::redirect(user)\n}\n",
                )
            }),
            ("bash", &move || {
                sh(&s, "rm README.md && sed -i 's/30/60/' src/config.toml")
            }),
            ("write", &move || {
                write(
                    &b,
                    "assets/logo.png",
                    b"\x89PNG\r\n\x1a\n\x00\x00\x00\x00\xff\xfe",
                )
            }),
        ],
    )
    .await;
    let files_b = files(&root);
    let seed = Seed {
        _repo: repo,
        home,
        root,
        session,
        path,
        plan_a_tip,
        plan_b_tip,
        files_a,
        files_b,
    };
    (seed, rec)
}

#[tokio::test]
async fn seed_001_switching_between_plan_a_and_plan_b_restores_both_code_and_conversation() {
    let (seed, rec) = seed_001().await;
    let before = user_state(&seed.root);
    assert!(seed
        .files_b
        .iter()
        .any(|(p, b)| p == "assets/logo.png" && b.starts_with(b"\x89PNG")));
    assert!(!seed.files_b.iter().any(|(p, _)| p == "README.md"));

    rec.navigate(&seed.session, Some(&seed.plan_a_tip), RestoreMode::Both)
        .await
        .unwrap();
    assert_eq!(files(&seed.root), seed.files_a, "byte-equal to plan A");
    let leaf = seed.session.leaf_id().await.unwrap().unwrap();
    let leaf_entry = seed.session.get_entry(&leaf).await.unwrap().unwrap();
    assert_eq!(
        leaf_entry.parent_id.as_deref(),
        Some(seed.plan_a_tip.as_str()),
        "restore entry under A's tip"
    );

    rec.navigate(&seed.session, Some(&seed.plan_b_tip), RestoreMode::Both)
        .await
        .unwrap();
    assert_eq!(files(&seed.root), seed.files_b, "byte-equal to plan B");
    assert_eq!(
        std::fs::read(seed.root.join("build.log")).unwrap(),
        b"ignored output\n"
    );
    assert_eq!(
        user_state(&seed.root),
        before,
        "branches, stash, HEAD, reflog and index untouched"
    );

    // Conversation only: the files stay; code only: the leaf stays.
    rec.navigate(
        &seed.session,
        Some(&seed.plan_a_tip),
        RestoreMode::ConversationOnly,
    )
    .await
    .unwrap();
    assert_eq!(files(&seed.root), seed.files_b);
    assert_eq!(
        seed.session.leaf_id().await.unwrap().as_deref(),
        Some(seed.plan_a_tip.as_str())
    );
    rec.navigate(&seed.session, Some(&seed.plan_a_tip), RestoreMode::CodeOnly)
        .await
        .unwrap();
    assert_eq!(files(&seed.root), seed.files_a);

    // Undo that restore: plan B's files again.
    rec.undo_restore(&seed.session).await.unwrap();
    assert_eq!(files(&seed.root), seed.files_b);
}

#[tokio::test]
async fn user_edits_outside_the_agent_are_captured_first_and_can_be_restored() {
    let (seed, rec) = seed_001().await;
    // The user edits by hand on plan B, then switches to plan A.
    write(&seed.root, "src/login.rs", b"// my own fix\n");
    write(&seed.root, "NOTES.md", b"remember\n");
    let mine = files(&seed.root);
    let report = rec
        .navigate(&seed.session, Some(&seed.plan_a_tip), RestoreMode::Both)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(files(&seed.root), seed.files_a);
    // The capture made first holds the hand edits, and undo brings them back.
    let stored = git(
        &seed.root,
        &["show", &format!("{}:src/login.rs", report.from.tree)],
    );
    assert_eq!(stored, "// my own fix\n");
    rec.undo_restore(&seed.session).await.unwrap();
    assert_eq!(files(&seed.root), mine);
}

#[tokio::test]
async fn turn_start_records_user_changes_and_an_unchanged_workspace_records_nothing() {
    let Login {
        _repo,
        home,
        root,
        session,
        sid,
        ..
    } = login().await;
    let rec = recorder(&root, &sid, home.path());
    assert!(matches!(
        rec.turn_start(&session).await.unwrap(),
        Recorded::Created { .. }
    ));
    session.append_message(user("hi", 1)).await.unwrap();
    assert!(matches!(
        rec.turn_start(&session).await.unwrap(),
        Recorded::Unchanged(_)
    ));
    // Read-only tools do not capture.
    rec.tool_started("read");
    rec.tool_started("grep");
    assert_eq!(rec.tool_batch_end(&session).await.unwrap(), None);
    write(&root, "src/login.rs", b"changed by the user\n");
    let Recorded::Created { changed, .. } = rec.turn_start(&session).await.unwrap() else {
        panic!("expected a checkpoint")
    };
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].path, "src/login.rs");
    let customs = session
        .entries()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.to_json().contains("arbor.checkpoint"))
        .count();
    assert_eq!(customs, 2);
}

#[tokio::test]
async fn restoring_mid_rebase_is_refused_and_nothing_moves() {
    let (seed, rec) = seed_001().await;
    let root = &seed.root;
    git(root, &["stash", "-u", "-q"]);
    git(root, &["checkout", "-q", "-b", "topic"]);
    write(root, "README.md", b"topic\n");
    git(root, &["commit", "-qam", "topic"]);
    git(root, &["checkout", "-q", "main"]);
    write(root, "README.md", b"main\n");
    git(root, &["commit", "-qam", "main"]);
    git(root, &["checkout", "-q", "topic"]);
    let rebase = Command::new("git")
        .current_dir(root)
        .args([
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@e",
            "rebase",
            "main",
        ])
        .output()
        .unwrap();
    assert!(!rebase.status.success());
    let leaf = seed.session.leaf_id().await.unwrap();
    let worktree = files(root);
    let err = rec
        .navigate(&seed.session, Some(&seed.plan_a_tip), RestoreMode::Both)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("in the middle of a rebase"),
        "{err}"
    );
    assert_eq!(
        seed.session.leaf_id().await.unwrap(),
        leaf,
        "the conversation did not move either"
    );
    assert_eq!(files(root), worktree);
}

#[tokio::test]
async fn a_plain_directory_uses_the_snapshot_store() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(&root, "notes.txt", b"v1\n");
    let (session, sid, _) = new_session(home.path(), &root).await;
    let rec = recorder(&root, &sid, home.path());
    let w = root.clone();
    let first = turn(
        &rec,
        &session,
        "edit",
        10,
        &[("write", &move || write(&w, "notes.txt", b"v2\n"))],
    )
    .await;
    let w = root.clone();
    turn(
        &rec,
        &session,
        "edit again",
        20,
        &[("bash", &move || {
            std::fs::remove_file(w.join("notes.txt")).unwrap();
            write(&w, "new.bin", b"\x00\x01");
        })],
    )
    .await;
    rec.navigate(&session, Some(&first), RestoreMode::Both)
        .await
        .unwrap();
    assert_eq!(
        files(&root),
        vec![("notes.txt".to_string(), b"v2\n".to_vec())]
    );
    assert!(home.path().join("checkpoints/refs").join(&sid).is_dir());
}

#[tokio::test]
async fn no_checkpoint_above_the_target_is_a_clear_refusal() {
    let Login {
        _repo,
        home,
        root,
        session,
        sid,
        ..
    } = login().await;
    let first = session
        .append_message(user("before checkpoints existed", 1))
        .await
        .unwrap();
    let rec = recorder(&root, &sid, home.path());
    rec.turn_start(&session).await.unwrap();
    let err = rec
        .navigate(&session, Some(&first), RestoreMode::Both)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains(&format!(
            "no workspace checkpoint at or above entry {first}"
        )),
        "{err}"
    );
    // Disabled in settings: no recorder at all.
    let off = CheckpointSettings {
        enabled: false,
        ..Default::default()
    };
    assert!(Recorder::open(&root, &sid, &off, home.path())
        .unwrap()
        .is_none());
}

fn run_arbor(home: &Path, args: &[&str]) -> Run {
    arbor(home).args(args).output().unwrap().into()
}

#[tokio::test]
async fn the_inspect_commands_list_checkpoints_and_diff_two_branch_tips() {
    let (seed, rec) = seed_001().await;
    rec.navigate(&seed.session, Some(&seed.plan_a_tip), RestoreMode::Both)
        .await
        .unwrap();
    let file = seed.path.display().to_string();
    let out = ok(run_arbor(
        seed.home.path(),
        &["session", "checkpoints", &file],
    ));
    // Root to leaf along plan A: the first capture, plan A's tool batch, the restore.
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[0].contains("checkpoint") && lines[0].contains("(git, turn_start)"),
        "{}",
        out.stdout
    );
    assert!(
        lines[1].contains("(git, tool_batch)") && lines[1].contains("3 changed"),
        "{}",
        out.stdout
    );
    assert_eq!(
        &lines[2..5],
        [
            "    M src/config.toml",
            "    M src/login.rs",
            "    A src/token.rs"
        ]
    );
    assert!(
        lines[5].contains("restore") && lines[5].contains("mode both"),
        "{}",
        out.stdout
    );
    assert_eq!(lines.len(), 6, "{}", out.stdout);

    let out = ok(run_arbor(
        seed.home.path(),
        &[
            "session",
            "diff",
            &file,
            "--from",
            &seed.plan_a_tip,
            "--to",
            &seed.plan_b_tip,
        ],
    ));
    let diff = &out.stdout;
    assert!(
        diff.contains("-    token::verify(user)\n+    sso::redirect(user)\n"),
        "{diff}"
    );
    assert!(diff.contains("deleted file mode 100644\n"), "{diff}");
    assert!(
        diff.contains("Binary files /dev/null and b/assets/logo.png differ"),
        "{diff}"
    );
    assert!(diff.contains("--- a/src/token.rs\n+++ /dev/null"), "{diff}");

    let bad = run_arbor(
        seed.home.path(),
        &[
            "session",
            "diff",
            &file,
            "--from",
            "nope",
            "--to",
            &seed.plan_b_tip,
        ],
    );
    assert_eq!(bad.code, 1);
    assert!(
        bad.stderr.contains("entry nope not found"),
        "{}",
        bad.stderr
    );
}

/// pi opens the file with checkpoint entries and builds the same context as for the same
/// conversation without them (and as `arbor session context --json`).
#[tokio::test]
async fn pi_reads_the_session_with_checkpoint_entries_and_builds_the_same_context() {
    let pkg = std::env::var("PI_PKG")
        .ok()
        .filter(|p| Path::new(p).is_dir())
        .or_else(|| {
            let home = std::env::var("HOME").ok()?;
            let p =
                format!("{home}/.cache/arbor-pi-ref/node_modules/@earendil-works/pi-coding-agent");
            Path::new(&p).is_dir().then_some(p)
        });
    let node_ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let Some(pkg) = pkg.filter(|_| node_ok) else {
        eprintln!("SKIPPED pi_reads_the_session_with_checkpoint_entries…: node or PI_PKG missing");
        return;
    };
    let (seed, rec) = seed_001().await;
    rec.navigate(&seed.session, Some(&seed.plan_a_tip), RestoreMode::Both)
        .await
        .unwrap();

    // The same conversation, built without any recorder.
    let plain_home = tempfile::tempdir().unwrap();
    let (plain, _, plain_path) = new_session(plain_home.path(), &seed.root).await;
    for e in seed.session.ancestry(None).await.unwrap() {
        if let arbor_agent::session::EntryKind::Message(m) = e.kind {
            plain.append_message(m.message).await.unwrap();
        }
    }
    let script = pi_script("context.mjs");
    let pi = |file: &Path| -> Value {
        let out = Command::new("node")
            .env("PI_PKG", &pkg)
            .arg(&script)
            .arg(file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let with = pi(&seed.path);
    let without = pi(&plain_path);
    assert_eq!(with["ok"], json!(true), "{with}");
    assert_eq!(with["llm"], without["llm"]);
    assert_eq!(
        with["llm"].as_array().unwrap().len(),
        6,
        "plan A: prompt, tool calls, 3 results, answer"
    );
    let ours = ok(run_arbor(
        seed.home.path(),
        &[
            "session",
            "context",
            &seed.path.display().to_string(),
            "--json",
        ],
    ));
    let ours: Value = serde_json::from_str(&ours.stdout).unwrap();
    for key in ["leafId", "model", "thinkingLevel", "activeToolNames", "llm"] {
        assert_eq!(ours[key], with[key], "{key}");
    }
}

#[tokio::test]
async fn prune_checkpoints_drops_deleted_sessions_and_keeps_live_ones() {
    let Login {
        _repo,
        home,
        root,
        session: live,
        sid: live_id,
        ..
    } = login().await;
    let (dead, dead_id, dead_path) = new_session(home.path(), &root).await;
    recorder(&root, &live_id, home.path())
        .turn_start(&live)
        .await
        .unwrap();
    write(&root, "src/login.rs", b"dead session's edit\n");
    recorder(&root, &dead_id, home.path())
        .turn_start(&dead)
        .await
        .unwrap();
    assert_eq!(checkpoint_refs(&root).len(), 2);
    std::fs::remove_file(&dead_path).unwrap();
    let dir = root.display().to_string();
    let prune = || {
        run_arbor(
            home.path(),
            &["session", "prune-checkpoints", "--dir", &dir],
        )
    };
    let out = ok(prune());
    assert_eq!(
        out.stdout,
        "pruned 1 checkpoints of deleted sessions, 0 beyond the limits, 0 unreferenced snapshot files\n"
    );
    let left = checkpoint_refs(&root).join("\n");
    assert!(
        left.contains(&live_id) && !left.contains(&dead_id),
        "{left}"
    );
    // maxPerSession from settings.json.
    std::fs::write(
        home.path().join("settings.json"),
        r#"{"checkpoints": {"maxPerSession": 0}}"#,
    )
    .unwrap();
    let out = ok(prune());
    assert!(
        out.stdout.contains(", 1 beyond the limits"),
        "{}",
        out.stdout
    );
    std::fs::write(
        home.path().join("settings.json"),
        r#"{"checkpoints": {"maxPerSession": -1}}"#,
    )
    .unwrap();
    let bad = prune();
    assert_eq!(bad.code, 1);
    assert!(
        bad.stderr
            .contains("settings.json checkpoints.maxPerSession"),
        "{}",
        bad.stderr
    );
}

#[tokio::test]
async fn a_forked_session_adopts_the_checkpoints_on_its_path() {
    let (seed, rec) = seed_001().await;
    let _ = rec;
    let repo = JsonlRepository::new(seed.home.path().join("sessions"));
    let forked = repo
        .fork(
            &seed.path.display().to_string(),
            arbor_agent::session::ForkOptions::at(seed.plan_a_tip.clone()),
        )
        .await
        .unwrap();
    let fid = arbor_agent::session::SessionStorage::header(&forked)
        .await
        .unwrap()
        .id;
    let fork = Session::new(Arc::new(forked));
    let frec = recorder(&seed.root, &fid, seed.home.path());
    assert_eq!(
        frec.adopt_path(&fork).await.unwrap(),
        2,
        "the two checkpoints on plan A's path"
    );
    let refs = git(
        &seed.root,
        &[
            "for-each-ref",
            "--format=%(refname)",
            &format!("refs/arbor/checkpoints/{fid}/"),
        ],
    );
    assert_eq!(refs.lines().count(), 2, "{refs}");
    // --fork with code: the fork's leaf state is plan A's.
    frec.navigate(&fork, Some(&seed.plan_a_tip), RestoreMode::CodeOnly)
        .await
        .unwrap();
    assert_eq!(files(&seed.root), seed.files_a);
}
