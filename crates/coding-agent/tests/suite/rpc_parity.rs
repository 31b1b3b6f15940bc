//! The RPC / JSON-mode differential against pi 1.6.0, offline (DECISIONS §31.1): each scenario
//! of `tests/data/rpc/scenarios/` is run against `arbor` the way `tools/rpc-parity/record.mjs`
//! drives an agent through pi's `RpcClient` (ids `req_N`, a step waits for its response, `then`
//! / `wait` for an event), on the 127.0.0.1 mock model with the same scripted replies, and
//! compared with pi's committed recording (`tests/data/rpc/pi/`). A step that differs must be
//! listed in `tests/data/rpc/decisions.txt` with the DECISIONS id that explains it, and a listed
//! step that agrees again fails as stale.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbor_test_support::rpc_parity::{compare, parse_accepted, verdict, Unit};
use arbor_test_support::scripts::{openai_text, openai_tool_calls};
use arbor_test_support::{MockResponse, MockServer};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Notify;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/rpc")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The same lab `record.mjs` builds: an agent home with two mock models and the scenario's
/// settings, and a repository with one file.
struct Lab {
    dir: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
}

fn lab(scenario: &Value, server: &MockServer) -> Lab {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(home.join("user")).unwrap();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::write(repo.join("hello.txt"), "line one\nline two\n").unwrap();
    let models = json!({"providers": {"mock": {
    "baseUrl": format!("{}/v1", server.url()), "api": "openai-completions", "apiKey": "test-key",
    "models": [
        {"id": "mock-model", "name": "Mock Model", "contextWindow": 32000, "maxTokens": 4096},
        {"id": "mock-reasoner", "name": "Mock Reasoner", "reasoning": true, "contextWindow": 32000, "maxTokens": 4096}
    ]}}});
    std::fs::write(home.join("models.json"), models.to_string()).unwrap();
    let settings = scenario.get("settings").cloned().unwrap_or(json!({}));
    std::fs::write(home.join("settings.json"), settings.to_string()).unwrap();
    Lab { dir, home, repo }
}

fn script(server: &MockServer, scenario: &Value) {
    for r in scenario["replies"].as_array().into_iter().flatten() {
        let mut response: MockResponse = if let Some(text) = r["text"].as_str() {
            openai_text(text)
        } else {
            let calls: Vec<(String, String, Value)> = r["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    (
                        c[0].as_str().unwrap().to_owned(),
                        c[1].as_str().unwrap().to_owned(),
                        c[2].clone(),
                    )
                })
                .collect();
            let calls: Vec<(&str, &str, Value)> = calls
                .iter()
                .map(|(i, n, a)| (i.as_str(), n.as_str(), a.clone()))
                .collect();
            openai_tool_calls(&calls)
        };
        if let Some(ms) = r["delayMs"].as_u64() {
            response = response.delay_headers(Duration::from_millis(ms));
        }
        server.push(response);
    }
}

fn command(lab: &Lab, scenario: &Value, mode: &str) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_arbor"));
    let model = scenario["model"].as_str().unwrap_or("mock-model");
    c.env("ARBOR_HOME", &lab.home)
        .env("HOME", lab.home.join("user"))
        .env("OPENAI_API_KEY", "")
        .env("ANTHROPIC_API_KEY", "")
        .current_dir(&lab.repo)
        .args(["--mode", mode, "--provider", "mock", "--model", model])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    c
}

/// Everything arbor wrote, as `{response}` / `{event}` items, with a wake-up for waiters.
#[derive(Default)]
struct Log {
    items: Mutex<Vec<Value>>,
    changed: Notify,
}

impl Log {
    fn push(&self, v: Value) {
        self.items.lock().unwrap().push(v);
        self.changed.notify_waiters();
    }

    /// Waits for the response with this id.
    async fn response(&self, id: &str) -> Option<Value> {
        let found = || {
            self.items
                .lock()
                .unwrap()
                .iter()
                .find_map(|v| v.get("response").filter(|r| r["id"] == id).cloned())
        };
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let changed = self.changed.notified();
                if let Some(r) = found() {
                    return r;
                }
                changed.await;
            }
        })
        .await
        .ok()
    }

    /// Waits for an event of this type at or after `cursor`; returns the index after it.
    async fn event(&self, kind: &str, cursor: usize) -> Option<usize> {
        let found = || {
            let items = self.items.lock().unwrap();
            (cursor..items.len()).find(|&i| items[i]["event"]["type"] == kind)
        };
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let changed = self.changed.notified();
                if let Some(i) = found() {
                    return i + 1;
                }
                changed.await;
            }
        })
        .await
        .ok()
    }
}

