//! Every way a run ends ends the commands it started (DECISIONS §28.1–§28.5, §28.9): a real
//! `arbor -p` / `--mode rpc` process driven by the mock server runs a bash command that
//! writes the pids of its shell, a background subshell and their sleeps to a file; after the
//! run ends, each pid is checked in `/proc` (a zombie counts as dead: this container's PID 1
//! does not reap orphans), and `late.txt`, which the background job writes after 3 s, must
//! never appear.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use arbor_test_support::scripts::{openai_text, openai_tool_calls};
use arbor_test_support::MockServer;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use super::agent_e2e::{lab, Lab};

/// A command that leaves a background job which would write `late.txt` after 3 s, a 20 s
/// foreground sleep, and the pids of all of them in `pids`; `started` says it is running.
fn doomed_command() -> String {
    "(sleep 3 & echo $! >> pids; wait; echo late > late.txt) & echo $! >> pids; \
     sleep 20 & echo $! >> pids; echo $$ >> pids; touch started; wait; echo done"
        .to_owned()
}

fn pids(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("pids"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Running means present in `/proc` and not a zombie.
fn running(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next())
        .unwrap_or("?");
    state != "Z" && state != "X"
}

async fn wait_for(path: &Path, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !path.exists() {
        assert!(Instant::now() < deadline, "{what} never happened");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // The pids are written just before the marker; give the shell a moment to finish the line.
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// Every recorded pid is gone, and after the background job's 3 s `late.txt` is still absent.
async fn assert_nothing_survives(repo: &Path) {
    let pids = pids(repo);
    assert_eq!(pids.len(), 4, "pids recorded: {pids:?}");
    let survivors: Vec<i32> = pids.iter().copied().filter(|p| running(*p)).collect();
    assert!(
        survivors.is_empty(),
        "still running after the run ended: {survivors:?}"
    );
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert!(!repo.join("late.txt").exists(), "late.txt was written");
}

/// The text of the session's tool result for `call_1`.
fn tool_result(lab: &Lab) -> (String, bool) {
    let files = lab.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let m = &v["message"];
        if m["role"] == "toolResult" && m["toolCallId"] == "call_1" {
            let body = m["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<String>();
            return (body, m["isError"] == true);
        }
    }
    panic!("no tool result in {text}");
}

async fn signal_mid_tool(sig: Signal, code: i32) {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    server.push(openai_tool_calls(&[(
        "call_1",
        "bash",
        json!({"command": doomed_command()}),
    )]));
    let mut child = lab
        .cmd()
        .args(["-p", "--model", "mock/mock-model", "go"])
        .spawn()
        .unwrap();
    wait_for(&lab.repo.join("started"), "the command's start").await;
    let sent = Instant::now();
    kill(Pid::from_raw(child.id().unwrap() as i32), sig).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(15), child.wait())
        .await
        .expect("arbor exits after the signal")
        .unwrap();
    let took = sent.elapsed();
    assert_eq!(status.code(), Some(code), "{sig}");
    assert!(took < Duration::from_secs(5), "{sig}: exit took {took:?}");
    let (text, is_error) = tool_result(&lab);
    assert!(is_error);
    assert!(
        text.contains("Command aborted; process group ended by SIGTERM"),
        "{sig}: {text}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "the aborted run asked for nothing more"
    );
    assert_nothing_survives(&lab.repo).await;
}

#[tokio::test]
async fn sigterm_in_print_mode_ends_the_whole_group_and_exits_143() {
    signal_mid_tool(Signal::SIGTERM, 143).await;
}

#[tokio::test]
async fn sigint_in_print_mode_ends_the_whole_group_and_exits_130() {
    signal_mid_tool(Signal::SIGINT, 130).await;
}

#[tokio::test]
async fn sighup_in_print_mode_ends_the_whole_group_and_exits_129() {
    signal_mid_tool(Signal::SIGHUP, 129).await;
}

/// How an RPC run is ended.
enum RpcEnd {
    Abort,
    StdinEof,
}

async fn rpc_mid_tool(end: RpcEnd) {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    server.push(openai_tool_calls(&[(
        "call_1",
        "bash",
        json!({"command": doomed_command()}),
    )]));
    server.push(openai_text("stopped"));
    let mut child = lab
        .cmd()
        .args(["--mode", "rpc", "--model", "mock/mock-model"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let prompt = "{\"type\":\"prompt\",\"message\":\"go\",\"id\":\"p\"}\n";
    tokio::io::AsyncWriteExt::write_all(&mut stdin, prompt.as_bytes())
        .await
        .unwrap();
    wait_for(&lab.repo.join("started"), "the command's start").await;
    match end {
        RpcEnd::Abort => {
            tokio::io::AsyncWriteExt::write_all(&mut stdin, b"{\"type\":\"abort\",\"id\":\"a\"}\n")
                .await
                .unwrap();
            // The group is ended by the abort itself, before arbor exits.
            let deadline = Instant::now() + Duration::from_secs(5);
            while pids(&lab.repo).iter().any(|p| running(*p)) {
                assert!(Instant::now() < deadline, "abort left the group running");
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            drop(stdin);
        }
        RpcEnd::StdinEof => drop(stdin),
    }
    let status = tokio::time::timeout(Duration::from_secs(15), child.wait())
        .await
        .expect("arbor exits")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let (text, is_error) = tool_result(&lab);
    assert!(is_error);
    assert!(
        text.contains("Command aborted; process group ended by SIGTERM"),
        "{text}"
    );
    assert_nothing_survives(&lab.repo).await;
}

#[tokio::test]
async fn rpc_abort_ends_the_whole_group_and_records_it() {
    rpc_mid_tool(RpcEnd::Abort).await;
}

#[tokio::test]
async fn rpc_stdin_eof_ends_the_whole_group_and_records_it() {
    rpc_mid_tool(RpcEnd::StdinEof).await;
}

#[tokio::test]
async fn a_background_job_does_not_hold_the_tool_and_ends_with_arbor() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    server.push(openai_tool_calls(&[(
        "call_1",
        "bash",
        json!({"command": "sleep 25 & echo $! > pids; echo started"}),
    )]));
    server.push(openai_text("ok"));
    let started = Instant::now();
    let (code, out, err) = lab.run(&["-p", "--model", "mock/mock-model", "go"]).await;
    let took = started.elapsed();
    assert_eq!((code, out.as_str()), (0, "ok\n"), "{err}");
    assert!(took < Duration::from_secs(10), "the run took {took:?}");
    let (text, is_error) = tool_result(&lab);
    assert_eq!((text.as_str(), is_error), ("started\n", false));
    let pids = pids(&lab.repo);
    assert_eq!(pids.len(), 1);
    assert!(!running(pids[0]), "the background job outlived arbor");
}

#[tokio::test]
async fn a_hanging_key_command_fails_the_request_naming_its_provider() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let models = json!({"providers": {
        "mock": {"baseUrl": format!("{}/v1", server.url()), "api": "openai-completions",
                 "apiKey": "!echo $$ > keypid; sleep 60",
                 "models": [{"id": "mock-model", "contextWindow": 32000, "maxTokens": 4096}]}
    }});
    std::fs::write(lab.home.join("models.json"), models.to_string()).unwrap();
    std::fs::write(
        lab.home.join("settings.json"),
        r#"{"retry": {"enabled": false}}"#,
    )
    .unwrap();
    let started = Instant::now();
    let (code, _out, err) = lab.run(&["-p", "--model", "mock/mock-model", "go"]).await;
    assert!(
        started.elapsed() < Duration::from_secs(45),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("The API key command for provider \"mock\" in models.json failed: the command did not finish within 10 s"),
        "{err}"
    );
    let pid: i32 = std::fs::read_to_string(lab.repo.join("keypid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!running(pid), "the key command outlived its timeout");
    assert!(server.requests().is_empty());
}

/// A file of `size` bytes with a marker line at its start.
fn big_file(path: &Path, marker: &str, size: usize) {
    use std::io::Write as _;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(f, "{marker}").unwrap();
    let line = [b'x'; 1023];
    let mut left = size - marker.len() - 1;
    while left > 0 {
        let n = left.min(1024);
        f.write_all(&line[..n - 1]).unwrap();
        f.write_all(b"\n").unwrap();
        left -= n;
    }
}

fn temp_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect()
}

#[tokio::test]
async fn sigkill_during_a_large_edit_leaves_the_old_file_or_the_new_one() {
    use std::os::unix::fs::PermissionsExt as _;
    const SIZE: usize = 8 * 1024 * 1024;
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let target = lab.repo.join("big.txt");
    big_file(&target, "OLD-MARKER", SIZE);
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    let edit =
        json!({"path": "big.txt", "edits": [{"oldText": "OLD-MARKER", "newText": "NEW-MARKER"}]});
    server.push(openai_tool_calls(&[("call_1", "edit", edit.clone())]));
    let mut child = lab
        .cmd()
        .args(["-p", "--model", "mock/mock-model", "go"])
        .spawn()
        .unwrap();
    // Killed as soon as the temporary file exists: the new contents are being written.
    let deadline = Instant::now() + Duration::from_secs(60);
    while temp_files(&lab.repo).is_empty() {
        assert!(Instant::now() < deadline, "the edit never started writing");
        if let Some(status) = child.try_wait().unwrap() {
            let files = lab.session_files();
            let session = files.first().map(std::fs::read_to_string);
            panic!("arbor ended before the edit wrote: {status} {session:?}");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    let meta = std::fs::metadata(&target).unwrap();
    assert_eq!(meta.len() as usize, SIZE, "the target is partial");
    assert_eq!(meta.permissions().mode() & 0o777, 0o640);
    let head = std::io::Read::bytes(std::fs::File::open(&target).unwrap())
        .take(10)
        .map(Result::unwrap)
        .collect::<Vec<u8>>();
    assert!(head == b"OLD-MARKER" || head == b"NEW-MARKER", "{head:?}");
    // Run to the end, the edit replaces the file whole and keeps its mode.
    for f in temp_files(&lab.repo) {
        std::fs::remove_file(f).unwrap();
    }
    std::fs::remove_dir_all(lab.home.join("sessions")).unwrap();
    big_file(&target, "OLD-MARKER", SIZE);
    server.push(openai_tool_calls(&[("call_1", "edit", edit)]));
    server.push(openai_text("edited"));
    let (code, out, err) = lab.run(&["-p", "--model", "mock/mock-model", "go"]).await;
    assert_eq!((code, out.as_str()), (0, "edited\n"), "{err}");
    let meta = std::fs::metadata(&target).unwrap();
    assert_eq!(meta.len() as usize, SIZE);
    assert_eq!(meta.permissions().mode() & 0o777, 0o640);
    let head = std::io::Read::bytes(std::fs::File::open(&target).unwrap())
        .take(10)
        .map(Result::unwrap)
        .collect::<Vec<u8>>();
    assert_eq!(head, b"NEW-MARKER");
    assert!(temp_files(&lab.repo).is_empty());
}

#[tokio::test]
async fn sigkill_during_a_large_write_leaves_the_old_file_or_the_new_one() {
    const SIZE: usize = 32 * 1024 * 1024;
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let target = lab.repo.join("big.txt");
    big_file(&target, "OLD-MARKER", SIZE);
    let content = format!("NEW-MARKER\n{}", "y".repeat(SIZE));
    server.push(openai_tool_calls(&[(
        "call_1",
        "write",
        json!({"path": "big.txt", "content": content}),
    )]));
    let mut child = lab
        .cmd()
        .args(["-p", "--model", "mock/mock-model", "go"])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while temp_files(&lab.repo).is_empty() {
        assert!(Instant::now() < deadline, "the write never started");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    let len = std::fs::metadata(&target).unwrap().len() as usize;
    assert!(
        len == SIZE || len == content.len(),
        "the target is partial: {len} bytes"
    );
}

/// The bash tool called directly, in `dir`, with the default settings.
fn bash_env(dir: &Path) -> arbor_tools::ToolEnv {
    arbor_tools::ToolEnv::new(dir.to_path_buf(), Default::default())
}

#[tokio::test]
async fn a_timeout_ends_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let env = bash_env(dir.path());
    let res = arbor_tools::run(
        "bash",
        &env,
        json!({"command": doomed_command(), "timeout": 1}),
        tokio_util::sync::CancellationToken::new(),
        None,
    )
    .await;
    let err = res.unwrap_err().to_string();
    assert!(
        err.ends_with("Command timed out after 1 seconds; process group ended by SIGTERM"),
        "{err}"
    );
    assert_nothing_survives(dir.path()).await;
}

#[tokio::test]
async fn the_default_timeout_applies_when_the_model_gives_none() {
    let dir = tempfile::tempdir().unwrap();
    let env = arbor_tools::ToolEnv::new(
        dir.path().to_path_buf(),
        arbor_tools::ToolSettings {
            bash_timeout_seconds: Some(0.5),
            ..Default::default()
        },
    );
    let started = Instant::now();
    let res = arbor_tools::run(
        "bash",
        &env,
        json!({"command": "sleep 30"}),
        tokio_util::sync::CancellationToken::new(),
        None,
    )
    .await;
    assert_eq!(
        res.unwrap_err().to_string(),
        "Command timed out after 0.5 seconds; process group ended by SIGTERM"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_dropped_tool_future_ends_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let env = bash_env(dir.path());
    let task = tokio::spawn(async move {
        arbor_tools::run(
            "bash",
            &env,
            json!({"command": doomed_command()}),
            tokio_util::sync::CancellationToken::new(),
            None,
        )
        .await
    });
    wait_for(&dir.path().join("started"), "the command's start").await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    // The guard sent SIGTERM on drop; SIGKILL would follow within the grace.
    let deadline = Instant::now() + Duration::from_secs(3);
    while pids(dir.path()).iter().any(|p| running(*p)) {
        assert!(
            Instant::now() < deadline,
            "the dropped call's group survives"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_nothing_survives(dir.path()).await;
}

#[tokio::test]
async fn a_write_cancelled_before_it_starts_changes_nothing_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "old").unwrap();
    let env = bash_env(dir.path());
    let cancel = tokio_util::sync::CancellationToken::new();
    cancel.cancel();
    for (tool, args) in [
        ("write", json!({"path": "a.txt", "content": "new"})),
        (
            "edit",
            json!({"path": "a.txt", "edits": [{"oldText": "old", "newText": "new"}]}),
        ),
    ] {
        let err = arbor_tools::run(tool, &env, args, cancel.clone(), None)
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "Operation aborted; a.txt was not changed");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "old"
    );
}
