//! The first ten minutes, in a real terminal (tmux) against the 127.0.0.1 mock model server
//! (DECISIONS §23.170–§23.177): no model → the onboarding screen → `/login` → a prompt
//! answered at once; the banner, `/help` and the `/` popup on a 120-column terminal; the
//! compaction notices at the bottom of the transcript. Print mode's no-model text is a CLI
//! snapshot.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use arbor_test_support::scripts::openai_text;
use arbor_test_support::MockServer;
use serde_json::{json, Value};

use super::tmux::{tmux_or_skip, Tmux};

/// A models.json whose `mock` provider names a key variable nobody sets: the provider waits
/// for a key although its URL is local (DECISIONS §23.171).
fn models_wanting_a_key(server: &MockServer) -> Value {
    json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", server.url()), "api": "openai-completions",
        "apiKey": "$ARBOR_TEST_KEY_NOBODY_SETS",
        "models": [{"id": "mock-model", "name": "Mock Model", "contextWindow": 32000, "maxTokens": 4096}]}}})
}

fn models_with_key(server: &MockServer) -> Value {
    json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", server.url()), "api": "openai-completions", "apiKey": "test-key",
        "models": [{"id": "mock-model", "name": "Mock Model", "contextWindow": 32000, "maxTokens": 4096}]}}})
}

struct Lab {
    _dir: tempfile::TempDir,
    home: std::path::PathBuf,
    repo: std::path::PathBuf,
}

fn new_lab(models: &Value, settings: &Value) -> Lab {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(home.join("models.json"), models.to_string()).unwrap();
    std::fs::write(home.join("settings.json"), settings.to_string()).unwrap();
    Lab {
        _dir: dir,
        home,
        repo,
    }
}

/// `arbor EXTRA…` with a clean environment (no provider key of the machine leaks in).
async fn open_clean(tmux: &Tmux, lab: &Lab, size: (u16, u16), extra: &[&str]) {
    let home = format!("ARBOR_HOME={}", lab.home.display());
    let user = format!("HOME={}", lab.home.join("user").display());
    let mut command = vec![
        "env",
        "-i",
        &home,
        &user,
        "NO_COLOR=1",
        "TERM=screen",
        "PATH=/usr/bin:/bin",
        env!("CARGO_BIN_EXE_arbor"),
    ];
    command.extend_from_slice(extra);
    tmux.open(&lab.repo, &lab.home, size, &command).await;
}

/// The screen with the lab's paths and the version made stable, trailing blanks cut.
fn stable(screen: &str, lab: &Lab) -> String {
    let text = screen
        .replace(&lab.home.display().to_string(), "[HOME]")
        .replace(&lab.repo.display().to_string(), "[REPO]")
        .replace(env!("CARGO_PKG_VERSION"), "[VERSION]");
    text.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_owned()
}

async fn wait_idle(tmux: &Tmux) {
    let start = Instant::now();
    while tmux.capture().await.contains("esc to abort") {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "the turn never ended"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The transcript's rows: everything above the rule over the editor, blank rows dropped.
fn transcript_rows(screen: &str) -> Vec<String> {
    screen
        .lines()
        .take_while(|l| !l.starts_with("────"))
        .map(|l| l.trim_end().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_run_without_a_model_logs_in_and_prompts_at_once() {
    if !tmux_or_skip("tui_onboarding") {
        return;
    }
    let server = MockServer::start().await.unwrap();
    server.push(openai_text("Logged in and answering."));
    let lab = new_lab(&models_wanting_a_key(&server), &json!({}));
    let tmux = Tmux::named("onboarding");
    open_clean(&tmux, &lab, (100, 40), &[]).await;
    let screen = tmux.wait_for("/login PROVIDER").await;
    insta::assert_snapshot!("onboarding_screen", stable(&screen, &lab));
    // A prompt without a model is refused, and the text stays.
    tmux.type_line("hello there").await;
    tmux.wait_for("There is no model yet").await;
    tmux.keys(&["C-u"]).await;
    tmux.type_line("/login nosuch").await;
    tmux.wait_for("Unknown provider: nosuch").await;
    tmux.type_line("/login mock").await;
    tmux.wait_for("API key for mock").await;
    tmux.literal("sk-test-0123456789").await;
    let screen = tmux.wait_for("(18 characters)").await;
    assert!(!screen.contains("sk-test"), "{screen}");
    tmux.keys(&["Enter"]).await;
    // The normal UI opens on the model the key made usable, with its banner.
    let screen = tmux.wait_for("· mock/mock-model ·").await;
    assert!(!screen.contains("sk-test"), "{screen}");
    let auth = lab.home.join("auth.json");
    let mode = std::fs::metadata(&auth).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&auth).unwrap()).unwrap();
    assert_eq!(
        stored,
        json!({"mock": {"type": "api_key", "key": "sk-test-0123456789"}})
    );
    tmux.type_line("hello there").await;
    tmux.wait_for("Logged in and answering.").await;
    wait_idle(&tmux).await;
    let request = server.single_request();
    assert_eq!(
        request.header("authorization"),
        Some("Bearer sk-test-0123456789")
    );
    // /logout removes the key again (the file stays, private).
    tmux.type_line("/logout mock").await;
    tmux.wait_for("Removed the stored API key for mock").await;
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&auth).unwrap()).unwrap();
    assert_eq!(stored, json!({}));
    tmux.type_line("/quit").await;
    tmux.wait_gone().await;
}

