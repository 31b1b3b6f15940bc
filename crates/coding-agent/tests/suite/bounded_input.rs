//! Hostile input, bounded (issue 26): a provider that floods, files Arbor reads itself that are
//! devices, FIFOs, huge or lead outside the project, and keys that must not reach what Arbor
//! stores or exports. Every probe ends with a clear error (or a named warning) in bounded
//! time; the figures are in DECISIONS §30.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arbor_test_support::scripts::{openai_text, openai_tool_calls};
use arbor_test_support::{sse_data, Ending, MockResponse, MockServer};
use arbor_tools::{self as tools, ToolEnv, ToolSettings};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::agent_e2e::{lab, Lab};

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// A chat-completions stream of well-formed deltas that never ends.
fn flood() -> MockResponse {
    let delta = sse_data(&[
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "flood "}, "finish_reason": null}]}),
    ])
    .repeat(500);
    MockResponse::sse().body(delta).ending(Ending::RepeatLast)
}

/// How a file Arbor reads is made hostile.
#[derive(Debug, Clone, Copy)]
enum Hostile {
    DevZero,
    Fifo,
    Oversized(usize),
}

/// A place, where it is in a lab, how it is made hostile, and what the error must say.
type Probe = (&'static str, fn(&Lab) -> PathBuf, Hostile, &'static str);

fn plant(path: &Path, how: Hostile) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(path);
    match how {
        Hostile::DevZero => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
        Hostile::Fifo => mkfifo(path),
        Hostile::Oversized(n) => {
            let mut text = String::from("{");
            text.push_str(&" ".repeat(n));
            text.push('}');
            std::fs::write(path, text).unwrap();
        }
    }
}

fn session_text(lab: &Lab) -> String {
    lab.session_files()
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect()
}

/// `arbor session context --json FILE` accepts the file.
async fn assert_session_valid(lab: &Lab, file: &Path) {
    let out = lab
        .cmd()
        .args(["session", "context", "--json"])
        .arg(file)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], true);
}

