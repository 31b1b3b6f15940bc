//! The async side of the app: it owns the [`AppState`], feeds it events (keys from the terminal,
//! harness events from a subscription, outcomes of its own tasks) and carries out the
//! [`Effect`]s against the real [`AgentHarness`]. Long operations (a prompt, a compaction, a
//! navigation, `!cmd`) run as tasks so the UI keeps drawing and Esc can abort them.
//!
//! The driver has no terminal either: [`Driver::render`] draws into a `Buffer`, and the few
//! effects that need the terminal (external editor, clipboard, quitting) are handed back to
//! the loop in [`super::run`] through [`Driver::take_terminal_effects`].
//!
//! The operations RPC mode also performs are not written here: the effects call the command
//! layer's (`command::operations` for the model, the thinking level, compaction, the
//! last assistant text and HTML export; `command::set_session_name`; the counts of
//! `command::session_stats`; the cycling order of `command::models`) and only
//! turn the typed result into the TUI's notice text.

mod effects;
mod extra_commands;
mod fork_restore;
mod login;
mod resources;
mod restore_report;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use arbor_agent::context::projection::ContextOptions;
use arbor_agent::harness::{AgentHarness, Phase, PolicyObserver};
use arbor_agent::message::AgentMessage;
use arbor_agent::session::Session;
use arbor_ai::models::ModelRegistry;
use arbor_ai::Message;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::footer::FooterInfo;
pub use super::loading::FIRST_FRAME_ENTRIES;
use super::loading::{context_tokens, user_texts, LoadedSession, Totals};
use super::state::{AppEvent, AppState, Effect, Note, Outcome};
use super::theme::Theme;
use super::transcript::{NoticeKind, TranscriptView};
use crate::command::models::usable;
use crate::config::Settings;
pub use restore_report::{restore_notice, undo_notice, ForkRestorePlan};

/// The app as the TUI drives it: the parts of the started app (`startup::App`) the UI needs.
#[derive(Clone)]
pub struct TuiApp {
    pub harness: AgentHarness,
    pub session: Arc<Session>,
    pub session_file: Option<PathBuf>,
    pub session_id: String,
    pub registry: Arc<ModelRegistry>,
    /// Models Ctrl+P cycles through (provider, id), in order.
    pub cycle_models: Vec<(String, String)>,
    /// Every model with credentials or a local URL (what `/scoped-models` patterns match).
    pub usable_models: Vec<(String, String)>,
    pub settings: Settings,
    pub cwd: PathBuf,
    /// Where `/resume` lists sessions (`None`: in-memory tests).
    pub repo: Option<arbor_agent::session::JsonlRepository>,
    /// The PostgreSQL store the run writes its sessions to: `/search` searches it too
    /// (DECISIONS §34.9).
    pub session_store: Option<String>,
    /// The workspace checkpoint hook (`None`: checkpoints off): `/tree` offers code restores
    /// only when it is there (DECISIONS §23.12).
    pub checkpoints: Option<Arc<crate::checkpoints::CheckpointHook>>,
    /// The variables `!` commands do not get (DECISIONS §30.7).
    pub env_policy: Arc<arbor_tools::env_policy::EnvPolicy>,
    /// Skills and prompt templates (`/reload` re-reads them).
    pub resources: crate::resources::LiveResources,
    /// The project trust decision this run started with.
    pub trust: crate::trust::ProjectTrust,
    /// The run's MCP servers (`None`: `--no-mcp`, tests); `/mcp` shows and drives them.
    pub mcp: Option<crate::mcp::McpManager>,
    /// `/login` and `/logout` (`None`: tests without an auth store).
    pub logins: Option<super::login::Logins>,
}

impl TuiApp {
    pub fn from_app(app: crate::startup::App) -> Self {
        // Ctrl+P cycles the `--models` / `enabledModels` scope when one is set, else every
        // model with credentials or a local URL (DECISIONS §23.18).
        let usable_models: Vec<(String, String)> = app
            .registry
            .models()
            .filter(|m| usable(&app.provider, m))
            .map(|m| (m.provider.clone(), m.id.clone()))
            .collect();
        let cycle_models = if app.scope.is_empty() {
            usable_models.clone()
        } else {
            app.scope
                .iter()
                .map(|s| (s.model.provider.clone(), s.model.id.clone()))
                .collect()
        };
        TuiApp {
            harness: app.harness,
            session: app.session,
            session_file: app.session_file,
            session_id: app.header.id,
            registry: app.registry,
            cycle_models,
            usable_models,
            settings: app.settings,
            cwd: app.cwd,
            repo: Some(app.repo),
            session_store: app.session_store,
            checkpoints: app.checkpoints,
            env_policy: app.secrets.env_policy,
            resources: app.resources,
            trust: app.trust,
            mcp: app.mcp,
            logins: Some(super::login::Logins::new(
                app.provider.clone(),
                app.secrets.redactor.clone(),
                !app.scope.is_empty(),
            )),
        }
    }

    /// Whether `location` (a session file's path, or a store session's id or location) names
    /// the session this app runs on.
    pub fn is_current(&self, location: &str) -> bool {
        match &self.session_file {
            Some(file) => file.as_path() == std::path::Path::new(location),
            None => {
                self.session_store.is_some()
                    && crate::lookup::names_store_session(location, &self.session_id)
            }
        }
    }
}

/// Announces retries and automatic compactions in the transcript: each with a start line
/// and an end line (DECISIONS §23.174), never on stderr.
struct Observer(mpsc::UnboundedSender<AppEvent>);

impl Observer {
    fn send(&self, o: Outcome) {
        let _ = self.0.send(AppEvent::Done(o));
    }
}

