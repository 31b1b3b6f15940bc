//! MCP servers end to end: the real `arbor` binary, the scripted model server on 127.0.0.1 and
//! a real MCP server (`arbor-mcp-test-server`, built on rmcp's server side) — no mock of the
//! protocol. Every test checks that no server process outlives arbor.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use arbor_test_support::scripts::{openai_text, openai_tool_calls};
use arbor_test_support::{mcp_server, MockServer};
use serde_json::{json, Value};

use super::agent_e2e::{lab, Lab};

/// Writes ARBOR_HOME/mcp.json with one stdio server `test` running the test server.
fn configure(lab: &Lab, env: Value) -> PathBuf {
    let pids = lab.home.join("pids");
    let mut env = env;
    env["MCP_TEST_PID_FILE"] = json!(pids.display().to_string());
    let config = json!({"mcpServers": {"test": {
        "command": mcp_server::binary().display().to_string(),
        "env": env,
    }}});
    std::fs::write(
        lab.home.join("mcp.json"),
        serde_json::to_string_pretty(&config).unwrap(),
    )
    .unwrap();
    pids
}

/// The pids the test server wrote, one per line (each start appends its own).
pub(super) fn pids_in(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// True while the process exists and is not a zombie.
pub(super) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Every recorded pid (servers and the grandchildren they started) is gone, within a second.
async fn assert_all_dead(pids: &[u32]) {
    assert!(!pids.is_empty(), "the test server recorded no pid");
    for _ in 0..20 {
        if pids.iter().all(|p| !alive(*p)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left: Vec<&u32> = pids.iter().filter(|p| alive(**p)).collect();
    panic!("processes outlived arbor: {left:?}");
}

fn redacted_tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn the_model_calls_an_mcp_tool_and_its_result_is_in_the_next_request() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let pids = configure(&lab, json!({}));
    // A model that takes images, so the MCP image goes to it as an image.
    let models = lab.home.join("models.json");
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&models).unwrap()).unwrap();
    m["providers"]["mock"]["models"][0]["input"] = json!(["text", "image"]);
    std::fs::write(&models, m.to_string()).unwrap();
    server.push(openai_tool_calls(&[
        ("call_1", "mcp__test__echo", json!({"text": "hi there"})),
        ("call_2", "mcp__test__image", json!({})),
        ("call_3", "mcp__test__fail", json!({})),
    ]));
    server.push(openai_text("Done."));
    let (code, stdout, stderr) = lab
        .run(&["-p", "--model", "mock/mock-model", "Use the MCP tools"])
        .await;
    assert_eq!(code, 0, "stderr: {stderr}");
    assert_eq!(stdout, "Done.\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let first = reqs[0].json();
    let names = redacted_tool_names(&first);
    for t in ["mcp__test__echo", "mcp__test__add", "mcp__test__crash"] {
        assert!(names.contains(&t.to_owned()), "{names:?}");
    }
    let last = reqs[1].json();
    let msgs = last["messages"].as_array().unwrap();
    let tool_msgs: Vec<&Value> = msgs.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_msgs[0]["content"], "echo: hi there");
    assert_eq!(tool_msgs[2]["content"], "the tool failed on purpose");
    // The image goes to the model as an image (a user message after the tool results, as
    // openai-completions carries tool images).
    assert!(
        last.to_string().contains(mcp_server::PNG_1X1),
        "the MCP image did not reach the model"
    );
    let mut body = last.clone();
    body["tools"] = json!(names);
    let text = body
        .to_string()
        .replace(&lab.repo.display().to_string(), "[REPO]")
        .replace(&lab.home.display().to_string(), "[HOME]");
    let mut body: Value = serde_json::from_str(&text).unwrap();
    body["messages"][0]["content"] = json!("[system prompt]");
    insta::assert_json_snapshot!("mcp_tool_result_request", body);
    assert_all_dead(&pids_in(&pids)).await;
}

#[tokio::test]
async fn mcp_tool_schemas_are_offered_as_the_server_declares_them() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let pids = configure(&lab, json!({}));
    server.push(openai_text("ok"));
    let (code, _, stderr) = lab.run(&["-p", "--model", "mock/mock-model", "hi"]).await;
    assert_eq!(code, 0, "stderr: {stderr}");
    let first = server.requests()[0].json();
    let add = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp__test__add")
        .cloned()
        .unwrap();
    insta::assert_json_snapshot!("mcp_tool_declaration", add);
    assert_all_dead(&pids_in(&pids)).await;
}

