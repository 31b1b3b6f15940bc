//! RPC mode (coding-agent.md §10.5): one JSON command per line on stdin (LF framing, a CR before
//! the LF dropped), responses `{id?, type:"response", command, success, data?|error}` and the
//! JSON-mode events on stdout. `prompt` answers once the run has started; the run continues as
//! events. stdin EOF or SIGTERM/SIGHUP shut down in order (abort, answer what is in flight,
//! exit).
//!
//! Every command is answered concurrently, as in pi, so `abort`, `abort_bash`, `get_state` or
//! `steer` reach a `compact`, `bash` or run in progress. Session commands (`new_session`,
//! `switch_session`, `fork`, `clone`) build the app again over the new session with the same
//! flags ([`crate::startup::restart`]); the commands sent after one wait for it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, RwLock};

use arbor_agent::context::projection::ContextOptions;
use arbor_agent::harness::{Phase, QueueMode, SubscriptionId};
use arbor_agent::message::AgentMessage;
use arbor_agent::session::ForkPosition;
use arbor_ai::{ImageContent, Message, ThinkingLevel};
use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::events::PiEvents;
use super::json::emit_line;
use crate::cli::AgentArgs;
use crate::error::CliError;
use crate::policy::PolicyControl;
use crate::startup::{App, Restart, SessionChoice};

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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn queue_mode_name(m: QueueMode) -> &'static str {
    match m {
        QueueMode::All => "all",
        QueueMode::OneAtATime => "one-at-a-time",
    }
}

/// A queued message's text (what `clear_queue` hands back for the client to restore).
fn message_text(m: &AgentMessage) -> String {
    let v = serde_json::to_value(m).unwrap_or(Value::Null);
    content_text(v.get("content"))
}

