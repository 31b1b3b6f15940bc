//! `arbor session compact` and `arbor session navigate --summarize` with a model: an
//! OpenAI-compatible mock server on 127.0.0.1 (declared in the private ARBOR_HOME's
//! models.json) writes the summaries. Checked: the request the summarizer got, the entries
//! written, that pi (`crates/test-support/pi/context.mjs`, when node and PI_PKG are there) projects
//! the compacted file exactly as `arbor session context --json` does, that a session open for
//! writing elsewhere is refused, and that a failed summary leaves the file untouched.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_agent::message::AgentMessage;
use arbor_agent::session::{CreateOptions, JsonlRepository, Session, SessionRepository};
use arbor_test_support::{sse_data, MockResponse, MockServer};
use serde_json::{json, Value};

use super::{arbor, pi_script, Run};

fn msg(v: Value) -> AgentMessage {
    serde_json::from_value(v).unwrap()
}

fn usage(total: u64) -> Value {
    json!({"input": total - 20, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total,
           "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}})
}

/// A coding session with reads, edits and tool results, written by Arbor's own store.
async fn build_session(dir: &Path, turns: usize) -> PathBuf {
    let repo = JsonlRepository::flat(dir.to_path_buf());
    let storage = repo
        .create(CreateOptions::new("/work/project"))
        .await
        .unwrap();
    let path = storage.path().to_path_buf();
    let session = Session::new(Arc::new(storage));
    session
        .append_model_change("mock", "mock-model")
        .await
        .unwrap();
    let mut ts = 1_800_000_000_000i64;
    for t in 0..turns {
        ts += 10_000;
        let file = format!("src/mod{t}.rs");
        session
            .append_message(msg(json!({"role": "user", "content": format!("Turn {t}: look at {file} and fix the bug. {}", "Details matter. ".repeat(8)), "timestamp": ts})))
            .await
            .unwrap();
        let tool = if t % 2 == 0 { "read" } else { "edit" };
        session
            .append_message(msg(json!({"role": "assistant", "content": [
                {"type": "text", "text": format!("Checking {file}.")},
                {"type": "toolCall", "id": format!("call{t}"), "name": tool, "arguments": {"path": file}}],
                "api": "openai-completions", "provider": "mock", "model": "mock-model",
                "usage": usage(1000 + 100 * t as u64), "stopReason": "toolUse", "timestamp": ts + 1000})))
            .await
            .unwrap();
        session
            .append_message(msg(json!({"role": "toolResult", "toolCallId": format!("call{t}"), "toolName": tool,
                "content": [{"type": "text", "text": format!("fn f{t}() {{}}\n{}", "// line\n".repeat(30))}],
                "isError": false, "timestamp": ts + 2000})))
            .await
            .unwrap();
        session
            .append_message(msg(json!({"role": "assistant", "content": [{"type": "text", "text": format!("Fixed {file}. {}", "Explained. ".repeat(8))}],
                "api": "openai-completions", "provider": "mock", "model": "mock-model",
                "usage": usage(1100 + 100 * t as u64), "stopReason": "stop", "timestamp": ts + 3000})))
            .await
            .unwrap();
    }
    path
}

fn write_models_json(home: &Path, server: &MockServer) {
    let models = json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", server.url()), "api": "openai-completions", "apiKey": "sk-test",
        "models": [{"id": "mock-model", "contextWindow": 64000, "maxTokens": 4096}]
    }}});
    std::fs::write(home.join("models.json"), models.to_string()).unwrap();
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "mock-model",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

/// A streamed chat completion answering `text`.
fn completion(text: &str) -> MockResponse {
    let mut body = sse_data(&[
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": text}), None),
        chunk(json!({}), Some("stop")),
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "mock-model", "choices": [],
               "usage": {"prompt_tokens": 500, "completion_tokens": 40, "total_tokens": 540}}),
    ]);
    body.push_str("data: [DONE]\n\n");
    MockResponse::sse().body(body)
}

/// Runs the binary off the async runtime (the mock server needs it to answer).
async fn run_arbor(home: &Path, args: Vec<String>) -> Run {
    let home = home.to_path_buf();
    tokio::task::spawn_blocking(move || arbor(&home).args(&args).output().unwrap().into())
        .await
        .unwrap()
}

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(std::string::ToString::to_string).collect()
}

