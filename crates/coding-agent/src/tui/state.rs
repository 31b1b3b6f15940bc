//! The app's state machine, with no terminal and no harness: [`AppState::handle`] takes one
//! [`AppEvent`] (a key, a paste, a harness event, a tick, the outcome of an earlier effect) and
//! returns the [`Effect`]s the driver must carry out. Everything a key does is decided here, so
//! key sequences are tested by feeding events (DECISIONS §23.1).

use std::time::{Duration, Instant};

use arbor_agent::agent::AgentEvent;
use arbor_agent::harness::NavigateOptions;
use arbor_agent::message::AgentMessage;
use arbor_ai::Message;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::component::Flow;
use super::editor::{EditKey, Editor};
use super::footer::FooterInfo;
use super::fork_picker::{ForkPicker, ForkPoint};
use super::picker::model::ModelPicker;
use super::picker::session::{SessionPick, SessionPicker};
use super::slash::{self, Slash};
use super::summarize::{SummarizePrompt, SummaryChoice, SummaryProgress};
use super::theme::Theme;
use super::tree::{TreeAction, TreeNavigator};
use crate::checkpoints::RestoreMode;

/// Two Esc presses closer than this on an empty editor open `/tree` (DECISIONS §23.9).
pub const DOUBLE_ESC: Duration = Duration::from_millis(500);
/// Two Ctrl+C presses closer than this on an empty editor quit.
pub const DOUBLE_CTRL_C: Duration = Duration::from_millis(1000);

/// Something that happened.
#[derive(Debug, Clone)]
pub enum AppEvent {
    Key(KeyEvent),
    Paste(String),
    /// Mouse wheel: negative scrolls up.
    Scroll(i32),
    Agent(Box<AgentEvent>),
    Tick,
    Resize(u16, u16),
    /// What an effect came back with.
    Done(Outcome),
}

/// The result of an effect the driver ran.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The prompt (with its retries and compactions) finished.
    PromptFinished(Result<(), TaskError>),
    Navigated(Result<Option<String>, TaskError>),
    /// Text for the editor (the external editor, `/fork`).
    EditorText(String),
    /// A line for the transcript.
    Notice(String),
    Error(String),
    /// The footer's model and thinking fields changed.
    Model {
        provider: String,
        model: String,
        context_window: u64,
        thinking: Option<String>,
    },
    SessionName(Option<String>),
    /// A `!cmd` finished (the driver already recorded it).
    Bash {
        command: String,
        output: String,
        exit_code: Option<i64>,
    },
    /// A background operation (compaction, bash, abort) ended.
    Idle,
    /// The project's files for `@` completion (walked in the background at start).
    Files(Vec<String>),
    /// A large resumed session finished loading behind the first frame: the full transcript
    /// (the driver swaps it in) and the totals of every answer (DECISIONS §23.102).
    Loaded(Box<super::loading::LoadedSession>),
}

/// Why a background task failed. Shared, so an [`Outcome`] stays cloneable and the error
/// keeps its type and sources on the way to the transcript.
pub type TaskError = std::sync::Arc<crate::error::CliError>;

/// What the driver must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Prompt(String),
    Steer(String),
    FollowUp(String),
    Abort,
    /// `!cmd` (`include`) or `!!cmd`.
    Bash {
        command: String,
        include: bool,
    },
    /// Open the `/tree` navigator.
    OpenTree,
    /// Write a `label` entry (from `/tree` Shift+L).
    SetLabel {
        id: String,
        label: Option<String>,
    },
    /// Switch to this session (the `/resume` picker).
    OpenSession(String),
    DeleteSession(String),
    /// Fork before this user message (the `/fork` picker's choice), restoring the code to
    /// the fork point's checkpoint per `restore` (DECISIONS §27.20).
    ForkAt {
        entry_id: String,
        text: String,
        restore: RestoreMode,
    },
    /// Put the files back as they were before the latest code restore (`/undo-restore`).
    UndoRestore,
    NavigateTree {
        target: Option<String>,
        summarize: bool,
        custom_instructions: Option<String>,
        /// Conversation only, code only or both (`checkpoints::navigate`).
        restore: RestoreMode,
    },
    Compact(Option<String>),
    CycleModel,
    SetModel(Option<String>),
    CycleThinking,
    SetThinking(Option<String>),
    SetName(String),
    ShowName,
    SessionStats,
    Fork,
    Clone,
    New,
    Resume,
    Export(Option<String>),
    Copy,
    ExternalEditor(String),
    ToggleThinking,
    ToggleTools,
    ScrollPage(i32),
    ScrollLines(i32),
    ScrollBottom,
    Quit,
}