/// The text of a message `content` (a string, or the text blocks joined).
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(b)) => b
            .iter()
            .filter_map(|x| x.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

struct Rpc {
    /// The flags the process started with; session commands reuse them.
    args: AgentArgs,
    session_dir: Option<PathBuf>,
    /// The app over the current session (replaced by the session commands).
    app: RwLock<Arc<App>>,
    /// The harness subscription that writes events, moved to each new harness.
    subscription: Mutex<Option<SubscriptionId>>,
    /// The running prompt, if any.
    running: Mutex<Option<tokio::task::JoinHandle<()>>>,
    control: Arc<PolicyControl>,
    /// Cancellation of each running `bash` command (`abort_bash` cancels them all).
    bash: Mutex<Vec<CancellationToken>>,
    /// Held exclusively while a session command replaces the app and shared by the other
    /// commands, so a command sent after `new_session` (say) acts on the new session.
    /// DECISIONS §22.32.
    gate: tokio::sync::RwLock<()>,
}

/// The commands that replace the session (and so the app every other command acts on).
const SESSION_COMMANDS: [&str; 4] = ["new_session", "switch_session", "fork", "clone"];

/// One command being answered; the loop polls every one of them beside stdin.
type InFlight = std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>;

fn answer(rpc: &Arc<Rpc>, line: String) -> InFlight {
    let rpc = rpc.clone();
    Box::pin(async move {
        if let Some(resp) = answer_line(&rpc, &line).await {
            emit_line(&resp);
        }
    })
}

impl Rpc {
    fn app(&self) -> Arc<App> {
        self.app
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Writes the new harness's events to stdout (pi's shapes), dropping the old subscription.
    fn attach(&self, app: &App) {
        let conv = Arc::new(Mutex::new(PiEvents::default()));
        let id = app.harness.subscribe(move |e| {
            for l in lock(&conv).convert(e) {
                emit_line(&l);
            }
        });
        *lock(&self.subscription) = Some(id);
    }

    fn busy(&self) -> bool {
        self.app().harness.phase() != Phase::Idle
            || lock(&self.running)
                .as_ref()
                .is_some_and(|h| !h.is_finished())
    }

    /// Stops the run (if any) and waits for it to write its last entries.
    async fn stop_run(&self) {
        self.app().harness.abort().await;
        let task = lock(&self.running).take();
        if let Some(t) = task {
            let _ = t.await;
        }
    }

    /// Replaces the session: the run is stopped first, then the app is built again over the
    /// chosen session with the current model and thinking level (a reopened or forked session
    /// restores its own). The old session is closed once nothing holds it. DECISIONS §22.13.
    async fn replace_session(&self, choice: SessionChoice) -> Result<(), String> {
        self.stop_run().await;
        // A running bash command belongs to the old session (its result is recorded there).
        for t in lock(&self.bash).drain(..) {
            t.cancel();
        }
        let old = self.app();
        let restart = Restart {
            choice,
            model: old.harness.model(),
            thinking: old.harness.thinking_level(),
        };
        let (steering, follow_up) = old.harness.queue_modes();
        // The file already open would only be found locked by ourselves: nothing to switch.
        if let SessionChoice::Open(path) = &restart.choice {
            if old.session_file.as_deref() == Some(path.as_path()) {
                return Ok(());
            }
        }
        let app = crate::startup::restart(&self.args, self.session_dir.as_deref(), restart)
            .await
            .map_err(|e| e.to_string())?;
        app.harness.set_steering_mode(steering);
        app.harness.set_follow_up_mode(follow_up);
        if let Some(id) = lock(&self.subscription).take() {
            old.harness.unsubscribe(id);
        }
        self.attach(&app);
        *self
            .app
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(app);
        Ok(())
    }

    fn stored_file(&self, what: &str) -> Result<PathBuf, String> {
        self.app()
            .session_file
            .clone()
            .ok_or_else(|| format!("Cannot {what}: the session is not stored (--no-session)"))
    }

    async fn handle(self: &Arc<Self>, cmd: &Value, kind: &str) -> Result<Option<Value>, String> {
        let app = self.app();
        let h = &app.harness;
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
                let settings = app.settings.clone();
                let control = self.control.clone();
                let task = tokio::spawn(async move {
                    let observer = super::json::EventObserver;
                    if let Err(e) = crate::policy::prompt_controlled(
                        &harness, &settings, &message, &images, &observer, &control,
                    )
                    .await
                    {
                        emit_line(
                            &json!({"type": "extension_error", "extensionPath": "", "event": "prompt", "error": e.to_string()}),
                        );
                    }
                });
                *lock(&self.running) = Some(task);
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
                self.stop_run().await;
                Ok(None)
            }
            "clear_queue" => {
                let (steering, follow_up) = h.clear_queues();
                let texts = |q: &[AgentMessage]| q.iter().map(message_text).collect::<Vec<_>>();
                Ok(Some(
                    json!({"steering": texts(&steering), "followUp": texts(&follow_up)}),
                ))
            }
            "new_session" => {
                let parent = cmd
                    .get("parentSession")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                self.replace_session(SessionChoice::New { parent }).await?;
                Ok(Some(json!({"cancelled": false})))
            }
            "switch_session" => {
                let path = str_field(cmd, "sessionPath")?;
                let path = crate::tools::path::resolve(path, &app.cwd);
                if !path.is_file() {
                    return Err(format!("Session file not found: {}", path.display()));
                }
                self.replace_session(SessionChoice::Open(path)).await?;
                Ok(Some(json!({"cancelled": false})))
            }
            "fork" => {
                let entry_id = str_field(cmd, "entryId")?.to_owned();
                let source = self.stored_file("fork")?;
                let entry = app
                    .session
                    .get_entry(&entry_id)
                    .await
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| format!("Entry not found: {entry_id}"))?;
                let text = user_text(&entry)
                    .ok_or_else(|| format!("Entry {entry_id} is not a user message"))?;
                self.replace_session(SessionChoice::Fork {
                    source,
                    entry_id,
                    position: ForkPosition::Before,
                })
                .await?;
                Ok(Some(json!({"text": text, "cancelled": false})))
            }
            "clone" => {
                let leaf = app
                    .session
                    .leaf_id()
                    .await
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| "Cannot clone session: no current entry selected".to_owned())?;
                let source = self.stored_file("clone")?;
                self.replace_session(SessionChoice::Fork {
                    source,
                    entry_id: leaf,
                    position: ForkPosition::At,
                })
                .await?;
                Ok(Some(json!({"cancelled": false})))
            }
            "set_auto_compaction" | "set_auto_retry" => {
                let on = cmd
                    .get("enabled")
                    .and_then(Value::as_bool)
                    .ok_or_else(|| "Missing required field: enabled".to_owned())?;
                if kind == "set_auto_compaction" {
                    self.control.set_auto_compaction(on);
                } else {
                    self.control.set_auto_retry(on);
                }
                Ok(None)
            }
            "abort_retry" => {
                self.control.abort_retry();
                Ok(None)
            }
            "abort_bash" => {
                for t in lock(&self.bash).drain(..) {
                    t.cancel();
                }
                Ok(None)
            }
            "cycle_model" => self.cycle_model(&app).await,
            "get_state" => {
                let (steer, follow, _) = h.queues();
                let (steering_mode, follow_up_mode) = h.queue_modes();
                let name = app.session.name().await.map_err(|e| e.to_string())?;
                let ctx = app
                    .session
                    .build_context(&ContextOptions::default())
                    .await
                    .map_err(|e| e.to_string())?;
                let mut data = json!({
                    "model": h.model(),
                    "thinkingLevel": h.thinking_level().as_str(),
                    "isStreaming": self.busy(),
                    "isCompacting": h.phase() == Phase::Compaction,
                    "steeringMode": queue_mode_name(steering_mode),
                    "followUpMode": queue_mode_name(follow_up_mode),
                    "sessionFile": app.session_file.as_ref().map(|p| p.display().to_string()),
                    "sessionId": app.header.id,
                    "autoCompactionEnabled": self.control.auto_compaction(),
                    "messageCount": ctx.messages.len(),
                    "pendingMessageCount": steer.len() + follow.len(),
                });
                if let Some(n) = name {
                    data["sessionName"] = json!(n);
                }
                Ok(Some(data))
            }
            "get_messages" => {
                let ctx = app
                    .session
                    .build_context(&ContextOptions::default())
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(Some(json!({"messages": &*ctx.messages})))
            }
            "set_model" => {
                let provider = str_field(cmd, "provider")?;
                let model_id = str_field(cmd, "modelId")?;
                let model = app
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
                let models: Vec<&arbor_ai::Model> = app
                    .registry
                    .models()
                    .filter(|m| {
                        app.provider.api_key(&m.provider).is_some()
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
                let entries = app.session.entries().await.map_err(|e| e.to_string())?;
                let start = match cmd.get("since").and_then(Value::as_str) {
                    Some(since) => entries
                        .iter()
                        .position(|e| e.id == since)
                        .map(|i| i + 1)
                        .ok_or_else(|| format!("Entry not found: {since}"))?,
                    None => 0,
                };
                let leaf = app.session.leaf_id().await.map_err(|e| e.to_string())?;
                Ok(Some(json!({"entries": &entries[start..], "leafId": leaf})))
            }
            "get_tree" => {
                let tree = app.session.tree().await.map_err(|e| e.to_string())?;
                // The tree's nodes hold row summaries; the reply carries whole entries.
                let entries = app.session.entries().await.map_err(|e| e.to_string())?;
                type ById<'e> =
                    std::collections::HashMap<&'e str, &'e arbor_agent::session::SessionEntry>;
                let mut by_id: ById<'_> = Default::default();
                for e in &entries {
                    by_id.entry(e.id.as_str()).or_insert(e);
                }
                fn node(
                    t: &arbor_agent::session::SessionTree,
                    by_id: &ById<'_>,
                    i: usize,
                ) -> Value {
                    let n = &t.nodes[i];
                    let children: Vec<Value> =
                        t.children(i).iter().map(|&c| node(t, by_id, c)).collect();
                    let mut v = json!({"entry": by_id.get(n.id()), "children": children});
                    if let Some(l) = &n.label {
                        v["label"] = json!(l);
                    }
                    v
                }
                let roots: Vec<Value> =
                    tree.roots.iter().map(|&r| node(&tree, &by_id, r)).collect();
                Ok(Some(json!({"tree": roots, "leafId": tree.leaf_id})))
            }
            "get_last_assistant_text" => {
                let ctx = app
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
                let branch = app.session.branch(None).await.map_err(|e| e.to_string())?;
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
                app.session
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
                let mut data = json!({
                    "summary": v.get("summary"),
                    "firstKeptEntryId": v.get("firstKeptEntryId"),
                    "tokensBefore": v.get("tokensBefore"),
                });
                let ctx = app
                    .session
                    .build_context(&ContextOptions::default())
                    .await
                    .map_err(|e| e.to_string())?;
                data["estimatedTokensAfter"] =
                    json!(arbor_agent::compaction::estimate_context_tokens(&ctx.messages).tokens);
                if let Some(u) = v.get("usage") {
                    data["usage"] = u.clone();
                }
                data["details"] = v.get("details").cloned().unwrap_or(Value::Null);
                Ok(Some(data))
            }
            // Answered by `answer_line`, outside the session gate.
            "bash" => Err("bash is answered outside the command table".into()),
            "export_html" => {
                let Some(file) = &app.session_file else {
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
            other => Err(format!("Unknown command: {other}")),
        }
    }

    /// pi's `cycle_model`: the next model of the `--models` scope (or of every model that has
    /// credentials), wrapping around; `null` when there is nothing to switch to. The thinking
    /// level is the scope entry's, else the current one (`off` for a model without reasoning).
    async fn cycle_model(&self, app: &App) -> Result<Option<Value>, String> {
        let available: Vec<arbor_ai::Model> = app
            .registry
            .models()
            .filter(|m| usable(app, m))
            .cloned()
            .collect();
        let scoped = !app.scope.is_empty();
        let pool: Vec<(arbor_ai::Model, Option<ThinkingLevel>)> = if scoped {
            app.scope
                .iter()
                .filter(|s| {
                    available
                        .iter()
                        .any(|m| m.provider == s.model.provider && m.id == s.model.id)
                })
                .map(|s| (s.model.clone(), s.thinking))
                .collect()
        } else {
            available.into_iter().map(|m| (m, None)).collect()
        };
        let current = app.harness.model();
        let at = pool
            .iter()
            .position(|(m, _)| m.provider == current.provider && m.id == current.id);
        let next = match (at, pool.len()) {
            (_, 0) | (Some(_), 1) => return Ok(Some(Value::Null)),
            (None, _) => 0,
            (Some(i), n) => (i + 1) % n,
        };
        let (model, level) = pool[next].clone();
        app.harness
            .set_model(model.clone())
            .await
            .map_err(|e| e.to_string())?;
        let wanted = level.unwrap_or_else(|| app.harness.thinking_level());
        let level = if model.reasoning {
            wanted
        } else {
            ThinkingLevel::Off
        };
        if level != app.harness.thinking_level() {
            app.harness
                .set_thinking_level(level)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(Some(json!({
            "model": model,
            "thinkingLevel": level.as_str(),
            "isScoped": scoped,
        })))
    }

    async fn stats(&self) -> Result<Option<Value>, String> {
        let app = self.app();
        let entries = app.session.entries().await.map_err(|e| e.to_string())?;
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
            "sessionFile": app.session_file.as_ref().map(|p| p.display().to_string()),
            "sessionId": app.header.id,
            "userMessages": users, "assistantMessages": assistants, "toolCalls": calls, "toolResults": results,
            "totalMessages": total,
            "tokens": {"input": input, "output": output, "cacheRead": cr, "cacheWrite": cw, "total": input + output + cr + cw},
            "cost": cost,
            "contextUsage": context_usage(&app).await?,
        })))
    }
}

