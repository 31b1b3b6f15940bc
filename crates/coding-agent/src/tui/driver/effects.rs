//! Carrying out the state machine's [`Effect`]s against the harness and the session: quick
//! ones at once, long ones (a prompt, a compaction, a navigation, `!cmd`) as tasks whose
//! outcome comes back as an event.

use arbor_agent::agent::ErrorCode;
use arbor_agent::message::AgentMessage;
use arbor_agent::session::EntryKind;
use arbor_ai::Message;
use tokio_util::sync::CancellationToken;

use crate::checkpoints::RestoreMode;
use crate::command::models::next_in_pool;
use crate::command::operations::{
    compact, cycle_thinking_level, export_html, last_assistant_text, parse_thinking_level,
    switch_model, AssistantText,
};
use crate::command::session_stats::SessionCounts;
use crate::tui::fork_picker::{ForkPicker, ForkPoint};
use crate::tui::picker::model::ModelPicker;
use crate::tui::picker::search::SearchPicker;
use crate::tui::picker::session::SessionPicker;
use crate::tui::state::{AppEvent, Effect, Outcome, Overlay};
use crate::tui::tree::{TreeFilter, TreeNavigator};

use super::restore_report::undo_notice;
use super::{Driver, Observer};

impl Driver {
    pub(super) async fn execute(&mut self, effect: Effect) {
        let h = self.app.harness.clone();
        let tx = self.tx.clone();
        match effect {
            Effect::Prompt(text) => {
                let text = match self.expand_line(&text) {
                    Ok(t) => t,
                    Err(e) => {
                        self.done(Outcome::PromptFinished(Ok(())));
                        self.done(Outcome::Error(e.to_string()));
                        return;
                    }
                };
                let settings = self.app.settings.clone();
                self.tasks.spawn(async move {
                    let observer = Observer(tx.clone());
                    let r = crate::policy::prompt(&h, &settings, &text, &[], &observer).await;
                    let _ = tx.send(AppEvent::Done(Outcome::PromptFinished(
                        r.map(|_| ()).map_err(std::sync::Arc::new),
                    )));
                });
            }
            Effect::Steer(ref text) | Effect::FollowUp(ref text) => {
                let steer = matches!(effect, Effect::Steer(_));
                let text = match self.expand_line(text) {
                    Ok(t) => t,
                    Err(e) => {
                        self.done(Outcome::Error(e.to_string()));
                        return;
                    }
                };
                let text = &text;
                let r = if steer {
                    h.steer(text, &[])
                } else {
                    h.follow_up(text, &[])
                };
                match r {
                    Ok(()) => {}
                    // The prompt task has not begun its turn yet: the message goes in with it
                    // (DECISIONS §23.10).
                    Err(e) if e.code() == ErrorCode::InvalidState && self.state.is_running() => {
                        h.next_turn(text, &[]);
                    }
                    Err(e) => self.done(Outcome::Error(e.to_string())),
                }
            }
            Effect::Abort => {
                if let Some(c) = self.bash_cancel.take() {
                    c.cancel();
                }
                self.tasks.spawn(async move {
                    h.abort().await;
                });
            }
            Effect::Bash { command, include } => {
                let cancel = CancellationToken::new();
                self.bash_cancel = Some(cancel.clone());
                let cwd = self.app.cwd.clone();
                let settings = arbor_tools::ToolSettings {
                    shell_path: self.app.settings.shell_path(),
                    shell_command_prefix: self.app.settings.shell_command_prefix(),
                    env_policy: self.app.env_policy.clone(),
                    ..Default::default()
                };
                self.tasks.spawn(async move {
                    let run = crate::user_bash::run(cwd, settings, &command, cancel, None).await;
                    let message = AgentMessage::BashExecution(run.message(&command, include));
                    if let Err(e) = h.append_message(message.clone()).await {
                        let _ = tx.send(AppEvent::Done(Outcome::Error(e.to_string())));
                    }
                    let _ = tx.send(AppEvent::Done(Outcome::Bash(Box::new(message))));
                });
            }
            Effect::OpenTree => match self.app.session.tree().await {
                Ok(tree) => {
                    let nav = TreeNavigator::new(tree, TreeFilter::default(), self.theme);
                    self.state.overlay = Some(Overlay::Tree(Box::new(nav)));
                }
                Err(e) => self.done(Outcome::Error(e.to_string())),
            },
            Effect::SetLabel { id, label } => {
                if let Err(e) = self.app.session.append_label(&id, label.as_deref()).await {
                    self.done(Outcome::Error(e.to_string()));
                }
            }
            Effect::Resume => {
                let Some(repo) = &self.app.repo else {
                    self.done(Outcome::Error("No session store to resume from".into()));
                    return;
                };
                let listed = match arbor_agent::session::SessionRepository::list(repo).await {
                    Ok(list) => crate::store::with_conversation(list.sessions)
                        .await
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                };
                match listed {
                    Ok(sessions) => {
                        let current = self
                            .app
                            .session_file
                            .as_ref()
                            .map(|p| p.display().to_string());
                        let picker = SessionPicker::new(
                            sessions,
                            &self.app.cwd.display().to_string(),
                            current.as_deref(),
                            arbor_ai::time::now_ms(),
                            self.theme,
                        );
                        self.state.overlay = Some(Overlay::Sessions(Box::new(picker)));
                    }
                    Err(e) => self.done(Outcome::Error(e)),
                }
            }
            Effect::DeleteSession(location) => {
                if let Some(repo) = &self.app.repo {
                    if let Err(e) =
                        arbor_agent::session::SessionRepository::delete(repo, &location).await
                    {
                        self.done(Outcome::Error(e.to_string()));
                    }
                }
            }
            Effect::OpenSession(_) | Effect::OpenSessionAt { .. } => {
                self.terminal_effects.push(effect)
            }
            Effect::OpenSearch(words) => {
                let picker = SearchPicker::new(words.as_deref().unwrap_or(""), self.theme);
                self.state.overlay = Some(Overlay::Search(Box::new(picker)));
                if let Some(words) = words {
                    self.run_search(words).await;
                }
            }
            Effect::RunSearch(words) => self.run_search(words).await,
            Effect::NavigateTree {
                target,
                summarize,
                custom_instructions,
                restore,
            } if restore != RestoreMode::ConversationOnly => {
                self.code_navigation(target, summarize, custom_instructions, restore);
            }
            Effect::NavigateTree {
                target,
                summarize,
                custom_instructions,
                ..
            } => {
                self.state.background = Some("navigating".into());
                if summarize {
                    self.state.footer.compacting = Some("summarizing branch…".into());
                }
                self.tasks.spawn(async move {
                    let opts = Effect::navigate_options(summarize, custom_instructions);
                    let r = h.navigate_tree(target.as_deref(), opts).await;
                    // The end line comes after the reload the navigation causes, so it stays
                    // at the bottom (DECISIONS §23.174).
                    let (o, end) = match r {
                        Ok(r) if r.cancelled => {
                            (Outcome::Navigated(Ok(None)), Some("Navigation cancelled"))
                        }
                        Ok(r) => (
                            Outcome::Navigated(Ok(r.editor_text)),
                            summarize.then_some("Summarized the branch you left"),
                        ),
                        Err(e) => (Outcome::Navigated(Err(std::sync::Arc::new(e.into()))), None),
                    };
                    let _ = tx.send(AppEvent::Done(o));
                    if let Some(end) = end {
                        let _ = tx.send(AppEvent::Done(Outcome::Notice(end.to_owned())));
                    }
                });
            }
            Effect::UndoRestore => {
                let Some(hook) = self.app.checkpoints.clone() else {
                    self.done(Outcome::Error(
                        "Workspace checkpoints are off for this run: there is no restore to undo"
                            .into(),
                    ));
                    self.done(Outcome::Idle);
                    return;
                };
                let session = self.app.session.clone();
                let confirm = super::fork_restore::confirm_untracked(tx.clone());
                self.tasks.spawn(async move {
                    let undone = hook
                        .recorder()
                        .undo_restore_confirmed(&session, Some(&confirm))
                        .await;
                    let o = match undone {
                        Ok(Some(report)) => Outcome::Notice(undo_notice(&report)),
                        Ok(None) => {
                            Outcome::Notice("Undo restore cancelled; nothing changed".to_owned())
                        }
                        Err(e) => Outcome::Error(e.to_string()),
                    };
                    let _ = tx.send(AppEvent::Done(o));
                    let _ = tx.send(AppEvent::Done(Outcome::Idle));
                });
            }
            Effect::Compact(instructions) => {
                self.tasks.spawn(async move {
                    // A failure, "nothing to compact" included, is reported by its
                    // `compaction_end` event (the transcript shows it).
                    let _ = compact(&h, instructions.as_deref()).await;
                    let _ = tx.send(AppEvent::Done(Outcome::Idle));
                });
            }
            Effect::Login(provider) => self.login(provider),
            Effect::SaveKey { provider, key } => self.save_key(&provider, &key),
            Effect::Logout(provider) => self.logout(provider),
            Effect::CycleModel => {
                let list = &self.app.cycle_models;
                if list.len() < 2 {
                    self.done(Outcome::Notice("No other model to switch to".into()));
                    return;
                }
                let cur = h.model();
                let next = next_in_pool(list, |(p, id)| *p == cur.provider && *id == cur.id);
                if let Some((p, id)) = next.cloned() {
                    self.switch_model(&p, &id).await;
                }
            }
            Effect::SetModel(spec) => match spec {
                Some(spec) => match self.find_model(&spec) {
                    Ok(m) => self.switch_model(&m.provider, &m.id).await,
                    Err(e) => self.done(Outcome::Error(e.to_string())),
                },
                None => {
                    let models: Vec<&arbor_ai::Model> = self
                        .app
                        .cycle_models
                        .iter()
                        .filter_map(|(p, id)| self.app.registry.get(p, id))
                        .collect();
                    let cur = h.model();
                    let picker = ModelPicker::from_models(
                        models,
                        Some((&cur.provider, &cur.id)),
                        "",
                        self.theme,
                    );
                    self.state.overlay = Some(Overlay::Models(Box::new(picker)));
                }
            },
            Effect::CycleThinking | Effect::SetThinking(_) => {
                let model = h.model();
                if !model.reasoning {
                    self.done(Outcome::Notice(format!(
                        "{}/{} does not support thinking",
                        model.provider, model.id
                    )));
                    return;
                }
                let r = match effect {
                    Effect::SetThinking(Some(l)) => match parse_thinking_level(&l) {
                        Ok(level) => h.set_thinking_level(level).await.map_err(Into::into),
                        Err(_) => {
                            self.done(Outcome::Error(format!(
                                "Invalid thinking level: {l} (off, minimal, low, medium, high, xhigh)"
                            )));
                            return;
                        }
                    },
                    Effect::SetThinking(None) => {
                        self.done(Outcome::Notice(format!(
                            "Thinking level: {}",
                            h.thinking_level()
                        )));
                        return;
                    }
                    // A reasoning model always has a next level.
                    _ => cycle_thinking_level(&h).await.map(|_| ()),
                };
                match r {
                    Ok(()) => self.done(self.model_outcome()),
                    Err(e) => self.done(Outcome::Error(e.to_string())),
                }
            }
            Effect::SetName(name) => {
                match crate::command::set_session_name(&self.app.session, &name).await {
                    Ok(name) => {
                        self.done(Outcome::SessionName(Some(name.clone())));
                        self.done(Outcome::Notice(format!("Session name: {name}")));
                    }
                    Err(e) => self.done(Outcome::Error(e.to_string())),
                }
            }
            Effect::ShowName => {
                let text = match self.app.session.name().await {
                    Ok(Some(n)) => format!("Session name: {n}"),
                    Ok(None) => "The session has no name (set one with /name <name>)".into(),
                    Err(e) => e.to_string(),
                };
                self.done(Outcome::Notice(text));
            }
            Effect::SessionStats => {
                let text = self.stats().await;
                self.done(Outcome::Notice(text));
            }
            Effect::Export(path) => {
                // The TUI resolves the path against the working directory.
                let out = path.map(|p| arbor_tools::path::resolve(&p, &self.app.cwd));
                match export_html(self.app.session_file.as_deref(), out.as_deref()).await {
                    Ok(p) => self.done(Outcome::Notice(format!("Exported to: {}", p.display()))),
                    Err(e) => self.done(Outcome::Error(e.to_string())),
                }
            }
            Effect::Share => {
                let written = match crate::export::share_path(&self.app.session_id) {
                    Ok(out) => export_html(self.app.session_file.as_deref(), Some(&out)).await,
                    Err(e) => Err(e.into()),
                };
                match written {
                    Ok(p) => self.done(Outcome::Notice(format!(
                        "Shared as one self-contained page (open it in a browser, or send the file): file://{}",
                        p.display()
                    ))),
                    Err(e) => self.done(Outcome::Error(e.to_string())),
                }
            }
            Effect::Settings(arg) => self.show_settings(arg),
            Effect::Reload => self.reload_resources(),
            Effect::Mcp(args) => match crate::mcp::panel::parse(args.as_deref()) {
                Err(usage) => self.done(Outcome::Error(usage.to_string())),
                Ok(action) => match crate::mcp::panel::run(self.app.mcp.as_ref(), action).await {
                    Ok(text) => self.done(Outcome::Notice(text)),
                    Err(e) => self.done(Outcome::Error(e.to_string())),
                },
            },
            Effect::Copy => {
                match last_assistant_text(&self.app.session, AssistantText::LastNonEmpty)
                    .await
                    .ok()
                    .flatten()
                {
                    Some(t) => {
                        self.clipboard = Some(t);
                        self.terminal_effects.push(Effect::Copy);
                        self.done(Outcome::Notice(
                            "Copied the last assistant message to the clipboard".into(),
                        ));
                    }
                    None => self.done(Outcome::Error("No assistant message to copy".into())),
                }
            }
            Effect::Fork => match self.app.session.branch_since_compaction(None).await {
                Ok(entries) => {
                    // A fork point can restore the code when a checkpoint lies above it.
                    let mut seen_marker = false;
                    let points: Vec<ForkPoint> = entries
                        .iter()
                        .filter_map(|e| match &e.kind {
                            EntryKind::Custom(c)
                                if c.custom_type == crate::checkpoints::CHECKPOINT_TYPE
                                    || c.custom_type == crate::checkpoints::RESTORE_TYPE =>
                            {
                                seen_marker = true;
                                None
                            }
                            EntryKind::Message(m) => match &m.message {
                                AgentMessage::Llm(Message::User(u)) => Some(ForkPoint {
                                    entry_id: e.id.clone(),
                                    text: u.content.joined_text(""),
                                    has_checkpoint: seen_marker,
                                }),
                                _ => None,
                            },
                            _ => None,
                        })
                        .collect();
                    if points.is_empty() {
                        self.done(Outcome::Error("No user message to fork from".into()));
                    } else {
                        let picker = ForkPicker::new(points, self.theme);
                        self.state.overlay = Some(Overlay::Fork(Box::new(picker)));
                    }
                }
                Err(e) => self.done(Outcome::Error(e.to_string())),
            },
            Effect::ForkAt {
                entry_id,
                restore: RestoreMode::CodeOnly,
                ..
            } => {
                // Code only forks nothing: the files go to the fork point's state (the user
                // message's parent) and the conversation stays (DECISIONS §27.20).
                self.code_navigation(Some(entry_id), false, None, RestoreMode::CodeOnly);
            }
            Effect::ForkAt {
                ref entry_id,
                restore: RestoreMode::Both,
                ..
            } => match self.plan_fork_restore(entry_id).await {
                Ok(plan) => {
                    self.fork_restore = Some(plan);
                    self.terminal_effects.push(effect);
                }
                Err(e) => self.done(Outcome::Error(e.to_string())),
            },
            Effect::ForkAt { .. } | Effect::Clone | Effect::New => {
                self.fork_restore = None;
                self.terminal_effects.push(effect);
            }
            Effect::ExternalEditor(_) | Effect::Quit | Effect::Suspend => {
                self.terminal_effects.push(effect)
            }
            Effect::Dequeue => self.dequeue(),
            Effect::ScopedModels(arg) => self.scoped_models(arg),
            Effect::Import(path) => self.import(path).await,
            Effect::Changelog => self.changelog(),
            Effect::Debug => self.debug().await,
            Effect::ToggleThinking => self.transcript.toggle_thinking(),
            Effect::ToggleTools => self.transcript.toggle_tools(),
            Effect::ScrollPage(n) if n < 0 => self.transcript.scroll_page_up(),
            Effect::ScrollPage(_) => self.transcript.scroll_page_down(),
            Effect::ScrollLines(n) if n < 0 => self.transcript.scroll_up(n.unsigned_abs() as usize),
            Effect::ScrollLines(n) => self.transcript.scroll_down(n as usize),
            Effect::ScrollBottom => self.transcript.scroll_to_bottom(),
        }
    }

