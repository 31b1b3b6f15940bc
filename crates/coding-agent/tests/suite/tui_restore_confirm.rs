//! A code restore that would remove untracked files asks first, naming them (DECISIONS
//! §27.43): the real `arbor` binary in tmux, a real git repository, the 127.0.0.1 mock model
//! server. "n" leaves every file as it is; "y" restores and the notice names what went;
//! `/undo-restore` brings the files back byte for byte with their modes.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use arbor_test_support::scripts::openai_text;
use arbor_test_support::MockServer;
use serde_json::json;

use super::tmux::{tmux_or_skip, Tmux};

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "user")
        .env("GIT_AUTHOR_EMAIL", "user@example.com")
        .env("GIT_COMMITTER_NAME", "user")
        .env("GIT_COMMITTER_EMAIL", "user@example.com")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The overlay's lines: from its first line to the hint line, trailing blanks trimmed.
fn overlay(screen: &str) -> String {
    let lines: Vec<&str> = screen
        .lines()
        .skip_while(|l| !l.starts_with("This restore"))
        .take_while(|l| !l.starts_with('─'))
        .map(str::trim_end)
        .collect();
    lines.join("\n").trim_end().to_owned()
}

/// The screen's text with its lines joined by spaces (the transcript wraps long notices).
fn flat(screen: &str) -> String {
    screen.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `/tree`, the user message, "Code only": the files go back to before the prompt.
async fn code_only_to_the_prompt(tmux: &Tmux) {
    tmux.literal("/tree").await;
    tmux.keys(&["Enter"]).await;
    tmux.wait_for("hello there").await;
    tmux.keys(&["Up"]).await;
    tmux.keys(&["Enter"]).await;
    tmux.wait_for("Restore what?").await;
    tmux.literal("2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_names_the_untracked_files_it_would_remove_and_asks_first() {
    if !tmux_or_skip("tui_restore_confirm") {
        return;
    }
    let server = MockServer::start().await.unwrap();
    server.push(openai_text("Nothing to change."));
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join(".gitignore"), "*.env\n").unwrap();
    std::fs::write(repo.join("app.txt"), "v1\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "init"]);
    std::fs::write(repo.join("local.env"), "SECRET=1\n").unwrap();
    let models = json!({"providers": {
        "mock": {"baseUrl": format!("{}/v1", server.url()), "api": "openai-completions", "apiKey": "test-key",
                 "models": [{"id": "mock-model", "name": "Mock Model", "contextWindow": 32000, "maxTokens": 4096}]}
    }});
    std::fs::write(home.join("models.json"), models.to_string()).unwrap();
    let tmux = Tmux::named("confirm");
    tmux.open_arbor(&repo, &home, &[]).await;
    tmux.wait_for("mock/mock-model").await;
    tmux.literal("hello there").await;
    tmux.keys(&["Enter"]).await;
    tmux.wait_for("Nothing to change.").await;
    let start = Instant::now();
    while tmux.capture().await.contains("esc to abort") {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the turn never ended"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // After the turn the user writes two files git does not track.
    std::fs::write(repo.join("notes.txt"), "my notes\n").unwrap();
    std::fs::set_permissions(
        repo.join("notes.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::fs::create_dir_all(repo.join("build")).unwrap();
    std::fs::write(repo.join("build/out.bin"), b"\x7fELF\x00\x01").unwrap();

    // First time: the question names both files; "n" changes nothing.
    code_only_to_the_prompt(&tmux).await;
    let screen = tmux.wait_for("Restore anyway?").await;
    insta::assert_snapshot!(overlay(&screen));
    tmux.literal("n").await;
    let screen = tmux.wait_for("Restore cancelled; nothing changed").await;
    assert!(
        flat(&screen).contains("removes untracked files build/out.bin, notes.txt"),
        "{screen}"
    );
    assert_eq!(
        std::fs::read(repo.join("notes.txt")).unwrap(),
        b"my notes\n"
    );
    assert!(repo.join("build/out.bin").exists());

    // Second time: "y" restores, and the notice names what went (count and noun agree).
    code_only_to_the_prompt(&tmux).await;
    tmux.wait_for("Restore anyway?").await;
    tmux.literal("y").await;
    let screen = tmux.wait_for("Workspace restored to checkpoint").await;
    assert!(
        flat(&screen).contains("2 paths changed; removed untracked files build/out.bin, notes.txt"),
        "{screen}"
    );
    assert!(!repo.join("notes.txt").exists());
    assert!(!repo.join("build").exists());
    assert_eq!(
        std::fs::read(repo.join("local.env")).unwrap(),
        b"SECRET=1\n"
    );

    // /undo-restore brings them back, byte for byte and with their modes.
    tmux.literal("/undo-restore").await;
    tmux.keys(&["Enter"]).await;
    tmux.wait_for("Workspace back to checkpoint").await;
    assert_eq!(
        std::fs::read(repo.join("notes.txt")).unwrap(),
        b"my notes\n"
    );
    assert_eq!(mode(&repo.join("notes.txt")), 0o600);
    assert_eq!(
        std::fs::read(repo.join("build/out.bin")).unwrap(),
        b"\x7fELF\x00\x01"
    );
    assert_eq!(
        std::fs::read(repo.join("local.env")).unwrap(),
        b"SECRET=1\n"
    );

    tmux.keys(&["C-c"]).await;
    tmux.literal("/quit").await;
    tmux.keys(&["Enter"]).await;
    let start = Instant::now();
    while tmux.alive().await {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "arbor did not quit"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
