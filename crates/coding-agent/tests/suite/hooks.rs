//! Hook commands end to end: settings under `hooks`, real `sh` processes reading the event on
//! stdin, the real `arbor` binary and the scripted model server.

use std::time::Duration;

use arbor_test_support::scripts::{openai_text, openai_tool_calls};
use arbor_test_support::MockServer;
use serde_json::{json, Value};

use super::agent_e2e::{lab, tool_results, Lab};

fn write_hooks(lab: &Lab, hooks: Value) {
    std::fs::write(
        lab.home.join("settings.json"),
        serde_json::to_string_pretty(&json!({"hooks": hooks})).unwrap(),
    )
    .unwrap();
}

#[tokio::test]
async fn a_hook_blocks_a_tool_call_and_another_rewrites_a_result() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let log = lab.home.join("events.jsonl");
    let log_text = log.display().to_string();
    write_hooks(
        &lab,
        json!({
            "tool_call": [
                {"command": format!("cat >> '{log_text}'; echo >> '{log_text}'")},
                {"matcher": "bash", "command": "printf '{\"block\": true, \"reason\": \"bash is off in this repo\"}'"},
                {"matcher": "ls", "command": "printf '{\"input\": {\"path\": \"sub\"}}'"}
            ],
            "tool_result": [
                {"matcher": "read", "command": "printf '{\"content\": \"[rewritten by hook]\"}'"}
            ],
            "agent_end": [{"command": format!("cat >> '{log_text}'; echo >> '{log_text}'")}]
        }),
    );
    std::fs::create_dir_all(lab.repo.join("sub")).unwrap();
    std::fs::write(lab.repo.join("sub/inner.txt"), "x").unwrap();
    server.push(openai_tool_calls(&[
        (
            "call_1",
            "bash",
            json!({"command": "touch should-not-exist"}),
        ),
        ("call_2", "read", json!({"path": "hello.txt"})),
        ("call_3", "ls", json!({"path": "."})),
    ]));
    server.push(openai_text("Done."));
    let (code, stdout, stderr) = lab
        .run(&[
            "-p",
            "--tools",
            "read,bash,ls",
            "--model",
            "mock/mock-model",
            "go",
        ])
        .await;
    assert_eq!(code, 0, "stderr: {stderr}");
    assert_eq!(stdout, "Done.\n");
    assert!(
        !lab.repo.join("should-not-exist").exists(),
        "the blocked bash call ran"
    );
    let last = server.requests()[1].json();
    let results = tool_results(&last);
    assert_eq!(results[0], "bash is off in this repo");
    assert_eq!(results[1], "[rewritten by hook]");
    assert_eq!(results[2], "inner.txt");
    // The events the logging hooks saw: one tool_call per call, then agent_end.
    let events: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 4, "{events:#?}");
    assert_eq!(events[0]["type"], "tool_call");
    assert_eq!(events[0]["toolName"], "bash");
    assert_eq!(events[0]["toolCallId"], "call_1");
    assert_eq!(
        events[0]["input"],
        json!({"command": "touch should-not-exist"})
    );
    assert_eq!(events[0]["cwd"], lab.repo.display().to_string());
    assert_eq!(events[3]["type"], "agent_end");
}

#[tokio::test]
async fn failing_and_slow_hooks_are_reported_and_the_turn_goes_on() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let pid_file = lab.home.join("hook.pid");
    write_hooks(
        &lab,
        json!({
            "tool_call": [
                {"command": "echo 'no such policy' >&2; exit 7"},
                {"command": format!("echo $$ > '{}'; sleep 30", pid_file.display()), "timeout": 0.5},
                {"command": "echo not-json"}
            ]
        }),
    );
    server.push(openai_tool_calls(&[(
        "call_1",
        "read",
        json!({"path": "hello.txt"}),
    )]));
    server.push(openai_text("Done."));
    let started = std::time::Instant::now();
    let (code, stdout, stderr) = lab.run(&["-p", "--model", "mock/mock-model", "go"]).await;
    assert_eq!(code, 0, "stderr: {stderr}");
    assert_eq!(stdout, "Done.\n");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        stderr.contains("Warning: hook `echo 'no such policy' >&2; exit 7` (tool_call) failed (exit status: 7): no such policy"),
        "{stderr}"
    );
    assert!(
        stderr.contains("(tool_call) timed out after 0.5 s and was killed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Warning: hook `echo not-json` (tool_call) replied with something that is not a JSON object: not-json"),
        "{stderr}"
    );
    let last = server.requests()[1].json();
    assert_eq!(tool_results(&last)[0], "line one\nline two\n");
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z"),
        "the timed-out hook is still running"
    );
}

#[tokio::test]
async fn a_malformed_hook_config_is_reported_with_file_and_line() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    std::fs::write(
        lab.home.join("settings.json"),
        "{\n  \"hooks\": {\n    \"tool_call\": [{\"matcher\": \"(\", \"command\": \"true\"}],\n    \"before_everything\": []\n  }\n}\n",
    )
    .unwrap();
    server.push(openai_text("fine"));
    let (code, stdout, stderr) = lab.run(&["-p", "--model", "mock/mock-model", "hi"]).await;
    assert_eq!(code, 0, "stderr: {stderr}");
    assert_eq!(stdout, "fine\n");
    let file = lab.home.join("settings.json").display().to_string();
    assert!(
        stderr.contains(&format!(
            "Warning: {file}:3: hooks.tool_call[0]: \"matcher\" \"(\" is not a valid pattern"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "Warning: {file}:4: hooks: unknown event \"before_everything\""
        )),
        "{stderr}"
    );
}

#[tokio::test]
async fn session_start_and_input_hooks_see_their_events() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let log = lab.home.join("start.json");
    write_hooks(
        &lab,
        json!({
            "session_start": [{"command": format!("cat > '{}'", log.display())}],
            "input": [{"command": "printf '{\"message\": \"Extra context from a hook\"}'"}]
        }),
    );
    server.push(openai_text("ok"));
    let (code, _, stderr) = lab.run(&["-p", "--model", "mock/mock-model", "hi"]).await;
    assert_eq!(code, 0, "stderr: {stderr}");
    let body = server.requests()[0].json();
    let texts: Vec<String> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].to_string())
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("Extra context from a hook")),
        "{texts:#?}"
    );
    let start: Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert_eq!(start["type"], "session_start");
    assert!(start["sessionFile"].as_str().unwrap().ends_with(".jsonl"));
}