#[tokio::test]
async fn each_file_arbor_reads_refuses_devices_fifos_and_oversized_content_at_once() {
    const OVER_1_MIB: usize = (1 << 20) + 10;
    let cases: Vec<Probe> = vec![
        (
            "user settings",
            |l| l.home.join("settings.json"),
            Hostile::DevZero,
            "it is a device",
        ),
        (
            "user settings",
            |l| l.home.join("settings.json"),
            Hostile::Fifo,
            "it is a FIFO",
        ),
        (
            "user settings",
            |l| l.home.join("settings.json"),
            Hostile::Oversized(OVER_1_MIB),
            "over the size limit of 1 MiB",
        ),
        (
            "project settings",
            |l| l.repo.join(".arbor/settings.json"),
            Hostile::DevZero,
            "it is a device",
        ),
        (
            "project settings",
            |l| l.repo.join(".arbor/settings.json"),
            Hostile::Fifo,
            "it is a FIFO",
        ),
        (
            "project settings",
            |l| l.repo.join(".arbor/settings.json"),
            Hostile::Oversized(OVER_1_MIB),
            "over the size limit",
        ),
        (
            "models",
            |l| l.home.join("models.json"),
            Hostile::DevZero,
            "it is a device",
        ),
        (
            "models",
            |l| l.home.join("models.json"),
            Hostile::Fifo,
            "it is a FIFO",
        ),
        (
            "models",
            |l| l.home.join("models.json"),
            Hostile::Oversized(OVER_1_MIB),
            "models file",
        ),
        (
            "auth",
            |l| l.home.join("auth.json"),
            Hostile::DevZero,
            "it is a device",
        ),
        (
            "auth",
            |l| l.home.join("auth.json"),
            Hostile::Fifo,
            "it is a FIFO",
        ),
        (
            "auth",
            |l| l.home.join("auth.json"),
            Hostile::Oversized(OVER_1_MIB),
            "auth file",
        ),
        (
            "SYSTEM.md",
            |l| l.repo.join(".arbor/SYSTEM.md"),
            Hostile::DevZero,
            "system prompt file",
        ),
        (
            "SYSTEM.md",
            |l| l.repo.join(".arbor/SYSTEM.md"),
            Hostile::Fifo,
            "it is a FIFO",
        ),
        (
            "APPEND_SYSTEM.md",
            |l| l.home.join("APPEND_SYSTEM.md"),
            Hostile::Fifo,
            "it is a FIFO",
        ),
    ];
    let server = MockServer::start().await.unwrap();
    for (place, path_of, how, expected) in cases {
        let lab = lab(&server);
        let path = path_of(&lab);
        plant(&path, how);
        let started = Instant::now();
        let (code, _, err) = lab
            .run(&["--approve", "-p", "--model", "mock/mock-model", "hi"])
            .await;
        let took = started.elapsed();
        assert_ne!(code, 0, "{place} {how:?}: {err}");
        assert!(
            err.contains(&path.display().to_string()),
            "{place} {how:?} names the path: {err}"
        );
        assert!(err.contains(expected), "{place} {how:?}: {err}");
        assert!(
            took < Duration::from_secs(5),
            "{place} {how:?} took {took:?}"
        );
        eprintln!("probe {place} {how:?}: {took:?}: {}", err.trim());
    }
    assert!(server.requests().is_empty(), "nothing was sent");

    // `-p @FILE`: a FIFO and a device are refused by name; over 32 MiB is refused.
    for how in [
        Hostile::Fifo,
        Hostile::DevZero,
        Hostile::Oversized(32 << 20),
    ] {
        let lab = lab(&server);
        let path = lab.repo.join("input.txt");
        plant(&path, how);
        let started = Instant::now();
        let (code, _, err) = lab
            .run(&["-p", "--model", "mock/mock-model", "@input.txt", "hi"])
            .await;
        assert_ne!(code, 0, "@file {how:?}: {err}");
        assert!(err.starts_with("Error: @file "), "{err}");
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        eprintln!(
            "probe @file {how:?}: {:?}: {}",
            started.elapsed(),
            err.trim()
        );
    }
    assert!(server.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn context_and_system_prompt_files_are_cut_skipped_or_kept_inside_the_project() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    // AGENTS.md: 300 KiB, cut at 256 KiB with a notice; a FIFO CLAUDE.md below it is skipped
    // with a warning; a context file leading outside the project is not sent.
    std::fs::write(lab.repo.join("AGENTS.md"), "rule ".repeat(300 * 1024 / 5)).unwrap();
    let sub = lab.repo.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    mkfifo(&sub.join("AGENTS.md"));
    let deeper = sub.join("deeper");
    std::fs::create_dir_all(&deeper).unwrap();
    let outside = lab.home.join("private-notes.md");
    std::fs::write(&outside, "PRIVATE-NOTES-CONTENT").unwrap();
    std::os::unix::fs::symlink(&outside, deeper.join("AGENTS.md")).unwrap();
    // SYSTEM.md over its limit is cut with a notice too.
    std::fs::create_dir_all(deeper.join(".arbor")).unwrap();
    std::fs::write(deeper.join(".arbor/SYSTEM.md"), "S".repeat(300 * 1024)).unwrap();
    server.push(openai_text("fine"));
    let out = lab
        .cmd()
        .current_dir(&deeper)
        .args(["--approve", "-p", "--model", "mock/mock-model", "hi"])
        .output()
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "Warning: context file {}: it is a FIFO, not a regular file; skipped",
            sub.join("AGENTS.md").display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "context file {}: it resolves to",
            deeper.join("AGENTS.md").display()
        )),
        "{err}"
    );
    let body = server.single_request().json();
    let system = body["messages"][0]["content"].as_str().unwrap().to_owned();
    assert!(!system.contains("PRIVATE-NOTES-CONTENT"));
    assert!(system.contains(&format!(
        "[Arbor: {} is larger than 256 KiB; only its first 256 KiB are included]",
        lab.repo.join("AGENTS.md").display()
    )));
    assert!(system.contains(&format!(
        "[Arbor: {} is larger than 256 KiB; only its first 256 KiB are included]",
        deeper.join(".arbor/SYSTEM.md").display()
    )));
    assert!(system.len() < 600 * 1024, "{}", system.len());
}

