//! pi 1.6.0's RPC transcripts (`testdata/pi-streams/rpc-*-transcript.pi-1.6.0.log`)
//! replayed against `arbor --mode rpc` on the 127.0.0.1 mock server: the same commands in, the
//! same response shapes out (key sets of `data`, `success`, echoed ids, error texts), up to ids,
//! timestamps, paths and model text. The session commands (clone, fork, switch, new) and the
//! streaming `bash` command are exercised beyond the transcript as well.

use std::process::Stdio;
use std::time::Duration;

use arbor_test_support::scripts::{openai_text, openai_tool_calls};
use arbor_test_support::MockServer;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

use super::agent_e2e::{lab, Lab};

/// One `>>>` command of a transcript with pi's `<<<` response (when it parsed whole).
struct Step {
    command: Value,
    raw: String,
    response: Option<Value>,
}

fn transcript(name: &str) -> Vec<Step> {
    let path = arbor_test_support::fixtures::fixture("pi-streams", name);
    let mut steps: Vec<Step> = Vec::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        if let Some(cmd) = line.strip_prefix(">>> ") {
            steps.push(Step {
                command: serde_json::from_str(cmd).unwrap_or(Value::Null),
                raw: cmd.to_owned(),
                response: None,
            });
        } else if let Some(resp) = line.strip_prefix("<<< ") {
            if let Some(last) = steps.last_mut() {
                last.response = serde_json::from_str(resp).ok();
            }
        }
    }
    steps
}

/// A running `arbor --mode rpc`.
pub(super) struct Rpc {
    child: tokio::process::Child,
    stdin: ChildStdin,
    out: Lines<BufReader<ChildStdout>>,
    /// Every line read, in order.
    seen: Vec<Value>,
}

impl Rpc {
    pub(super) fn start(lab: &Lab, extra: &[&str]) -> Rpc {
        Rpc::start_with_env(lab, extra, &[])
    }

    /// [`Rpc::start`] with these variables set for `arbor`.
    pub(super) fn start_with_env(lab: &Lab, extra: &[&str], env: &[(&str, &str)]) -> Rpc {
        let mut child = lab
            .cmd()
            .args(["--mode", "rpc", "--model", "mock/mock-model"])
            .args(extra)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let out = BufReader::new(child.stdout.take().unwrap()).lines();
        Rpc {
            child,
            stdin,
            out,
            seen: Vec::new(),
        }
    }

    pub(super) async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.out.next_line())
            .await
            .expect("a line in time")
            .unwrap()
            .expect("arbor still running");
        let v: Value = serde_json::from_str(&line).unwrap();
        self.seen.push(v.clone());
        v
    }

    pub(super) async fn write(&mut self, raw: &str) {
        self.stdin
            .write_all(format!("{raw}\n").as_bytes())
            .await
            .unwrap();
    }

    /// Sends a command and reads up to its response; for a started prompt, on to
    /// `agent_settled`.
    pub(super) async fn call(&mut self, raw: &str) -> Value {
        self.write(raw).await;
        let sent: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
        let resp = loop {
            let v = self.next().await;
            let is_response = v["type"] == "response";
            if is_response && (v.get("id") == sent.get("id") || v["command"] == "parse") {
                break v;
            }
        };
        if resp["command"] == "prompt" && resp["data"]["disposition"] == "started" {
            while self.next().await["type"] != "agent_settled" {}
        }
        resp
    }

    /// The process id (to signal it).
    pub(super) fn pid(&self) -> u32 {
        self.child.id().unwrap()
    }

    /// Reads every line until stdout closes, then the exit code.
    pub(super) async fn drain(mut self) -> (Vec<Value>, Option<i32>) {
        while let Ok(Ok(Some(line))) =
            tokio::time::timeout(Duration::from_secs(10), self.out.next_line()).await
        {
            self.seen.push(serde_json::from_str(&line).unwrap());
        }
        let status = tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .unwrap()
            .unwrap();
        (self.seen, status.code())
    }

    pub(super) async fn finish(mut self) -> Vec<Value> {
        drop(self.stdin);
        while let Ok(Ok(Some(line))) =
            tokio::time::timeout(Duration::from_secs(10), self.out.next_line()).await
        {
            self.seen.push(serde_json::from_str(&line).unwrap());
        }
        let status = tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(status.code(), Some(0));
        self.seen
    }
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    k.sort();
    k
}

