//! Session files through the real binary: created with their first message (DECISIONS §29.5),
//! files without one passed over by `-c` and `session list`, sessions that fail validation
//! never written to (§29.7), and orphaned tool results repaired before a request (§29.6).

use std::path::{Path, PathBuf};

use arbor_test_support::scripts::openai_text;
use arbor_test_support::MockServer;
use serde_json::{json, Value};

use super::agent_e2e::{lab, Lab};

/// Every file under the sessions folder (temporaries included).
fn all_files(lab: &Lab) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(dirs) = std::fs::read_dir(lab.home.join("sessions")) else {
        return out;
    };
    for d in dirs.flatten() {
        if let Ok(files) = std::fs::read_dir(d.path()) {
            out.extend(files.flatten().map(|f| f.path()));
        }
    }
    out.sort();
    out
}

/// The project's session folder (created on demand).
fn project_dir(lab: &Lab) -> PathBuf {
    let name = arbor_agent::session::jsonl::layout::encode_cwd(&lab.repo.display().to_string());
    let dir = lab.home.join("sessions").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn header(id: &str, cwd: &Path) -> String {
    json!({"type": "session", "version": 3, "id": id, "timestamp": "2026-01-01T00:00:00.000Z",
           "cwd": cwd.display().to_string()})
    .to_string()
}

fn write_lines(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

#[tokio::test]
async fn a_start_without_a_model_and_a_failed_start_write_no_file() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    // No model anywhere: the start fails.
    std::fs::remove_file(lab.home.join("models.json")).unwrap();
    let (code, _, err) = lab.run(&["-p", "hello"]).await;
    assert_ne!(code, 0, "{err}");
    assert_eq!(all_files(&lab), Vec::<PathBuf>::new(), "{err}");

    // A start that fails after the session was opened (a missing @file) leaves nothing either.
    let lab = super::agent_e2e::lab(&server);
    let (code, _, err) = lab
        .run(&["-p", "--model", "mock/mock-model", "@missing.txt"])
        .await;
    assert_eq!(code, 1, "{err}");
    assert_eq!(all_files(&lab), Vec::<PathBuf>::new());

    // With a prompt the file exists, whole, under its final name.
    server.push(openai_text("hi"));
    let (code, _, err) = lab
        .run(&["-p", "--model", "mock/mock-model", "hello"])
        .await;
    assert_eq!(code, 0, "{err}");
    let files = all_files(&lab);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].extension().is_some_and(|e| e == "jsonl"));
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        text.lines().nth(1).is_some_and(|l| l.contains("\"type\"")),
        "{text}"
    );
    assert_eq!(text.matches("\"role\":\"user\"").count(), 1, "{text}");
}