    fn find_model(&self, spec: &str) -> Result<arbor_ai::Model, arbor_ai::AiError> {
        if let Some((p, id)) = spec.split_once('/') {
            if let Some(m) = self.app.registry.get(p, id) {
                return Ok(m.clone());
            }
        }
        self.app.registry.find(spec).cloned()
    }

    async fn switch_model(&mut self, provider: &str, id: &str) {
        match switch_model(&self.app.registry, &self.app.harness, provider, id).await {
            Ok(_) => {
                self.done(self.model_outcome());
                self.done(Outcome::Notice(format!("Model: {provider}/{id}")));
            }
            Err(e) => self.done(Outcome::Error(e.to_string())),
        }
    }

    async fn stats(&self) -> String {
        let entries = match self.app.session.entries().await {
            Ok(e) => e,
            Err(e) => return e.to_string(),
        };
        let c = SessionCounts::of(&entries);
        let (users, assistants, calls, results) = (
            c.user_messages,
            c.assistant_messages,
            c.tool_calls,
            c.tool_results,
        );
        let f = &self.state.footer;
        let name = f.session_name.as_deref().unwrap_or("(none)");
        let file = self
            .app
            .session_file
            .as_ref()
            .map_or("In-memory".to_owned(), |p| p.display().to_string());
        let model = format!("{}/{}", f.provider, f.model);
        format!(
            "Session {name}\nFile: {file}\nID: {}\nModel: {model}\nMessages: {users} user, {assistants} assistant, {calls} tool calls, {results} tool results\nTokens: {} input ({} cache read, {} cache write), {} output\nCost: ${:.4}",
            self.app.session_id,
            f.input + f.cache_read + f.cache_write,
            f.cache_read,
            f.cache_write,
            f.output,
            f.cost
        )
    }

