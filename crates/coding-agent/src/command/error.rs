//! Why a command failed. The texts are the answers clients read (`error` of an RPC response,
//! the TUI's error line), so each variant's Display is the exact wording pi's clients expect.

use std::path::PathBuf;

/// A command that could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The input line is not a JSON object (the text says why).
    #[error("Failed to parse command: {0}")]
    Parse(String),
    /// The object has no string `type`.
    #[error("Command has no type")]
    NoType,
    /// A known `type` whose fields could not be decoded.
    #[error("Failed to parse command: {0}")]
    Decode(#[source] serde_json::Error),
    #[error("Unknown command: {0}")]
    Unknown(String),
    #[error("Missing required field: {0}")]
    MissingField(&'static str),
    #[error("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.")]
    AlreadyProcessing,
    #[error("Agent is busy")]
    Busy,
    #[error("Session file not found: {}", .0.display())]
    SessionFileNotFound(PathBuf),
    #[error("Entry not found: {0}")]
    EntryNotFound(String),
    #[error("Entry {0} is not a user message")]
    NotAUserMessage(String),
    #[error("This session has not been saved yet. Send a message before cloning or forking it.")]
    NoCurrentEntry,
    /// `what` could not be done because the session lives in memory only.
    #[error("Cannot {what}: the session is not stored (--no-session)")]
    NotStored { what: &'static str },
    #[error("Model not found: {provider}/{id}")]
    ModelNotFound { provider: String, id: String },
    #[error("Invalid thinking level: {0}")]
    InvalidThinkingLevel(String),
    #[error("Invalid mode: {0}")]
    InvalidMode(String),
    #[error("Session name cannot be empty")]
    EmptySessionName,
    /// A manual compaction found nothing to summarize (nothing before the kept tail, or the
    /// leaf already is a compaction); its `compaction_end` says so too. The answer is the
    /// harness's text alone, as pi answers.
    #[error("{}", .0.message())]
    NothingToCompact(#[source] arbor_agent::agent::AgentError),
    #[error(transparent)]
    Agent(#[from] arbor_agent::agent::AgentError),
    #[error(transparent)]
    Session(#[from] arbor_agent::SessionError),
    #[error(transparent)]
    App(#[from] crate::error::CliError),
    /// A reply that could not be turned into JSON.
    #[error(transparent)]
    Encode(serde_json::Error),
}