#[tokio::test]
async fn rpc_new_session_without_a_message_leaves_no_file() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    server.push(openai_text("first answer"));
    let mut child = lab
        .cmd()
        .args(["--mode", "rpc", "--model", "mock/mock-model"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    use tokio::io::AsyncWriteExt as _;
    let commands = [
        json!({"id": "1", "type": "prompt", "message": "hello"}),
        json!({"id": "2", "type": "new_session"}),
        json!({"id": "3", "type": "new_session"}),
    ];
    for c in commands {
        stdin.write_all(format!("{c}\n").as_bytes()).await.unwrap();
        // Let each command finish before the next (the prompt runs in the background).
        tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    }
    drop(stdin);
    let out = tokio::time::timeout(std::time::Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("first answer"), "{stdout}");
    let files = all_files(&lab);
    assert_eq!(files.len(), 1, "only the session with a message: {files:?}");
}

#[tokio::test]
async fn continue_and_session_list_pass_over_files_without_messages() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    server.push(openai_text("first answer"));
    let (code, _, err) = lab
        .run(&["-p", "--model", "mock/mock-model", "the real prompt"])
        .await;
    assert_eq!(code, 0, "{err}");
    // An empty file an older version left, newer than the real session.
    let dir = project_dir(&lab);
    let empty = dir.join("2026-12-31T00-00-00-000Z_0190aaaa-0000-7000-8000-000000000001.jsonl");
    let model_change = json!({"type": "model_change", "id": "m1", "parentId": null,
        "timestamp": "2026-12-31T00:00:00.000Z", "provider": "mock", "modelId": "mock-model"});
    write_lines(
        &empty,
        &[
            header("0190aaaa-0000-7000-8000-000000000001", &lab.repo),
            model_change.to_string(),
        ],
    );
    let before = std::fs::read(&empty).unwrap();

    let (code, out, err) = lab.run(&["session", "list"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("the real prompt"), "{out}");
    assert!(
        !out.contains("0190aaaa"),
        "the empty file is not listed: {out}"
    );
    assert!(!out.contains("(no messages)"), "{out}");

    server.push(openai_text("second answer"));
    let (code, out, err) = lab.run(&["-c", "-p", "and now?"]).await;
    assert_eq!((code, out.as_str()), (0, "second answer\n"), "{err}");
    let body = server.requests()[1].json();
    assert!(
        body["messages"].to_string().contains("the real prompt"),
        "-c resumed the session with messages: {body}"
    );
    assert_eq!(
        std::fs::read(&empty).unwrap(),
        before,
        "the empty file is left alone"
    );
}

/// A session `prompt → answer` whose second entry is broken by `edit`.
fn broken_session(lab: &Lab, name: &str, edit: impl Fn(&mut Vec<Value>)) -> PathBuf {
    let mut entries = vec![
        json!({"type": "message", "id": "u1", "parentId": null, "timestamp": "2026-01-01T00:00:01.000Z",
               "message": {"role": "user", "content": [{"type": "text", "text": "hello"}], "timestamp": 1}}),
        json!({"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-01-01T00:00:02.000Z",
               "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}],
                           "api": "openai-completions", "provider": "mock", "model": "mock-model",
                           "stopReason": "stop", "timestamp": 2}}),
    ];
    edit(&mut entries);
    let path = lab.repo.join(format!("{name}.jsonl"));
    let mut lines = vec![header(&format!("broken-{name}"), &lab.repo)];
    lines.extend(entries.iter().map(Value::to_string));
    write_lines(&path, &lines);
    path
}

#[tokio::test]
async fn a_session_that_fails_validation_is_never_written_to() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let cases: Vec<(&str, PathBuf, &str)> = vec![
        (
            "parent",
            broken_session(&lab, "parent", |e| e[1]["parentId"] = json!("nowhere")),
            "nowhere",
        ),
        (
            "cycle",
            broken_session(&lab, "cycle", |e| e[0]["parentId"] = json!("a1")),
            "cycle",
        ),
        (
            "content",
            broken_session(&lab, "content", |e| e[0]["message"]["content"] = json!(42)),
            "u1",
        ),
    ];
    for (name, path, needle) in cases {
        let before = std::fs::read(&path).unwrap();
        let file = path.display().to_string();
        let (code, _, read_err) = lab.run(&["session", "context", &file]).await;
        assert_ne!(code, 0, "{name}: the read-only command refuses");
        let (code, out, err) = lab
            .run(&[
                "--session",
                &file,
                "-p",
                "--model",
                "mock/mock-model",
                "more",
            ])
            .await;
        assert_ne!(code, 0, "{name}: {out}{err}");
        assert!(err.contains(needle), "{name}: {err}");
        assert!(
            err.contains(&format!("{name}.jsonl")),
            "{name} names the file: {err}"
        );
        let line = read_err
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{name}: {read_err}"));
        assert!(
            err.contains(line.trim_start_matches("Error: ").trim()),
            "{name}: the same error as the read-only command\nread: {read_err}\nwrite: {err}"
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "{name}: file untouched"
        );
    }
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn an_orphaned_tool_result_is_sent_as_a_note_and_the_session_continues() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let entries = [
        json!({"type": "message", "id": "u1", "parentId": null, "timestamp": "2026-01-01T00:00:01.000Z",
               "message": {"role": "user", "content": [{"type": "text", "text": "list the files"}], "timestamp": 1}}),
        // An entry this version does not know, where the assistant's tool call was.
        json!({"type": "frobnicate", "id": "x1", "parentId": "u1", "timestamp": "2026-01-01T00:00:02.000Z"}),
        json!({"type": "message", "id": "r1", "parentId": "x1", "timestamp": "2026-01-01T00:00:03.000Z",
               "message": {"role": "toolResult", "toolCallId": "call_gone", "toolName": "bash",
                           "content": [{"type": "text", "text": "a.txt\nb.txt"}], "isError": false, "timestamp": 3}}),
        json!({"type": "message", "id": "a2", "parentId": "r1", "timestamp": "2026-01-01T00:00:04.000Z",
               "message": {"role": "assistant", "content": [{"type": "text", "text": "Two files."}],
                           "api": "openai-completions", "provider": "mock", "model": "mock-model",
                           "stopReason": "stop", "timestamp": 4}}),
    ];
    let path = lab.repo.join("orphan.jsonl");
    let mut lines = vec![header("orphan-session", &lab.repo)];
    lines.extend(entries.iter().map(Value::to_string));
    write_lines(&path, &lines);
    let file = path.display().to_string();
    for (i, prompt) in ["and now?", "once more"].into_iter().enumerate() {
        server.push(openai_text("fine"));
        let (code, out, err) = lab
            .run(&[
                "--session",
                &file,
                "-p",
                "--model",
                "mock/mock-model",
                prompt,
            ])
            .await;
        assert_eq!((code, out.as_str()), (0, "fine\n"), "{err}");
        let body = server.requests()[i].json();
        let messages = body["messages"].as_array().unwrap();
        assert!(
            messages.iter().all(|m| m["role"] != "tool"),
            "no tool message without its call: {body}"
        );
        if i == 0 {
            insta::assert_json_snapshot!("orphaned_tool_result_request", messages[1..].to_vec());
        }
    }
}

