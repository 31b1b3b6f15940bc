//! Sessions written by `arbor` open in pi to the same context.
//!
//! `tests/data/pi-open/` holds session files that print, JSON and RPC runs of `arbor` wrote
//! against the 127.0.0.1 mock server (tool calls, a `bashExecution` entry, a manual
//! compaction, a clone and a fork), each next to `<name>.pi.json`: what pi 1.6.0's own code
//! (`crates/test-support/pi/context.mjs`) projects from it. The test checks that
//! `arbor session context --json` prints exactly pi's projection for every committed file, and,
//! when node and pi are installed, runs the same scenario afresh and asks pi about the new files
//! too. `tests/data/pi-open/regenerate.sh` rewrites the committed files from a fresh run.

use std::path::{Path, PathBuf};

use arbor_test_support::scripts::{openai_text, openai_tool_calls};
use arbor_test_support::MockServer;
use serde_json::{json, Value};

use super::agent_e2e::{lab, Lab};
use super::rpc_replay::Rpc;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pi-open")
}

/// pi's integers and floats compare as numbers (`1` == `1.0`).
fn numbers_as_f64(v: &mut Value) {
    match v {
        Value::Number(n) => {
            if let Some(f) = n.as_f64() {
                *v = json!(f);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(numbers_as_f64),
        Value::Object(map) => map.values_mut().for_each(numbers_as_f64),
        _ => {}
    }
}

fn arbor_context(home: &Path, file: &Path) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_arbor"))
        .env("ARBOR_HOME", home)
        .args(["session", "context", "--json"])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `node ref-context.mjs FILE` without its `file` key, or `None` when node or pi is missing.
fn pi_context(file: &Path) -> Option<Value> {
    let pkg = std::env::var("PI_PKG").ok().or_else(|| {
        let p = PathBuf::from(std::env::var("HOME").ok()?)
            .join(".cache/arbor-pi-ref/node_modules/@earendil-works/pi-coding-agent");
        p.is_dir().then(|| p.display().to_string())
    })?;
    let out = std::process::Command::new("node")
        .arg(super::pi_script("context.mjs"))
        .arg(file)
        .env("PI_PKG", pkg)
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_object_mut().unwrap().remove("file");
    Some(v)
}

fn assert_same(ours: &Value, pi: &Value, what: &str) {
    let (mut a, mut b) = (ours.clone(), pi.clone());
    numbers_as_f64(&mut a);
    numbers_as_f64(&mut b);
    assert_eq!(b["ok"], true, "{what}: pi refused the file: {b}");
    assert_eq!(a, b, "{what}: pi projects it differently");
}

/// Print, JSON and RPC runs that leave tool calls, bash, a compaction, a clone and a fork in
/// session files; returns them by name.
async fn write_sessions(server: &MockServer, lab: &Lab) -> Vec<(String, PathBuf)> {
    std::fs::write(
        lab.home.join("settings.json"),
        r#"{"compaction": {"keepRecentTokens": 40}}"#,
    )
    .unwrap();
    // print: write, edit, bash (exit 3), read.
    server.push(openai_tool_calls(&[
        (
            "call_1",
            "write",
            json!({"path": "notes/new.txt", "content": "alpha\n"}),
        ),
        (
            "call_2",
            "edit",
            json!({"path": "hello.txt", "oldText": "line two", "newText": "line 2"}),
        ),
    ]));
    server.push(openai_tool_calls(&[(
        "call_3",
        "bash",
        json!({"command": "cat notes/new.txt hello.txt; exit 3"}),
    )]));
    server.push(openai_tool_calls(&[(
        "call_4",
        "read",
        json!({"path": "hello.txt"}),
    )]));
    server.push(openai_text("All done."));
    let (code, _, err) = lab
        .run(&["-p", "--model", "mock/mock-model", "Do the work"])
        .await;
    assert_eq!(code, 0, "{err}");
    let print_file = lab.session_files()[0].clone();

    // json: one plain turn.
    server.push(openai_text("Plain answer."));
    let (code, out, err) = lab
        .run(&["--mode", "json", "--model", "mock/mock-model", "Just talk"])
        .await;
    assert_eq!(code, 0, "{err}");
    let header: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    let json_file = lab
        .session_files()
        .into_iter()
        .find(|f| {
            f.display()
                .to_string()
                .contains(header["id"].as_str().unwrap())
        })
        .unwrap();

    // rpc: prompts, a bash command, a compaction, then clone and fork.
    let mut rpc = Rpc::start(lab, &[]);
    for (i, m) in [
        "First question",
        "Second question with padding padding padding",
        "Third one",
    ]
    .iter()
    .enumerate()
    {
        server.push(openai_text(&format!("Echo: {m}")));
        let r = rpc
            .call(&json!({"type": "prompt", "message": m, "id": format!("p{i}")}).to_string())
            .await;
        assert_eq!(r["success"], true, "{r}");
    }
    let r = rpc
        .call(r#"{"type":"bash","command":"echo from-rpc","id":"b1"}"#)
        .await;
    assert_eq!(r["data"]["exitCode"], 0, "{r}");
    let r = rpc
        .call(r#"{"type":"bash","command":"echo hidden","excludeFromContext":true,"id":"b2"}"#)
        .await;
    assert_eq!(r["success"], true, "{r}");
    server.push(openai_text(
        "## Goal\nMock summary.\n\n## Next Steps\n1. continue",
    ));
    server.push(openai_text("## Goal\nMock turn prefix."));
    let r = rpc
        .call(r#"{"type":"compact","customInstructions":"focus","id":"c1"}"#)
        .await;
    assert_eq!(r["success"], true, "{r}");
    server.discard_unused();
    server.push(openai_text("Echo: after compaction"));
    rpc.call(r#"{"type":"prompt","message":"After compaction","id":"p9"}"#)
        .await;
    let state = rpc.call(r#"{"type":"get_state","id":"s1"}"#).await;
    let rpc_file = PathBuf::from(state["data"]["sessionFile"].as_str().unwrap());
    rpc.call(r#"{"type":"clone","id":"k1"}"#).await;
    let state = rpc.call(r#"{"type":"get_state","id":"s2"}"#).await;
    let clone_file = PathBuf::from(state["data"]["sessionFile"].as_str().unwrap());
    let forks = rpc.call(r#"{"type":"get_fork_messages","id":"f0"}"#).await;
    let last_user = forks["data"]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["entryId"]
        .clone();
    let r = rpc
        .call(&json!({"type": "fork", "entryId": last_user, "id": "f1"}).to_string())
        .await;
    assert_eq!(r["data"]["text"], "After compaction");
    let state = rpc.call(r#"{"type":"get_state","id":"s3"}"#).await;
    let fork_file = PathBuf::from(state["data"]["sessionFile"].as_str().unwrap());
    rpc.finish().await;
    vec![
        ("print-tools".into(), print_file),
        ("json-turn".into(), json_file),
        ("rpc-bash-compaction".into(), rpc_file),
        ("rpc-clone".into(), clone_file),
        ("rpc-fork".into(), fork_file),
    ]
}

#[tokio::test]
async fn sessions_written_by_arbor_open_in_pi_to_the_same_context() {
    let home = tempfile::tempdir().unwrap();
    let regenerate = std::env::var_os("ARBOR_REGENERATE_PI_OPEN").is_some();
    // The committed files: Arbor's projection must equal pi's recorded one.
    let mut committed = 0;
    let listing = if regenerate {
        Vec::new()
    } else {
        std::fs::read_dir(data_dir()).unwrap().flatten().collect()
    };
    for e in listing {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let expected = p.with_extension("pi.json");
        let pi: Value = serde_json::from_str(&std::fs::read_to_string(&expected).unwrap()).unwrap();
        assert_same(
            &arbor_context(home.path(), &p),
            &pi,
            &p.display().to_string(),
        );
        committed += 1;
    }
    if !regenerate {
        assert_eq!(committed, 5, "committed pi-open cases");
    }

    // A fresh run of the same scenario, checked live when pi is installed.
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let files = write_sessions(&server, &lab).await;
    for (name, file) in &files {
        let Some(pi) = pi_context(file) else {
            eprintln!("SKIPPED the live pi check: node or PI_PKG missing");
            return;
        };
        assert_same(&arbor_context(&lab.home, file), &pi, name);
        if regenerate {
            std::fs::copy(file, data_dir().join(format!("{name}.jsonl"))).unwrap();
            std::fs::write(
                data_dir().join(format!("{name}.pi.json")),
                serde_json::to_string_pretty(&pi).unwrap() + "\n",
            )
            .unwrap();
        }
    }
    // The scenario covers what it claims: tool results, bash, a compaction, a copied path.
    let roles = |f: &Path| -> Vec<String> {
        arbor_context(&lab.home, f)["llm"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(roles(&files[0].1).contains(&"toolResult".to_owned()));
    let compacted = arbor_context(&lab.home, &files[2].1);
    let first = compacted["llm"][0]["content"][0]["text"].as_str().unwrap();
    assert!(first.contains("<summary>"), "{first}");
    assert!(std::fs::read_to_string(&files[2].1)
        .unwrap()
        .contains("\"role\":\"bashExecution\""));
}
