//! The real `arbor` binary in a real terminal (tmux) against the 127.0.0.1 mock model server:
//! type a prompt, see the streamed answer, open `/tree`, go back to the prompt, quit, and check
//! the session file. Skipped with a notice when tmux is missing, unless
//! `ARBOR_TEST_TMUX_REQUIRE=1` (CI sets it).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arbor_test_support::scripts::openai_text;
use arbor_test_support::MockServer;
use serde_json::{json, Value};

struct Tmux {
    socket: String,
}

impl Tmux {
    async fn run(&self, args: &[&str]) -> (bool, String) {
        let out = tokio::process::Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .await
            .expect("tmux runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    async fn capture(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "arbor"]).await.1
    }

    async fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "arbor"];
        args.extend_from_slice(keys);
        assert!(self.run(&args).await.0, "send-keys {keys:?}");
    }

    async fn literal(&self, text: &str) {
        assert!(
            self.run(&["send-keys", "-t", "arbor", "-l", text]).await.0,
            "send-keys -l {text}"
        );
    }

    /// Waits until the pane shows `needle` (10 s), returning the screen.
    async fn wait_for(&self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture().await;
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the screen never showed {needle:?}; it shows:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn alive(&self) -> bool {
        self.run(&["has-session", "-t", "arbor"]).await.0
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

fn messages_of(entries: &[Value]) -> Vec<(String, String)> {
    entries
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| {
            let m = &e["message"];
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Array(b) => b
                    .iter()
                    .filter_map(|x| x["text"].as_str())
                    .collect::<String>(),
                _ => String::new(),
            };
            (m["role"].as_str().unwrap_or("").to_owned(), text)
        })
        .collect()
}

fn expected() -> Vec<(String, String)> {
    vec![
        ("user".to_owned(), "hello there".to_owned()),
        (
            "assistant".to_owned(),
            "The streamed answer is 42.".to_owned(),
        ),
    ]
}

fn tmux_available() -> bool {
    std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn session_files(home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(dirs) = std::fs::read_dir(home.join("sessions")) {
        for d in dirs.flatten() {
            for f in std::fs::read_dir(d.path()).unwrap().flatten() {
                if f.path().extension().is_some_and(|e| e == "jsonl") {
                    out.push(f.path());
                }
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbor_in_tmux_prompts_streams_navigates_and_quits() {
    if !tmux_available() {
        assert!(
            std::env::var("ARBOR_TEST_TMUX_REQUIRE").as_deref() != Ok("1"),
            "tmux is required (ARBOR_TEST_TMUX_REQUIRE=1) but not installed"
        );
        eprintln!("tui_smoke: tmux is not installed; skipping the real-terminal test");
        return;
    }
    let server = MockServer::start().await.unwrap();
    server.push(openai_text("The streamed answer is 42."));
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    let models = json!({"providers": {
        "mock": {"baseUrl": format!("{}/v1", server.url()), "api": "openai-completions", "apiKey": "test-key",
                 "models": [{"id": "mock-model", "name": "Mock Model", "contextWindow": 32000, "maxTokens": 4096}]}
    }});
    std::fs::write(home.join("models.json"), models.to_string()).unwrap();
    let tmux = Tmux {
        socket: format!("arbor-smoke-{}", std::process::id()),
    };
    let arbor = env!("CARGO_BIN_EXE_arbor");
    let (ok, _) = tmux
        .run(&[
            "new-session",
            "-d",
            "-s",
            "arbor",
            "-x",
            "100",
            "-y",
            "30",
            "-c",
            &repo.display().to_string(),
            "-e",
            &format!("ARBOR_HOME={}", home.display()),
            "-e",
            &format!("HOME={}", home.join("user").display()),
            "-e",
            "NO_COLOR=1",
            arbor,
            "--model",
            "mock/mock-model",
        ])
        .await;
    assert!(ok, "tmux started arbor");
    tmux.wait_for("mock/mock-model").await;
    tmux.literal("hello there").await;
    tmux.keys(&["Enter"]).await;
    let screen = tmux.wait_for("The streamed answer is 42.").await;
    assert!(screen.contains("hello there"), "{screen}");
    // Wait for the turn to end (the spinner goes).
    let start = Instant::now();
    while tmux.capture().await.contains("esc to abort") {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the turn never ended"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let original = session_files(&home);
    assert_eq!(original.len(), 1, "{original:?}");
    let original_header: Value = serde_json::from_str(
        std::fs::read_to_string(&original[0])
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let original_id = original_header["id"].as_str().unwrap().to_owned();
    // /clone copies the branch into a new session file and continues there.
    tmux.literal("/clone").await;
    tmux.keys(&["Enter"]).await;
    let start = Instant::now();
    while session_files(&home).len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "/clone wrote no file"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tmux.wait_for("The streamed answer is 42.").await;
    // /tree: select the user message and go back to it without a summary.
    tmux.literal("/tree").await;
    tmux.keys(&["Enter"]).await;
    tmux.wait_for("hello there").await;
    tmux.keys(&["Up"]).await;
    tmux.keys(&["Enter"]).await;
    // The project is a git repository, so the run records checkpoints and the prompt first
    // asks what to restore: the conversation only (the first choice).
    tmux.wait_for("Restore what?").await;
    tmux.keys(&["Enter"]).await;
    tmux.wait_for("Summarize branch?").await;
    tmux.keys(&["Enter"]).await;
    tmux.wait_for("> hello there").await;
    // Clear the editor, then quit.
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
    let files = session_files(&home);
    assert_eq!(files.len(), 2, "the session and its clone: {files:?}");
    let mut all = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let entries: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(entries[0]["type"], "session");
        assert_eq!(messages_of(&entries), expected(), "{}", f.display());
        all.extend(entries);
    }
    let entries = all;
    // Going back without a summary moves the leaf in memory only: no branch_summary written.
    assert!(!entries.iter().any(|e| e["type"] == "branch_summary"));

    // `arbor -r` opens the session picker; a search and Enter resume a session.
    let (ok, _) = tmux
        .run(&[
            "new-session",
            "-d",
            "-s",
            "arbor",
            "-x",
            "100",
            "-y",
            "30",
            "-c",
            &repo.display().to_string(),
            "-e",
            &format!("ARBOR_HOME={}", home.display()),
            "-e",
            &format!("HOME={}", home.join("user").display()),
            "-e",
            "NO_COLOR=1",
            arbor,
            "--model",
            "mock/mock-model",
            "-r",
        ])
        .await;
    assert!(ok, "tmux started arbor -r");
    tmux.wait_for("Resume session").await;
    // The original session (the clone went back to the start in /tree): found by its id.
    tmux.literal(&original_id).await;
    tmux.wait_for("1 shown").await;
    tmux.keys(&["Enter"]).await;
    let screen = tmux.wait_for("The streamed answer is 42.").await;
    assert!(!screen.contains("Resume session"), "{screen}");
    tmux.literal("/quit").await;
    tmux.keys(&["Enter"]).await;
    let start = Instant::now();
    while tmux.alive().await {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "arbor -r did not quit"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