#[tokio::test]
async fn resume_in_the_tui_lists_only_sessions_with_messages() {
    let mut r = super::tui_app::rig_with_settings(json!({"retry": {"enabled": false}})).await;
    let home = tempfile::tempdir().unwrap();
    let cwd = r.driver.app.cwd.display().to_string();
    let dir = home
        .path()
        .join(arbor_agent::session::jsonl::layout::encode_cwd(&cwd));
    std::fs::create_dir_all(&dir).unwrap();
    let user = json!({"type": "message", "id": "u1", "parentId": null, "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "the real prompt"}], "timestamp": 1}});
    let real = json!({"type": "session", "version": 3, "id": "0190aaaa-0000-7000-8000-00000000000a",
        "timestamp": "2026-01-01T00:00:00.000Z", "cwd": cwd});
    write_lines(
        &dir.join("2026-01-01T00-00-00-000Z_0190aaaa-0000-7000-8000-00000000000a.jsonl"),
        &[real.to_string(), user.to_string()],
    );
    let empty = json!({"type": "session", "version": 3, "id": "0190aaaa-0000-7000-8000-00000000000b",
        "timestamp": "2026-01-02T00:00:00.000Z", "cwd": cwd});
    write_lines(
        &dir.join("2026-01-02T00-00-00-000Z_0190aaaa-0000-7000-8000-00000000000b.jsonl"),
        &[empty.to_string()],
    );
    r.driver.app.repo = Some(arbor_agent::session::JsonlRepository::new(home.path()));
    r.send("/resume").await;
    for _ in 0..50 {
        r.pump().await;
        if r.screen(100, 20).contains("the real prompt") {
            break;
        }
    }
    let screen = r.screen(100, 20);
    assert!(screen.contains("the real prompt"), "{screen}");
    assert!(!screen.contains("(no messages)"), "{screen}");
}

#[tokio::test]
async fn the_tui_shows_a_retried_prompt_once() {
    let mut r = super::tui_app::rig_with_settings(
        json!({"retry": {"baseDelayMs": 1, "maxAgentDelayMs": 5}}),
    )
    .await;
    r.faux
        .push(arbor_ai::faux::FauxResponse::new().error("503 Service Unavailable: overloaded"));
    r.faux
        .push(arbor_ai::faux::FauxResponse::new().error("503 Service Unavailable: overloaded"));
    r.faux.push(arbor_ai::faux::FauxResponse::text("made it"));
    r.send("zebra prompt").await;
    for _ in 0..200 {
        r.pump().await;
        if r.screen(100, 40).contains("made it") {
            break;
        }
    }
    let screen = r.screen(100, 40);
    assert!(screen.contains("made it"), "{screen}");
    assert_eq!(screen.matches("zebra prompt").count(), 1, "{screen}");
    assert_eq!(r.user_texts().await, ["zebra prompt"]);
}