    /// Runs a `/search` over the session files and the run's store (DECISIONS §34.9) and shows
    /// its hits in the open overlay (§34.11). Waits for the index refresh: the first search of
    /// a large store reads every session once.
    async fn run_search(&mut self, words: String) {
        let result = match &self.app.repo {
            Some(repo) => {
                let query = arbor_search::Query {
                    text: words.clone(),
                    limit: Some(SEARCH_HITS),
                    ..arbor_search::Query::default()
                };
                let store = self.app.session_store.as_deref();
                crate::session_search::search(repo.clone(), store, query).await
            }
            None => Err(crate::error::CliError::Usage(
                "No session store to search".into(),
            )),
        };
        if let Some(Overlay::Search(picker)) = &mut self.state.overlay {
            match result {
                Ok(outcome) => picker.set_results(&words, outcome.hits, &outcome.warnings),
                Err(e) => picker.set_error(e.to_string()),
            }
        }
    }

    /// Opens `/tree` with the cursor on `entry_id` (or its nearest shown ancestor): where a
    /// `/search` hit lands after its session is opened.
    pub(crate) async fn open_tree_at(&mut self, entry_id: &str) {
        match self.app.session.tree().await {
            Ok(tree) => {
                let mut nav = TreeNavigator::new(tree, TreeFilter::default(), self.theme);
                nav.select(entry_id);
                self.state.overlay = Some(Overlay::Tree(Box::new(nav)));
            }
            Err(e) => self.done(Outcome::Error(e.to_string())),
        }
    }
}

/// Hits a `/search` shows.
const SEARCH_HITS: usize = 100;