/// Whether a model can be used now: its provider has credentials, or it is a local server.
fn usable(app: &App, m: &arbor_ai::Model) -> bool {
    app.provider.api_key(&m.provider).is_some()
        || m.base_url.contains("://127.0.0.1")
        || m.base_url.contains("://localhost")
}

/// The text of a user-message entry (`fork` hands it back for editing).
fn user_text(entry: &arbor_agent::session::SessionEntry) -> Option<String> {
    let v = serde_json::to_value(entry).ok()?;
    if v.get("type") != Some(&json!("message"))
        || v.pointer("/message/role") != Some(&json!("user"))
    {
        return None;
    }
    Some(content_text(v.pointer("/message/content")))
}

/// `contextUsage` of `get_session_stats`: the projected context's size estimate against the
/// model's window; `tokens`/`percent` are null after a compaction until a reply reports usage.
async fn context_usage(app: &App) -> Result<Value, String> {
    let window = app.harness.model().context_window;
    if window == 0 {
        return Ok(Value::Null);
    }
    let ctx = app
        .session
        .build_context(&ContextOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    let est = arbor_agent::compaction::estimate_context_tokens(&ctx.messages);
    let summary_at = ctx
        .messages
        .iter()
        .rposition(|m| matches!(m, AgentMessage::CompactionSummary(_)));
    if let Some(at) = summary_at {
        if est.last_usage_index.is_none_or(|u| u < at) {
            return Ok(json!({"tokens": null, "contextWindow": window, "percent": null}));
        }
    }
    Ok(json!({
        "tokens": est.tokens,
        "contextWindow": window,
        "percent": est.tokens as f64 / window as f64 * 100.0,
    }))
}

/// Runs the `bash` command (pi's `executeBash`): output streamed as `bash_execution_update`
/// deltas, the result recorded as a `bashExecution` message (queued while a run is going).
async fn run_bash(
    app: Arc<App>,
    cmd: Value,
    cancel: CancellationToken,
) -> Result<Option<Value>, String> {
    let command = str_field(&cmd, "command")?.to_owned();
    let exclude = cmd
        .get("excludeFromContext")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let settings = crate::tools::ToolSettings {
        shell_path: app.settings.shell_path(),
        shell_command_prefix: app.settings.shell_command_prefix(),
        ..Default::default()
    };
    let id = cmd.get("id").cloned();
    let sink: crate::tools::bash::ChunkSink = Arc::new(move |delta: &str| {
        let mut v = json!({"type": "bash_execution_update", "delta": delta});
        if let Some(id) = &id {
            v["id"] = id.clone();
        }
        emit_line(&v);
    });
    let run = crate::user_bash::run(app.cwd.clone(), settings, &command, cancel, Some(sink)).await;
    let record = run.message(&command, !exclude);
    app.harness
        .append_message(AgentMessage::BashExecution(record))
        .await
        .map_err(|e| e.to_string())?;
    let mut data = json!({"output": run.output, "exitCode": run.exit_code,
        "cancelled": run.cancelled, "truncated": run.truncated});
    if let Some(p) = run.full_output_path {
        data["fullOutputPath"] = json!(p);
    }
    Ok(Some(data))
}

fn levels(model: &arbor_ai::Model) -> Vec<&'static str> {
    if model.reasoning {
        vec!["off", "minimal", "low", "medium", "high"]
    } else {
        vec!["off"]
    }
}

