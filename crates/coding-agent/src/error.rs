//! The crate's one error type. Every variant renders as one line for stderr and maps to an exit
//! code, so scripts can tell "you asked for something missing" from "the file is broken".

use arbor_agent::SessionError;

/// What can go wrong in a command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A session (file, id or prefix) that does not exist.
    #[error("{0}")]
    NotFound(String),
    /// An id prefix that matches more than one session.
    #[error("session id prefix '{prefix}' is ambiguous; it matches {}: {}", .candidates.len(), .candidates.join(", "))]
    Ambiguous {
        prefix: String,
        /// `id (path)` of each match.
        candidates: Vec<String>,
    },
    /// Arguments that make no sense together (beyond what clap checks).
    #[error("{0}")]
    Usage(String),
    /// Filesystem trouble outside the session layer (scanning directories, reading headers).
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A configuration file (settings.json, auth.json, models.json) that cannot be used.
    #[error("{0}")]
    Config(String),
    /// A flag problem or refused start of the agent, worded like pi (`Error: …`); printed as
    /// is, exit 1.
    #[error("{0}")]
    Startup(String),
    /// `-r` without a terminal and nothing to pick: pi prints "No session selected", exit 0.
    #[error("No session selected")]
    NoSessionSelected,
    /// The agent harness refused an operation.
    #[error("{0}")]
    Agent(#[from] arbor_agent::agent::AgentError),
    /// An error from the session layer (refused file, unknown entry, storage failure).
    #[error("{0}")]
    Session(#[from] SessionError),
}

/// Exit code for errors that are not about a broken session file.
pub const EXIT_FAILURE: u8 = 1;
/// Exit code for a session file that is refused as invalid (and for usage errors, as clap does).
pub const EXIT_INVALID: u8 = 2;

impl CliError {
    pub fn io(path: impl Into<String>, source: std::io::Error) -> Self {
        CliError::Io {
            path: path.into(),
            source,
        }
    }

    /// True when a session file was read but refused (bad line, duplicate id, dangling parent).
    pub fn is_invalid_session(&self) -> bool {
        matches!(self, CliError::Session(e) if e.code() == "invalid_session")
    }

    pub fn exit_code(&self) -> u8 {
        if matches!(self, CliError::NoSessionSelected) {
            return 0;
        }
        if self.is_invalid_session() || matches!(self, CliError::Usage(_)) {
            EXIT_INVALID
        } else {
            EXIT_FAILURE
        }
    }
}

pub type Result<T, E = CliError> = std::result::Result<T, E>;
