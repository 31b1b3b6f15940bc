//! Carrying out a [`Command`] against the app: written once, over a [`CommandHost`] that owns
//! what differs between clients (the running prompt, the `bash` commands in flight, how the
//! session is replaced and where events go).

use std::path::PathBuf;
use std::sync::Arc;

use arbor_agent::context::projection::ContextOptions;
use arbor_agent::harness::{Phase, PolicyControl, QueueMode};
use arbor_agent::message::AgentMessage;
use arbor_agent::session::{ForkPosition, Session, SessionEntry, SessionTree};
use arbor_ai::{ImageContent, ThinkingLevel};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::error::CommandError;
use super::models::{clamp_level, cycle_pool, levels, next_in_pool, usable};
use super::operations::{
    compact, cycle_thinking_level, export_html, last_assistant_text, parse_thinking_level,
    switch_model, AssistantText,
};
use super::reply::*;
use super::request::{required, Command};
use super::session_stats::{ContextUsage, SessionCounts, SessionStatsReply};
use super::system_message::{has_conversation, with_system_message};
use crate::startup::{App, SessionChoice};

/// What a client provides for commands to act on.
#[async_trait::async_trait(?Send)]
pub trait CommandHost {
    /// The app over the current session.
    fn app(&self) -> Arc<App>;
    /// The run-time switches of the prompt policy.
    fn control(&self) -> &PolicyControl;
    /// Whether a prompt runs (or the harness is not idle).
    fn busy(&self) -> bool;
    /// Starts a prompt in the background; the command answers once it has started.
    fn start_prompt(&self, message: String, images: Vec<ImageContent>);
    /// Stops the run (if any) and waits for it to write its last entries.
    async fn stop_run(&self);
    /// Cancels every `bash` command in flight.
    fn cancel_bash(&self);
    /// A cancellation token for a new `bash` command, cancelled by [`Self::cancel_bash`].
    fn bash_started(&self) -> CancellationToken;
    /// Forgets a finished `bash` command's token.
    fn bash_finished(&self, token: &CancellationToken);
    /// Where this `bash` command's output goes as it comes.
    fn bash_output(&self) -> arbor_tools::bash::ChunkSink;
    /// Builds the app again over another session.
    async fn replace_session(&self, choice: SessionChoice) -> Result<(), CommandError>;
    /// Tells the client about a change a command made outside the run (pi's
    /// `session_info_changed`), before the command's answer.
    fn notify(&self, event: Value);
}