/// Node 22 follows V8's "… at position N" with " (line L column C)" (1-based, UTF-16 units).
fn with_line_column(message: &str, text: &str) -> String {
    let Some(pos) = message
        .rsplit_once("at position ")
        .and_then(|(_, n)| n.parse::<usize>().ok())
    else {
        return message.to_owned();
    };
    let (mut line, mut column, mut units) = (1, 1, 0);
    for c in text.chars() {
        if units >= pos {
            break;
        }
        units += c.len_utf16();
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += c.len_utf16();
        }
    }
    format!("{message} (line {line} column {column})")
}

/// Answers one input line (already without its LF); `None` for a blank line and for `bash`,
/// whose task writes its own response when the command ends.
async fn answer_line(rpc: &Arc<Rpc>, line: &str) -> Option<Value> {
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
            // pi reports JavaScript's JSON.parse wording; serde's text when there is no
            // equivalent.
            let why = arbor_ai::json_error::js_json_parse_error(line)
                .map(|m| with_line_column(&m, line))
                .unwrap_or_else(|| e.to_string());
            return Some(respond(
                None,
                "parse",
                Err(format!("Failed to parse command: {why}")),
            ));
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
    if kind == "bash" {
        // Not behind the session gate: a session switch cancels it instead of waiting for it.
        let token = CancellationToken::new();
        lock(&rpc.bash).push(token.clone());
        let result = run_bash(rpc.app(), cmd, token.clone()).await;
        // Forget this command's token (cancelled ones were removed by abort_bash).
        token.cancel();
        lock(&rpc.bash).retain(|t| !t.is_cancelled());
        return Some(respond(id.as_ref(), "bash", result));
    }
    // The abort commands must reach work in flight, so they never wait at the gate.
    let result = if matches!(kind.as_str(), "abort" | "abort_bash" | "abort_retry") {
        rpc.handle(&cmd, &kind).await
    } else if SESSION_COMMANDS.contains(&kind.as_str()) {
        let _exclusive = rpc.gate.write().await;
        rpc.handle(&cmd, &kind).await
    } else {
        let _shared = rpc.gate.read().await;
        rpc.handle(&cmd, &kind).await
    };
    Some(respond(id.as_ref(), &kind, result))
}

