//! The async side of the app: it owns the [`AppState`], feeds it events (keys from the terminal,
//! harness events from a subscription, outcomes of its own tasks) and carries out the
//! [`Effect`]s against the real [`AgentHarness`]. Long operations (a prompt, a compaction, a
//! navigation, `!cmd`) run as tasks so the UI keeps drawing and Esc can abort them.
//!
//! The driver has no terminal either: [`Driver::render`] draws into a `Buffer`, and the few
//! effects that need the terminal (external editor, clipboard, quitting) are handed back to
//! the loop in [`super::run`] through [`Driver::take_terminal_effects`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use arbor_agent::agent::ErrorCode;
use arbor_agent::context::projection::ContextOptions;
use arbor_agent::harness::{AgentHarness, Phase};
use arbor_agent::message::AgentMessage;
use arbor_agent::session::{EntryKind, Session};
use arbor_ai::models::ModelRegistry;
use arbor_ai::{Message, ThinkingLevel};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::footer::FooterInfo;
use super::fork_picker::{ForkPicker, ForkPoint};
pub use super::loading::FIRST_FRAME_ENTRIES;
use super::loading::{context_tokens, user_texts, LoadedSession, Totals};
use super::picker::model::ModelPicker;
use super::picker::session::SessionPicker;
use super::state::{AppEvent, AppState, Effect, Note, Outcome, Overlay};
use super::theme::Theme;
use super::transcript::{NoticeKind, Transcript};
use super::tree::{TreeFilter, TreeNavigator};
use crate::checkpoints::RestoreMode;
use crate::command::models::{next_in_pool, next_level, usable};
use crate::command::session_stats::SessionCounts;
use crate::config::Settings;
use crate::error::CliError;
use crate::policy::PolicyObserver;

/// What the driver works on: the parts of [`crate::startup::App`] the UI needs.
#[derive(Clone)]
pub struct Ctx {
    pub harness: AgentHarness,
    pub session: Arc<Session>,
    pub session_file: Option<PathBuf>,
    pub session_id: String,
    pub registry: Arc<ModelRegistry>,
    /// Models Ctrl+P cycles through (provider, id), in order.
    pub cycle_models: Vec<(String, String)>,
    pub settings: Settings,
    pub cwd: PathBuf,
    /// Where `/resume` lists sessions (`None`: in-memory tests).
    pub repo: Option<arbor_agent::session::JsonlRepository>,
    /// The workspace checkpoint hook (`None`: checkpoints off): `/tree` offers code restores
    /// only when it is there (DECISIONS §23.12).
    pub checkpoints: Option<Arc<crate::checkpoints::CheckpointHook>>,
}

impl Ctx {
    pub fn from_app(app: crate::startup::App) -> Self {
        // Ctrl+P cycles the `--models` / `enabledModels` scope when one is set, else every
        // model with credentials or a local URL (DECISIONS §23.18).
        let cycle_models = if app.scope.is_empty() {
            app.registry
                .models()
                .filter(|m| usable(&app.provider, m))
                .map(|m| (m.provider.clone(), m.id.clone()))
                .collect()
        } else {
            app.scope
                .iter()
                .map(|s| (s.model.provider.clone(), s.model.id.clone()))
                .collect()
        };
        Ctx {
            harness: app.harness,
            session: app.session,
            session_file: app.session_file,
            session_id: app.header.id,
            registry: app.registry,
            cycle_models,
            settings: app.settings,
            cwd: app.cwd,
            repo: Some(app.repo),
            checkpoints: app.checkpoints,
        }
    }
}

/// Announces retries and automatic compactions in the transcript.
struct Observer(mpsc::UnboundedSender<AppEvent>);

