//! The app's state machine, with no terminal and no harness: [`AppState::handle`] takes one
//! [`AppEvent`] (a key, a paste, a harness event, a tick, the outcome of an earlier effect) and
//! returns the [`Effect`]s the driver must carry out. Everything a key does is decided here, so
//! key sequences are tested by feeding events (DECISIONS §23.1).

use std::time::{Duration, Instant};

use arbor_agent::agent::AgentEvent;
use arbor_agent::message::AgentMessage;
use arbor_ai::Message;

use super::editor::Editor;
use super::footer::FooterInfo;
use super::fork_picker::{ForkPicker, ForkPoint};
use super::picker::model::ModelPicker;
use super::picker::session::SessionPicker;
use super::restore_confirm::RestoreConfirm;
use super::summarize::{SummarizePrompt, SummaryProgress};
use super::theme::Theme;
use super::tree::TreeNavigator;

mod events;
mod keys;

pub use events::{AppEvent, Effect, Note, Outcome, TaskError};

/// Two Esc presses closer than this on an empty editor open `/tree` (DECISIONS §23.9).
pub const DOUBLE_ESC: Duration = Duration::from_millis(500);
/// Two Ctrl+C presses closer than this on an empty editor quit.
pub const DOUBLE_CTRL_C: Duration = Duration::from_millis(1000);

/// The key table `/hotkeys` shows.
pub const HOTKEYS: &[(&str, &str)] = &[
    ("Enter", "send (while working: steer)"),
    (
        "Alt+Enter",
        "while working: queue a follow-up; idle: newline",
    ),
    ("Shift+Enter, Ctrl+J", "newline"),
    ("Esc", "abort; twice on an empty editor: /tree"),
    ("Ctrl+C", "clear the editor; twice on an empty one: quit"),
    ("Ctrl+D", "quit (empty editor)"),
    ("Up / Down", "history (first / last line)"),
    ("Tab", "complete a /command or an @file"),
    ("Ctrl+G", "edit in $VISUAL / $EDITOR"),
    ("Ctrl+P", "next model"),
    ("Ctrl+L", "choose the model"),
    ("Alt+Up", "take the queued messages back into the editor"),
    (
        "Ctrl+W / Ctrl+U / Ctrl+K",
        "delete a word / to line start / to line end",
    ),
    (
        "Ctrl+Y / Alt+Y",
        "paste the deleted text / an older deletion",
    ),
    ("Ctrl+X", "copy the last assistant message"),
    ("Ctrl+Z", "suspend to the shell (fg resumes)"),
    ("Shift+Tab", "next thinking level"),
    ("Ctrl+T", "show / hide thinking"),
    ("Ctrl+O", "expand / collapse tool output"),
    ("PageUp / PageDown", "scroll the transcript"),
    (
        "!cmd / !!cmd",
        "run a shell command (with / without adding it to the context)",
    ),
];

/// A modal part of the UI; while one is open it gets every key.
pub enum Overlay {
    Tree(Box<TreeNavigator>),
    Summarize {
        prompt: Box<SummarizePrompt>,
        target: String,
    },
    /// A branch summary streams (Esc aborts it).
    Progress(Box<SummaryProgress>),
    Sessions(Box<SessionPicker>),
    Search(Box<crate::tui::picker::search::SearchPicker>),
    Models(Box<ModelPicker>),
    Fork(Box<ForkPicker>),
    /// "Restore what?" after a `/fork` choice whose fork point has a checkpoint.
    ForkRestore {
        prompt: Box<SummarizePrompt>,
        point: ForkPoint,
    },
    /// `/login PROVIDER`'s masked key prompt.
    Login(Box<crate::tui::login::KeyPrompt>),
    /// "Restore anyway?" before a restore removes untracked files; `under` is the overlay it
    /// covers (a summary's progress), shown again after a yes.
    ConfirmRestore {
        confirm: Box<RestoreConfirm>,
        under: Option<Box<Overlay>>,
    },
}