#[tokio::test]
async fn a_crashed_server_is_reported_and_reconnected() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let pids = configure(&lab, json!({}));
    server.push(openai_tool_calls(&[(
        "call_1",
        "mcp__test__crash",
        json!({}),
    )]));
    server.push(openai_tool_calls(&[(
        "call_2",
        "mcp__test__pid",
        json!({}),
    )]));
    server.push(openai_text("Recovered."));
    let (code, stdout, stderr) = lab
        .run(&["-p", "--model", "mock/mock-model", "Crash it"])
        .await;
    assert_eq!(code, 0, "stderr: {stderr}");
    assert_eq!(stdout, "Recovered.\n");
    assert!(
        stderr.contains("MCP server \"test\" exited unexpectedly; reconnecting"),
        "{stderr}"
    );
    let reqs = server.requests();
    let second = reqs[1].json();
    let crash_result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        crash_result.contains("MCP tool \"crash\" on server \"test\" failed"),
        "{crash_result}"
    );
    let third = reqs[2].json();
    let pid_text = third["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let recorded = pids_in(&pids);
    eprintln!("pid tool answered: {pid_text}; stderr: {stderr}");
    // Two servers (each with its sleeping grandchild): the crashed one and its replacement,
    // which answered the second call.
    assert_eq!(recorded.len(), 4, "{recorded:?}");
    let new_pid: u32 = pid_text.parse().unwrap();
    assert_eq!(new_pid, recorded[2]);
    assert_all_dead(&recorded).await;
}

#[tokio::test]
async fn a_slow_server_does_not_block_start_up() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    // Start-up to the first RPC answer, with no server and with one that takes 4 s to start.
    // With `pids`, the run ends only once the server has recorded its pid (on a loaded machine
    // its process can start after the first answer), so the test can check it is ended.
    async fn first_answer(lab: &Lab, pids: Option<&Path>) -> Duration {
        let started = Instant::now();
        let mut child = lab
            .cmd()
            .args([
                "--mode",
                "rpc",
                "--model",
                "mock/mock-model",
                "--no-session",
            ])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut stdin, b"{\"type\":\"get_state\",\"id\":\"s\"}\n")
            .await
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let took = started.elapsed();
        assert!(line.contains("\"success\":true"), "{line}");
        if let Some(file) = pids {
            for _ in 0..150 {
                if !pids_in(file).is_empty() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        drop(stdin);
        let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
        took
    }
    let none = first_answer(&lab, None).await;
    let pids = configure(&lab, json!({"MCP_TEST_START_DELAY_MS": "4000"}));
    let slow = first_answer(&lab, Some(&pids)).await;
    eprintln!("start-up to first RPC answer: no MCP server {none:?}, one slow server {slow:?}");
    assert!(
        slow < none + Duration::from_millis(500),
        "a slow MCP server delayed start-up: {none:?} without, {slow:?} with"
    );
    assert_all_dead(&pids_in(&pids)).await;

    // A prompt waits for it only up to mcpStartTimeoutMs, then goes on without its tools.
    std::fs::write(
        lab.home.join("settings.json"),
        json!({"mcpStartTimeoutMs": 300}).to_string(),
    )
    .unwrap();
    server.push(openai_text("no tools yet"));
    let t = Instant::now();
    let (code, stdout, stderr) = lab.run(&["-p", "--model", "mock/mock-model", "hi"]).await;
    let took = t.elapsed();
    assert_eq!(code, 0, "stderr: {stderr}");
    assert_eq!(stdout, "no tools yet\n");
    assert!(took < Duration::from_secs(3), "the turn waited {took:?}");
    assert!(
        stderr.contains("MCP server \"test\" did not answer within 0.3 s (start)"),
        "{stderr}"
    );
    let names = redacted_tool_names(&server.requests().last().unwrap().json());
    assert!(!names.iter().any(|n| n.starts_with("mcp__")), "{names:?}");
    assert_all_dead(&pids_in(&pids)).await;
}