/// `$step[N]/pointer` takes that value from step N's response, as `record.mjs` does.
fn bind(command: &Value, step_responses: &[Option<Value>]) -> Value {
    let mut out = command.clone();
    for (_, v) in out.as_object_mut().unwrap().iter_mut() {
        let Some(rest) = v.as_str().and_then(|s| s.strip_prefix("$step[")) else {
            continue;
        };
        let (n, pointer) = rest.split_once(']').unwrap();
        let resolved = step_responses[n.parse::<usize>().unwrap()]
            .as_ref()
            .and_then(|r| r.pointer(pointer).cloned())
            .unwrap_or(Value::Null);
        *v = resolved;
    }
    out
}

async fn record_rpc(scenario: &Value, lab: &Lab) -> Value {
    let mut child = command(lab, scenario, "rpc")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let log = Arc::new(Log::default());
    let reader = {
        let log = log.clone();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if v["type"] == "response" {
                    log.push(json!({ "response": v }));
                } else {
                    log.push(json!({ "event": v }));
                }
            }
        })
    };
    // pi's client waits 100 ms after starting the process.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let steps = scenario["steps"].as_array().unwrap();
    let mut step_responses: Vec<Option<Value>> = vec![None; steps.len()];
    let mut pending: Vec<(usize, String)> = Vec::new();
    let mut request = 0;
    let mut cursor = 0;
    for (i, step) in steps.iter().enumerate() {
        log.push(json!({ "step": i }));
        if let Some(raw) = step["raw"].as_str() {
            stdin
                .write_all(format!("{raw}\n").as_bytes())
                .await
                .unwrap();
            let settle = step["settleMs"].as_u64().unwrap_or(300);
            tokio::time::sleep(Duration::from_millis(settle)).await;
        } else if let Some(send) = step.get("send") {
            request += 1;
            let id = format!("req_{request}");
            let mut cmd = bind(send, &step_responses);
            cmd["id"] = json!(id);
            stdin
                .write_all(format!("{cmd}\n").as_bytes())
                .await
                .unwrap();
            if step["noWait"] == true {
                pending.push((i, id));
            } else {
                match log.response(&id).await {
                    Some(r) => step_responses[i] = Some(r),
                    None => log.push(json!({"failure": format!("Timeout waiting for response to {}", send["type"])})),
                }
            }
        } else if let Some(kind) = step["wait"].as_str() {
            match log.event(kind, cursor).await {
                Some(c) => cursor = c,
                None => log.push(json!({"failure": format!("timeout waiting for {kind}")})),
            }
        } else if let Some(ms) = step["sleepMs"].as_u64() {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        if let Some(kind) = step["then"].as_str() {
            match log.event(kind, cursor).await {
                Some(c) => cursor = c,
                None => log.push(json!({"failure": format!("timeout waiting for {kind}")})),
            }
        }
    }
    let tail = scenario["tailMs"].as_u64().unwrap_or(400);
    tokio::time::sleep(Duration::from_millis(tail)).await;
    drop(stdin);
    tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("arbor exits after stdin closes")
        .unwrap();
    reader.await.unwrap();
    let items = log.items.lock().unwrap().clone();
    json!({"mode": "rpc", "lab": lab.dir.path().to_str().unwrap(), "log": items})
}

async fn record_json(scenario: &Value, lab: &Lab) -> Value {
    let prompts: Vec<&str> = scenario["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        command(lab, scenario, "json")
            .args(&prompts)
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .expect("arbor finished in time")
    .unwrap();
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| json!({ "unparsed": l })))
        .collect();
    json!({"mode": "json", "lab": lab.dir.path().to_str().unwrap(), "exitCode": out.status.code(), "lines": lines})
}

async fn check(name: &str) {
    let data = data_dir();
    let scenario = read_json(&data.join("scenarios").join(format!("{name}.json")));
    let pi = read_json(&data.join("pi").join(format!("{name}.pi.json")));
    let server = MockServer::start().await.unwrap();
    script(&server, &scenario);
    let lab = lab(&scenario, &server);
    let mut arbor = if scenario.get("prompts").is_some() {
        record_json(&scenario, &lab).await
    } else {
        record_rpc(&scenario, &lab).await
    };
    arbor["modelRequests"] = json!(server.requests().len());
    let units: Vec<Unit> = compare(name, &pi, &arbor);
    let accepted = parse_accepted(&std::fs::read_to_string(data.join("decisions.txt")).unwrap())
        .unwrap()
        .into_iter()
        .filter(|a| a.key.starts_with(&format!("{name}#")))
        .collect::<Vec<_>>();
    let (lines, ok) = verdict(&units, &accepted);
    if std::env::var_os("RPC_PARITY_SAVE").is_some() {
        let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/rpc-parity");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(
            out.join(format!("{name}.arbor-offline.json")),
            serde_json::to_string_pretty(&arbor).unwrap(),
        )
        .unwrap();
    }
    assert!(ok, "{name}: differs from pi 1.6.0:\n{}", lines.join("\n"));
}

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                check(stringify!($name).trim_start_matches("r#").replace('_', "-").as_str()).await;
            }
        )*
    };
}

mod against_pi {
    use super::check;
    scenarios!(
        queries, models, tools, abort, queue, sessions, compact, bash, json_mode, variants, busy
    );
}
