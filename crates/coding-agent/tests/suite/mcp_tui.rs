//! `/mcp` in a real terminal (tmux) with a real stdio MCP server and one that cannot start
//! (DECISIONS §33.7): the status and tools, then `reconnect`, `disable` and `enable` acting on
//! the server process itself. Skipped with a notice when tmux is missing, unless
//! `ARBOR_TEST_TMUX_REQUIRE=1`.

use std::path::Path;
use std::time::{Duration, Instant};

use arbor_test_support::{mcp_server, MockServer};
use serde_json::json;

use super::agent_e2e::lab;
use super::mcp::{alive, pids_in};
use super::tmux::{tmux_or_skip, Tmux};

const PATIENCE: Duration = Duration::from_secs(15);

/// Waits until the test server has recorded `n` pids (each start records the server and the
/// sleeper it starts), returning them.
async fn wait_pids(file: &Path, n: usize) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let pids = pids_in(file);
        if pids.len() >= n {
            return pids;
        }
        assert!(start.elapsed() < PATIENCE, "only {pids:?} started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn wait_dead(pids: &[u32]) {
    let start = Instant::now();
    while pids.iter().any(|p| alive(*p)) {
        assert!(start.elapsed() < PATIENCE, "still running: {pids:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until a line after the last one holding `anchor` (the whole screen when `anchor` is
/// empty) holds `want`; returns those lines.
async fn wait_after(pane: &Tmux, anchor: &str, want: &str) -> Vec<String> {
    let start = Instant::now();
    loop {
        let screen = pane.capture().await;
        let lines: Vec<String> = screen.lines().map(str::to_owned).collect();
        let from = if anchor.is_empty() {
            0
        } else {
            lines
                .iter()
                .rposition(|l| l.contains(anchor))
                .map_or(lines.len(), |i| i + 1)
        };
        let tail = &lines[from.min(lines.len())..];
        if tail.iter().any(|l| l.contains(want)) {
            return tail.to_vec();
        }
        assert!(
            start.elapsed() < PATIENCE,
            "no {want:?} after {anchor:?}; the screen shows:\n{screen}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Types `/mcp` until its answer, after the last line holding `anchor`, shows `want` (a server
/// reports "connecting" until its handshake is done).
async fn status_until(pane: &Tmux, anchor: &str, want: &str) -> Vec<String> {
    let start = Instant::now();
    loop {
        pane.type_line("/mcp").await;
        pane.wait_for("/mcp reconnect|enable|disable NAME").await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let screen = pane.capture().await;
        let lines: Vec<String> = screen.lines().map(str::to_owned).collect();
        let from = if anchor.is_empty() {
            0
        } else {
            lines
                .iter()
                .rposition(|l| l.contains(anchor))
                .map_or(lines.len(), |i| i + 1)
        };
        let tail = &lines[from.min(lines.len())..];
        if let Some(at) = tail.iter().rposition(|l| l.contains(want)) {
            // The block that answered: from its first server line to its end.
            let first = tail[..=at]
                .iter()
                .rposition(|l| l.contains("/mcp reconnect|enable|disable NAME"))
                .map_or(0, |i| i + 1);
            return tail[first..].to_vec();
        }
        assert!(
            start.elapsed() < PATIENCE,
            "no {want:?} after {anchor:?}; the screen shows:\n{screen}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_shows_status_and_tools_and_reconnects_disables_and_enables_a_server() {
    if !tmux_or_skip("mcp_shows_status_and_tools_and_reconnects_disables_and_enables_a_server") {
        return;
    }
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let pids = lab.home.join("pids");
    std::fs::write(
        lab.home.join("mcp.json"),
        serde_json::to_string_pretty(&json!({"mcpServers": {
            "test": {
                "command": mcp_server::binary().display().to_string(),
                "env": {"MCP_TEST_PID_FILE": pids.display().to_string()},
            },
            "bad": {"command": "/nonexistent/server"},
        }}))
        .unwrap(),
    )
    .unwrap();
    let pane = Tmux::named("mcp");
    pane.open(
        &lab.repo,
        &lab.home,
        (110, 45),
        &[env!("CARGO_BIN_EXE_arbor"), "--model", "mock/mock-model"],
    )
    .await;
    pane.wait_for("mock/mock-model").await;
    let first = wait_pids(&pids, 2).await;

    // Status: the failed server first with its reason, then the connected one and its tools.
    let block = status_until(&pane, "", "test: connected · 7 tools").await;
    let dir = lab.home.parent().unwrap().display().to_string();
    let shown: Vec<String> = block
        .iter()
        .skip_while(|l| !l.contains("bad: failed"))
        .take_while(|l| !l.contains("/mcp reconnect|enable|disable NAME"))
        .map(|l| l.replace(&dir, "[DIR]").trim_end().to_owned())
        .collect();
    insta::assert_snapshot!("mcp_tui_status", shown.join("\n"));

    // reconnect: the old process goes, a new one answers.
    pane.type_line("/mcp reconnect test").await;
    pane.wait_for("Reconnecting MCP server \"test\"").await;
    let second = wait_pids(&pids, 4).await;
    wait_dead(&first).await;
    status_until(
        &pane,
        "Reconnecting MCP server",
        "test: connected · 7 tools",
    )
    .await;

    // disable: the process ends and the tools are gone for this run.
    pane.type_line("/mcp disable test").await;
    pane.wait_for("Disabled MCP server \"test\" for this run.")
        .await;
    wait_dead(&second[2..]).await;
    pane.type_line("/mcp").await;
    let block = wait_after(&pane, "Disabled MCP server", "test: disabled · 0 tools").await;
    assert!(
        !block.iter().any(|l| l.contains("mcp__test__echo")),
        "{block:?}"
    );

    // enable: started again.
    pane.type_line("/mcp enable test").await;
    pane.wait_for("Enabled MCP server \"test\" for this run")
        .await;
    let third = wait_pids(&pids, 6).await;
    status_until(&pane, "Enabled MCP server", "test: connected · 7 tools").await;

    pane.type_line("/mcp launch test").await;
    pane.wait_for("Usage: /mcp [reconnect|enable|disable NAME]")
        .await;

    // Quitting ends every server process.
    pane.type_line("/quit").await;
    pane.wait_gone().await;
    wait_dead(&third).await;
}