impl std::fmt::Debug for Overlay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Overlay::Tree(_) => "Tree",
            Overlay::Summarize { .. } => "Summarize",
            Overlay::Progress(_) => "Progress",
            Overlay::Sessions(_) => "Sessions",
            Overlay::Search(_) => "Search",
            Overlay::Models(_) => "Models",
            Overlay::Fork(_) => "Fork",
            Overlay::ForkRestore { .. } => "ForkRestore",
            Overlay::ConfirmRestore { .. } => "ConfirmRestore",
            Overlay::Login(_) => "Login",
        })
    }
}

/// A completion popup over the editor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    /// (replacement, help) pairs.
    pub items: Vec<(String, String)>,
    pub selected: usize,
}

/// The whole UI state the driver renders.
#[derive(Debug)]
pub struct AppState {
    pub editor: Editor,
    pub footer: FooterInfo,
    /// Queued steering and follow-up texts, shown above the editor.
    pub steering: Vec<String>,
    pub follow_ups: Vec<String>,
    /// Since when a prompt runs (`None`: idle).
    pub busy_since: Option<Instant>,
    /// A background operation that is not a prompt (compaction, `!cmd`, navigation).
    pub background: Option<String>,
    pub completion: Option<Completion>,
    /// Files offered for `@` completion (relative paths), filled by the driver.
    pub files: Vec<String>,
    /// Prompt templates and `skill:name` commands as (name, help), filled by the driver.
    pub user_commands: Vec<(String, String)>,
    pub notes: Vec<Note>,
    pub quit: bool,
    /// Prompts sent one after another when the current one ends (command-line messages).
    pub pending_prompts: std::collections::VecDeque<String>,
    pub size: (u16, u16),
    pub overlay: Option<Overlay>,
    pub theme: Theme,
    /// The start line of the long operation running now (a compaction, a branch summary):
    /// shown again at the bottom after the reload it causes (DECISIONS §23.174).
    operation: Option<String>,
    /// The run records workspace checkpoints, so `/tree` may offer a code restore.
    code_restore: bool,
    /// `branchSummary.skipPrompt`: `/tree` never asks "Summarize branch?".
    skip_summary_prompt: bool,
    /// The first frame came from the path's tail; the full context is still loading
    /// (DECISIONS §23.102). A prompt sent meanwhile waits in `waiting_prompt`.
    loading: bool,
    waiting_prompt: Option<String>,
    summary_since: Option<Instant>,
    last_esc: Option<Instant>,
    last_ctrl_c: Option<Instant>,
}

impl AppState {
    /// Offers "Restore what?" in `/tree` when the target has a checkpoint (DECISIONS §23.12).
    pub fn with_code_restore(mut self, on: bool) -> Self {
        self.code_restore = on;
        self
    }

    /// `branchSummary.skipPrompt` (DECISIONS §23.120): `/tree` moves without a summary and
    /// without asking (the restore question, when there is one, is still asked).
    pub fn with_skip_summary_prompt(mut self, on: bool) -> Self {
        self.skip_summary_prompt = on;
        self
    }
}

impl Default for AppState {
    fn default() -> Self {
        Self::new(FooterInfo::default(), Theme::monochrome())
    }
}

fn text_of(m: &AgentMessage) -> String {
    match m {
        AgentMessage::Llm(Message::User(u)) => u.content.joined_text(""),
        _ => String::new(),
    }
}

impl AppState {
    pub fn new(footer: FooterInfo, theme: Theme) -> Self {
        Self {
            editor: Editor::new(),
            footer,
            steering: Vec::new(),
            follow_ups: Vec::new(),
            busy_since: None,
            background: None,
            completion: None,
            files: Vec::new(),
            user_commands: Vec::new(),
            notes: Vec::new(),
            quit: false,
            pending_prompts: Default::default(),
            size: (80, 24),
            overlay: None,
            theme,
            operation: None,
            summary_since: None,
            last_esc: None,
            last_ctrl_c: None,
            code_restore: false,
            skip_summary_prompt: false,
            loading: false,
            waiting_prompt: None,
        }
    }

    /// Marks the session as still loading behind the first frame (the driver sets it).
    pub fn set_loading(&mut self, loading: bool) {
        self.loading = loading;
        self.footer.loading = loading;
    }

    pub fn is_loading(&self) -> bool {
        self.loading
    }

    /// The prompt waiting for the session to load, if any.
    pub fn waiting_prompt(&self) -> Option<&str> {
        self.waiting_prompt.as_deref()
    }