#[test]
fn print_mode_without_a_model_prints_the_onboarding_text() {
    let home = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_arbor"))
        .env_clear()
        .env("ARBOR_HOME", home.path())
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .current_dir(home.path())
        .args(["-p", "hello"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr)
        .unwrap()
        .replace(&home.path().display().to_string(), "[HOME]");
    insta::assert_snapshot!("print_mode_no_model", stderr);
    // Nothing was written: no session, no auth.json.
    assert!(!home.path().join("auth.json").exists());
    let files = walkdir_jsonl(home.path());
    assert!(files.is_empty(), "{files:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn banner_help_and_a_popup_as_wide_as_the_terminal() {
    if !tmux_or_skip("tui_banner") {
        return;
    }
    let server = MockServer::start().await.unwrap();
    let lab = new_lab(&models_with_key(&server), &json!({}));
    let tmux = Tmux::named("banner");
    open_clean(&tmux, &lab, (120, 40), &["--model", "mock/mock-model"]).await;
    let screen = tmux.wait_for("/help keys and commands").await;
    insta::assert_snapshot!("banner", stable(&screen, &lab));
    tmux.type_line("/help").await;
    let screen = tmux.wait_for("Keys").await;
    // (The list is longer than the screen: its head has scrolled away; the unit test
    // `help_lists_every_command_of_the_popup_and_every_key` checks every row.)
    for needle in [
        "/scoped-models",
        "/changelog",
        "/compact",
        "/help",
        "Ctrl+G",
        "Shift+Tab",
    ] {
        assert!(screen.contains(needle), "{needle}: {screen}");
    }
    assert!(!screen.contains("Unknown command"), "{screen}");
    // The popup: a description longer than 58 columns is shown whole on 120 columns.
    tmux.literal("/").await;
    // (Waiting for the popup's last row: a capture may catch a frame half drawn.)
    tmux.wait_for("│/undo-restore   Put").await;
    let screen = tmux
        .wait_for("│/name           Set or show the session name")
        .await;
    let row = screen
        .lines()
        .find(|l| l.starts_with("│/undo-restore"))
        .unwrap();
    assert!(
        row.contains("Put the files back as they were before the last code restore"),
        "{screen}"
    );
    // The popup's border spans the terminal (120 columns), not 60.
    let top = screen.lines().find(|l| l.starts_with('┌')).unwrap();
    assert_eq!(top.chars().count(), 120, "{screen}");
    insta::assert_snapshot!("popup_120_columns", stable(&screen, &lab));
    tmux.keys(&["Escape", "C-u"]).await;
    tmux.type_line("/quit").await;
    tmux.wait_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_notices_are_quiet_complete_and_at_the_bottom() {
    if !tmux_or_skip("tui_compaction_notices") {
        return;
    }
    // Automatic compaction with nothing to compact: the context (110 tokens) is above
    // 32000 − 31950, and the one turn is all kept.
    let server = MockServer::start().await.unwrap();
    server.push(openai_text("First answer."));
    let lab = new_lab(
        &models_with_key(&server),
        &json!({"compaction": {"reserveTokens": 31950}, "retry": {"enabled": false}}),
    );
    let tmux = Tmux::named("compaction-auto");
    open_clean(&tmux, &lab, (100, 30), &["--model", "mock/mock-model"]).await;
    tmux.wait_for("mock/mock-model").await;
    tmux.type_line("hello there").await;
    tmux.wait_for("Nothing to compact").await;
    wait_idle(&tmux).await;
    let screen = tmux.capture().await;
    let rows = transcript_rows(&screen);
    let n = rows.len();
    assert!(
        rows[n - 2].contains("Compacting the session (context above the threshold)…")
            && rows[n - 1].contains("Nothing to compact"),
        "{screen}"
    );
    assert!(
        !screen.contains("failed") && !screen.contains("arbor:"),
        "{screen}"
    );
    tmux.type_line("/quit").await;
    tmux.wait_gone().await;
    drop(tmux);

    // Manual /compact that compacts: its start and end lines are the transcript's last rows.
    let server = MockServer::start().await.unwrap();
    server.push(openai_text("First answer."));
    server.push(openai_text("Second answer."));
    // The kept tail starts inside the second turn: a history summary and a turn-prefix one.
    server.push(openai_text("## Goal\nThe summary of the first turn."));
    server.push(openai_text("The prefix of the second turn."));
    let lab = new_lab(
        &models_with_key(&server),
        &json!({"compaction": {"keepRecentTokens": 1}, "retry": {"enabled": false}}),
    );
    let tmux = Tmux::named("compaction-manual");
    open_clean(&tmux, &lab, (100, 30), &["--model", "mock/mock-model"]).await;
    tmux.wait_for("mock/mock-model").await;
    tmux.type_line("first question").await;
    tmux.wait_for("First answer.").await;
    wait_idle(&tmux).await;
    tmux.type_line("second question").await;
    tmux.wait_for("Second answer.").await;
    wait_idle(&tmux).await;
    tmux.type_line("/compact").await;
    tmux.wait_for("Compacted the session:").await;
    wait_idle(&tmux).await;
    let screen = tmux.capture().await;
    let rows = transcript_rows(&screen);
    let n = rows.len();
    assert!(
        rows[n - 2].contains("Compacting the session…")
            && rows[n - 1].contains("Compacted the session:"),
        "{screen}"
    );
    insta::assert_snapshot!("manual_compaction", stable(&screen, &lab));
    tmux.type_line("/quit").await;
    tmux.wait_gone().await;
}

/// Every `.jsonl` file under `dir`.
fn walkdir_jsonl(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out
}

/// `/share` (DECISIONS §35.5): the session's page in `exports/` of Arbor's home (a private
/// folder), named by the session id, its `file://` address on screen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_writes_the_page_to_the_exports_folder() {
    if !tmux_or_skip("tui_share") {
        return;
    }
    let server = MockServer::start().await.unwrap();
    server.push(openai_text("Shared **answer**."));
    let lab = new_lab(&models_with_key(&server), &json!({}));
    let tmux = Tmux::named("share");
    open_clean(&tmux, &lab, (200, 30), &["--model", "mock/mock-model"]).await;
    tmux.wait_for("mock/mock-model").await;
    tmux.type_line("a question to share").await;
    tmux.wait_for("Shared answer.").await;
    wait_idle(&tmux).await;
    tmux.type_line("/share").await;
    let screen = tmux.wait_for("file://").await;
    let exports = lab.home.join("exports");
    let pages: Vec<_> = std::fs::read_dir(&exports).unwrap().flatten().collect();
    assert_eq!(pages.len(), 1, "{screen}");
    let page = pages[0].path();
    assert!(
        screen.contains(&format!("file://{}", page.display())),
        "{screen}"
    );
    let mode = std::fs::metadata(&exports).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("a question to share"),
        "the prompt is on the page"
    );
    assert!(
        html.contains("<strong>answer</strong>"),
        "Markdown rendered"
    );
    tmux.type_line("/quit").await;
    tmux.wait_gone().await;
}
