//! The crate's one error type. Every variant renders as one line for stderr and maps to an exit
//! code, so scripts can tell "you asked for something missing" from "the file is broken".

use std::io::Write as _;

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
    /// A workspace checkpoint could not be taken or restored (refusals included).
    #[error("{0}")]
    Checkpoint(#[from] arbor_checkpoint::CheckpointError),
    /// A checkpoint question the session cannot answer (no checkpoint above an entry, a
    /// checkpoint entry whose data is broken).
    #[error("{0}")]
    Workspace(String),
    /// A configuration file (settings.json, auth.json, models.json) that cannot be used.
    #[error("{0}")]
    Config(String),
    /// A flag problem or refused start of the agent, worded like pi (`Error: …`); printed as
    /// is, exit 1.
    #[error("{0}")]
    Startup(String),
    /// No model can be used: no provider has a key and no local server is configured. The
    /// text is the onboarding help (`/login`, the `models.json` path and an example), printed
    /// as is (DECISIONS §23.170).
    #[error("{}", crate::onboarding::no_model_text(.models_json))]
    NoModel { models_json: std::path::PathBuf },
    /// `-r` without a terminal and nothing to pick: pi prints "No session selected", exit 0.
    #[error("No session selected")]
    NoSessionSelected,
    /// A `toolEnvironment.exclude`/`.include` pattern that is not a valid glob.
    #[error("{0}")]
    ToolEnvironment(#[from] arbor_tools::env_policy::EnvPolicyError),
    /// A file Arbor reads by itself that it refuses: not a regular file, over its size limit,
    /// or a project file leading outside the project (DECISIONS §30.2).
    #[error("{0}")]
    File(#[from] arbor_tools::files::FileError),
    /// The agent harness refused an operation.
    #[error("{0}")]
    Agent(#[from] arbor_agent::agent::AgentError),
    /// An error from the session layer (refused file, unknown entry, storage failure), or a
    /// compaction or branch summary that failed or was aborted (the session is unchanged).
    #[error("{0}")]
    Session(#[from] SessionError),
    /// A `/skill:name` line naming no loaded skill, or a skill file that cannot be read.
    #[error("{0}")]
    Resource(#[from] crate::resources::ResourceError),
    /// The search index could not be used even after a rebuild, or a search made no sense
    /// (no words, a bad `--since`).
    #[error("{0}")]
    Search(#[from] arbor_search::SearchError),
    /// A bug: the command panicked. Never a verdict on the user's input or files.
    #[error("internal error: {0} (this is a bug in arbor; please report it)")]
    Internal(String),
}

/// A prompt under the harness's policy keeps its error's kind (and so its text).
impl From<arbor_agent::harness::PromptPolicyError> for CliError {
    fn from(e: arbor_agent::harness::PromptPolicyError) -> Self {
        match e {
            arbor_agent::harness::PromptPolicyError::Agent(e) => CliError::Agent(e),
            arbor_agent::harness::PromptPolicyError::Session(e) => CliError::Session(e),
        }
    }
}

/// Exit code for errors that are not about a broken session file.
pub const EXIT_FAILURE: u8 = 1;
/// Exit code for a session file that is refused as invalid (and for usage errors, as clap does).
pub const EXIT_INVALID: u8 = 2;
/// Exit code for a panic (internal error), the code Rust itself uses for a panicking `main`.
pub const EXIT_INTERNAL: u8 = 101;

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

    /// The text of a caught panic payload.
    pub fn internal(payload: &(dyn std::any::Any + Send)) -> Self {
        let text = payload
            .downcast_ref::<&str>()
            .map(std::string::ToString::to_string)
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".to_string());
        CliError::Internal(text)
    }

    pub fn exit_code(&self) -> u8 {
        if matches!(self, CliError::NoSessionSelected) {
            return 0;
        }
        if matches!(self, CliError::Internal(_)) {
            return EXIT_INTERNAL;
        }
        if self.is_invalid_session() || matches!(self, CliError::Usage(_)) {
            EXIT_INVALID
        } else {
            EXIT_FAILURE
        }
    }
}

/// Writes `arbor: <error>` to stderr.
pub fn report(err: &CliError) {
    let mut stderr = std::io::stderr().lock();
    // Agent-start errors carry pi's own wording ("Error: …"), the rest get our prefix.
    let _ = match err {
        CliError::Startup(_) | CliError::NoSessionSelected | CliError::NoModel { .. } => {
            writeln!(stderr, "{err}")
        }
        _ => writeln!(stderr, "arbor: {err}"),
    };
}

pub type Result<T, E = CliError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_an_internal_error_with_its_own_exit_code() {
        let payload: Box<dyn std::any::Any + Send> = Box::new("index out of bounds");
        let err = CliError::internal(payload.as_ref());
        assert_eq!(err.exit_code(), EXIT_INTERNAL);
        assert_ne!(err.exit_code(), EXIT_INVALID);
        assert_eq!(
            err.to_string(),
            "internal error: index out of bounds (this is a bug in arbor; please report it)"
        );
        let payload: Box<dyn std::any::Any + Send> = Box::new(String::from("boom"));
        assert!(CliError::internal(payload.as_ref())
            .to_string()
            .starts_with("internal error: boom"));
    }
}