impl PolicyObserver for Observer {
    fn retry_scheduled(&self, attempt: u32, max_attempts: u32, delay_ms: u64, error: &str) {
        self.send(Outcome::Notice(format!(
            "{}; retrying ({attempt}/{max_attempts}) in {:.1}s",
            crate::notices::bare(error),
            delay_ms as f64 / 1000.0
        )));
    }
    fn retry_finished(&self, success: bool, attempt: u32, final_error: Option<&str>) {
        self.send(match (success, final_error) {
            (true, _) => Outcome::Notice(format!("Retry {attempt} succeeded")),
            (false, Some(arbor_agent::harness::RETRY_CANCELLED)) => {
                Outcome::Notice(arbor_agent::harness::RETRY_CANCELLED.to_owned())
            }
            (false, e) => Outcome::Error(format!(
                "Giving up after {attempt} retries: {}",
                crate::notices::bare(e.unwrap_or("unknown error"))
            )),
        });
    }
    fn compacting(&self, reason: &str) {
        self.send(Outcome::OperationStarted(format!(
            "Compacting the session ({reason})…"
        )));
    }
    fn compaction_failed(&self, error: &arbor_agent::agent::AgentError) {
        let (nothing, text) = crate::policy::compaction_failure(error);
        self.send(Outcome::CompactionFailed { nothing, text });
    }
}

/// The app minus the terminal.
pub struct Driver {
    pub app: TuiApp,
    pub state: AppState,
    pub transcript: TranscriptView,
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
    pub async fn new(app: TuiApp, theme: Theme) -> Result<Self, crate::error::CliError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let sink = tx.clone();
        app.harness.subscribe(move |e| {
            let _ = sink.send(AppEvent::Agent(Box::new(e.clone())));
        });
        if let Some(mcp) = &app.mcp {
            // Crash and reconnect notices go to the transcript, not over the screen.
            let notices = tx.clone();
            mcp.on_notice(move |text| {
                let _ = notices.send(AppEvent::Done(Outcome::Notice(text)));
            });
        }
        let mut d = Driver {
            state: AppState::new(FooterInfo::default(), theme)
                .with_code_restore(app.checkpoints.is_some())
                .with_skip_summary_prompt(app.settings.branch_summary_skip_prompt()),
            transcript: TranscriptView::new(theme),
            theme,
            tx,
            rx,
            tasks: JoinSet::new(),
            bash_cancel: None,
            terminal_effects: Vec::new(),
            fork_restore: None,
            clipboard: None,
            generation: 0,
            app,
        };
        d.start().await?;
        let resources = d.app.resources.resources();
        d.announce_resources(&resources, false);
        d.refresh_files();
        Ok(d)
    }

    /// Walks the project for `@` completion off the UI thread (a large project does not delay
    /// a frame). Run at start and again after every prompt and `!cmd`, so files the agent or
    /// the user created are offered (DECISIONS §23.6).
    fn refresh_files(&mut self) {
        let (cwd, files_tx) = (self.app.cwd.clone(), self.tx.clone());
        self.tasks.spawn(async move {
            if let Ok(files) = tokio::task::spawn_blocking(move || {
                super::project_files::project_files(&cwd, 20_000)
            })
            .await
            {
                let _ = files_tx.send(AppEvent::Done(Outcome::Files(files)));
            }
        });
    }

    /// The first frame's content: a path that fits in [`FIRST_FRAME_ENTRIES`] loads at once;
    /// a longer one shows its tail now and loads the rest behind the first frame (DECISIONS
    /// §23.102): the full context (which also warms the session's projection cache for the
    /// first turn), the whole transcript and the footer's totals, off the UI thread.
    async fn start(&mut self) -> Result<(), crate::error::CliError> {
        let session = &self.app.session;
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
            cwd: self.app.cwd.display().to_string(),
            session_name: self.app.session.name().await?,
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
        let session = self.app.session.clone();
        let (theme, tx, generation) = (self.theme, self.tx.clone(), self.generation);
        let handle = tokio::runtime::Handle::current();
        self.tasks.spawn(async move {
            let job = tokio::task::spawn_blocking(move || {
                handle.block_on(async move {
                    let ctx = session.build_context(&ContextOptions::default()).await?;
                    let totals = Totals::of(&session.entries().await?);
                    let mut transcript = TranscriptView::new(theme);
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
            .app
            .session
            .build_context(&ContextOptions::default())
            .await?;
        self.transcript.clear();
        self.transcript.load(ctx.messages.iter());
        self.state.editor.set_history(user_texts(&ctx.messages));
        let mut f = FooterInfo {
            cwd: self.app.cwd.display().to_string(),
            session_name: self.app.session.name().await?,
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
            let t = Totals::of(&self.app.session.entries().await?);
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
        let m = self.app.harness.model();
        f.provider = m.provider.clone();
        f.model = m.id.clone();
        f.context_window = m.context_window;
        f.thinking = m
            .reasoning
            .then(|| self.app.harness.thinking_level().as_str().to_owned());
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
        if let AppEvent::Done(Outcome::Bash(m)) = &event {
            self.transcript.push_message(m);
            self.refresh_files();
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
            self.refresh_files();
            // Skipped snapshots and failed captures never fail a turn; they are shown here.
            if let Some(hook) = &self.app.checkpoints {
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
                Note::Warning(t) => self.transcript.push_notice(NoticeKind::Warning, t),
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

    /// Stops the user's running `!cmd`, if any: its process group is ended and the run is
    /// still recorded by its task (DECISIONS §28.2).
    pub fn cancel_user_bash(&mut self) {
        if let Some(c) = self.bash_cancel.take() {
            c.cancel();
        }
    }

    /// Whether the harness or one of the driver's tasks is still working.
    pub fn busy(&self) -> bool {
        !self.tasks.is_empty() || self.app.harness.phase() != Phase::Idle
    }
}
