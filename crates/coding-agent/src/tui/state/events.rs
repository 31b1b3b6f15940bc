//! The state machine's vocabulary: the events it takes, the outcomes of effects that come
//! back as events, and the effects it hands the driver.

use arbor_agent::agent::AgentEvent;
use arbor_agent::harness::NavigateOptions;
use crossterm::event::KeyEvent;

use crate::checkpoints::RestoreMode;

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
    /// A `!cmd` finished: its `bashExecution` message, already recorded; the driver shows it
    /// as the transcript item a reload would draw (`!!`: "(not sent to the model)";
    /// DECISIONS §23.162).
    Bash(Box<arbor_agent::message::AgentMessage>),
    /// A background operation (compaction, bash, abort) ended.
    Idle,
    /// The project's files for `@` completion (walked in the background at start).
    Files(Vec<String>),
    /// A code restore waits for a yes or no: it would remove or overwrite these untracked
    /// files (DECISIONS §27.43).
    ConfirmRestore(crate::tui::restore_confirm::ConfirmRequest),
    /// A long operation (automatic compaction) began: its start line (DECISIONS §23.174).
    OperationStarted(String),
    /// A compaction ended without its `compaction_end` line: "nothing to compact" (`nothing`,
    /// a quiet information) or a failure before it started.
    CompactionFailed {
        nothing: bool,
        text: String,
    },
    /// A notice from outside the driver (start-up, hooks, MCP) through the notice sink.
    Sink(crate::notices::Notice),
    /// A large resumed session finished loading behind the first frame: the full transcript
    /// (the driver swaps it in) and the totals of every answer (DECISIONS §23.102).
    Loaded(Box<crate::tui::loading::LoadedSession>),
}

/// Why a background task failed. Shared, so an [`Outcome`] stays cloneable and the error
/// keeps its type and sources on the way to the transcript.
pub type TaskError = std::sync::Arc<crate::error::CliError>;

/// What the driver must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Prompt(String),
    /// `/mcp [action NAME]`.
    Mcp(Option<String>),
    Steer(String),
    FollowUp(String),
    Abort,
    /// Alt+Up: take the queued steering and follow-up messages back into the editor.
    Dequeue,
    /// Ctrl+Z: give the shell its terminal and stop (job control); `fg` resumes and redraws.
    Suspend,
    /// `/scoped-models [patterns]`: show or set the models Ctrl+P cycles through.
    ScopedModels(Option<String>),
    /// `/import PATH`: copy a JSONL session into the store and open it.
    Import(String),
    /// `/changelog`.
    Changelog,
    /// `/debug`: write what the UI shows and the session's context to a file.
    Debug,
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
    /// Open the `/search` overlay, searching at once when words are given.
    OpenSearch(Option<String>),
    /// Run a search for the open `/search` overlay.
    RunSearch(String),
    /// Switch to this session and open `/tree` on this entry (a `/search` hit).
    OpenSessionAt {
        location: String,
        entry_id: String,
    },
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
    /// `/share`: the HTML export in Arbor's exports folder, named by session id.
    Share,
    Copy,
    /// `/settings` (show), `/settings key value` (set in the global file).
    Settings(Option<String>),
    /// `/reload`.
    Reload,
    /// `/login [provider]`: the provider list, or the key prompt (DECISIONS §23.175).
    Login(Option<String>),
    /// Store the key typed into the prompt.
    SaveKey {
        provider: String,
        key: arbor_ai::models::ApiKey,
    },
    /// `/logout [provider]`.
    Logout(Option<String>),
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
        {
            let mut o = NavigateOptions::default().with_summarize(summarize);
            o.custom_instructions = custom;
            o
        }
    }
}

/// A transcript line the shell itself produced (notices, errors), for the driver to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    Notice(String),
    Warning(String),
    Error(String),
}