#[tokio::test]
async fn a_response_over_the_limit_ends_the_turn_once_and_the_session_stays_valid() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    std::fs::write(
        lab.home.join("settings.json"),
        r#"{"retry": {"baseDelayMs": 10}, "httpMaxResponseBytes": 1048576}"#,
    )
    .unwrap();
    server.push(flood());
    let started = Instant::now();
    let (code, _, err) = lab
        .run(&["-p", "--model", "mock/mock-model", "hello"])
        .await;
    assert_ne!(code, 0);
    assert!(
        err.contains("The provider's response went over the limit of 1 MiB (maxResponseBytes)"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 1, "not retried");
    let file = lab.session_files().remove(0);
    assert_session_valid(&lab, &file).await;
    // The next turn of the same session works.
    server.push(openai_text("after the flood"));
    let (code, out, err) = lab.run(&["-c", "-p", "again"]).await;
    assert_eq!((code, out.as_str()), (0, "after the flood\n"), "{err}");
}

#[tokio::test]
async fn compaction_and_branch_summary_requests_carry_the_idle_timeout_and_the_limits() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    std::fs::write(
        lab.home.join("settings.json"),
        r#"{"retry": {"baseDelayMs": 10}, "compaction": {"keepRecentTokens": 1},
            "httpIdleTimeoutMs": 400, "httpMaxResponseBytes": 1048576}"#,
    )
    .unwrap();
    server.push(openai_text("first answer"));
    server.push(openai_text("second answer"));
    lab.run(&["-p", "--model", "mock/mock-model", "one"]).await;
    lab.run(&["-c", "-p", "two"]).await;
    server.push(MockResponse::json(400, &json!({"error": {"message": "This model's maximum context length is 32000 tokens. However, your messages resulted in 40000 tokens.", "code": "context_length_exceeded"}})));
    // The summary requests stall after their headers: only the idle timeout can end them (the
    // summary is retried and then answered). Without it the run would hang.
    server.push(MockResponse::sse().ending(Ending::Hang));
    server.push(MockResponse::sse().ending(Ending::Hang));
    server.push(openai_text("## Goal\nSummary of the work."));
    server.push(openai_text("## Goal\nSummary of the work."));
    server.push(openai_text("third answer"));
    let started = Instant::now();
    let (code, out, err) = lab.run(&["-c", "-p", "three"]).await;
    assert_eq!((code, out.as_str()), (0, "third answer\n"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        server.requests().len(),
        8,
        "two runs, the overflow, two stalls, two summaries, the retry"
    );
    let file = lab.session_files().remove(0);
    assert_session_valid(&lab, &file).await;

    // `arbor session navigate --summarize` (branch summary) reads the same settings: a flood
    // ends at the response limit.
    let first_user = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "message" && e["message"]["role"] == "user")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    server.push(flood());
    let before = std::fs::read(&file).unwrap();
    let out = lab
        .cmd()
        .args(["session", "navigate"])
        .arg(&file)
        .args([
            "--to",
            &first_user,
            "--summarize",
            "--model",
            "mock/mock-model",
        ])
        .output()
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("maxResponseBytes"), "{err}");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "a failed summary writes nothing"
    );
}