/// Runs one command; `Ok(None)`: success with no data.
pub async fn execute(
    host: &dyn CommandHost,
    cmd: Command,
    raw_type: &str,
) -> Result<Option<Reply>, CommandError> {
    let app = host.app();
    let h = &app.harness;
    match cmd {
        Command::Prompt {
            message,
            images,
            streaming_behavior,
        } => {
            let message = expand(&app, required(message, "message")?)?;
            let images = images.unwrap_or_default();
            if host.busy() {
                return match streaming_behavior.as_deref() {
                    Some("steer") => {
                        h.steer(&message, &images)?;
                        Ok(Some(Reply::Disposition(Disposition::QUEUED)))
                    }
                    Some("followUp") => {
                        h.follow_up(&message, &images)?;
                        Ok(Some(Reply::Disposition(Disposition::QUEUED)))
                    }
                    _ => Err(CommandError::AlreadyProcessing),
                };
            }
            host.start_prompt(message, images);
            Ok(Some(Reply::Disposition(Disposition::STARTED)))
        }
        Command::Steer { message, images } => {
            let message = expand(&app, required(message, "message")?)?;
            h.steer(&message, &images.unwrap_or_default())?;
            Ok(Some(Reply::Disposition(Disposition::QUEUED)))
        }
        Command::FollowUp { message, images } => {
            let message = expand(&app, required(message, "message")?)?;
            h.follow_up(&message, &images.unwrap_or_default())?;
            Ok(Some(Reply::Disposition(Disposition::QUEUED)))
        }
        Command::Abort => {
            host.stop_run().await;
            Ok(None)
        }
        Command::ClearQueue => {
            let (steering, follow_up) = h.clear_queues();
            if steering.is_empty() && follow_up.is_empty() {
                // pi reports the (unchanged, empty) queues after every clear_queue.
                host.notify(
                    serde_json::json!({"type": "queue_update", "steering": [], "followUp": []}),
                );
            }
            let texts = |q: &[AgentMessage]| q.iter().map(message_text).collect::<Vec<_>>();
            Ok(Some(Reply::Queues(Queues {
                steering: texts(&steering),
                follow_up: texts(&follow_up),
            })))
        }
        Command::NewSession { parent_session } => {
            host.replace_session(SessionChoice::New {
                parent: parent_session,
            })
            .await?;
            Ok(Some(Reply::SessionReplaced(SessionReplaced {
                cancelled: false,
            })))
        }
        Command::SwitchSession { session_path } => {
            let named = required(session_path, "sessionPath")?;
            let path = arbor_tools::path::resolve(&named, &app.cwd);
            // With a store, a name that is no file is a store session's id or location (a
            // search hit's `sessionId` or `path`, DECISIONS §34.22).
            let choice = match &app.session_store {
                _ if path.is_file() => SessionChoice::Open(path),
                Some(_) => SessionChoice::OpenStored(named),
                None => return Err(CommandError::SessionFileNotFound(path)),
            };
            host.replace_session(choice).await?;
            Ok(Some(Reply::SessionReplaced(SessionReplaced {
                cancelled: false,
            })))
        }
        Command::Fork { entry_id } => {
            let entry_id = required(entry_id, "entryId")?;
            let source = stored_file(&app, "fork")?;
            let entry = app
                .session
                .get_entry(&entry_id)
                .await?
                .ok_or_else(|| CommandError::EntryNotFound(entry_id.clone()))?;
            let text =
                user_text(&entry).ok_or_else(|| CommandError::NotAUserMessage(entry_id.clone()))?;
            host.replace_session(SessionChoice::Fork {
                source,
                entry_id,
                position: ForkPosition::Before,
            })
            .await?;
            Ok(Some(Reply::Forked(Forked {
                text,
                cancelled: false,
            })))
        }
        Command::Clone => {
            let leaf = app
                .session
                .leaf_id()
                .await?
                .ok_or(CommandError::NoCurrentEntry)?;
            let source = stored_file(&app, "clone")?;
            host.replace_session(SessionChoice::Fork {
                source,
                entry_id: leaf,
                position: ForkPosition::At,
            })
            .await?;
            Ok(Some(Reply::SessionReplaced(SessionReplaced {
                cancelled: false,
            })))
        }
        Command::SetAutoCompaction { enabled } => {
            host.control()
                .set_auto_compaction(required(enabled, "enabled")?);
            Ok(None)
        }
        Command::SetAutoRetry { enabled } => {
            host.control().set_auto_retry(required(enabled, "enabled")?);
            Ok(None)
        }
        Command::AbortRetry => {
            host.control().abort_retry();
            Ok(None)
        }
        Command::AbortBash => {
            host.cancel_bash();
            Ok(None)
        }
        Command::CycleModel => cycle_model(&app).await,
        Command::GetState => {
            let (steer, follow, _) = h.queues();
            let (steering_mode, follow_up_mode) = h.queue_modes();
            let name = app.session.name().await?;
            let ctx = app
                .session
                .build_context(&ContextOptions::default())
                .await?;
            Ok(Some(Reply::State(Box::new(State {
                model: h.model(),
                thinking_level: h.thinking_level().as_str(),
                is_streaming: host.busy(),
                is_compacting: h.phase() == Phase::Compaction,
                steering_mode: queue_mode_name(steering_mode),
                follow_up_mode: queue_mode_name(follow_up_mode),
                session_file: app.session_file.as_ref().map(|p| p.display().to_string()),
                session_id: app.header.id.clone(),
                auto_compaction_enabled: host.control().auto_compaction(),
                // pi counts its system message (DECISIONS §31.2).
                message_count: ctx.messages.len() + usize::from(has_conversation(&ctx.messages)),
                pending_message_count: steer.len() + follow.len(),
                session_name: name,
            }))))
        }
        Command::GetMessages => {
            let ctx = app
                .session
                .build_context(&ContextOptions::default())
                .await?;
            let messages = ctx
                .messages
                .iter()
                .map(serde_json::to_value)
                .collect::<Result<Vec<_>, _>>()
                .map_err(CommandError::Encode)?;
            Ok(Some(Reply::Messages(MessagesReply {
                messages: with_system_message(h, &ctx.messages, messages),
            })))
        }
        Command::SetModel { provider, model_id } => {
            let provider = required(provider, "provider")?;
            let model_id = required(model_id, "modelId")?;
            let model = switch_model(&app.registry, h, &provider, &model_id).await?;
            Ok(Some(Reply::Model(Box::new(model))))
        }
        Command::GetAvailableModels => Ok(Some(Reply::Models(ModelsReply {
            models: app
                .registry
                .models()
                .filter(|m| usable(&app.provider, m))
                .cloned()
                .collect(),
        }))),
        Command::SetThinkingLevel { level } => {
            let level = parse_thinking_level(&required(level, "level")?)?;
            let level = clamp_level(&h.model(), level);
            // Unchanged (say, clamped back to `off`): nothing to record, as in pi.
            if level != h.thinking_level() {
                h.set_thinking_level(level).await?;
            }
            Ok(None)
        }
        Command::GetAvailableThinkingLevels => Ok(Some(Reply::Levels(LevelsReply {
            levels: levels(&h.model()),
        }))),
        Command::CycleThinkingLevel => {
            let Some(next) = cycle_thinking_level(h).await? else {
                return Ok(Some(Reply::Null));
            };
            Ok(Some(Reply::Level(LevelReply {
                level: next.as_str(),
            })))
        }
        Command::SetSteeringMode { mode } => {
            h.set_steering_mode(queue_mode(required(mode, "mode")?)?);
            Ok(None)
        }
        Command::SetFollowUpMode { mode } => {
            h.set_follow_up_mode(queue_mode(required(mode, "mode")?)?);
            Ok(None)
        }
        Command::GetSessionStats => stats(&app).await,
        Command::GetEntries { since } => {
            let mut entries = app.session.entries().await?;
            let start = match since {
                Some(since) => entries
                    .iter()
                    .position(|e| e.id == since)
                    .map(|i| i + 1)
                    .ok_or(CommandError::EntryNotFound(since))?,
                None => 0,
            };
            let leaf_id = app.session.leaf_id().await?;
            Ok(Some(Reply::Entries(EntriesReply {
                entries: entries.split_off(start),
                leaf_id,
            })))
        }
        Command::Search {
            query,
            branch,
            since,
            cwd_only,
            limit,
        } => {
            let query = arbor_search::Query {
                text: required(query, "query")?,
                branch: crate::session_search::branch_filter(branch.as_deref().unwrap_or("any"))?,
                since,
                cwd: cwd_only
                    .unwrap_or(false)
                    .then(|| app.cwd.to_string_lossy().into_owned()),
                limit: Some(limit.unwrap_or(crate::session_search::DEFAULT_LIMIT)),
                // Set by the search to the store it reaches (DECISIONS §34.20).
                stores: arbor_search::Stores::default(),
            };
            let store = app.session_store.as_deref();
            let outcome = crate::session_search::search(app.repo.clone(), store, query).await?;
            Ok(Some(Reply::Search(SearchReply {
                hits: outcome.hits,
                warnings: outcome.warnings,
            })))
        }
        Command::GetTree => {
            let tree = app.session.tree().await?;
            // The tree's nodes hold row summaries; the reply carries whole entries.
            let entries = app.session.entries().await?;
            Ok(Some(Reply::Tree(tree_reply(&tree, &entries))))
        }
        Command::GetLastAssistantText => {
            let text = last_assistant_text(&app.session, AssistantText::Last).await?;
            Ok(Some(Reply::Text(TextReply { text })))
        }
        Command::GetForkMessages => {
            let branch = app.session.branch_since_compaction(None).await?;
            let messages = branch
                .iter()
                .filter_map(|e| {
                    user_text(e).map(|text| ForkMessage {
                        entry_id: e.id.clone(),
                        text,
                    })
                })
                .collect();
            Ok(Some(Reply::ForkMessages(ForkMessagesReply { messages })))
        }
        Command::SetSessionName { name } => {
            let name = set_session_name(&app.session, &required(name, "name")?).await?;
            host.notify(serde_json::json!({"type": "session_info_changed", "name": name}));
            Ok(None)
        }
        Command::GetCommands => Ok(Some(Reply::Commands(CommandsReply {
            commands: app.resources.resources().rpc_commands(),
        }))),
        Command::Compact {
            custom_instructions,
        } => {
            // Refused, not pi's abort-then-compact: a running turn is never cut as a side
            // effect (DECISIONS §31.16).
            if host.busy() {
                return Err(CommandError::Busy);
            }
            let entry = compact(h, custom_instructions.as_deref()).await?;
            compacted(&app, &entry).await
        }
        Command::Bash {
            command,
            exclude_from_context,
        } => {
            let token = host.bash_started();
            let result = run_bash(host, &app, command, exclude_from_context, token.clone()).await;
            // Forget this command's token (cancelled ones were removed by abort_bash).
            host.bash_finished(&token);
            result
        }
        Command::ExportHtml { output_path } => {
            let out = output_path.map(PathBuf::from);
            let path = export_html(app.session_file.as_deref(), out.as_deref()).await?;
            Ok(Some(Reply::Exported(Exported {
                path: path.display().to_string(),
            })))
        }
        Command::Unknown => Err(CommandError::Unknown(raw_type.to_owned())),
    }
}