/// Same envelope, same `data` keys (and the same keys of each object nested one level down
/// that pi always has), same error text.
fn same_shape(ours: &Value, pi: &Value, what: &str) {
    for k in ["type", "command", "success", "id"] {
        assert_eq!(ours.get(k), pi.get(k), "{what}: {k}; ours {ours}");
    }
    assert_eq!(keys(ours), keys(pi), "{what}: envelope keys; ours {ours}");
    if let Some(e) = pi.get("error") {
        assert_eq!(ours["error"], *e, "{what}");
    }
    match (ours.get("data"), pi.get("data")) {
        (Some(o), Some(p)) if p.is_object() => {
            assert_eq!(keys(o), keys(p), "{what}: data keys; ours {o}");
        }
        (o, p) => assert_eq!(o.is_some(), p.is_some(), "{what}: data presence"),
    }
}

/// The model's reply for a prompt, as the transcript's mock model answered.
pub(super) fn script_reply(server: &MockServer, message: &str, call: usize) {
    if let Some(rest) = message.strip_prefix("TOOL ") {
        let (name, args) = rest.split_once(' ').unwrap();
        server.push(openai_tool_calls(&[(
            &format!("call_{call}"),
            name,
            serde_json::from_str(args).unwrap(),
        )]));
        server.push(openai_text("done"));
    } else {
        server.push(openai_text(&format!("Echo: {message}")));
    }
}

/// pi's lab ran with a small `keepRecentTokens`, so that a few short turns can be compacted.
pub(super) fn small_compaction_settings(lab: &Lab) {
    std::fs::write(
        lab.home.join("settings.json"),
        r#"{"compaction": {"keepRecentTokens": 40}}"#,
    )
    .unwrap();
}

pub(super) const SUMMARY: &str =
    "## Goal\nMock summary goal.\n\n## Progress\n### Done\n- [x] mock work\n\n## Next Steps\n1. continue";

