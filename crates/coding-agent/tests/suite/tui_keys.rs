//! pi's keys and commands in a real terminal (tmux) against the mock model (issue 27 items 4
//! and 5; DECISIONS §23.150–§23.160): Alt+Up, Ctrl+Z and `fg`, Ctrl+L, Ctrl+X, Ctrl+Y, the
//! Ctrl+C hint, live `!!` output, `@` completion of new files, `/scoped-models`,
//! `/changelog`, `/debug`, `/new`, `/import`, `/clone`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arbor_test_support::scripts::openai_text;
use arbor_test_support::MockServer;
use serde_json::json;

use super::tmux::{tmux_or_skip, Tmux};

struct Lab {
    _dir: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
    elsewhere: PathBuf,
}

fn lab(server: &MockServer) -> Lab {
    let dir = tempfile::tempdir().unwrap();
    let (home, repo, elsewhere) = (
        dir.path().join("home"),
        dir.path().join("repo"),
        dir.path().join("elsewhere"),
    );
    for d in [&home, &repo, &elsewhere] {
        std::fs::create_dir_all(d).unwrap();
    }
    let models = json!({"providers": {
        "mock": {"baseUrl": format!("{}/v1", server.url()), "api": "openai-completions", "apiKey": "test-key",
                 "models": [{"id": "mock-model", "name": "Mock Model", "contextWindow": 32000, "maxTokens": 4096}]}
    }});
    std::fs::write(home.join("models.json"), models.to_string()).unwrap();
    Lab {
        _dir: dir,
        home,
        repo,
        elsewhere,
    }
}

