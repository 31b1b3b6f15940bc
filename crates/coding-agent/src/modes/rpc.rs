//! RPC mode (coding-agent.md §10.5): one JSON command per line on stdin (LF framing, a CR before
//! the LF dropped), responses `{id?, type:"response", command, success, data?|error}` and the
//! JSON-mode events on stdout. `prompt` answers once the run has started; the run continues as
//! events. stdin EOF or SIGTERM/SIGHUP shut down in order (abort, flush, exit).

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use arbor_agent::context::projection::ContextOptions;
use arbor_agent::harness::{Phase, QueueMode};
use arbor_ai::{ImageContent, Message, ThinkingLevel};
use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::events::PiEvents;
use super::json::emit_line;
use crate::error::CliError;
use crate::startup::App;

/// Commands of pi's table that Arbor does not carry out yet; they get a clear error response.
pub const UNSUPPORTED: [&str; 10] = [
    "new_session",
    "switch_session",
    "fork",
    "clone",
    "set_auto_compaction",
    "set_auto_retry",
    "abort_retry",
    "abort_bash",
    "cycle_model",
    "clear_queue",
];

fn respond(id: Option<&Value>, command: &str, result: Result<Option<Value>, String>) -> Value {
    let mut obj = Map::new();
    if let Some(id) = id {
        obj.insert("id".into(), id.clone());
    }
    obj.insert("type".into(), json!("response"));
    obj.insert("command".into(), json!(command));
    match result {
        Ok(data) => {
            obj.insert("success".into(), json!(true));
            if let Some(d) = data {
                obj.insert("data".into(), d);
            }
        }
        Err(e) => {
            obj.insert("success".into(), json!(false));
            obj.insert("error".into(), json!(e));
        }
    }
    Value::Object(obj)
}

fn str_field<'a>(cmd: &'a Value, name: &str) -> Result<&'a str, String> {
    cmd.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("Missing required field: {name}"))
}

fn images_of(cmd: &Value) -> Vec<ImageContent> {
    cmd.get("images")
        .and_then(|v| serde_json::from_value::<Vec<ImageContent>>(v.clone()).ok())
        .unwrap_or_default()
}