impl PolicyObserver for Observer {
    fn retry_scheduled(&self, attempt: u32, max_attempts: u32, delay_ms: u64, error: &str) {
        let _ = self.0.send(AppEvent::Done(Outcome::Notice(format!(
            "{error}; retrying ({attempt}/{max_attempts}) in {:.1}s",
            delay_ms as f64 / 1000.0
        ))));
    }
    fn retry_finished(&self, success: bool, attempt: u32, final_error: Option<&str>) {
        if !success {
            let _ = self.0.send(AppEvent::Done(Outcome::Error(format!(
                "Giving up after {attempt} retries: {}",
                final_error.unwrap_or("unknown error")
            ))));
        }
    }
    fn compacting(&self, reason: &str) {
        let _ = self.0.send(AppEvent::Done(Outcome::Notice(format!(
            "Compacting the session ({reason})"
        ))));
    }
}

/// The app minus the terminal.
pub struct Driver {
    pub ctx: Ctx,
    pub state: AppState,
    pub transcript: Transcript,
    pub theme: Theme,
    tx: mpsc::UnboundedSender<AppEvent>,
    rx: mpsc::UnboundedReceiver<AppEvent>,
    tasks: JoinSet<()>,
    bash_cancel: Option<CancellationToken>,
    terminal_effects: Vec<Effect>,
    /// Set by a `/fork` with "both": the restore the forked session carries out.
    fork_restore: Option<ForkRestorePlan>,
    /// The text `/copy` put on the clipboard last.
    pub clipboard: Option<String>,
    /// Counts transcript reloads, so a late [`LoadedSession`] from before one is dropped.
    generation: u64,
}