/// Names the session (`set_session_name`, the TUI's `/name`): the name trimmed, never empty;
/// returns the name written.
pub async fn set_session_name(session: &Session, name: &str) -> Result<String, CommandError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(CommandError::EmptySessionName);
    }
    session.append_session_name(name).await?;
    Ok(name.to_owned())
}

/// A prompt line with its `/template` or `/skill:name` expanded, as pi does for RPC prompts.
fn expand(app: &App, message: String) -> Result<String, CommandError> {
    Ok(app
        .resources
        .expand(&message)
        .map_err(crate::error::CliError::from)?)
}

fn stored_file(app: &App, what: &'static str) -> Result<PathBuf, CommandError> {
    app.session_file
        .clone()
        .ok_or(CommandError::NotStored { what })
}

fn queue_mode_name(m: QueueMode) -> &'static str {
    match m {
        QueueMode::All => "all",
        QueueMode::OneAtATime => "one-at-a-time",
    }
}

fn queue_mode(name: String) -> Result<QueueMode, CommandError> {
    match name.as_str() {
        "all" => Ok(QueueMode::All),
        "one-at-a-time" => Ok(QueueMode::OneAtATime),
        _ => Err(CommandError::InvalidMode(name)),
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

/// The text of a user-message entry (`fork` hands it back for editing).
fn user_text(entry: &SessionEntry) -> Option<String> {
    let v = serde_json::to_value(entry).ok()?;
    if v.get("type").and_then(Value::as_str) != Some("message")
        || v.pointer("/message/role").and_then(Value::as_str) != Some("user")
    {
        return None;
    }
    Some(content_text(v.pointer("/message/content")))
}

/// pi's `cycle_model`: the next model of the `--models` scope (or of every model that has
/// credentials), wrapping around; `null` when there is nothing to switch to. The thinking
/// level is the scope entry's, else the current one (`off` for a model without reasoning).
async fn cycle_model(app: &App) -> Result<Option<Reply>, CommandError> {
    let usable_models = app.registry.models().filter(|m| usable(&app.provider, m));
    let pool = cycle_pool(usable_models, &app.scope);
    let current = app.harness.model();
    let Some((model, level)) = next_in_pool(&pool, |(m, _)| {
        m.provider == current.provider && m.id == current.id
    })
    .cloned() else {
        return Ok(Some(Reply::Null));
    };
    app.harness.set_model(model.clone()).await?;
    let wanted = level.unwrap_or_else(|| app.harness.thinking_level());
    let level = if model.reasoning {
        wanted
    } else {
        ThinkingLevel::Off
    };
    if level != app.harness.thinking_level() {
        app.harness.set_thinking_level(level).await?;
    }
    Ok(Some(Reply::CycledModel(Box::new(CycledModel {
        model,
        thinking_level: level.as_str(),
        is_scoped: !app.scope.is_empty(),
    }))))
}

async fn stats(app: &App) -> Result<Option<Reply>, CommandError> {
    let entries = app.session.entries().await?;
    let mut counts = SessionCounts::of(&entries);
    // pi stores its system message with the first prompt and counts it (DECISIONS §31.2).
    if counts.user_messages > 0 {
        counts.total_messages += 1;
    }
    let window = app.harness.model().context_window;
    let usage = if window == 0 {
        None
    } else {
        let ctx = app
            .session
            .build_context(&ContextOptions::default())
            .await?;
        ContextUsage::of(&ctx.messages, window)
    };
    Ok(Some(Reply::Stats(Box::new(SessionStatsReply::new(
        app.session_file.as_ref().map(|p| p.display().to_string()),
        app.header.id.clone(),
        &counts,
        usage,
    )))))
}

/// `get_tree`'s nodes: each row of the tree with its whole entry (the first one stored under
/// its id).
fn tree_reply(tree: &SessionTree, entries: &[SessionEntry]) -> TreeReply {
    let mut by_id: std::collections::HashMap<&str, &SessionEntry> = Default::default();
    for e in entries {
        by_id.entry(e.id.as_str()).or_insert(e);
    }
    fn node(
        t: &SessionTree,
        by_id: &std::collections::HashMap<&str, &SessionEntry>,
        i: usize,
    ) -> TreeNode {
        let n = &t.nodes[i];
        TreeNode {
            entry: by_id.get(n.id()).map(|e| (*e).clone()),
            children: t.children(i).iter().map(|&c| node(t, by_id, c)).collect(),
            label: n.label.clone(),
        }
    }
    TreeReply {
        tree: tree.roots.iter().map(|&r| node(tree, &by_id, r)).collect(),
        leaf_id: tree.leaf_id.clone(),
    }
}

/// `compact`'s reply: the entry's fields as stored and the context's estimate after it.
async fn compacted(app: &App, entry: &SessionEntry) -> Result<Option<Reply>, CommandError> {
    let v = serde_json::to_value(entry).map_err(CommandError::Encode)?;
    let ctx = app
        .session
        .build_context(&ContextOptions::default())
        .await?;
    Ok(Some(Reply::Compacted(Box::new(Compacted {
        summary: v.get("summary").cloned(),
        first_kept_entry_id: v.get("firstKeptEntryId").cloned(),
        tokens_before: v.get("tokensBefore").cloned(),
        estimated_tokens_after: arbor_agent::compaction::estimate_context_tokens(&ctx.messages)
            .tokens,
        usage: v.get("usage").cloned(),
        details: v.get("details").cloned().unwrap_or(Value::Null),
    }))))
}

/// Runs the `bash` command (pi's `executeBash`): output streamed to the host as it comes, the
/// result recorded as a `bashExecution` message (queued while a run is going).
async fn run_bash(
    host: &dyn CommandHost,
    app: &App,
    command: Option<String>,
    exclude_from_context: Option<bool>,
    cancel: CancellationToken,
) -> Result<Option<Reply>, CommandError> {
    let command = required(command, "command")?;
    let exclude = exclude_from_context.unwrap_or(false);
    let settings = arbor_tools::ToolSettings {
        shell_path: app.settings.shell_path(),
        shell_command_prefix: app.settings.shell_command_prefix(),
        env_policy: app.secrets.env_policy.clone(),
        ..Default::default()
    };
    let run = crate::user_bash::run(
        app.cwd.clone(),
        settings,
        &command,
        cancel,
        Some(host.bash_output()),
    )
    .await;
    let record = run.message(&command, !exclude);
    app.harness
        .append_message(AgentMessage::BashExecution(record))
        .await?;
    Ok(Some(Reply::Bash(Box::new(BashReply {
        output: run.output,
        exit_code: run.exit_code,
        cancelled: run.cancelled,
        truncated: run.truncated,
        full_output_path: run.full_output_path,
    }))))
}