struct Rpc {
    app: App,
    /// The running prompt, if any.
    running: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Rpc {
    fn busy(&self) -> bool {
        self.app.harness.phase() != Phase::Idle
            || self
                .running
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .as_ref()
                .is_some_and(|h| !h.is_finished())
    }

    async fn handle(self: &Arc<Self>, cmd: &Value, kind: &str) -> Result<Option<Value>, String> {
        let h = &self.app.harness;
        match kind {
            "prompt" => {
                let message = str_field(cmd, "message")?.to_owned();
                let images = images_of(cmd);
                if self.busy() {
                    return match cmd.get("streamingBehavior").and_then(Value::as_str) {
                        Some("steer") => h.steer(&message, &images).map(|_| Some(json!({"disposition": "queued"}))).map_err(|e| e.to_string()),
                        Some("followUp") => h.follow_up(&message, &images).map(|_| Some(json!({"disposition": "queued"}))).map_err(|e| e.to_string()),
                        _ => Err("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.".into()),
                    };
                }
                let harness = h.clone();
                let settings = self.app.settings.clone();
                let task = tokio::spawn(async move {
                    let observer = super::json::EventObserver;
                    if let Err(e) =
                        crate::policy::prompt(&harness, &settings, &message, &images, &observer)
                            .await
                    {
                        emit_line(
                            &json!({"type": "extension_error", "extensionPath": "", "event": "prompt", "error": e.to_string()}),
                        );
                    }
                });
                *self
                    .running
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(task);
                Ok(Some(json!({"disposition": "started"})))
            }
            "steer" | "follow_up" => {
                let message = str_field(cmd, "message")?;
                let images = images_of(cmd);
                let r = if kind == "steer" {
                    h.steer(message, &images)
                } else {
                    h.follow_up(message, &images)
                };
                r.map(|_| Some(json!({"disposition": "queued"})))
                    .map_err(|e| e.to_string())
            }
            "abort" => {
                h.abort().await;
                let task = self
                    .running
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                if let Some(t) = task {
                    let _ = t.await;
                }
                Ok(None)
            }
            "get_state" => {
                let (steer, follow, _) = h.queues();
                let name = self.app.session.name().await.map_err(|e| e.to_string())?;
                let ctx = self
                    .app
                    .session
                    .build_context(&ContextOptions::default())
                    .await
                    .map_err(|e| e.to_string())?;
                let mut data = json!({
                    "model": h.model(),
                    "thinkingLevel": h.thinking_level().as_str(),
                    "isStreaming": self.busy(),
                    "isCompacting": h.phase() == Phase::Compaction,
                    "steeringMode": "one-at-a-time",
                    "followUpMode": "one-at-a-time",
                    "sessionFile": self.app.session_file.as_ref().map(|p| p.display().to_string()),
                    "sessionId": self.app.header.id,
                    "autoCompactionEnabled": self.app.settings.compaction().enabled,
                    "messageCount": ctx.messages.len(),
                    "pendingMessageCount": steer.len() + follow.len(),
                });
                if let Some(n) = name {
                    data["sessionName"] = json!(n);
                }
                Ok(Some(data))
            }
            "get_messages" => {
                let ctx = self
                    .app
                    .session
                    .build_context(&ContextOptions::default())
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(Some(json!({"messages": &*ctx.messages})))
            }
            "set_model" => {
                let provider = str_field(cmd, "provider")?;
                let model_id = str_field(cmd, "modelId")?;
                let model = self
                    .app
                    .registry
                    .get(provider, model_id)
                    .cloned()
                    .ok_or_else(|| format!("Model not found: {provider}/{model_id}"))?;
                h.set_model(model.clone())
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(Some(json!(model)))
            }
            "get_available_models" => {
                let models: Vec<&arbor_ai::Model> = self
                    .app
                    .registry
                    .models()
                    .filter(|m| {
                        self.app.provider.api_key(&m.provider).is_some()
                            || m.base_url.contains("://127.0.0.1")
                            || m.base_url.contains("://localhost")
                    })
                    .collect();
                Ok(Some(json!({"models": models})))
            }
            "set_thinking_level" => {
                let level = str_field(cmd, "level")?;
                let level = ThinkingLevel::parse(level)
                    .ok_or_else(|| format!("Invalid thinking level: {level}"))?;
                h.set_thinking_level(level)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(None)
            }
            "get_available_thinking_levels" => Ok(Some(json!({"levels": levels(&h.model())}))),
            "cycle_thinking_level" => {
                let all = levels(&h.model());
                if all.len() <= 1 {
                    return Ok(Some(Value::Null));
                }
                let cur = h.thinking_level().as_str();
                let i = all
                    .iter()
                    .position(|l| *l == cur)
                    .map_or(0, |i| (i + 1) % all.len());
                let next = ThinkingLevel::parse(all[i]).unwrap_or(ThinkingLevel::Off);
                h.set_thinking_level(next)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(Some(json!({"level": all[i]})))
            }
            "set_steering_mode" | "set_follow_up_mode" => {
                let mode = match str_field(cmd, "mode")? {
                    "all" => QueueMode::All,
                    "one-at-a-time" => QueueMode::OneAtATime,
                    other => return Err(format!("Invalid mode: {other}")),
                };
                if kind == "set_steering_mode" {
                    h.set_steering_mode(mode);
                } else {
                    h.set_follow_up_mode(mode);
                }
                Ok(None)
            }
            "get_session_stats" => self.stats().await,
            "get_entries" => {
                let entries = self
                    .app
                    .session
                    .entries()
                    .await
                    .map_err(|e| e.to_string())?;
                let start = match cmd.get("since").and_then(Value::as_str) {
                    Some(since) => entries
                        .iter()
                        .position(|e| e.id == since)
                        .map(|i| i + 1)
                        .ok_or_else(|| format!("Entry not found: {since}"))?,
                    None => 0,
                };
                let leaf = self
                    .app
                    .session
                    .leaf_id()
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(Some(json!({"entries": &entries[start..], "leafId": leaf})))
            }
            "get_tree" => {
                let tree = self.app.session.tree().await.map_err(|e| e.to_string())?;
                fn node(t: &arbor_agent::session::SessionTree, i: usize) -> Value {
                    let n = &t.nodes[i];
                    let children: Vec<Value> = n.children.iter().map(|&c| node(t, c)).collect();
                    let mut v = json!({"entry": n.entry, "children": children});
                    if let Some(l) = &n.label {
                        v["label"] = json!(l);
                    }
                    v
                }
                let roots: Vec<Value> = tree.roots.iter().map(|&r| node(&tree, r)).collect();
                Ok(Some(json!({"tree": roots, "leafId": tree.leaf_id})))
            }
            "get_last_assistant_text" => {
                let ctx = self
                    .app
                    .session
                    .build_context(&ContextOptions::default())
                    .await
                    .map_err(|e| e.to_string())?;
                let text = ctx.messages.iter().rev().find_map(|m| match m {
                    arbor_agent::message::AgentMessage::Llm(Message::Assistant(a)) => {
                        Some(a.text())
                    }
                    _ => None,
                });
                Ok(Some(json!({"text": text})))
            }
            "get_fork_messages" => {
                let branch = self
                    .app
                    .session
                    .branch(None)
                    .await
                    .map_err(|e| e.to_string())?;
                let mut out = Vec::new();
                for e in &branch {
                    let v = serde_json::to_value(e).unwrap_or(Value::Null);
                    if v.get("type") == Some(&json!("message"))
                        && v.pointer("/message/role") == Some(&json!("user"))
                    {
                        let text = match v.pointer("/message/content") {
                            Some(Value::String(s)) => s.clone(),
                            Some(Value::Array(b)) => b
                                .iter()
                                .filter_map(|x| x.get("text").and_then(Value::as_str))
                                .collect::<Vec<_>>()
                                .join(""),
                            _ => String::new(),
                        };
                        out.push(json!({"entryId": e.id, "text": text}));
                    }
                }
                Ok(Some(json!({"messages": out})))
            }
            "set_session_name" => {
                let name = str_field(cmd, "name")?.trim();
                if name.is_empty() {
                    return Err("Session name cannot be empty".into());
                }
                self.app
                    .session
                    .append_session_name(name)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(None)
            }
            "get_commands" => Ok(Some(json!({"commands": []}))),
            "compact" => {
                if self.busy() {
                    return Err("Agent is busy".into());
                }
                let instructions = cmd.get("customInstructions").and_then(Value::as_str);
                let entry = h.compact(instructions).await.map_err(|e| e.to_string())?;
                let v = serde_json::to_value(&entry).map_err(|e| e.to_string())?;
                Ok(Some(json!({
                    "summary": v.get("summary"),
                    "firstKeptEntryId": v.get("firstKeptEntryId"),
                    "tokensBefore": v.get("tokensBefore"),
                    "details": v.get("details"),
                })))
            }
            "bash" => {
                let command = str_field(cmd, "command")?;
                let env = crate::tools::ToolEnv::new(
                    self.app.cwd.clone(),
                    crate::tools::ToolSettings::default(),
                );
                let r = crate::tools::run(
                    "bash",
                    &env,
                    json!({"command": command}),
                    tokio_util::sync::CancellationToken::new(),
                    None,
                )
                .await;
                let (text, details, code) = match r {
                    Ok(o) => (
                        o.content
                            .iter()
                            .filter_map(|b| b.as_text())
                            .collect::<String>(),
                        o.details,
                        0,
                    ),
                    Err(crate::tools::ToolError::Failed { message, details }) => {
                        let code = message
                            .rsplit_once("Command exited with code ")
                            .and_then(|(_, c)| c.trim().parse::<i64>().ok())
                            .unwrap_or(1);
                        let out = message
                            .rsplit_once("\n\nCommand exited with code ")
                            .map_or(message.clone(), |(o, _)| o.to_owned());
                        (out, details, code)
                    }
                    Err(crate::tools::ToolError::Aborted(m)) => (m, None, 1),
                };
                let output = if text == "(no output)" {
                    String::new()
                } else {
                    text
                };
                let mut data = json!({"output": output, "exitCode": code, "cancelled": false, "truncated": details.is_some()});
                if let Some(p) = details.as_ref().and_then(|d| d.get("fullOutputPath")) {
                    data["fullOutputPath"] = p.clone();
                }
                Ok(Some(data))
            }
            "export_html" => {
                let Some(file) = &self.app.session_file else {
                    return Err("Cannot export: the session is not stored (--no-session)".into());
                };
                let out = cmd
                    .get("outputPath")
                    .and_then(Value::as_str)
                    .map(std::path::PathBuf::from);
                let path = crate::export::export(file, out.as_deref())
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(Some(json!({"path": path.display().to_string()})))
            }
            other if UNSUPPORTED.contains(&other) => {
                Err(format!("{other} is not supported by arbor yet"))
            }
            other => Err(format!("Unknown command: {other}")),
        }
    }

    async fn stats(&self) -> Result<Option<Value>, String> {
        let entries = self
            .app
            .session
            .entries()
            .await
            .map_err(|e| e.to_string())?;
        let (mut users, mut assistants, mut calls, mut results, mut total) =
            (0u64, 0u64, 0u64, 0u64, 0u64);
        let (mut input, mut output, mut cr, mut cw, mut cost) = (0u64, 0u64, 0u64, 0u64, 0f64);
        for e in &entries {
            let v = serde_json::to_value(e).unwrap_or(Value::Null);
            let Some(m) = v
                .get("message")
                .filter(|_| v.get("type") == Some(&json!("message")))
            else {
                continue;
            };
            total += 1;
            match m.get("role").and_then(Value::as_str) {
                Some("user") => users += 1,
                Some("assistant") => {
                    assistants += 1;
                    calls += m.get("content").and_then(Value::as_array).map_or(0, |b| {
                        b.iter()
                            .filter(|x| x.get("type") == Some(&json!("toolCall")))
                            .count() as u64
                    });
                    let u = |k: &str| {
                        m.pointer(&format!("/usage/{k}"))
                            .and_then(Value::as_u64)
                            .unwrap_or(0)
                    };
                    input += u("input");
                    output += u("output");
                    cr += u("cacheRead");
                    cw += u("cacheWrite");
                    cost += m
                        .pointer("/usage/cost/total")
                        .and_then(Value::as_f64)
                        .unwrap_or(0.0);
                }
                Some("toolResult") => results += 1,
                _ => {}
            }
        }
        Ok(Some(json!({
            "sessionFile": self.app.session_file.as_ref().map(|p| p.display().to_string()),
            "sessionId": self.app.header.id,
            "userMessages": users, "assistantMessages": assistants, "toolCalls": calls, "toolResults": results,
            "totalMessages": total,
            "tokens": {"input": input, "output": output, "cacheRead": cr, "cacheWrite": cw, "total": input + output + cr + cw},
            "cost": cost,
        })))
    }
}

fn levels(model: &arbor_ai::Model) -> Vec<&'static str> {
    if model.reasoning {
        vec!["off", "minimal", "low", "medium", "high"]
    } else {
        vec!["off"]
    }
}