impl Effect {
    /// The harness options of a navigation effect.
    pub fn navigate_options(summarize: bool, custom: Option<String>) -> NavigateOptions {
        NavigateOptions {
            summarize,
            custom_instructions: custom,
            ..Default::default()
        }
    }
}

/// A transcript line the shell itself produced (notices, errors), for the driver to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    Notice(String),
    Error(String),
}

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
    Models(Box<ModelPicker>),
    Fork(Box<ForkPicker>),
    /// "Restore what?" after a `/fork` choice whose fork point has a checkpoint.
    ForkRestore {
        prompt: Box<SummarizePrompt>,
        point: ForkPoint,
    },
}

impl std::fmt::Debug for Overlay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Overlay::Tree(_) => "Tree",
            Overlay::Summarize { .. } => "Summarize",
            Overlay::Progress(_) => "Progress",
            Overlay::Sessions(_) => "Sessions",
            Overlay::Models(_) => "Models",
            Overlay::Fork(_) => "Fork",
            Overlay::ForkRestore { .. } => "ForkRestore",
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
    pub notes: Vec<Note>,
    pub quit: bool,
    /// Prompts sent one after another when the current one ends (command-line messages).
    pub pending_prompts: std::collections::VecDeque<String>,
    pub size: (u16, u16),
    pub overlay: Option<Overlay>,
    pub theme: Theme,
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
            notes: Vec::new(),
            quit: false,
            pending_prompts: Default::default(),
            size: (80, 24),
            overlay: None,
            theme,
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

    /// Handles one event at time `now`.
    pub fn handle(&mut self, event: AppEvent, now: Instant) -> Vec<Effect> {
        let effects = match event {
            AppEvent::Key(k) => self.key(k, now),
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
            Outcome::Bash {
                command,
                output,
                exit_code,
            } => {
                self.background = None;
                let status = match exit_code {
                    Some(0) => String::new(),
                    Some(c) => format!("\n(exit code {c})"),
                    None => "\n(cancelled)".into(),
                };
                self.notice(format!("$ {command}\n{output}{status}"));
            }
            Outcome::Idle => {
                self.background = None;
                self.footer.compacting = None;
            }
            Outcome::Files(f) => self.files = f,
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
            AgentEvent::CompactionEnd(_) => self.footer.compacting = None,
            AgentEvent::SessionCompact { .. } => self.footer.context_tokens = None,
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

    /// Sends what the editor holds: a command, a shell command, a prompt, or (while running)
    /// a steering message.
    fn submit(&mut self) -> Vec<Effect> {
        let shown = self.editor.text().trim().to_owned();
        if shown.is_empty() {
            return Vec::new();
        }
        if let Some(cmd) = slash::parse(&shown) {
            return match cmd {
                Ok(c) => {
                    self.editor.take();
                    self.command(c)
                }
                Err(e) => {
                    self.error(e.to_string());
                    Vec::new()
                }
            };
        }
        if let Some(rest) = shown.strip_prefix('!') {
            let (include, command) = match rest.strip_prefix('!') {
                Some(c) => (false, c.trim()),
                None => (true, rest.trim()),
            };
            if command.is_empty() {
                return Vec::new();
            }
            if self.is_running() || self.background.is_some() {
                self.error("Wait for the agent to finish (or press Esc) before running a command");
                return Vec::new();
            }
            if self.loading {
                self.error("Wait for the session to finish loading before running a command");
                return Vec::new();
            }
            let command = command.to_owned();
            self.editor.take();
            self.background = Some(format!("running {command}"));
            return vec![Effect::Bash { command, include }];
        }
        let text = self.editor.take();
        if self.is_running() {
            vec![Effect::Steer(text)]
        } else if self.background.is_some() {
            self.error("Busy: wait for the current operation to finish (Esc cancels it)");
            self.editor.set_text(&text);
            Vec::new()
        } else {
            self.prompt(text)
        }
    }

    fn command(&mut self, c: Slash) -> Vec<Effect> {
        // Commands that change the session or start work need an idle agent.
        let needs_idle = !matches!(
            c,
            Slash::Hotkeys | Slash::Quit | Slash::Session | Slash::Copy | Slash::Name(None)
        );
        if needs_idle && (self.is_running() || self.background.is_some()) {
            self.error("Wait for the agent to finish (or press Esc) before running this command");
            return Vec::new();
        }
        if needs_idle && self.loading {
            self.error("Wait for the session to finish loading before running this command");
            return Vec::new();
        }
        match c {
            Slash::Tree => vec![Effect::OpenTree],
            Slash::Fork => vec![Effect::Fork],
            Slash::Clone => vec![Effect::Clone],
            Slash::New => vec![Effect::New],
            Slash::Resume => vec![Effect::Resume],
            Slash::UndoRestore => {
                self.background = Some("restoring the workspace".into());
                vec![Effect::UndoRestore]
            }
            Slash::Name(Some(n)) => vec![Effect::SetName(n)],
            Slash::Name(None) => vec![Effect::ShowName],
            Slash::Session => vec![Effect::SessionStats],
            Slash::Model(spec) => vec![Effect::SetModel(spec)],
            Slash::Thinking(level) => vec![Effect::SetThinking(level)],
            Slash::Compact(instr) => {
                self.background = Some("compacting".into());
                self.footer.compacting = Some("compacting…".into());
                vec![Effect::Compact(instr)]
            }
            Slash::Export(p) => vec![Effect::Export(p)],
            Slash::Copy => vec![Effect::Copy],
            Slash::Hotkeys => {
                let w = HOTKEYS.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
                let table: Vec<String> = HOTKEYS
                    .iter()
                    .map(|(k, v)| format!("{k:<w$}  {v}"))
                    .collect();
                self.notice(table.join("\n"));
                Vec::new()
            }
            Slash::Quit => {
                self.quit = true;
                vec![Effect::Quit]
            }
        }
    }

    /// Recomputes the completion popup from the editor text.
    fn refresh_completion(&mut self) {
        let text = self.editor.text();
        let items: Vec<(String, String)> = if text.starts_with('/') {
            slash::candidates(text)
                .into_iter()
                .map(|(n, h)| (format!("/{n}"), h.to_owned()))
                .collect()
        } else {
            let token = self.editor.current_token();
            match token.strip_prefix('@') {
                Some(typed) => {
                    let typed = typed.to_lowercase();
                    self.files
                        .iter()
                        .filter(|f| f.to_lowercase().contains(&typed))
                        .take(50)
                        .map(|f| (format!("@{f}"), String::new()))
                        .collect()
                }
                None => Vec::new(),
            }
        };
        self.completion = (!items.is_empty()).then_some(Completion { items, selected: 0 });
    }

    /// Applies the selected completion. Returns whether one was applied.
    fn accept_completion(&mut self) -> bool {
        let Some(c) = self.completion.take() else {
            return false;
        };
        let Some((with, _)) = c.items.get(c.selected) else {
            return false;
        };
        if with.starts_with('/') {
            self.editor.set_text(with);
        } else {
            self.editor.replace_token(&format!("{with} "));
        }
        true
    }

    /// Hands a key to the open overlay and acts on what it reports.
    fn overlay_key(&mut self, k: KeyEvent, now: Instant) -> Vec<Effect> {
        let Some(overlay) = self.overlay.take() else {
            return Vec::new();
        };
        match overlay {
            Overlay::Tree(mut nav) => match nav.handle_key(k) {
                Flow::Pending => self.overlay = Some(Overlay::Tree(nav)),
                Flow::Cancel => {}
                Flow::Done(TreeAction::SetLabel { id, label }) => {
                    self.overlay = Some(Overlay::Tree(nav));
                    return vec![Effect::SetLabel { id, label }];
                }
                Flow::Done(TreeAction::Navigate { target_id }) => {
                    let tree = nav.tree();
                    if tree.leaf_id.as_deref() == Some(target_id.as_str()) {
                        self.notice("Already at this point");
                        return Vec::new();
                    }
                    let preview = nav.entry_preview(&target_id, 80).unwrap_or_default();
                    // The restore question comes only when this run records checkpoints and the
                    // target has one at or above it (DECISIONS §23.12).
                    let has_checkpoint = self.code_restore
                        && crate::tui::tree::nearest_checkpoint(tree, &target_id).is_some();
                    if self.skip_summary_prompt && !has_checkpoint {
                        self.background = Some("navigating".into());
                        return vec![Effect::NavigateTree {
                            target: Some(target_id),
                            summarize: false,
                            custom_instructions: None,
                            restore: RestoreMode::ConversationOnly,
                        }];
                    }
                    let prompt = if self.skip_summary_prompt {
                        SummarizePrompt::restore_only(&preview, self.theme)
                    } else {
                        SummarizePrompt::new(&preview, has_checkpoint, self.theme)
                    };
                    self.overlay = Some(Overlay::Summarize {
                        prompt: Box::new(prompt),
                        target: target_id,
                    });
                }
            },
            Overlay::Summarize { mut prompt, target } => match prompt.handle_key(k) {
                Flow::Pending => self.overlay = Some(Overlay::Summarize { prompt, target }),
                Flow::Cancel => {}
                Flow::Done(choice) => {
                    let (summarize, custom) = match choice.summary {
                        SummaryChoice::None => (false, None),
                        SummaryChoice::Summarize => (true, None),
                        SummaryChoice::Custom(c) => (true, Some(c)),
                    };
                    if summarize {
                        self.overlay = Some(Overlay::Progress(Box::new(SummaryProgress::new(
                            self.theme,
                        ))));
                        self.summary_since = Some(now);
                    }
                    self.background = Some("navigating".into());
                    return vec![Effect::NavigateTree {
                        target: Some(target),
                        summarize,
                        custom_instructions: custom,
                        restore: choice.restore,
                    }];
                }
            },
            Overlay::Progress(mut p) => {
                let flow = p.handle_key(k);
                self.overlay = Some(Overlay::Progress(p));
                if flow == Flow::Cancel {
                    return vec![Effect::Abort];
                }
            }
            Overlay::Sessions(mut picker) => match picker.handle_key(k) {
                Flow::Pending => self.overlay = Some(Overlay::Sessions(picker)),
                Flow::Cancel => {}
                Flow::Done(SessionPick::Open(info)) => {
                    return vec![Effect::OpenSession(info.location)]
                }
                Flow::Done(SessionPick::Delete { location, .. }) => {
                    picker.remove(&location);
                    self.overlay = Some(Overlay::Sessions(picker));
                    return vec![Effect::DeleteSession(location)];
                }
            },
            Overlay::Fork(mut picker) => match picker.handle_key(k) {
                Flow::Pending => self.overlay = Some(Overlay::Fork(picker)),
                Flow::Cancel => {}
                Flow::Done(p) if self.code_restore && p.has_checkpoint => {
                    let prompt = SummarizePrompt::fork(&p.text, self.theme);
                    self.overlay = Some(Overlay::ForkRestore {
                        prompt: Box::new(prompt),
                        point: p,
                    });
                }
                Flow::Done(p) => {
                    return vec![Effect::ForkAt {
                        entry_id: p.entry_id,
                        text: p.text,
                        restore: RestoreMode::ConversationOnly,
                    }]
                }
            },
            Overlay::ForkRestore { mut prompt, point } => match prompt.handle_key(k) {
                Flow::Pending => self.overlay = Some(Overlay::ForkRestore { prompt, point }),
                Flow::Cancel => {}
                Flow::Done(choice) => {
                    return vec![Effect::ForkAt {
                        entry_id: point.entry_id,
                        text: point.text,
                        restore: choice.restore,
                    }]
                }
            },
            Overlay::Models(mut picker) => match picker.handle_key(k) {
                Flow::Pending => self.overlay = Some(Overlay::Models(picker)),
                Flow::Cancel => {}
                Flow::Done(m) => {
                    return vec![Effect::SetModel(Some(format!("{}/{}", m.provider, m.id)))]
                }
            },
        }
        Vec::new()
    }

    fn key(&mut self, k: KeyEvent, now: Instant) -> Vec<Effect> {
        if k.kind == KeyEventKind::Release {
            return Vec::new();
        }
        if self.overlay.is_some() {
            return self.overlay_key(k, now);
        }
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        let alt = k.modifiers.contains(KeyModifiers::ALT);
        let shift = k.modifiers.contains(KeyModifiers::SHIFT);
        if k.code != KeyCode::Esc {
            self.last_esc = None;
        }
        if !(ctrl && k.code == KeyCode::Char('c')) {
            self.last_ctrl_c = None;
        }
        // The completion popup takes navigation keys first.
        if let Some(c) = &mut self.completion {
            match k.code {
                KeyCode::Up => {
                    c.selected = c.selected.checked_sub(1).unwrap_or(c.items.len() - 1);
                    return Vec::new();
                }
                KeyCode::Down => {
                    c.selected = (c.selected + 1) % c.items.len();
                    return Vec::new();
                }
                KeyCode::Tab => {
                    self.accept_completion();
                    self.refresh_completion_after_accept();
                    return Vec::new();
                }
                KeyCode::Esc => {
                    self.completion = None;
                    return Vec::new();
                }
                KeyCode::Enter if !alt && !shift => {
                    let is_slash = self.editor.text().starts_with('/');
                    self.accept_completion();
                    if !is_slash {
                        return Vec::new();
                    }
                }
                _ => {}
            }
        }
        let effects = match k.code {
            KeyCode::Enter if shift => self.edit(EditKey::Newline),
            KeyCode::Enter if alt => {
                if self.is_running() {
                    let text = self.editor.take();
                    if text.trim().is_empty() {
                        Vec::new()
                    } else {
                        vec![Effect::FollowUp(text)]
                    }
                } else {
                    self.edit(EditKey::Newline)
                }
            }
            KeyCode::Enter => self.submit(),
            KeyCode::Char('j') if ctrl => self.edit(EditKey::Newline),
            KeyCode::Esc => {
                if self.is_running() || self.background.is_some() {
                    vec![Effect::Abort]
                } else if self.editor.is_empty() {
                    match self.last_esc.take() {
                        Some(t) if now.saturating_duration_since(t) <= DOUBLE_ESC => {
                            vec![Effect::OpenTree]
                        }
                        _ => {
                            self.last_esc = Some(now);
                            Vec::new()
                        }
                    }
                } else {
                    Vec::new()
                }
            }
            KeyCode::Char('c') if ctrl => {
                if !self.editor.is_empty() {
                    self.editor.take();
                    self.completion = None;
                    Vec::new()
                } else if self.is_running() {
                    vec![Effect::Abort]
                } else {
                    match self.last_ctrl_c.take() {
                        Some(t) if now.saturating_duration_since(t) <= DOUBLE_CTRL_C => {
                            self.quit = true;
                            vec![Effect::Quit]
                        }
                        _ => {
                            self.last_ctrl_c = Some(now);
                            self.notice("Press Ctrl+C again to quit");
                            Vec::new()
                        }
                    }
                }
            }
            KeyCode::Char('d') if ctrl => {
                if self.editor.is_empty() && !self.is_running() {
                    self.quit = true;
                    vec![Effect::Quit]
                } else {
                    self.edit(EditKey::Delete)
                }
            }
            KeyCode::Char('g') if ctrl => vec![Effect::ExternalEditor(self.editor.expanded())],
            KeyCode::Char('p') if ctrl => vec![Effect::CycleModel],
            KeyCode::Char('t') if ctrl => vec![Effect::ToggleThinking],
            KeyCode::Char('o') if ctrl => vec![Effect::ToggleTools],
            KeyCode::Char('a') if ctrl => self.edit(EditKey::Home),
            KeyCode::Char('e') if ctrl => self.edit(EditKey::End),
            KeyCode::Char('u') if ctrl => self.edit(EditKey::DeleteToStart),
            KeyCode::Char('k') if ctrl => self.edit(EditKey::DeleteToEnd),
            KeyCode::Char('w') if ctrl => self.edit(EditKey::DeleteWord),
            KeyCode::Backspace if ctrl || alt => self.edit(EditKey::DeleteWord),
            KeyCode::Char(_) if ctrl => Vec::new(),
            KeyCode::Char(c) => self.edit(EditKey::Char(c)),
            KeyCode::BackTab => vec![Effect::CycleThinking],
            KeyCode::Tab => {
                self.refresh_completion();
                if self.completion.as_ref().is_some_and(|c| c.items.len() == 1) {
                    self.accept_completion();
                }
                Vec::new()
            }
            KeyCode::Backspace => self.edit(EditKey::Backspace),
            KeyCode::Delete => self.edit(EditKey::Delete),
            KeyCode::Left => self.edit(EditKey::Left),
            KeyCode::Right => self.edit(EditKey::Right),
            KeyCode::Home => self.edit(EditKey::Home),
            KeyCode::End if ctrl => vec![Effect::ScrollBottom],
            KeyCode::End => self.edit(EditKey::End),
            KeyCode::Up => self.edit(EditKey::Up),
            KeyCode::Down => self.edit(EditKey::Down),
            KeyCode::PageUp => vec![Effect::ScrollPage(-1)],
            KeyCode::PageDown => vec![Effect::ScrollPage(1)],
            _ => Vec::new(),
        };
        effects
    }

    fn refresh_completion_after_accept(&mut self) {
        // A completed command name waits for Enter; a completed file closes the popup.
        self.completion = None;
    }

    fn edit(&mut self, key: EditKey) -> Vec<Effect> {
        let typing = matches!(
            key,
            EditKey::Char(_) | EditKey::Backspace | EditKey::Delete | EditKey::DeleteWord
        );
        self.editor.key(key);
        if typing {
            self.refresh_completion();
        } else {
            self.completion = None;
        }
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    /// DECISIONS §23.1: the state machine is plain data and functions.
    #[test]
    fn the_state_machine_has_no_terminal_or_harness() {
        let src = include_str!("state.rs");
        let code = src.split("#[cfg(test)]").next().unwrap_or(src);
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