pub async fn run(
    app: App,
    args: AgentArgs,
    session_dir: Option<PathBuf>,
) -> Result<ExitCode, CliError> {
    let control = Arc::new(PolicyControl::new(&app.settings));
    let rpc = Arc::new(Rpc {
        args,
        session_dir,
        app: RwLock::new(Arc::new(app)),
        subscription: Mutex::new(None),
        running: Mutex::new(None),
        control,
        bash: Mutex::new(Vec::new()),
        gate: tokio::sync::RwLock::new(()),
    });
    rpc.attach(&rpc.app());
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let signal = super::shutdown_signal();
    tokio::pin!(signal);
    // Every command is answered concurrently, as pi does (DECISIONS §22.31): a long one
    // (`compact`, `abort` waiting for idle, `bash`) does not hold up the next. Polling the
    // commands in flight before reading the next line keeps quick answers in input order.
    let mut in_flight: FuturesUnordered<InFlight> = FuturesUnordered::new();
    let code = loop {
        tokio::select! {
            biased;
            Some(()) = in_flight.next(), if !in_flight.is_empty() => {}
            c = &mut signal => break c,
            line = lines.next_line() => match line {
                Ok(Some(l)) => in_flight.push(answer(&rpc, l)),
                Ok(None) | Err(_) => break 0u8,
            },
        }
    };
    // Orderly shutdown (DECISIONS §22.33): stop the run and every bash command, then let each
    // command in flight write its answer (a cancelled bash still reports its output). A second
    // signal exits at once.
    for t in lock(&rpc.bash).drain(..) {
        t.cancel();
    }
    let drain = async {
        let answers = async { while in_flight.next().await.is_some() {} };
        tokio::join!(rpc.stop_run(), answers);
    };
    tokio::select! {
        () = drain => Ok(ExitCode::from(code)),
        again = super::shutdown_signal() => Ok(ExitCode::from(again)),
    }
}