fn numbers_as_f64(v: &mut Value) {
    match v {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().and_then(serde_json::Number::from_f64) {
                *n = f;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(numbers_as_f64),
        Value::Object(map) => map.values_mut().for_each(numbers_as_f64),
        _ => {}
    }
}

/// pi's projection of `file` next to `arbor session context --json`, when pi is installed.
async fn assert_pi_projects_like_arbor(home: &Path, file: &Path) -> bool {
    let pkg = std::env::var("PI_PKG").ok().or_else(|| {
        let p = PathBuf::from(std::env::var("HOME").ok()?)
            .join(".cache/arbor-pi-ref/node_modules/@earendil-works/pi-coding-agent");
        p.is_dir().then(|| p.display().to_string())
    });
    let node_ok = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let Some(pkg) = pkg.filter(|_| node_ok) else {
        eprintln!("skipping the pi projection check: node or PI_PKG missing (cargo xtask pi-opens-compacted runs it)");
        return false;
    };
    let out = std::process::Command::new("node")
        .arg(pi_script("context.mjs"))
        .arg(file)
        .env("PI_PKG", pkg)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut pi: Value = serde_json::from_slice(&out.stdout).unwrap();
    pi.as_object_mut().unwrap().remove("file");
    let ours = run_arbor(
        home,
        args(&["session", "context", &file.display().to_string(), "--json"]),
    )
    .await;
    assert_eq!(ours.code, 0, "{}", ours.stderr);
    let mut ours: Value = serde_json::from_str(&ours.stdout).unwrap();
    numbers_as_f64(&mut pi);
    numbers_as_f64(&mut ours);
    assert_eq!(pi["ok"], json!(true), "pi refused Arbor's file: {pi}");
    assert_eq!(ours, pi, "pi projects {} differently", file.display());
    true
}

fn entries_of(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_twice_then_navigate_with_a_summary_and_pi_reads_the_result() {
    let home = tempfile::tempdir().unwrap();
    let server = MockServer::start().await.unwrap();
    write_models_json(home.path(), &server);
    let file = build_session(home.path(), 6).await;
    let f = file.display().to_string();

    // The dry run says what the model will be asked.
    let dry = run_arbor(
        home.path(),
        args(&[
            "session",
            "compact",
            &f,
            "--dry-run",
            "--json",
            "--keep-recent-tokens",
            "400",
        ]),
    )
    .await;
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let plan: Value = serde_json::from_str::<Value>(&dry.stdout).unwrap()["plan"].clone();
    assert_eq!(plan["isSplitTurn"], json!(false), "{plan}");

    server.push(completion(
        "## Goal\nFix the bugs.\n\n## Progress\n### Done\n- [x] mod0..mod3",
    ));
    let out = run_arbor(
        home.path(),
        args(&[
            "session",
            "compact",
            &f,
            "--keep-recent-tokens",
            "400",
            "--json",
        ]),
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("summarizing (summarization) with mock/mock-model"),
        "{}",
        out.stderr
    );
    let request = server.requests().pop().unwrap().json();
    let prompt = request["messages"][1]["content"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| {
            request["messages"][1]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_string()
        });
    assert!(prompt.starts_with(&format!(
        "<conversation>\n{}\n</conversation>\n\n",
        plan["conversation"].as_str().unwrap()
    )));
    assert!(
        request.get("tools").is_none(),
        "the summarizer gets no tools"
    );
    let entry = serde_json::from_str::<Value>(&out.stdout).unwrap()["entry"].clone();
    assert_eq!(entry["type"], "compaction");
    assert_eq!(entry["firstKeptEntryId"], plan["firstKeptEntryId"]);
    assert_eq!(entry["tokensBefore"], plan["tokensBefore"]);
    assert_eq!(
        entry["details"],
        json!({"readFiles": plan["readFiles"], "modifiedFiles": plan["modifiedFiles"]})
    );
    assert_eq!(entry["fromHook"], json!(false));
    assert_eq!(entry["usage"]["totalTokens"], json!(540));
    assert!(entry["summary"]
        .as_str()
        .unwrap()
        .starts_with("## Goal\nFix the bugs."));
    let modified: Vec<&str> = plan["modifiedFiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(!modified.is_empty());
    assert!(entry["summary"].as_str().unwrap().ends_with(&format!(
        "<modified-files>\n{}\n</modified-files>",
        modified.join("\n")
    )));
    let pi_checked = assert_pi_projects_like_arbor(home.path(), &file).await;

    // More work, then a second compaction updates the first summary.
    let session_more = {
        let storage = JsonlRepository::flat(home.path().to_path_buf())
            .open(&f)
            .await
            .unwrap();
        let session = Session::new(Arc::new(storage));
        for t in 0..3 {
            session.append_message(msg(json!({"role": "user", "content": format!("Follow-up {t}. {}", "More words. ".repeat(20)), "timestamp": 1_900_000_000_000i64 + t * 1000}))).await.unwrap();
            session.append_message(msg(json!({"role": "assistant", "content": [{"type": "text", "text": format!("Answer {t}. {}", "Reply words. ".repeat(20))}],
                "api": "openai-completions", "provider": "mock", "model": "mock-model", "usage": usage(3000), "stopReason": "stop", "timestamp": 1_900_000_000_500i64 + t * 1000}))).await.unwrap();
        }
        session.leaf_id().await.unwrap().unwrap()
    };
    server.push(completion("## Goal\nFix the bugs, answer follow-ups."));
    let out = run_arbor(
        home.path(),
        args(&[
            "session",
            "compact",
            &f,
            "--keep-recent-tokens",
            "100",
            "--instructions",
            "list the modules",
        ]),
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("compacted: entry "),
        "{}",
        out.stdout
    );
    let prompt = server.requests().pop().unwrap().json()["messages"][1].to_string();
    assert!(
        prompt.contains("<previous-summary>\\n## Goal\\nFix the bugs."),
        "{prompt}"
    );
    assert!(prompt.contains("Additional focus: list the modules"));
    if pi_checked {
        assert_pi_projects_like_arbor(home.path(), &file).await;
    }

    // Navigate back before the follow-ups with a branch summary.
    let entries = entries_of(&file);
    let first_follow_up = entries
        .iter()
        .find(|e| {
            e["message"]["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("Follow-up 0."))
        })
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    server.push(completion("## Goal\nFollow-ups."));
    let out = run_arbor(
        home.path(),
        args(&[
            "session",
            "navigate",
            &f,
            "--to",
            &first_follow_up,
            "--summarize",
            "--json",
        ]),
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let nav: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(nav["editorText"]
        .as_str()
        .unwrap()
        .starts_with("Follow-up 0."));
    let entries = entries_of(&file);
    let summary = entries.last().unwrap();
    assert_eq!(summary["type"], "branch_summary");
    assert_eq!(nav["summaryEntryId"], summary["id"]);
    assert_eq!(nav["leafId"], summary["id"]);
    // fromId: the leaf navigated away from (the second compaction).
    let second_compaction = entries
        .iter()
        .rev()
        .find(|e| e["type"] == "compaction")
        .unwrap();
    assert_eq!(summary["fromId"], second_compaction["id"]);
    assert_ne!(summary["fromId"], json!(session_more));
    assert!(summary["summary"].as_str().unwrap().starts_with("The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n## Goal\nFollow-ups."));
    if pi_checked {
        assert_pi_projects_like_arbor(home.path(), &file).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_open_for_writing_elsewhere_is_refused_and_failures_change_nothing() {
    let home = tempfile::tempdir().unwrap();
    let server = MockServer::start().await.unwrap();
    write_models_json(home.path(), &server);
    let file = build_session(home.path(), 4).await;
    let f = file.display().to_string();
    let before = std::fs::read(&file).unwrap();

    let writer = JsonlRepository::flat(home.path().to_path_buf())
        .open(&f)
        .await
        .unwrap();
    for cmd in [
        args(&["session", "compact", &f, "--keep-recent-tokens", "100"]),
        args(&[
            "session",
            "navigate",
            &f,
            "--to",
            "nonexistent-but-locked-first",
            "--summarize",
        ]),
    ] {
        let out = run_arbor(home.path(), cmd).await;
        assert_eq!(out.code, 1);
        assert!(
            out.stderr.contains("open for writing by another process"),
            "{}",
            out.stderr
        );
    }
    drop(writer);
    assert!(server.requests().is_empty());

    server.push(MockResponse::json(
        400,
        &json!({"error": {"message": "model refuses"}}),
    ));
    let out = run_arbor(
        home.path(),
        args(&["session", "compact", &f, "--keep-recent-tokens", "100"]),
    )
    .await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("Summarization failed: "),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("model refuses"), "{}", out.stderr);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "a failed summary writes nothing"
    );

    let out = run_arbor(
        home.path(),
        args(&[
            "session",
            "compact",
            &f,
            "--keep-recent-tokens",
            "100",
            "--model",
            "mock/unknown",
        ]),
    )
    .await;
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("--model mock/unknown"),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);
}