#[tokio::test]
async fn a_malformed_mcp_json_is_reported_with_file_and_line_and_the_session_goes_on() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let pi_file = lab.home.join("user/.pi/agent/mcp.json");
    std::fs::create_dir_all(pi_file.parent().unwrap()).unwrap();
    std::fs::write(
        &pi_file,
        "{\n  \"mcpServers\": {\n    \"x\": {\"command\": }\n  }\n}\n",
    )
    .unwrap();
    std::fs::write(
        lab.home.join("mcp.json"),
        concat!(
            "{\"mcpServers\": {\n",
            "  \"broken\": {\"args\": [\"a\"]},\n",
            "  \"sse\": {\"type\": \"sse\", \"url\": \"http://127.0.0.1:9/sse\"},\n",
            "  \"web\": {\"url\": \"http://exa mple.com/mcp\"},\n",
            "  \"ftp\": {\"url\": \"ftp://127.0.0.1/mcp\"},\n",
            "  \"hdr\": {\"url\": \"http://127.0.0.1:9/mcp\", \"headers\": {\"Bad Name\": \"x\"}},\n",
            "  \"own\": {\"url\": \"http://127.0.0.1:9/mcp\", \"headers\": {\"Mcp-Session-Id\": \"x\"}}\n",
            "}}\n"
        ),
    )
    .unwrap();
    server.push(openai_text("Still here."));
    let (code, stdout, stderr) = lab.run(&["-p", "--model", "mock/mock-model", "hi"]).await;
    assert_eq!(code, 0, "stderr: {stderr}");
    assert_eq!(stdout, "Still here.\n");
    let arbor_file = lab.home.join("mcp.json").display().to_string();
    assert!(
        stderr.contains(&format!("Warning: {}:3: invalid JSON", pi_file.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "Warning: {arbor_file}:2: server \"broken\": needs a \"command\" (stdio) or a \"url\" (streamable HTTP)"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "Warning: {arbor_file}:3: server \"sse\": the legacy SSE transport is not supported"
        )),
        "{stderr}"
    );
    // Streamable-HTTP entries: the url and every header are checked when the file is read.
    for want in [
        format!("Warning: {arbor_file}:4: server \"web\": \"url\" \"http://exa mple.com/mcp\" is not a valid URL ("),
        format!("Warning: {arbor_file}:5: server \"ftp\": \"url\" \"ftp://127.0.0.1/mcp\" is not an http(s) URL"),
        format!("Warning: {arbor_file}:6: server \"hdr\": header name \"Bad Name\" is not a valid HTTP header name"),
        format!("Warning: {arbor_file}:7: server \"own\": header \"Mcp-Session-Id\" is set by the MCP transport itself"),
    ] {
        assert!(stderr.contains(&want), "missing {want:?} in:\n{stderr}");
    }
}

#[tokio::test]
async fn arbor_mcp_add_list_and_remove() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let bin = mcp_server::binary().display().to_string();
    let (code, out, err) = lab.run(&["mcp", "add", "tools", "--", &bin]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("Added MCP server \"tools\""), "{out}");
    let (code, out, err) = lab
        .run(&["mcp", "add", "bad", "--", "/nonexistent/server"])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, out2, err) = lab.run(&["mcp", "list"]).await;
    assert_eq!(
        code, 1,
        "a server that does not start fails the list: {out2} {err}"
    );
    assert!(out2.contains("tools  connected  7 tools"), "{out2}");
    assert!(out2.contains("    mcp__tools__echo\n"), "{out2}");
    assert!(out2.contains("bad  failed  0 tools"), "{out2}");
    assert!(
        out2.contains("error: cannot start \"/nonexistent/server\" for MCP server \"bad\""),
        "{out2}"
    );
    let (code, _, err) = lab.run(&["mcp", "remove", "bad"]).await;
    assert_eq!(code, 0, "{err}");
    let (code, out3, err) = lab.run(&["mcp", "list"]).await;
    assert_eq!(code, 0, "{out3} {err}");
    assert!(!out3.contains("bad"), "{out3}");
    let (code, _, err) = lab.run(&["mcp", "remove", "bad"]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no MCP server \"bad\""), "{err}");
    let _ = out;
}

#[tokio::test]
async fn disabled_servers_and_no_mcp_start_nothing() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let pids = configure(&lab, json!({}));
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(lab.home.join("mcp.json")).unwrap()).unwrap();
    config["mcpServers"]["test"]["enabled"] = json!(false);
    std::fs::write(lab.home.join("mcp.json"), config.to_string()).unwrap();
    server.push(openai_text("a"));
    let (code, _, stderr) = lab.run(&["-p", "--model", "mock/mock-model", "hi"]).await;
    assert_eq!(code, 0, "{stderr}");
    config["mcpServers"]["test"]["enabled"] = json!(true);
    std::fs::write(lab.home.join("mcp.json"), config.to_string()).unwrap();
    server.push(openai_text("b"));
    let (code, _, stderr) = lab
        .run(&["-p", "--no-mcp", "--model", "mock/mock-model", "hi"])
        .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(pids_in(&pids).is_empty(), "a server was started");
    for r in server.requests() {
        let names = redacted_tool_names(&r.json());
        assert!(!names.iter().any(|n| n.starts_with("mcp__")), "{names:?}");
    }
}

#[tokio::test]
async fn untrusted_project_mcp_json_is_not_used() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let pids = lab.home.join("pids");
    std::fs::create_dir_all(lab.repo.join(".arbor")).unwrap();
    std::fs::write(
        lab.repo.join(".arbor/mcp.json"),
        json!({"mcpServers": {"proj": {
            "command": mcp_server::binary().display().to_string(),
            "env": {"MCP_TEST_PID_FILE": pids.display().to_string()},
        }}})
        .to_string(),
    )
    .unwrap();
    server.push(openai_text("a"));
    let (code, _, stderr) = lab.run(&["-p", "--model", "mock/mock-model", "hi"]).await;
    assert_eq!(code, 0, "{stderr}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        pids_in(&pids).is_empty(),
        "an untrusted project's server ran"
    );
}
