//! The real `arbor` binary in a real terminal (tmux) against the 127.0.0.1 mock model server:
//! type a prompt, see the streamed answer, open `/tree`, go back to the prompt, quit, and check
//! the session file. Skipped with a notice when tmux is missing, unless
//! `ARBOR_TEST_TMUX_REQUIRE=1` (CI sets it).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arbor_test_support::scripts::openai_text;
use arbor_test_support::MockServer;
use serde_json::{json, Value};

use super::tmux::{tmux_or_skip, Tmux};

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
    if !tmux_or_skip("tui_smoke") {
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
    let tmux = Tmux::named("smoke");
    tmux.open_arbor(&repo, &home, &[]).await;
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
    tmux.wait_gone().await;
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
    tmux.open_arbor(&repo, &home, &["-r"]).await;
    tmux.wait_for("Resume session").await;
    // The original session (the clone went back to the start in /tree): found by its id.
    tmux.literal(&original_id).await;
    tmux.wait_for("1 shown").await;
    tmux.keys(&["Enter"]).await;
    let screen = tmux.wait_for("The streamed answer is 42.").await;
    assert!(!screen.contains("Resume session"), "{screen}");
    tmux.literal("/quit").await;
    tmux.keys(&["Enter"]).await;
    tmux.wait_gone().await;
}

/// A tmux pane running `arbor` under a shell that reports how arbor ended and stays open, so
/// the terminal state left behind can be read from outside (`stty -F` on the pane's tty, tmux's
/// own view of the alternate screen, the cursor and mouse reporting).
struct Pane {
    tmux: Tmux,
    out: PathBuf,
    home: PathBuf,
    repo: PathBuf,
    tty: String,
    _dir: tempfile::TempDir,
}

const SHELL_BACK: &str = "ARBOR-SHELL-BACK";