    /// Sends `text` as a prompt now, or once the session has loaded: the effects to run.
    pub fn prompt(&mut self, text: String) -> Vec<Effect> {
        self.busy_since = Some(Instant::now());
        if self.loading {
            self.waiting_prompt = Some(text);
            Vec::new()
        } else {
            vec![Effect::Prompt(text)]
        }
    }

    pub fn is_running(&self) -> bool {
        self.busy_since.is_some()
    }

    fn notice(&mut self, s: impl Into<String>) {
        self.notes.push(Note::Notice(s.into()));
    }

    fn error(&mut self, s: impl Into<String>) {
        self.notes.push(Note::Error(s.into()));
    }

    /// Starts a long operation: its start line now, and again after a reload.
    pub(super) fn begin_operation(&mut self, line: String) {
        self.notice(line.clone());
        self.operation = Some(line);
    }

    /// Handles one event at time `now`.
    pub fn handle(&mut self, event: AppEvent, now: Instant) -> Vec<Effect> {
        let effects = match event {
            AppEvent::Key(k) => self.key(k, now),
            AppEvent::Paste(text) if matches!(self.overlay, Some(Overlay::Login(_))) => {
                if let Some(Overlay::Login(p)) = &mut self.overlay {
                    p.paste(&text);
                }
                Vec::new()
            }
            AppEvent::Paste(text) => {
                self.editor.paste(&text);
                self.refresh_completion();
                Vec::new()
            }
            AppEvent::Scroll(n) => vec![Effect::ScrollLines(n)],
            AppEvent::Agent(e) => {
                self.agent_event(&e);
                Vec::new()
            }
            AppEvent::Tick => {
                self.footer.frame = self.footer.frame.wrapping_add(1);
                if let (Some(Overlay::Progress(p)), Some(t)) =
                    (&mut self.overlay, self.summary_since)
                {
                    p.tick(now.saturating_duration_since(t));
                }
                Vec::new()
            }
            AppEvent::Resize(w, h) => {
                self.size = (w, h);
                Vec::new()
            }
            AppEvent::Done(o) => self.outcome(o),
        };
        if effects.contains(&Effect::Abort) {
            // An abort stops the queued command-line prompts too, and a prompt that waits for
            // the session to load (no turn runs yet, so nothing else would end it).
            self.pending_prompts.clear();
            if self.waiting_prompt.take().is_some() {
                self.busy_since = None;
            }
        }
        self.footer.working = self.busy_since.map(|t| now.saturating_duration_since(t));
        if self.busy_since.is_none() {
            self.footer.working = None;
        }
        effects
    }