impl Driver {
    /// Subscribes to the harness and loads the session's current branch.
    pub async fn new(ctx: Ctx, theme: Theme) -> Result<Self, crate::error::CliError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let sink = tx.clone();
        ctx.harness.subscribe(move |e| {
            let _ = sink.send(AppEvent::Agent(Box::new(e.clone())));
        });
        let mut d = Driver {
            state: AppState::new(FooterInfo::default(), theme)
                .with_code_restore(ctx.checkpoints.is_some())
                .with_skip_summary_prompt(ctx.settings.branch_summary_skip_prompt()),
            transcript: Transcript::new(theme),
            theme,
            tx,
            rx,
            tasks: JoinSet::new(),
            bash_cancel: None,
            terminal_effects: Vec::new(),
            fork_restore: None,
            clipboard: None,
            generation: 0,
            ctx,
        };
        d.start().await?;
        // The walk runs off the UI thread so a large project does not delay the first frame.
        let (cwd, files_tx) = (d.ctx.cwd.clone(), d.tx.clone());
        d.tasks.spawn(async move {
            if let Ok(files) =
                tokio::task::spawn_blocking(move || project_files(&cwd, 20_000)).await
            {
                let _ = files_tx.send(AppEvent::Done(Outcome::Files(files)));
            }
        });
        Ok(d)
    }

    /// The first frame's content: a path that fits in [`FIRST_FRAME_ENTRIES`] loads at once;
    /// a longer one shows its tail now and loads the rest behind the first frame (DECISIONS
    /// §23.102): the full context (which also warms the session's projection cache for the
    /// first turn), the whole transcript and the footer's totals, off the UI thread.
    async fn start(&mut self) -> Result<(), crate::error::CliError> {
        let session = &self.ctx.session;
        let leaf = session.leaf_id().await?;
        let tail = session
            .storage()
            .path_tail(leaf.as_deref(), FIRST_FRAME_ENTRIES)
            .await?;
        if tail.len() < FIRST_FRAME_ENTRIES {
            return self.reload().await;
        }
        let ctx = arbor_agent::context::projection::build_session_context(
            &tail,
            &ContextOptions::default(),
        );
        // Results whose call is above the tail would show as calls without arguments.
        let first = ctx
            .messages
            .iter()
            .position(|m| !matches!(m, AgentMessage::Llm(Message::ToolResult(_))))
            .unwrap_or(ctx.messages.len());
        let messages = &ctx.messages[first..];
        self.transcript.clear();
        self.transcript.load(messages.iter());
        self.state.editor.set_history(user_texts(messages));
        let mut f = FooterInfo {
            cwd: self.ctx.cwd.display().to_string(),
            session_name: self.ctx.session.name().await?,
            ..FooterInfo::default()
        };
        self.model_fields(&mut f);
        f.context_tokens = context_tokens(messages);
        self.state.footer = f;
        self.state.set_loading(true);
        self.load_behind();
        Ok(())
    }

    /// Spawns the rest of [`Self::start`]: a blocking thread drives the session reads, so the
    /// UI thread keeps reading keys and drawing frames meanwhile.
    fn load_behind(&mut self) {
        let session = self.ctx.session.clone();
        let (theme, tx, generation) = (self.theme, self.tx.clone(), self.generation);
        let handle = tokio::runtime::Handle::current();
        self.tasks.spawn(async move {
            let job = tokio::task::spawn_blocking(move || {
                handle.block_on(async move {
                    let ctx = session.build_context(&ContextOptions::default()).await?;
                    let totals = Totals::of(&session.entries().await?);
                    let mut transcript = Transcript::new(theme);
                    transcript.load(ctx.messages.iter());
                    Ok::<_, arbor_agent::SessionError>(LoadedSession {
                        transcript: Some(transcript),
                        history: Some(user_texts(&ctx.messages)),
                        totals,
                        error: None,
                        generation,
                    })
                })
            });
            let failed = |error: String| LoadedSession {
                transcript: None,
                history: None,
                totals: Totals::default(),
                error: Some(format!("Loading the session failed: {error}")),
                generation,
            };
            let loaded = match job.await {
                Ok(Ok(l)) => l,
                Ok(Err(e)) => failed(e.to_string()),
                Err(e) => failed(e.to_string()),
            };
            let _ = tx.send(AppEvent::Done(Outcome::Loaded(Box::new(loaded))));
        });
    }

    /// Rebuilds transcript, footer and history from the session (start, navigation, compaction).
    pub async fn reload(&mut self) -> Result<(), crate::error::CliError> {
        self.generation += 1;
        let ctx = self
            .ctx
            .session
            .build_context(&ContextOptions::default())
            .await?;
        self.transcript.clear();
        self.transcript.load(ctx.messages.iter());
        self.state.editor.set_history(user_texts(&ctx.messages));
        let mut f = FooterInfo {
            cwd: self.ctx.cwd.display().to_string(),
            session_name: self.ctx.session.name().await?,
            ..FooterInfo::default()
        };
        self.model_fields(&mut f);
        // The session's totals are summed once at start; after that the footer adds each new
        // answer, so navigation and compaction stay independent of the session's size.
        let first = self.state.footer.model.is_empty();
        let old = &self.state.footer;
        if !first {
            (f.input, f.output, f.cache_read, f.cache_write, f.cost) = (
                old.input,
                old.output,
                old.cache_read,
                old.cache_write,
                old.cost,
            );
        }
        if first && !self.state.is_loading() {
            let t = Totals::of(&self.ctx.session.entries().await?);
            (f.input, f.output, f.cache_read, f.cache_write, f.cost) =
                (t.input, t.output, t.cache_read, t.cache_write, t.cost);
        }
        f.context_tokens = context_tokens(&ctx.messages);
        f.frame = self.state.footer.frame;
        f.loading = self.state.footer.loading;
        self.state.footer = f;
        Ok(())
    }

    fn model_fields(&self, f: &mut FooterInfo) {
        let m = self.ctx.harness.model();
        f.provider = m.provider.clone();
        f.model = m.id.clone();
        f.context_window = m.context_window;
        f.thinking = m
            .reasoning
            .then(|| self.ctx.harness.thinking_level().as_str().to_owned());
    }

    fn model_outcome(&self) -> Outcome {
        let mut f = FooterInfo::default();
        self.model_fields(&mut f);
        Outcome::Model {
            provider: f.provider,
            model: f.model,
            context_window: f.context_window,
            thinking: f.thinking,
        }
    }

    /// A sender for events from outside (the terminal reader, ticks).
    pub fn sender(&self) -> mpsc::UnboundedSender<AppEvent> {
        self.tx.clone()
    }

    /// Effects only the terminal loop can carry out.
    pub fn take_terminal_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.terminal_effects)
    }

    /// Handles one event now and carries out what it asks for.
    pub async fn dispatch(&mut self, mut event: AppEvent) {
        if let AppEvent::Agent(e) = &event {
            self.transcript.apply(e);
        }
        if let AppEvent::Done(Outcome::Loaded(l)) = &mut event {
            let full = l.transcript.take();
            if l.generation == self.generation {
                if let Some(full) = full {
                    self.transcript.adopt(full);
                }
            } else {
                // A navigation reloaded the branch meanwhile: its view and history stand.
                l.history = None;
            }
        }
        let reload = matches!(&event, AppEvent::Done(Outcome::Navigated(Ok(_))))
            || matches!(&event, AppEvent::Agent(e) if matches!(**e, arbor_agent::agent::AgentEvent::SessionCompact { .. }));
        let prompt_ended = matches!(&event, AppEvent::Done(Outcome::PromptFinished(_)));
        let effects = self.state.handle(event, Instant::now());
        if prompt_ended {
            // Skipped snapshots and failed captures never fail a turn; they are shown here.
            if let Some(hook) = &self.ctx.checkpoints {
                for n in hook.take_notices() {
                    self.transcript.push_notice(NoticeKind::Info, n);
                }
            }
        }
        if reload {
            if let Err(e) = self.reload().await {
                self.transcript
                    .push_notice(NoticeKind::Error, e.to_string());
            }
        }
        for e in effects {
            self.execute(e).await;
        }
        self.flush_notes();
    }

    /// Carries out one effect directly (the loop's start-up actions, tests).
    pub async fn dispatch_effect(&mut self, effect: Effect) {
        self.execute(effect).await;
        self.flush_notes();
    }

    fn flush_notes(&mut self) {
        for n in self.state.notes.drain(..) {
            match n {
                Note::Notice(t) => self.transcript.push_notice(NoticeKind::Info, t),
                Note::Error(t) => self.transcript.push_notice(NoticeKind::Error, t),
            }
        }
    }

    /// Waits for the next event (from the harness, a task, or [`Driver::sender`]); reaps
    /// finished tasks on the way.
    pub async fn next_event(&mut self) -> Option<AppEvent> {
        loop {
            tokio::select! {
                ev = self.rx.recv() => return ev,
                Some(_) = self.tasks.join_next(), if !self.tasks.is_empty() => {}
            }
        }
    }

    /// Handles everything pending until no task runs and no event waits (tests).
    pub async fn settle(&mut self) {
        loop {
            while let Ok(ev) = self.rx.try_recv() {
                self.dispatch(ev).await;
            }
            if self.tasks.is_empty() {
                // A task's last event may have arrived after the drain.
                match self.rx.try_recv() {
                    Ok(ev) => {
                        self.dispatch(ev).await;
                        continue;
                    }
                    Err(_) => return,
                }
            }
            let _ = self.tasks.join_next().await;
        }
    }

    /// Handles the events that already arrived, without waiting for tasks.
    pub async fn settle_available(&mut self) {
        while let Ok(ev) = self.rx.try_recv() {
            self.dispatch(ev).await;
        }
    }

    /// Draws the screen; returns the cursor position.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer) -> (u16, u16) {
        super::view::render(
            &mut self.state,
            &mut self.transcript,
            area,
            buf,
            &self.theme,
        )
    }

    fn done(&self, o: Outcome) {
        let _ = self.tx.send(AppEvent::Done(o));
    }

    async fn execute(&mut self, effect: Effect) {
        let h = self.ctx.harness.clone();
        let tx = self.tx.clone();
        match effect {
            Effect::Prompt(text) => {
                let settings = self.ctx.settings.clone();
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
                let cwd = self.ctx.cwd.clone();
                let settings = crate::tools::ToolSettings {
                    shell_path: self.ctx.settings.shell_path(),
                    shell_command_prefix: self.ctx.settings.shell_command_prefix(),
                    ..Default::default()
                };
                self.tasks.spawn(async move {
                    let run = crate::user_bash::run(cwd, settings, &command, cancel, None).await;
                    let message = run.message(&command, include);
                    if let Err(e) = h.append_message(AgentMessage::BashExecution(message)).await {
                        let _ = tx.send(AppEvent::Done(Outcome::Error(e.to_string())));
                    }
                    let _ = tx.send(AppEvent::Done(Outcome::Bash {
                        command,
                        output: run.output,
                        exit_code: run.exit_code,
                    }));
                });
            }
            Effect::OpenTree => match self.ctx.session.tree().await {
                Ok(tree) => {
                    let nav = TreeNavigator::new(tree, TreeFilter::default(), self.theme);
                    self.state.overlay = Some(Overlay::Tree(Box::new(nav)));
                }
                Err(e) => self.done(Outcome::Error(e.to_string())),
            },
            Effect::SetLabel { id, label } => {
                if let Err(e) = self.ctx.session.append_label(&id, label.as_deref()).await {
                    self.done(Outcome::Error(e.to_string()));
                }
            }
            Effect::Resume => {
                let Some(repo) = &self.ctx.repo else {
                    self.done(Outcome::Error("No session store to resume from".into()));
                    return;
                };
                match arbor_agent::session::SessionRepository::list(repo).await {
                    Ok(list) => {
                        let current = self
                            .ctx
                            .session_file
                            .as_ref()
                            .map(|p| p.display().to_string());
                        let picker = SessionPicker::new(
                            list.sessions,
                            &self.ctx.cwd.display().to_string(),
                            current.as_deref(),
                            arbor_ai::time::now_ms(),
                            self.theme,
                        );
                        self.state.overlay = Some(Overlay::Sessions(Box::new(picker)));
                    }
                    Err(e) => self.done(Outcome::Error(e.to_string())),
                }
            }
            Effect::DeleteSession(location) => {
                if let Some(repo) = &self.ctx.repo {
                    if let Err(e) =
                        arbor_agent::session::SessionRepository::delete(repo, &location).await
                    {
                        self.done(Outcome::Error(e.to_string()));
                    }
                }
            }
            Effect::OpenSession(_) => self.terminal_effects.push(effect),
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
                    let o = match r {
                        Ok(r) if r.cancelled => {
                            let _ = tx.send(AppEvent::Done(Outcome::Notice(
                                "Navigation cancelled".into(),
                            )));
                            Outcome::Navigated(Ok(None))
                        }
                        Ok(r) => Outcome::Navigated(Ok(r.editor_text)),
                        Err(e) => Outcome::Navigated(Err(std::sync::Arc::new(e.into()))),
                    };
                    let _ = tx.send(AppEvent::Done(o));
                });
            }
            Effect::UndoRestore => {
                let Some(hook) = self.ctx.checkpoints.clone() else {
                    self.done(Outcome::Error(
                        "Workspace checkpoints are off for this run: there is no restore to undo"
                            .into(),
                    ));
                    self.done(Outcome::Idle);
                    return;
                };
                let session = self.ctx.session.clone();
                self.tasks.spawn(async move {
                    let o = match hook.recorder().undo_restore(&session).await {
                        Ok(report) => Outcome::Notice(undo_notice(&report)),
                        Err(e) => Outcome::Error(e.to_string()),
                    };
                    let _ = tx.send(AppEvent::Done(o));
                    let _ = tx.send(AppEvent::Done(Outcome::Idle));
                });
            }
            Effect::Compact(instructions) => {
                self.tasks.spawn(async move {
                    let r = h.compact(instructions.as_deref()).await;
                    // A compaction that ran reports its failure in its `compaction_end` event
                    // (the transcript shows it); only "nothing to compact" never starts one.
                    if let Err(e) = r {
                        if e.message() == arbor_agent::harness::NOTHING_TO_COMPACT {
                            let _ =
                                tx.send(AppEvent::Done(Outcome::Notice(e.message().to_owned())));
                        }
                    }
                    let _ = tx.send(AppEvent::Done(Outcome::Idle));
                });
            }
            Effect::CycleModel => {
                let list = &self.ctx.cycle_models;
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
                        .ctx
                        .cycle_models
                        .iter()
                        .filter_map(|(p, id)| self.ctx.registry.get(p, id))
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
                let next = match effect {
                    Effect::SetThinking(Some(l)) => match ThinkingLevel::parse(&l) {
                        Some(l) => l,
                        None => {
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
                    _ => next_level(&model, h.thinking_level()).unwrap_or(ThinkingLevel::Off),
                };
                match h.set_thinking_level(next).await {
                    Ok(()) => self.done(self.model_outcome()),
                    Err(e) => self.done(Outcome::Error(e.to_string())),
                }
            }
            Effect::SetName(name) => {
                let name = name.trim().to_owned();
                match self.ctx.session.append_session_name(&name).await {
                    Ok(_) => {
                        self.done(Outcome::SessionName(Some(name.clone())));
                        self.done(Outcome::Notice(format!("Session name: {name}")));
                    }
                    Err(e) => self.done(Outcome::Error(e.to_string())),
                }
            }
            Effect::ShowName => {
                let text = match self.ctx.session.name().await {
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
                let Some(file) = self.ctx.session_file.clone() else {
                    self.done(Outcome::Error(
                        "Cannot export: the session is not stored (--no-session)".into(),
                    ));
                    return;
                };
                let out = path.map(|p| crate::tools::path::resolve(&p, &self.ctx.cwd));
                match crate::export::export(&file, out.as_deref()).await {
                    Ok(p) => self.done(Outcome::Notice(format!("Exported to: {}", p.display()))),
                    Err(e) => self.done(Outcome::Error(e.to_string())),
                }
            }
            Effect::Copy => match self.last_assistant_text().await {
                Some(t) => {
                    self.clipboard = Some(t);
                    self.terminal_effects.push(Effect::Copy);
                    self.done(Outcome::Notice(
                        "Copied the last assistant message to the clipboard".into(),
                    ));
                }
                None => self.done(Outcome::Error("No assistant message to copy".into())),
            },
            Effect::Fork => match self.ctx.session.branch(None).await {
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
            Effect::ExternalEditor(_) | Effect::Quit => self.terminal_effects.push(effect),
            Effect::ToggleThinking => self.transcript.toggle_thinking(),
            Effect::ToggleTools => self.transcript.toggle_tools(),
            Effect::ScrollPage(n) if n < 0 => self.transcript.scroll_page_up(),
            Effect::ScrollPage(_) => self.transcript.scroll_page_down(),
            Effect::ScrollLines(n) if n < 0 => self.transcript.scroll_up(n.unsigned_abs() as usize),
            Effect::ScrollLines(n) => self.transcript.scroll_down(n as usize),
            Effect::ScrollBottom => self.transcript.scroll_to_bottom(),
        }
    }

    /// Moves the code (and for `Both` the conversation) through `checkpoints::navigate` in a
    /// task; the transcript then says how to undo the restore (DECISIONS §27.21).
    fn code_navigation(
        &mut self,
        target: Option<String>,
        summarize: bool,
        custom_instructions: Option<String>,
        restore: RestoreMode,
    ) {
        self.state.background = Some("navigating".into());
        if summarize {
            self.state.footer.compacting = Some("summarizing branch…".into());
        }
        let (h, tx) = (self.ctx.harness.clone(), self.tx.clone());
        let hook = self.ctx.checkpoints.clone();
        self.tasks.spawn(async move {
            let opts = Effect::navigate_options(summarize, custom_instructions);
            let r =
                crate::checkpoints::navigate(&h, hook.as_deref(), target.as_deref(), restore, opts)
                    .await;
            let o = match r {
                Ok(m) => {
                    let text = match &m.restore {
                        Some(report) => restore_notice(report),
                        None => "Workspace unchanged".to_owned(),
                    };
                    let moved = match m.navigation {
                        Some(n) if n.cancelled => Outcome::Navigated(Ok(None)),
                        Some(n) => Outcome::Navigated(Ok(n.editor_text)),
                        None => Outcome::Navigated(Ok(None)),
                    };
                    // After the move: a navigation reloads the transcript.
                    let _ = tx.send(AppEvent::Done(moved));
                    Outcome::Notice(text)
                }
                Err(e) => Outcome::Navigated(Err(std::sync::Arc::new(e))),
            };
            let _ = tx.send(AppEvent::Done(o));
        });
    }

    /// Refuses a `/fork` with "both" before any file is written: the fork point (the user
    /// message's parent) needs a checkpoint whose objects are still there.
    async fn plan_fork_restore(&self, entry_id: &str) -> Result<ForkRestorePlan, CliError> {
        let Some(hook) = &self.ctx.checkpoints else {
            return Err(CliError::Workspace(
                "workspace checkpoints are off for this run; only the conversation can be forked"
                    .into(),
            ));
        };
        let session = &self.ctx.session;
        let point = session
            .get_entry(entry_id)
            .await?
            .ok_or_else(|| CliError::NotFound(format!("entry {entry_id} not found")))?
            .parent_id;
        let Some((marker, state)) = crate::checkpoints::state_of(session, point.as_deref()).await?
        else {
            return Err(CliError::Workspace(format!(
                "no workspace checkpoint above entry {entry_id}; only the conversation can be forked"
            )));
        };
        hook.recorder().check_restorable(&state).await?;
        Ok(ForkRestorePlan { marker, state })
    }

    /// The code restore a `/fork` with "both" still owes, for the forked session's driver
    /// ([`Driver::finish_fork_restore`]).
    pub fn take_fork_restore(&mut self) -> Option<ForkRestorePlan> {
        self.fork_restore.take()
    }

    /// Copies this session into a new file for `/fork` (`Some(entry)`: ending before that user
    /// message) or `/clone` (`None`: the whole branch). `Ok(None)`: the copy holds no message
    /// yet, so it is not written (the app then starts a fresh session).
    pub async fn fork_file(&self, before: Option<&str>) -> Result<Option<String>, CliError> {
        use arbor_agent::session::{
            ForkOptions, ForkPosition, JsonlRepository, SessionRepository, SessionStorage,
        };
        let Some(file) = &self.ctx.session_file else {
            return Err(CliError::Startup(
                "This session is not stored (--no-session): there is nothing to copy".into(),
            ));
        };
        let (entry_id, position) = match before {
            Some(id) => (Some(id.to_owned()), ForkPosition::Before),
            None => (self.ctx.session.leaf_id().await?, ForkPosition::At),
        };
        let dir = file
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default();
        let copy = JsonlRepository::flat(dir)
            .fork(
                &file.display().to_string(),
                ForkOptions {
                    entry_id,
                    position,
                    ..Default::default()
                },
            )
            .await?;
        let location = SessionStorage::location(&copy);
        Ok(std::path::Path::new(&location)
            .is_file()
            .then_some(location))
    }

    /// In a session just forked or cloned: gives it its own refs to the checkpoints on its
    /// path (so pruning the source cannot take them away), then carries out the code restore a
    /// `/fork` with "both" asked for, saying how to undo it.
    pub async fn finish_fork_restore(&mut self, plan: Option<ForkRestorePlan>) {
        let Some(hook) = self.ctx.checkpoints.clone() else {
            if plan.is_some() {
                self.done(Outcome::Error(
                    "The forked session records no checkpoints: the files were not restored".into(),
                ));
            }
            return;
        };
        let session = self.ctx.session.clone();
        if let Err(e) = hook.recorder().adopt_path(&session).await {
            self.done(Outcome::Error(format!(
                "The fork could not adopt its checkpoints: {e}"
            )));
        }
        if let Some(plan) = plan {
            let r = hook
                .recorder()
                .restore_to(&session, Some(plan.marker), plan.state, RestoreMode::Both)
                .await;
            match r {
                Ok(report) => self.done(Outcome::Notice(restore_notice(&report))),
                Err(e) => self.done(Outcome::Error(format!(
                    "The fork was made but its files were not restored: {e}"
                ))),
            }
        }
    }

    fn find_model(&self, spec: &str) -> Result<arbor_ai::Model, arbor_ai::AiError> {
        if let Some((p, id)) = spec.split_once('/') {
            if let Some(m) = self.ctx.registry.get(p, id) {
                return Ok(m.clone());
            }
        }
        self.ctx.registry.find(spec).cloned()
    }

    async fn switch_model(&mut self, provider: &str, id: &str) {
        let Some(model) = self.ctx.registry.get(provider, id).cloned() else {
            self.done(Outcome::Error(format!("Model not found: {provider}/{id}")));
            return;
        };
        match self.ctx.harness.set_model(model).await {
            Ok(()) => {
                self.done(self.model_outcome());
                self.done(Outcome::Notice(format!("Model: {provider}/{id}")));
            }
            Err(e) => self.done(Outcome::Error(e.to_string())),
        }
    }

    async fn last_assistant_text(&self) -> Option<String> {
        let ctx = self
            .ctx
            .session
            .build_context(&ContextOptions::default())
            .await
            .ok()?;
        ctx.messages.iter().rev().find_map(|m| match m {
            AgentMessage::Llm(Message::Assistant(a)) if !a.text().is_empty() => Some(a.text()),
            _ => None,
        })
    }

    async fn stats(&self) -> String {
        let entries = match self.ctx.session.entries().await {
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
            .ctx
            .session_file
            .as_ref()
            .map_or("In-memory".to_owned(), |p| p.display().to_string());
        let model = format!("{}/{}", f.provider, f.model);
        format!(
            "Session {name}\nFile: {file}\nID: {}\nModel: {model}\nMessages: {users} user, {assistants} assistant, {calls} tool calls, {results} tool results\nTokens: {} input ({} cache read, {} cache write), {} output\nCost: ${:.4}",
            self.ctx.session_id,
            f.input + f.cache_read + f.cache_write,
            f.cache_read,
            f.cache_write,
            f.output,
            f.cost
        )
    }

    /// Whether the harness or one of the driver's tasks is still working.
    pub fn busy(&self) -> bool {
        !self.tasks.is_empty() || self.ctx.harness.phase() != Phase::Idle
    }
}

/// A `/fork` code restore checked before the fork: the fork point's state and the entry it
/// was recorded in.
#[derive(Debug, Clone, PartialEq)]
pub struct ForkRestorePlan {
    pub marker: String,
    pub state: arbor_checkpoint::Checkpoint,
}

/// The short form of a checkpoint id shown to users.
fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// What a code restore did, and how to undo it (DECISIONS §27.21).
pub fn restore_notice(report: &crate::checkpoints::RestoreReport) -> String {
    match &report.restored {
        None => "Workspace already at that checkpoint; no file changed".to_owned(),
        Some(r) => format!(
            "Workspace restored to checkpoint {} ({} paths changed). The files before are kept \
             as checkpoint {}: /undo-restore puts them back",
            short(&report.to.id),
            r.changed.len(),
            short(&report.from.id)
        ),
    }
}

/// What `/undo-restore` did; running it again swaps back.
pub fn undo_notice(report: &crate::checkpoints::RestoreReport) -> String {
    match &report.restored {
        None => "Workspace already as before the restore; no file changed".to_owned(),
        Some(r) => format!(
            "Workspace back to checkpoint {} ({} paths changed). /undo-restore again returns \
             to checkpoint {}",
            short(&report.to.id),
            r.changed.len(),
            short(&report.from.id)
        ),
    }
}

/// The project's files for `@` completion: an `ignore` walk (honours .gitignore), relative
/// paths, at most `limit` (DECISIONS §23.6).
pub fn project_files(cwd: &std::path::Path, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    for entry in ignore::WalkBuilder::new(cwd).hidden(true).build().flatten() {
        if out.len() >= limit {
            break;
        }
        if entry.file_type().is_some_and(|t| t.is_file()) {
            if let Ok(rel) = entry.path().strip_prefix(cwd) {
                out.push(rel.display().to_string());
            }
        }
    }
    out.sort();
    out
}