fn session_files(home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in std::fs::read_dir(home.join("sessions"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for f in std::fs::read_dir(d.path()).into_iter().flatten().flatten() {
            if f.path().extension().is_some_and(|e| e == "jsonl") {
                out.push(f.path());
            }
        }
    }
    out.sort();
    out
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

async fn wait_gone_from_screen(tmux: &Tmux, needle: &str) -> String {
    let start = Instant::now();
    loop {
        let screen = tmux.capture().await;
        if !screen.contains(needle) {
            return screen;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "{needle:?} stayed on the screen:\n{screen}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// DECISIONS §23.154: a message queued while the model works comes back to the editor with
/// Alt+Up and leaves the queue, so it is sent once (when the user sends it again), not twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alt_up_takes_a_queued_message_back_so_it_is_not_sent_twice() {
    if !tmux_or_skip("tui_keys") {
        return;
    }
    let server = MockServer::start().await.unwrap();
    server.push(openai_text("Slow answer.").delay_headers(Duration::from_secs(3)));
    server.push(openai_text("Second answer."));
    let lab = lab(&server);
    let tmux = Tmux::named("keys-dequeue");
    tmux.open_arbor(&lab.repo, &lab.home, &[]).await;
    tmux.wait_for("mock/mock-model").await;
    tmux.type_line("first question").await;
    tmux.wait_for("esc to abort").await;
    tmux.type_line("queued words").await;
    tmux.wait_for("steer: queued words").await;
    tmux.keys(&["M-Up"]).await;
    let screen = tmux.wait_for("> queued words").await;
    assert!(!screen.contains("steer: queued words"), "{screen}");
    assert!(
        screen.contains("Restored 1 queued message to the editor"),
        "{screen}"
    );
    tmux.wait_for("Slow answer.").await;
    wait_idle(&tmux).await;
    assert_eq!(
        server.requests().len(),
        1,
        "the taken-back message was not sent"
    );
    // Sent again by the user: exactly once.
    tmux.keys(&["Enter"]).await;
    tmux.wait_for("Second answer.").await;
    wait_idle(&tmux).await;
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let sent = reqs[1].json()["messages"].to_string();
    assert_eq!(sent.matches("queued words").count(), 1, "{sent}");
    tmux.type_line("/quit").await;
    tmux.wait_gone().await;
}

/// DECISIONS §23.153: Ctrl+Z gives the shell its terminal (the job is stopped), `fg` brings
/// the UI back with the editor's text redrawn and keys working again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_z_suspends_to_the_shell_and_fg_redraws() {
    if !tmux_or_skip("tui_keys") {
        return;
    }
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let tmux = Tmux::named("keys-suspend");
    tmux.open(
        &lab.repo,
        &lab.home,
        (100, 30),
        &["bash", "--norc", "--noprofile"],
    )
    .await;
    tmux.type_line(&format!(
        "PS1='shell$ '; '{}' --model mock/mock-model",
        env!("CARGO_BIN_EXE_arbor")
    ))
    .await;
    tmux.wait_for("↑0").await;
    tmux.literal("draft text").await;
    tmux.wait_for("> draft text").await;
    tmux.keys(&["C-z"]).await;
    let screen = tmux.wait_for("Stopped").await;
    assert!(!screen.contains("> draft text"), "{screen}");
    tmux.type_line("fg").await;
    tmux.wait_for("> draft text").await;
    tmux.literal("!").await;
    let screen = tmux.wait_for("> draft text!").await;
    assert!(
        screen.contains("mock/mock-model"),
        "the footer is redrawn: {screen}"
    );
    tmux.keys(&["C-u"]).await;
    tmux.type_line("/quit").await;
    tmux.wait_for("shell$").await;
    tmux.type_line("echo jobs=$(jobs | wc -l)").await;
    tmux.wait_for("jobs=0").await;
}

/// The rest of pi's keys and the commands of items 4 and 5, one after another in one run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pis_keys_and_commands_work_in_the_terminal() {
    if !tmux_or_skip("tui_keys") {
        return;
    }
    let server = MockServer::start().await.unwrap();
    server.push(openai_text("First answer."));
    let lab = lab(&server);
    let tmux = Tmux::named("keys-pi");
    tmux.open_arbor(&lab.repo, &lab.home, &[]).await;
    tmux.wait_for("mock/mock-model").await;
    tmux.type_line("hello").await;
    tmux.wait_for("First answer.").await;
    wait_idle(&tmux).await;

    // Ctrl+X copies the last answer (pi's app.message.copy).
    tmux.keys(&["C-x"]).await;
    tmux.wait_for("Copied the last assistant message").await;
    // Ctrl+L opens the model selector (pi's app.model.select).
    tmux.keys(&["C-l"]).await;
    tmux.wait_for("Select model").await;
    tmux.keys(&["Escape"]).await;
    wait_gone_from_screen(&tmux, "Select model").await;

    // Ctrl+W twice, then Ctrl+Y puts both words back.
    tmux.literal("alpha beta gamma").await;
    tmux.wait_for("> alpha beta gamma").await;
    tmux.keys(&["C-w", "C-w"]).await;
    wait_gone_from_screen(&tmux, "beta").await;
    tmux.keys(&["C-y"]).await;
    tmux.wait_for("> alpha beta gamma").await;
    tmux.keys(&["C-u"]).await;
    wait_gone_from_screen(&tmux, "> alpha").await;

    // The Ctrl+C hint is in the footer and goes with the next key; the transcript never had it.
    tmux.keys(&["C-c"]).await;
    tmux.wait_for("Press Ctrl+C again to quit").await;
    tmux.literal("x").await;
    wait_gone_from_screen(&tmux, "Press Ctrl+C again").await;
    tmux.keys(&["C-u"]).await;

    // `!!` output says at once that the model does not see it; a file it made is offered by @.
    tmux.type_line("!!touch made-by-shell.txt && echo made")
        .await;
    let screen = tmux.wait_for("(not sent to the model)").await;
    assert!(screen.contains("$ touch made-by-shell.txt"), "{screen}");
    tmux.literal("look at @made-by").await;
    tmux.keys(&["Tab"]).await;
    tmux.wait_for("> look at @made-by-shell.txt").await;
    tmux.keys(&["C-u"]).await;

    tmux.type_line("/scoped-models").await;
    tmux.wait_for("Ctrl+P cycles through 1 model").await;
    tmux.type_line("/changelog").await;
    tmux.wait_for("What's new").await;
    tmux.type_line("/debug").await;
    tmux.wait_for("Debug log written").await;
    let log = lab.home.join("arbor-debug.log");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("=== Context messages (JSONL) ===") && text.contains("First answer."));
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&log).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // /import: a copy of this session under another id, with another answer, opens.
    let files = session_files(&lab.home);
    assert_eq!(files.len(), 1, "{files:?}");
    let original = std::fs::read_to_string(&files[0]).unwrap();
    let header: serde_json::Value = serde_json::from_str(original.lines().next().unwrap()).unwrap();
    let id = header["id"].as_str().unwrap();
    let new_id = "0195f0c0-1111-7111-8111-111111111111";
    let copy = original
        .replace(id, new_id)
        .replace("First answer.", "Imported answer.");
    let source = lab.elsewhere.join("from-a-friend.jsonl");
    std::fs::write(&source, copy).unwrap();
    tmux.type_line(&format!("/import {}", source.display()))
        .await;
    tmux.wait_for("Imported answer.").await;
    let stored: Vec<PathBuf> = session_files(&lab.home)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(&format!("_{new_id}.jsonl")))
        .collect();
    assert_eq!(stored.len(), 1, "the import is stored under its own id");
    assert_eq!(
        std::fs::read(&stored[0]).unwrap(),
        std::fs::read(&source).unwrap()
    );
    // Importing it again opens the same file; another file with that id is refused.
    std::fs::write(
        lab.elsewhere.join("clash.jsonl"),
        std::fs::read(&source).unwrap(),
    )
    .unwrap();
    tmux.type_line(&format!(
        "/import {}",
        lab.elsewhere.join("clash.jsonl").display()
    ))
    .await;
    tmux.wait_for("Failed to import session: a session with id")
        .await;

    tmux.type_line("/clone").await;
    tmux.wait_for("Cloned to new session").await;
    tmux.type_line("/new").await;
    tmux.wait_for("New session started").await;
    tmux.type_line("/quit").await;
    tmux.wait_gone().await;
}

