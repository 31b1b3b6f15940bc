//! RPC mode beyond pi's transcripts: commands answered concurrently as pi answers them (a long
//! `compact` does not hold up `get_state` or `abort`), user `bash` output cleaned of terminal
//! escapes as pi's executor cleans it, and shutdown (stdin EOF, SIGTERM) answering every command
//! in flight before exiting. DECISIONS §22.30–§22.33.

use std::time::{Duration, Instant};

use arbor_test_support::scripts::openai_text;
use arbor_test_support::MockServer;
use serde_json::Value;

use super::agent_e2e::lab;
use super::rpc_replay::{script_reply, small_compaction_settings, Rpc, SUMMARY};

/// Reads lines until the response with `id`, returning it and what came before it.
async fn until_response(rpc: &mut Rpc, id: &str) -> (Value, Vec<Value>) {
    let mut before = Vec::new();
    loop {
        let v = rpc.next().await;
        if v["type"] == "response" && v["id"] == id {
            return (v, before);
        }
        before.push(v);
    }
}

#[tokio::test]
async fn get_state_and_abort_are_answered_while_a_compaction_runs() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    small_compaction_settings(&lab);
    let mut rpc = Rpc::start(&lab, &[]);
    // Long enough turns that the older ones fall outside `keepRecentTokens` and get summarised.
    for i in 0..3 {
        let m = format!("question {i} {}", "about the parser ".repeat(30));
        script_reply(&server, &m, i);
        let r = rpc
            .call(&format!(
                r#"{{"type":"prompt","message":"{m}","id":"p{i}"}}"#
            ))
            .await;
        assert_eq!(r["success"], true, "{r}");
    }
    // The summary request hangs for 20 s: the compaction is still running when the next
    // commands arrive.
    server.push(openai_text(SUMMARY).delay_headers(Duration::from_secs(20)));
    server.push(openai_text(SUMMARY).delay_headers(Duration::from_secs(20)));
    let started = Instant::now();
    rpc.write(r#"{"type":"compact","id":"c"}"#).await;
    loop {
        let v = rpc.next().await;
        assert_ne!(v["id"], "c", "compact answered before it started: {v}");
        if v["type"] == "compaction_start" {
            break;
        }
    }
    rpc.write(r#"{"type":"get_state","id":"s"}"#).await;
    let (state, before) = until_response(&mut rpc, "s").await;
    assert!(
        before.iter().all(|v| v["id"] != "c"),
        "compact answered first"
    );
    assert_eq!(state["data"]["isCompacting"], true, "{state}");
    rpc.write(r#"{"type":"abort","id":"a"}"#).await;
    let mut answered = std::collections::HashMap::new();
    while answered.len() < 2 {
        let v = rpc.next().await;
        if v["type"] == "response" {
            answered.insert(v["id"].as_str().unwrap().to_owned(), v);
        }
    }
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(answered["a"]["success"], true);
    assert_eq!(answered["c"]["success"], false, "{}", answered["c"]);
    // The session is usable after the aborted compaction.
    let s = rpc.call(r#"{"type":"get_state","id":"s2"}"#).await;
    assert_eq!(s["data"]["isCompacting"], false);
    // Five context messages and pi's system message (DECISIONS §31.2).
    assert_eq!(s["data"]["messageCount"], 7);
    rpc.finish().await;
}

#[tokio::test]
async fn quick_commands_are_answered_in_the_order_sent() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let mut rpc = Rpc::start(&lab, &[]);
    let batch: String = (0..20)
        .map(|i| {
            if i % 2 == 0 {
                format!(r#"{{"type":"get_state","id":"q{i}"}}"#)
            } else {
                format!(r#"{{"type":"get_available_thinking_levels","id":"q{i}"}}"#)
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    rpc.write(&batch).await;
    for i in 0..20 {
        let v = rpc.next().await;
        assert_eq!(v["id"], format!("q{i}"), "{v}");
    }
    rpc.finish().await;
}

#[tokio::test]
async fn user_bash_output_is_cleaned_of_terminal_escapes_as_pi_cleans_it() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let mut rpc = Rpc::start(&lab, &[]);
    rpc.write(
        r#"{"type":"bash","command":"printf '\\033[1;31mred\\033[0m \\033]0;title\\007plain\\r\\n50%%\\r100%%\\n\\a'","id":"b"}"#,
    )
    .await;
    let (resp, before) = until_response(&mut rpc, "b").await;
    assert_eq!(resp["success"], true, "{resp}");
    assert_eq!(resp["data"]["output"], "red plain\n50%100%\n");
    assert_eq!(resp["data"]["exitCode"], 0);
    let streamed: String = before
        .iter()
        .filter(|v| v["type"] == "bash_execution_update")
        .map(|v| v["delta"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(streamed, "red plain\n50%100%\n");
    // The recorded bashExecution message holds the cleaned text too.
    let entries = rpc.call(r#"{"type":"get_entries","id":"e"}"#).await;
    let output = entries["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["message"]["role"] == "bashExecution")
        .map(|e| e["message"]["output"].clone())
        .unwrap();
    assert_eq!(output, "red plain\n50%100%\n");
    rpc.finish().await;
}

#[tokio::test]
async fn stdin_eof_answers_a_running_bash_command_before_exiting() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let mut rpc = Rpc::start(&lab, &[]);
    rpc.write(r#"{"type":"bash","command":"echo started; sleep 30; echo never","id":"b"}"#)
        .await;
    loop {
        if rpc.next().await["type"] == "bash_execution_update" {
            break;
        }
    }
    let started = Instant::now();
    let seen = rpc.finish().await;
    assert!(started.elapsed() < Duration::from_secs(10));
    let answer = seen
        .iter()
        .find(|v| v["type"] == "response" && v["id"] == "b")
        .expect("the bash command answered before exit");
    assert_eq!(answer["data"]["cancelled"], true);
    assert_eq!(answer["data"]["output"], "started\n");
    // The cancelled run is in the session file.
    let file = std::fs::read_dir(lab.home.join("sessions"))
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .next()
        .unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains("\"bashExecution\""), "{text}");
}

#[tokio::test]
async fn sigterm_answers_a_running_bash_command_and_exits_143() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let mut rpc = Rpc::start(&lab, &[]);
    rpc.write(r#"{"type":"bash","command":"echo started; sleep 30","id":"b"}"#)
        .await;
    loop {
        if rpc.next().await["type"] == "bash_execution_update" {
            break;
        }
    }
    let pid = nix::unistd::Pid::from_raw(rpc.pid() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let (seen, code) = rpc.drain().await;
    assert_eq!(code, Some(143));
    let answer = seen
        .iter()
        .find(|v| v["type"] == "response" && v["id"] == "b")
        .expect("the bash command answered before exit");
    assert_eq!(answer["data"]["cancelled"], true);
}
