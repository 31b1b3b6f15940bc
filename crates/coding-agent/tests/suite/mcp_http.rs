//! Streamable-HTTP MCP servers end to end (DECISIONS §33.14): the real `arbor` binary, the
//! scripted model server and a real MCP server over HTTP on 127.0.0.1
//! (`arbor-mcp-test-server --http`, rmcp's streamable-HTTP server side) — no mock of the
//! protocol. Headers and `${VAR}` expansion reach the server, a dead URL is reported without
//! holding up start-up or the turn, and a server that restarts is reached again.

use std::time::{Duration, Instant};

use arbor_test_support::mcp_http::HttpServer;
use arbor_test_support::scripts::{openai_text, openai_tool_calls};
use arbor_test_support::MockServer;
use serde_json::{json, Value};

use super::agent_e2e::{lab, tool_results, Lab};
use super::rpc_replay::Rpc;

fn write_config(lab: &Lab, servers: Value) {
    std::fs::write(
        lab.home.join("mcp.json"),
        serde_json::to_string_pretty(&json!({ "mcpServers": servers })).unwrap(),
    )
    .unwrap();
}

fn tool_names(body: &Value) -> Vec<String> {
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

async fn run_with_env(lab: &Lab, env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        lab.cmd().envs(env.iter().copied()).args(args).output(),
    )
    .await
    .expect("arbor finished in time")
    .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn the_model_calls_an_http_mcp_tool_and_the_configured_headers_reach_the_server() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let mcp = HttpServer::start("127.0.0.1:0", &[]).await.unwrap();
    let port = mcp.addr.port().to_string();
    // `${VAR}` in the url and the headers, one with a default for an unset variable.
    write_config(
        &lab,
        json!({"web": {
            "url": "http://127.0.0.1:${MCP_PORT}/mcp",
            "headers": {"X-Api-Key": "${MCP_KEY}", "Authorization": "Bearer ${MCP_TOKEN:-fallback}"},
        }}),
    );
    server.push(openai_tool_calls(&[
        ("call_1", "mcp__web__echo", json!({"text": "over http"})),
        ("call_2", "mcp__web__headers", json!({})),
        ("call_3", "mcp__web__fail", json!({})),
    ]));
    server.push(openai_text("Done."));
    let (code, stdout, stderr) = run_with_env(
        &lab,
        &[("MCP_PORT", &port), ("MCP_KEY", "key-123")],
        &["-p", "--model", "mock/mock-model", "Use the web tools"],
    )
    .await;
    assert_eq!(code, 0, "stderr: {stderr}");
    assert_eq!(stdout, "Done.\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let names = tool_names(&reqs[0].json());
    for t in ["mcp__web__echo", "mcp__web__headers", "mcp__web__pid"] {
        assert!(names.contains(&t.to_owned()), "{names:?}");
    }
    let last = reqs[1].json();
    let results = tool_results(&last);
    assert_eq!(results[0], "echo: over http");
    let headers: Value = serde_json::from_str(&results[1]).unwrap();
    assert_eq!(
        headers,
        json!({"x-api-key": "key-123", "authorization": "Bearer fallback"})
    );
    assert_eq!(results[2], "the tool failed on purpose");
    let mut body = last.clone();
    body["tools"] = json!(tool_names(&last));
    body["messages"][0]["content"] = json!("[system prompt]");
    let text = body
        .to_string()
        .replace(&lab.repo.display().to_string(), "[REPO]")
        .replace(&lab.home.display().to_string(), "[HOME]");
    insta::assert_json_snapshot!(
        "mcp_http_tool_result_request",
        serde_json::from_str::<Value>(&text).unwrap()
    );
}

#[tokio::test]
async fn a_dead_url_is_reported_without_holding_up_start_up_or_the_turn() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    // A port nobody listens on (refused at once) and one that accepts but never answers.
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((sock, _)) = silent.accept().await {
            open.push(sock);
        }
    });
    write_config(
        &lab,
        json!({
            "gone": {"url": format!("http://127.0.0.1:{refused}/mcp")},
            "silent": {"url": format!("http://127.0.0.1:{silent_port}/mcp")},
        }),
    );
    std::fs::write(
        lab.home.join("settings.json"),
        json!({"mcpStartTimeoutMs": 500}).to_string(),
    )
    .unwrap();
    server.push(openai_text("still answering"));
    let started = Instant::now();
    let (code, stdout, stderr) = lab.run(&["-p", "--model", "mock/mock-model", "hi"]).await;
    let took = started.elapsed();
    assert_eq!(code, 0, "stderr: {stderr}");
    assert_eq!(stdout, "still answering\n");
    assert!(took < Duration::from_secs(4), "the turn waited {took:?}");
    assert!(
        stderr.contains("MCP server \"gone\" failed to start:"),
        "{stderr}"
    );
    assert!(stderr.contains("Connection refused"), "{stderr}");
    assert!(
        stderr.contains("MCP server \"silent\" did not answer within 0.5 s (start)"),
        "{stderr}"
    );
    let names = tool_names(&server.requests()[0].json());
    assert!(!names.iter().any(|n| n.starts_with("mcp__")), "{names:?}");
    held.abort();
}

#[tokio::test]
async fn an_http_server_that_restarts_is_reached_again() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let first = HttpServer::start("127.0.0.1:0", &[]).await.unwrap();
    let addr = first.addr.to_string();
    write_config(&lab, json!({"web": {"url": first.url()}}));
    let mut rpc = Rpc::start(&lab, &["--no-session"]);
    let pid_of_call = |body: &Value| tool_results(body).last().cloned().unwrap_or_default();

    server.push(openai_tool_calls(&[("call_1", "mcp__web__pid", json!({}))]));
    server.push(openai_text("one"));
    let resp = rpc
        .call(r#"{"id":"p1","type":"prompt","message":"first"}"#)
        .await;
    assert_eq!(resp["success"], true, "{resp}");
    let first_pid = first.pid().unwrap().to_string();
    assert_eq!(pid_of_call(&server.requests()[1].json()), first_pid);

    // The server goes away and comes back on the same address with no memory of the session.
    first.stop().await;
    let second = HttpServer::start(&addr, &[]).await.unwrap();
    server.push(openai_tool_calls(&[("call_2", "mcp__web__pid", json!({}))]));
    server.push(openai_text("two"));
    let resp = rpc
        .call(r#"{"id":"p2","type":"prompt","message":"second"}"#)
        .await;
    assert_eq!(resp["success"], true, "{resp}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(
        pid_of_call(&reqs[3].json()),
        second.pid().unwrap().to_string(),
        "the call after the restart did not reach the new server"
    );
    rpc.finish().await;
}