impl Pane {
    async fn start(server: &MockServer, name: &str, env: &[(&str, &str)]) -> Pane {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let repo = dir.path().join("repo");
        let out = dir.path().join("out");
        for d in [&home, &repo, &out] {
            std::fs::create_dir_all(d).unwrap();
        }
        // A git repository with one commit: checkpoints go to git's object store.
        for args in [
            &["init", "-q"][..],
            &["add", "-A"][..],
            &["commit", "-q", "--allow-empty", "-m", "init"][..],
        ] {
            let ok = std::process::Command::new("git")
                .current_dir(&repo)
                .env("GIT_AUTHOR_NAME", "u")
                .env("GIT_AUTHOR_EMAIL", "u@e")
                .env("GIT_COMMITTER_NAME", "u")
                .env("GIT_COMMITTER_EMAIL", "u@e")
                .args(args)
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        }
        let models = json!({"providers": {
            "mock": {"baseUrl": format!("{}/v1", server.url()), "api": "openai-completions", "apiKey": "test-key",
                     "models": [{"id": "mock-model", "name": "Mock Model", "contextWindow": 32000, "maxTokens": 4096}]}
        }});
        std::fs::write(home.join("models.json"), models.to_string()).unwrap();
        let script = dir.path().join("run.sh");
        std::fs::write(
            &script,
            format!(
                "\"{arbor}\" --model mock/mock-model\necho \"exit=$?\" > \"{out}/status\"\necho {SHELL_BACK}\nexec sleep 60\n",
                arbor = env!("CARGO_BIN_EXE_arbor"),
                out = out.display()
            ),
        )
        .unwrap();
        let tmux = Tmux::named(name);
        let mut args = vec![
            "new-session".to_owned(),
            "-d".into(),
            "-s".into(),
            "arbor".into(),
            "-x".into(),
            "100".into(),
            "-y".into(),
            "30".into(),
            "-c".into(),
            repo.display().to_string(),
            "-e".into(),
            format!("ARBOR_HOME={}", home.display()),
            "-e".into(),
            format!("HOME={}", home.join("user").display()),
            "-e".into(),
            "NO_COLOR=1".into(),
            // The panic message stays on one screen.
            "-e".into(),
            "RUST_BACKTRACE=0".into(),
        ];
        for (k, v) in env {
            args.push("-e".into());
            args.push(format!("{k}={v}"));
        }
        args.push("sh".into());
        args.push(script.display().to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert!(tmux.run(&args).await.0, "tmux started the shell");
        let tty = tmux
            .run(&["display-message", "-p", "-t", "arbor", "#{pane_tty}"])
            .await
            .1
            .trim()
            .to_owned();
        Pane {
            tmux,
            out,
            home,
            repo,
            tty,
            _dir: dir,
        }
    }

    /// `stty -a` of the pane's terminal, read from outside.
    fn stty(&self) -> String {
        let out = std::process::Command::new("stty")
            .args(["-a", "-F", &self.tty])
            .output()
            .unwrap();
        assert!(out.status.success(), "stty -F {}", self.tty);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// tmux's flags for the pane: alternate screen, cursor shown, mouse reporting asked.
    async fn flags(&self) -> String {
        self.tmux
            .run(&[
                "display-message",
                "-p",
                "-t",
                "arbor",
                "alt=#{alternate_on} cursor=#{cursor_flag} mouse=#{mouse_any_flag}",
            ])
            .await
            .1
            .trim()
            .to_owned()
    }

    /// The pid of arbor: the pane shell's child.
    async fn arbor_pid(&self) -> String {
        let shell = self
            .tmux
            .run(&["display-message", "-p", "-t", "arbor", "#{pane_pid}"])
            .await
            .1
            .trim()
            .to_owned();
        let children =
            std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
        children
            .split_whitespace()
            .next()
            .expect("arbor runs under the pane's shell")
            .to_owned()
    }

    fn status(&self) -> String {
        std::fs::read_to_string(self.out.join("status"))
            .unwrap()
            .trim()
            .to_owned()
    }

    /// The terminal is back in the state a shell expects: cooked mode with echo, the primary
    /// screen, the cursor shown, no mouse reporting.
    async fn assert_restored(&self) {
        let stty = self.stty();
        let words: Vec<&str> = stty
            .split(|c: char| c.is_whitespace() || c == ';')
            .collect();
        for mode in ["icanon", "echo", "isig", "icrnl", "opost"] {
            assert!(words.contains(&mode), "{mode} is off after arbor:\n{stty}");
        }
        assert_eq!(self.flags().await, "alt=0 cursor=1 mouse=0");
    }

    /// While arbor runs: raw mode, the alternate screen, mouse reporting on (so the checks
    /// after it ends can fail).
    async fn assert_in_ui_mode(&self) {
        let stty = self.stty();
        let words: Vec<&str> = stty
            .split(|c: char| c.is_whitespace() || c == ';')
            .collect();
        assert!(words.contains(&"-icanon"), "{stty}");
        assert!(words.contains(&"-echo"), "{stty}");
        let flags = self.flags().await;
        assert!(flags.starts_with("alt=1"), "{flags}");
        assert!(flags.ends_with("mouse=1"), "{flags}");
    }
}

/// DECISIONS §23.121: a debug build panics after its first frame when asked to; the panic hook
/// restores the terminal before the message is printed on the primary screen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_gives_the_shell_its_terminal_back() {
    if !cfg!(debug_assertions) || !tmux_or_skip("tui panic") {
        return;
    }
    let server = MockServer::start().await.unwrap();
    let pane = Pane::start(
        &server,
        "panic",
        &[(arbor_coding_agent::tui::TEST_PANIC_ENV, "1")],
    )
    .await;
    let screen = pane.tmux.wait_for(SHELL_BACK).await;
    // The panic hook restored the terminal before the panic message was printed, so the
    // message (with its location) is on the primary screen, which the shell sees; then the
    // app reported the internal error.
    assert!(screen.contains("panicked at"), "{screen}");
    assert!(screen.contains("internal error"), "{screen}");
    assert_eq!(pane.status(), "exit=101");
    pane.assert_restored().await;
}

/// SIGTERM, SIGHUP and an outside SIGINT while an answer streams: the turn is aborted in order, the session file
/// holds the prompt and the aborted answer (every line whole JSON), the terminal is restored
/// and the exit code is 128 + the signal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_save_the_session_and_restore_the_terminal() {
    if !tmux_or_skip("tui signals") {
        return;
    }
    for (signal, code) in [("TERM", 143), ("HUP", 129), ("INT", 130)] {
        let server = MockServer::start().await.unwrap();
        let first = json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "A partial answer"}}]});
        server.push(
            arbor_test_support::MockResponse::sse()
                .body(arbor_test_support::sse_data(&[first]))
                .ending(arbor_test_support::Ending::Hang),
        );
        let pane = Pane::start(&server, &format!("sig{signal}"), &[]).await;
        pane.tmux.wait_for("mock/mock-model").await;
        pane.tmux.literal("hello there").await;
        pane.tmux.keys(&["Enter"]).await;
        pane.tmux.wait_for("A partial answer").await;
        pane.assert_in_ui_mode().await;
        let pid = pane.arbor_pid().await;
        let killed = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(killed.success());
        pane.tmux.wait_for(SHELL_BACK).await;
        assert_eq!(pane.status(), format!("exit={code}"), "SIG{signal}");
        pane.assert_restored().await;
        let files = session_files(&pane.home);
        assert_eq!(files.len(), 1, "{files:?}");
        let text = std::fs::read_to_string(&files[0]).unwrap();
        assert!(text.ends_with('\n'), "the last line is whole");
        let entries: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let messages = messages_of(&entries);
        assert_eq!(messages[0], ("user".to_owned(), "hello there".to_owned()));
        let last = entries
            .iter()
            .rev()
            .find(|e| e["type"] == "message")
            .unwrap();
        assert_eq!(last["message"]["role"], "assistant", "SIG{signal}: {text}");
        assert_eq!(
            last["message"]["stopReason"], "aborted",
            "SIG{signal}: {text}"
        );
    }
}