#[tokio::test]
async fn keys_stay_out_of_tool_commands_the_session_and_the_export() {
    const ENV_KEY: &str = "sk-planted-ENVKEY-0123456789abcdefXYZ";
    const VAR_KEY: &str = "models-var-KEY-9876543210zyxwvuQRS";
    const HEADER: &str = "hdr-secret-TOKEN-ABCDEFGHIJKLMNOP";
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let models = json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", server.url()), "api": "openai-completions", "apiKey": "$MOCK_GATEWAY_KEY",
        "headers": {"X-Gateway-Token": HEADER},
        "models": [{"id": "mock-model", "contextWindow": 32000, "maxTokens": 4096}]}}});
    std::fs::write(lab.home.join("models.json"), models.to_string()).unwrap();
    std::fs::write(
        lab.home.join("settings.json"),
        r#"{"retry": {"enabled": false}, "toolEnvironment": {"exclude": ["EXTRA_SECRET_*"]}}"#,
    )
    .unwrap();
    // The model runs `env`, then echoes what it knows of the header value and reads
    // /proc/self/environ; the last request fails with a 401 that echoes the key's last 12.
    server.push(openai_tool_calls(&[
        (
            "call_1",
            "bash",
            json!({"command": "env; echo 'the header is' \"$MOCK_GATEWAY_KEY\""}),
        ),
        (
            "call_2",
            "bash",
            json!({"command": format!("echo hdr:{HEADER}")}),
        ),
        ("call_3", "read", json!({"path": "/proc/self/environ"})),
    ]));
    let tail = &VAR_KEY[VAR_KEY.len() - 12..];
    server.push(MockResponse::json(
        401,
        &json!({"error": {"message": format!("Incorrect API key provided: mode****{tail}. You can find your API key at …"), "code": "invalid_api_key"}}),
    ));
    let out = lab
        .cmd()
        .env("OPENAI_API_KEY", ENV_KEY)
        .env("MOCK_GATEWAY_KEY", VAR_KEY)
        .env("EXTRA_SECRET_ONE", "extra-visible-0123")
        .env("KEEP_ME", "kept-variable-value")
        .args(["-p", "--model", "mock/mock-model", "look around"])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(server.requests().len(), 2, "{stderr}");
    // The key did go to the provider, where it belongs.
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {VAR_KEY}").as_str())
    );
    let session = session_text(&lab);
    // The `env` command lost the key variables and the excluded pattern, kept the rest. (Arbor's
    // own /proc/self/environ, read by `read`, still names them, with the values redacted.)
    let env_output = session
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["message"]["toolCallId"] == "call_1")
        .expect("the env result is stored")["message"]["content"]
        .to_string();
    assert!(
        env_output.contains("KEEP_ME=kept-variable-value"),
        "{env_output}"
    );
    for name in ["OPENAI_API_KEY=", "MOCK_GATEWAY_KEY=", "EXTRA_SECRET_ONE="] {
        assert!(!env_output.contains(name), "{name} reached the tool");
    }
    assert!(
        session.contains("OPENAI_API_KEY=[redacted]"),
        "the environ read is scrubbed"
    );
    // Nothing of any key is stored: neither whole nor the 401's last 12.
    let file = lab.session_files().remove(0);
    let html_path = lab.repo.join("export.html");
    let export = lab
        .cmd()
        .env("OPENAI_API_KEY", ENV_KEY)
        .env("MOCK_GATEWAY_KEY", VAR_KEY)
        .arg("--export")
        .arg(&file)
        .arg(&html_path)
        .output()
        .await
        .unwrap();
    assert!(
        export.status.success(),
        "{}",
        String::from_utf8_lossy(&export.stderr)
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    for (what, text) in [("session", &session), ("export", &html)] {
        for secret in [ENV_KEY, VAR_KEY, HEADER, tail] {
            assert!(!text.contains(secret), "{what} holds {secret}");
            for window in secret.as_bytes().windows(8) {
                let window = std::str::from_utf8(window).unwrap();
                assert!(
                    !text.contains(window),
                    "{what} holds the fragment {window} of {secret}"
                );
            }
        }
        assert!(text.contains("[redacted]"), "{what}");
    }
    assert!(
        session.contains("Incorrect API key provided: mode****[redacted]"),
        "{session}"
    );
    assert!(session.contains("hdr:[redacted]"));
}

#[tokio::test]
async fn read_bounds_special_and_huge_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(dir.path().to_path_buf(), ToolSettings::default());
    let call = |args: Value| tools::run("read", &env, args, CancellationToken::new(), None);
    // /dev/urandom: refused by name at once.
    let err = tokio::time::timeout(
        Duration::from_secs(2),
        call(json!({"path": "/dev/urandom"})),
    )
    .await
    .expect("no hang")
    .unwrap_err();
    assert!(
        err.to_string().contains("/dev/urandom: it is a device"),
        "{err}"
    );
    // /proc files (size 0 on disk) are read as text, bounded by the usual limits.
    let status = call(json!({"path": "/proc/self/status"})).await.unwrap();
    assert!(format!("{:?}", status.content).contains("Name:"));
    // A 100 MB file of one line: a bounded answer, quickly.
    let big = dir.path().join("one-line.txt");
    std::fs::write(&big, vec![b'x'; 100 << 20]).unwrap();
    let started = Instant::now();
    let out = call(json!({"path": "one-line.txt"})).await.unwrap();
    let text: usize = out
        .content
        .iter()
        .map(|b| match b {
            arbor_ai::ContentBlock::Text(t) => t.text.len(),
            _ => 0,
        })
        .sum();
    assert!(text < 64 * 1024, "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // A huge file that starts like a PNG is not decoded.
    let fake = dir.path().join("fake.png");
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.resize((64 << 20) + 1, 0);
    std::fs::write(&fake, bytes).unwrap();
    let out = call(json!({"path": "fake.png"})).await.unwrap();
    let shown = format!("{:?}", out.content);
    assert!(shown.contains("[Image omitted: the file is"), "{shown}");
}