#[tokio::test]
async fn pis_session_ops_transcript_replays_with_the_same_response_shapes() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    std::fs::write(
        lab.repo.join("hello.txt"),
        "line one\nline two\nline three\n",
    )
    .unwrap();
    small_compaction_settings(&lab);
    let steps = transcript("rpc-session-ops-transcript.pi-1.6.0.log");
    assert_eq!(steps.len(), 33);
    let mut rpc = Rpc::start(&lab, &[]);
    let mut ours: std::collections::HashMap<String, Value> = Default::default();
    let pi_of = |id: &str| {
        steps
            .iter()
            .find(|s| s.command["id"] == id)
            .and_then(|s| s.response.clone())
            .unwrap()
    };
    let (mut compared, mut skipped) = (0, Vec::new());
    for (i, step) in steps.iter().enumerate() {
        let cmd = &step.command;
        let kind = cmd["type"].as_str().unwrap_or("");
        let message = cmd["message"].as_str().unwrap_or("");
        // The transcript's `/label`, `/custom` and `/nav` are commands of a test extension;
        // Arbor has no extensions, so these steps have nothing to compare.
        if kind == "prompt" && message.starts_with('/') {
            skipped.push(cmd["id"].as_str().unwrap().to_owned());
            continue;
        }
        let mut raw = step.raw.clone();
        match kind {
            "prompt" => script_reply(&server, message, i),
            // A split turn is summarised in two requests; what is not used is dropped after.
            "compact" => {
                server.push(openai_text(SUMMARY));
                server.push(openai_text(SUMMARY));
            }
            // pi's entry ids and paths are replaced by ours for the same positions.
            "fork" => {
                let pi_msgs = pi_of("r9")["data"]["messages"].clone();
                let at = pi_msgs
                    .as_array()
                    .unwrap()
                    .iter()
                    .position(|m| m["entryId"] == cmd["entryId"])
                    .unwrap();
                let our_id = ours["r9"]["data"]["messages"][at]["entryId"].clone();
                raw = json!({"type": "fork", "entryId": our_id, "id": cmd["id"]}).to_string();
            }
            "switch_session" => {
                let ours_file = ours["r1"]["data"]["sessionFile"].clone();
                raw = json!({"type": "switch_session", "sessionPath": ours_file, "id": cmd["id"]})
                    .to_string();
            }
            "export_html" => {
                let out = lab.repo.join("export.html");
                raw =
                    json!({"type": "export_html", "outputPath": out, "id": cmd["id"]}).to_string();
            }
            _ => {}
        }
        let mut resp = rpc.call(&raw).await;
        server.discard_unused();
        let what = format!("step {i} ({kind})");
        let pi = step
            .response
            .clone()
            .unwrap_or_else(|| panic!("{what}: pi's response did not parse"));
        if cmd["id"] == "r28" {
            // pi's `/nav` (skipped) had moved the leaf off the branch holding the session_info
            // entry, so pi's clone has no name; ours, still on that branch, keeps it.
            assert_eq!(resp["data"]["sessionName"], "rpc lab session");
            resp["data"].as_object_mut().unwrap().remove("sessionName");
        }
        same_shape(&resp, &pi, &what);
        if let Some(id) = cmd["id"].as_str() {
            ours.insert(id.to_owned(), resp.clone());
        }
        compared += 1;
    }
    assert_eq!(skipped, ["r10", "r11", "r13"]);
    assert_eq!(compared, 30);

    // Values that must agree, not just shapes.
    let texts = |v: &Value| -> Vec<String> {
        v["data"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["text"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(texts(&ours["r9"]), texts(&pi_of("r9")));
    assert_eq!(ours["r19"]["data"], pi_of("r19")["data"]);
    assert_eq!(ours["r21"]["data"], pi_of("r21")["data"]);
    assert_eq!(ours["r7"]["data"], pi_of("r7")["data"]);
    assert_eq!(ours["r29"]["data"], pi_of("r29")["data"]);
    for id in ["r27", "r31", "r32"] {
        assert_eq!(ours[id]["data"], json!({"cancelled": false}), "{id}");
    }
    let state = |id: &str| ours[id]["data"].clone();
    assert_eq!(state("r26")["sessionName"], "rpc lab session");
    // clone: a new session with the same messages; fork before the first prompt: a new session
    // without it; switch back; new: an empty session.
    let (s26, s28, s30, s33) = (state("r26"), state("r28"), state("r30"), state("r33"));
    assert_ne!(s28["sessionId"], s26["sessionId"]);
    assert_eq!(s28["messageCount"], s26["messageCount"]);
    assert_ne!(s30["sessionId"], s28["sessionId"]);
    assert_eq!(s30["messageCount"], 0);
    assert_ne!(s33["sessionId"], s26["sessionId"]);
    assert_eq!(s33["messageCount"], 0);
    let seen = rpc.finish().await;
    // The bash command streamed its output before answering.
    let update = seen
        .iter()
        .find(|v| v["type"] == "bash_execution_update")
        .expect("a bash_execution_update");
    assert_eq!(update["id"], "r7");
    assert_eq!(update["delta"], "from-rpc-bash\n");
}

#[tokio::test]
async fn pis_compaction_transcript_replays_with_the_same_response_shapes() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    small_compaction_settings(&lab);
    let steps = transcript("rpc-compaction-transcript.pi-1.6.0.log");
    let mut rpc = Rpc::start(&lab, &[]);
    let mut compared = 0;
    for (i, step) in steps.iter().enumerate() {
        let cmd = &step.command;
        let kind = cmd["type"].as_str().unwrap_or("");
        let message = cmd["message"].as_str().unwrap_or("");
        match kind {
            "prompt" => script_reply(&server, message, i),
            "compact" => {
                // A split turn is summarised in two requests.
                server.push(openai_text(SUMMARY));
                server.push(openai_text(SUMMARY));
            }
            _ => {}
        }
        let resp = rpc.call(&step.raw).await;
        server.discard_unused();
        let pi = step.response.clone().unwrap();
        same_shape(&resp, &pi, &format!("step {i} ({kind})"));
        compared += 1;
    }
    assert_eq!(compared, steps.len());
    let stats = rpc
        .seen
        .iter()
        .rfind(|v| v["command"] == "get_session_stats")
        .unwrap()
        .clone();
    assert_eq!(
        keys(&stats["data"]["tokens"]),
        ["cacheRead", "cacheWrite", "input", "output", "total"]
    );
    assert_eq!(
        keys(&stats["data"]["contextUsage"]),
        ["contextWindow", "percent", "tokens"]
    );
    rpc.finish().await;
}

#[tokio::test]
async fn queue_modes_switches_and_abort_bash_work_over_rpc() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let mut rpc = Rpc::start(&lab, &["--models", "mock/*,mockant/claude-mock"]);
    let r = rpc
        .call(r#"{"type":"set_steering_mode","mode":"all","id":"a"}"#)
        .await;
    assert_eq!(r["success"], true);
    let r = rpc
        .call(r#"{"type":"set_auto_compaction","enabled":false,"id":"b"}"#)
        .await;
    assert_eq!(
        r,
        json!({"id":"b","type":"response","command":"set_auto_compaction","success":true})
    );
    let r = rpc.call(r#"{"type":"set_auto_retry","id":"b2"}"#).await;
    assert_eq!(r["error"], "Missing required field: enabled");
    let s = rpc.call(r#"{"type":"get_state","id":"c"}"#).await;
    assert_eq!(s["data"]["steeringMode"], "all");
    assert_eq!(s["data"]["followUpMode"], "one-at-a-time");
    assert_eq!(s["data"]["autoCompactionEnabled"], false);
    // The scope cycles mock → mockant → mock.
    let c = rpc.call(r#"{"type":"cycle_model","id":"d"}"#).await;
    assert_eq!(c["data"]["model"]["provider"], "mockant");
    assert_eq!(c["data"]["isScoped"], true);
    assert_eq!(c["data"]["thinkingLevel"], "off");
    let c = rpc.call(r#"{"type":"cycle_model","id":"e"}"#).await;
    assert_eq!(c["data"]["model"]["id"], "mock-model");
    let q = rpc.call(r#"{"type":"clear_queue","id":"f"}"#).await;
    assert_eq!(q["data"], json!({"steering": [], "followUp": []}));
    assert_eq!(
        rpc.call(r#"{"type":"abort_retry","id":"g"}"#).await["success"],
        true
    );
    // A long bash command is cancelled by abort_bash, answered while it runs.
    rpc.write(r#"{"type":"bash","command":"echo started; sleep 30; echo never","id":"h"}"#)
        .await;
    loop {
        let v = rpc.next().await;
        if v["type"] == "bash_execution_update" {
            assert_eq!(v["delta"], "started\n");
            break;
        }
    }
    let started = std::time::Instant::now();
    let r = rpc.call(r#"{"type":"abort_bash","id":"i"}"#).await;
    assert_eq!(r["success"], true);
    let bash = loop {
        let v = rpc.next().await;
        if v["id"] == "h" {
            break v;
        }
    };
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(bash["data"]["cancelled"], true);
    assert_eq!(bash["data"]["exitCode"], Value::Null);
    assert_eq!(bash["data"]["output"], "started\n");
    // The bash run is recorded as a bashExecution entry.
    let entries = rpc.call(r#"{"type":"get_entries","id":"j"}"#).await;
    let bash_entry = entries["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["message"]["role"] == "bashExecution")
        .cloned()
        .expect("a bashExecution entry");
    assert_eq!(bash_entry["message"]["cancelled"], true);
    assert_eq!(
        bash_entry["message"]["command"],
        "echo started; sleep 30; echo never"
    );
    let r = rpc
        .call(r#"{"type":"fork","entryId":"nope","id":"k"}"#)
        .await;
    assert_eq!(r["error"], "Entry not found: nope");
    let r = rpc
        .call(r#"{"type":"switch_session","sessionPath":"/nonexistent/x.jsonl","id":"l"}"#)
        .await;
    assert_eq!(r["error"], "Session file not found: /nonexistent/x.jsonl");
    rpc.finish().await;
}

#[tokio::test]
async fn the_models_scope_picks_the_first_model_and_warns_about_bad_patterns() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    server.push(arbor_test_support::scripts::anthropic_text("from claude"));
    let (code, out, err) = lab
        .run(&[
            "-p",
            "--models",
            "zzz-nothing,claude:turbo,mock-model",
            "hi",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "from claude\n");
    assert_eq!(
        err,
        "Warning: No models match pattern \"zzz-nothing\"\n\
         Warning: Invalid thinking level \"turbo\" in pattern \"claude:turbo\". Using default instead.\n"
    );
    let req = server.single_request();
    assert_eq!(req.json()["model"], "claude-mock");
}

/// Refusals answer in the same words and the same key order as before the typed command
/// layer: the whole response line is compared, not only its shape.
#[tokio::test]
async fn refusals_keep_their_exact_response_lines() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let mut rpc = Rpc::start(&lab, &[]);
    let cases = [
        (
            r#"{"id":"a","type":"foo"}"#,
            r#"{"id":"a","type":"response","command":"foo","success":false,"error":"Unknown command: foo"}"#,
        ),
        (
            r#"{"id":"b","type":7}"#,
            r#"{"id":"b","type":"response","command":"unknown","success":false,"error":"Command has no type"}"#,
        ),
        (
            r#"{"id":"c","type":"prompt","message":5}"#,
            r#"{"id":"c","type":"response","command":"prompt","success":false,"error":"Missing required field: message"}"#,
        ),
        (
            r#"{"id":"d","type":"set_steering_mode","mode":"x"}"#,
            r#"{"id":"d","type":"response","command":"set_steering_mode","success":false,"error":"Invalid mode: x"}"#,
        ),
        (
            r#"{"id":"e","type":"set_thinking_level","level":"ultra"}"#,
            r#"{"id":"e","type":"response","command":"set_thinking_level","success":false,"error":"Invalid thinking level: ultra"}"#,
        ),
        (
            r#"{"id":"f","type":"set_session_name","name":"  "}"#,
            r#"{"id":"f","type":"response","command":"set_session_name","success":false,"error":"Session name cannot be empty"}"#,
        ),
        (
            r#"{"id":"g","type":"set_model","provider":"nope","modelId":"x"}"#,
            r#"{"id":"g","type":"response","command":"set_model","success":false,"error":"Model not found: nope/x"}"#,
        ),
        (
            r#"{"id":"h","type":"get_entries","since":"zzz"}"#,
            r#"{"id":"h","type":"response","command":"get_entries","success":false,"error":"Entry not found: zzz"}"#,
        ),
        (
            r#"{"id":"i","type":"switch_session"}"#,
            r#"{"id":"i","type":"response","command":"switch_session","success":false,"error":"Missing required field: sessionPath"}"#,
        ),
        (
            r#"{"id":"k","type":"get_commands"}"#,
            r#"{"id":"k","type":"response","command":"get_commands","success":true,"data":{"commands":[]}}"#,
        ),
        (
            r#"{"id":"l","type":"set_follow_up_mode","mode":"all"}"#,
            r#"{"id":"l","type":"response","command":"set_follow_up_mode","success":true}"#,
        ),
        (
            r#"{"id":"m","type":"compact"}"#,
            r#"{"id":"m","type":"response","command":"compact","success":false,"error":"Nothing to compact (session too small)"}"#,
        ),
    ];
    for (sent, want) in cases {
        assert_eq!(rpc.call(sent).await.to_string(), want, "{sent}");
    }
    rpc.write("[1]").await;
    assert_eq!(
        rpc.next().await.to_string(),
        r#"{"type":"response","command":"parse","success":false,"error":"Failed to parse command: expected a JSON object"}"#
    );
    rpc.finish().await;
}