/// DECISIONS §23.159, §23.160: `--verbose` lists what the run loaded; `--theme FILE` starts
/// with a good file and ends the start with a line naming the file and key of a bad one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_and_theme_flags_in_the_terminal() {
    if !tmux_or_skip("tui_keys") {
        return;
    }
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    std::fs::write(
        lab.repo.join("good.json"),
        r##"{"colors": {"accent": "#5fd7ff", "dim": 244}}"##,
    )
    .unwrap();
    std::fs::write(lab.repo.join("bad.json"), r#"{"colors": {"acent": "red"}}"#).unwrap();
    let tmux = Tmux::named("keys-flags");
    tmux.open_arbor(
        &lab.repo,
        &lab.home,
        &["--verbose", "--theme", "good.json", "-t", "read,ls"],
    )
    .await;
    let screen = tmux.wait_for("Tools: read, ls").await;
    for line in [
        &format!("arbor {}", env!("CARGO_PKG_VERSION")),
        "Model: mock/mock-model (context window 32000)",
        "Working directory: ",
        "Project trust: ",
    ] {
        assert!(screen.contains(line), "{line:?} missing:\n{screen}");
    }
    tmux.type_line("/quit").await;
    tmux.wait_gone().await;

    let bad = Tmux::named("keys-badtheme");
    let script = format!(
        "'{}' --model mock/mock-model --theme bad.json; echo \"exit=$?\"; sleep 30",
        env!("CARGO_BIN_EXE_arbor")
    );
    bad.open(&lab.repo, &lab.home, (100, 30), &["sh", "-c", &script])
        .await;
    let screen = bad.wait_for("exit=").await;
    assert!(
        screen.contains("bad.json: colors.acent: no such style"),
        "{screen}"
    );
    assert!(screen.contains("exit=1"), "{screen}");
}