    fn outcome(&mut self, o: Outcome) -> Vec<Effect> {
        match o {
            Outcome::PromptFinished(r) => {
                self.busy_since = None;
                self.steering.clear();
                self.follow_ups.clear();
                match r {
                    Err(e) => {
                        self.error(e.to_string());
                        self.pending_prompts.clear();
                    }
                    Ok(()) => {
                        if let Some(next) = self.pending_prompts.pop_front() {
                            self.busy_since = Some(Instant::now());
                            return vec![Effect::Prompt(next)];
                        }
                    }
                }
            }
            Outcome::Navigated(r) => {
                self.background = None;
                // The reload after a navigation replaces the transcript: the summary's start
                // and end lines go below the new branch.
                if let Some(start) = self.operation.take() {
                    self.notice(start);
                }
                if matches!(self.overlay, Some(Overlay::Progress(_))) {
                    self.overlay = None;
                }
                self.summary_since = None;
                self.footer.compacting = None;
                match r {
                    Ok(Some(text)) => self.editor.set_text(&text),
                    Ok(None) => {}
                    Err(e) => self.error(e.to_string()),
                }
            }
            Outcome::EditorText(t) => self.editor.set_text(&t),
            Outcome::Notice(n) => self.notice(n),
            Outcome::OperationStarted(line) => self.begin_operation(line),
            Outcome::CompactionFailed { nothing, text } => {
                // A compaction that started has already said how it ended.
                // Every compaction the harness starts ends with a `compaction_end` event, which
                // the transcript shows ("nothing to compact" included) and which closes the
                // operation; only a failure no event reported is said here.
                if self.operation.take().is_some() {
                    if nothing {
                        self.notice(text);
                    } else {
                        self.error(text);
                    }
                }
                self.footer.compacting = None;
            }
            Outcome::Sink(n) => match n.level {
                crate::notices::Level::Info => self.notice(crate::notices::bare(&n.text)),
                crate::notices::Level::Warning => self
                    .notes
                    .push(Note::Warning(crate::notices::bare(&n.text).to_owned())),
                crate::notices::Level::Error => self.error(crate::notices::bare(&n.text)),
            },
            Outcome::Error(e) => self.error(e),
            Outcome::Model {
                provider,
                model,
                context_window,
                thinking,
            } => {
                self.footer.provider = provider;
                self.footer.model = model;
                self.footer.context_window = context_window;
                self.footer.thinking = thinking;
            }
            Outcome::SessionName(n) => self.footer.session_name = n,
            // The driver adds the message to the transcript.
            Outcome::Bash(_) => self.background = None,
            Outcome::Idle => {
                self.background = None;
                self.footer.compacting = None;
            }
            Outcome::Files(f) => self.files = f,
            Outcome::ConfirmRestore(request) => {
                let under = self.overlay.take().map(Box::new);
                self.overlay = Some(Overlay::ConfirmRestore {
                    confirm: Box::new(RestoreConfirm::new(request, self.theme)),
                    under,
                });
            }
            Outcome::Loaded(l) => {
                self.set_loading(false);
                if let Some(e) = &l.error {
                    self.error(e.clone());
                }
                self.footer.input += l.totals.input;
                self.footer.output += l.totals.output;
                self.footer.cache_read += l.totals.cache_read;
                self.footer.cache_write += l.totals.cache_write;
                self.footer.cost += l.totals.cost;
                if let Some(h) = &l.history {
                    self.editor.set_history(h.clone());
                }
                if let Some(text) = self.waiting_prompt.take() {
                    return vec![Effect::Prompt(text)];
                }
            }
        }
        Vec::new()
    }

    fn agent_event(&mut self, e: &AgentEvent) {
        match e {
            AgentEvent::QueueUpdate {
                steer, follow_up, ..
            } => {
                self.steering = steer.iter().map(text_of).collect();
                self.follow_ups = follow_up.iter().map(text_of).collect();
            }
            AgentEvent::MessageEnd {
                message: AgentMessage::Llm(Message::Assistant(a)),
            } => {
                let u = &a.usage;
                self.footer.input += u.input;
                self.footer.output += u.output;
                self.footer.cache_read += u.cache_read;
                self.footer.cache_write += u.cache_write;
                self.footer.cost += u.cost.total.get();
                let ctx = u.input + u.output + u.cache_read + u.cache_write;
                if ctx > 0 {
                    self.footer.context_tokens = Some(ctx);
                }
            }
            AgentEvent::CompactionStart(_) => {
                self.footer.compacting = Some("compacting…".into());
            }
            AgentEvent::CompactionEnd(_) => {
                self.footer.compacting = None;
                self.operation = None;
            }
            AgentEvent::SessionCompact { .. } => {
                self.footer.context_tokens = None;
                // The reload that follows replaces the transcript: the start line again.
                if let Some(start) = self.operation.clone() {
                    self.notice(start);
                }
            }
            AgentEvent::ThinkingLevelUpdate { level, .. } if self.footer.thinking.is_some() => {
                self.footer.thinking = Some(level.clone());
            }
            AgentEvent::ModelUpdate { model, .. } => {
                self.footer.provider = model.provider.clone();
                self.footer.model = model.id.clone();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    /// DECISIONS §23.1: the state machine is plain data and functions.
    #[test]
    fn the_state_machine_has_no_terminal_or_harness() {
        let src = include_str!("mod.rs");
        let own = src.split("#[cfg(test)]").next().unwrap_or(src);
        let code = [own, include_str!("events.rs"), include_str!("keys.rs")].concat();
        for needle in [
            ["crossterm", "::terminal"].concat(),
            ["Agent", "Harness"].concat(),
            ["tok", "io::"].concat(),
            ["std::io", "::stdout"].concat(),
            ["print", "ln!"].concat(),
        ] {
            assert!(!code.contains(&needle), "tui::state uses {needle}");
        }
    }
}