/// Answers one input line (already without its LF); `None` for a blank line.
pub async fn answer_line(rpc: &Arc<RpcHandle>, line: &str) -> Option<Value> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.trim().is_empty() {
        return None;
    }
    let cmd: Value = match serde_json::from_str(line) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            return Some(respond(
                None,
                "parse",
                Err("Failed to parse command: expected a JSON object".into()),
            ))
        }
        Err(e) => {
            return Some(respond(
                None,
                "parse",
                Err(format!("Failed to parse command: {e}")),
            ))
        }
    };
    let id = cmd.get("id").cloned();
    let Some(kind) = cmd.get("type").and_then(Value::as_str).map(str::to_owned) else {
        return Some(respond(
            id.as_ref(),
            "unknown",
            Err("Command has no type".into()),
        ));
    };
    let result = rpc.0.handle(&cmd, &kind).await;
    Some(respond(id.as_ref(), &kind, result))
}

/// The RPC state shared by the reader loop.
pub struct RpcHandle(Arc<Rpc>);

pub async fn run(app: App) -> Result<ExitCode, CliError> {
    let conv = Arc::new(Mutex::new(PiEvents::default()));
    app.harness.subscribe(move |e| {
        let lines = conv
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .convert(e);
        for l in lines {
            emit_line(&l);
        }
    });
    let rpc = Arc::new(RpcHandle(Arc::new(Rpc {
        app,
        running: Mutex::new(None),
    })));
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let signal = super::shutdown_signal();
    tokio::pin!(signal);
    let code = loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(l)) => {
                    if let Some(resp) = answer_line(&rpc, &l).await {
                        emit_line(&resp);
                    }
                }
                Ok(None) | Err(_) => break 0u8,
            },
            c = &mut signal => break c,
        }
    };
    // Orderly shutdown: stop the run, let it write its last entries.
    let inner = &rpc.0;
    inner.app.harness.abort().await;
    let task = inner
        .running
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    if let Some(t) = task {
        let _ = t.await;
    }
    Ok(ExitCode::from(code))
}