/// `/fork` in the real binary with "both": the forked session starts with the files of the fork
/// point, the transcript names the undo, and `/undo-restore` brings plan B's files back
/// (DECISIONS §27.20, §27.21).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_restores_the_code_and_undo_restore_brings_it_back() {
    if !tmux_or_skip("tui fork restore") {
        return;
    }
    use arbor_test_support::scripts::openai_tool_calls;
    let server = MockServer::start().await.unwrap();
    for plan in ["A", "B"] {
        server.push(openai_tool_calls(&[(
            &format!("call_{plan}"),
            "write",
            json!({"path": "app.txt", "content": format!("plan {plan}\n")}),
        )]));
        server.push(openai_text(&format!("{plan} done")));
    }
    let pane = Pane::start(&server, "fork", &[]).await;
    let app = || std::fs::read_to_string(pane.repo.join("app.txt")).unwrap_or_default();
    pane.tmux.wait_for("mock/mock-model").await;
    for plan in ["A", "B"] {
        pane.tmux.literal(&format!("plan {plan}")).await;
        pane.tmux.keys(&["Enter"]).await;
        pane.tmux.wait_for(&format!("{plan} done")).await;
        let start = Instant::now();
        while pane.tmux.capture().await.contains("esc to abort") {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the turn never ended"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    assert_eq!(app(), "plan B\n");
    pane.tmux.literal("/fork").await;
    pane.tmux.keys(&["Enter"]).await;
    pane.tmux.wait_for("Fork from before which message?").await;
    pane.tmux.keys(&["Enter"]).await;
    pane.tmux.wait_for("Restore what?").await;
    pane.tmux.keys(&["3"]).await;
    let screen = pane.tmux.wait_for("/undo-restore puts them back").await;
    assert!(
        screen.contains("Workspace restored to checkpoint"),
        "{screen}"
    );
    assert_eq!(app(), "plan A\n");
    assert_eq!(session_files(&pane.home).len(), 2);
    // The fork's editor holds "plan B"; clear it, then undo.
    pane.tmux.keys(&["C-c"]).await;
    pane.tmux.literal("/undo-restore").await;
    pane.tmux.keys(&["Enter"]).await;
    // app.txt is untracked in this repository: the undo names it and asks first (§27.43).
    let screen = pane.tmux.wait_for("Restore anyway?").await;
    assert!(screen.contains("overwritten  app.txt"), "{screen}");
    pane.tmux.literal("y").await;
    pane.tmux.wait_for("Workspace back to checkpoint").await;
    assert_eq!(app(), "plan B\n");
    // Ctrl+C twice on the empty editor quits, and the terminal is the shell's again.
    pane.tmux.keys(&["C-c"]).await;
    pane.tmux.wait_for("Press Ctrl+C again to quit").await;
    pane.tmux.keys(&["C-c"]).await;
    pane.tmux.wait_for(SHELL_BACK).await;
    assert_eq!(pane.status(), "exit=0");
    pane.assert_restored().await;
    let restores: usize = session_files(&pane.home)
        .iter()
        .map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .matches("\"customType\":\"arbor.workspace_restore\"")
                .count()
        })
        .sum();
    assert_eq!(restores, 2, "the fork's restore and its undo");
}
