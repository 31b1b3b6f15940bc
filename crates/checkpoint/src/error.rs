//! The crate's one error type. Every variant names what was involved (the command, the path, the
//! checkpoint id) so a refusal can be shown to the user as is.

use std::path::PathBuf;

/// What can go wrong while capturing, restoring, diffing or pruning checkpoints.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The `git` executable could not be started at all.
    #[error("cannot run git ({0}); is git installed and on PATH?")]
    GitMissing(#[source] std::io::Error),
    /// A git command failed; `stderr` is git's own explanation.
    #[error("git {command} failed in {dir}: {stderr}")]
    Git {
        /// The git subcommand and its arguments.
        command: String,
        /// The directory git ran in.
        dir: PathBuf,
        /// Git's standard error (`(no message)` when it printed none).
        stderr: String,
    },
    /// Git printed something this crate does not understand.
    #[error("git {command}: unexpected output: {output}")]
    GitOutput {
        /// The git subcommand and its arguments.
        command: String,
        /// The output that did not parse.
        output: String,
    },
    /// The repository is in the middle of an operation a restore would corrupt.
    #[error("cannot restore the workspace: {repo} is in the middle of a {operation}; finish or abort it first (git {operation} --continue / --abort)")]
    Busy {
        /// The work tree's top directory.
        repo: PathBuf,
        /// The operation in progress (`merge`, `rebase`, `cherry-pick`, ...).
        operation: String,
    },
    /// The checkpoint's objects are no longer in the store (pruned or garbage-collected).
    #[error("checkpoint {id} cannot be restored: its {what} is gone from {store} (pruned or garbage-collected)")]
    Gone {
        /// The checkpoint that cannot be restored.
        id: String,
        /// Which part is missing (its commit, worktree tree, index tree, or manifest).
        what: String,
        /// Where it was looked for (the git dir, or the snapshot store directory).
        store: String,
    },
    /// A checkpoint from another kind of store (a git checkpoint in a plain directory or the
    /// reverse), or from another repository.
    #[error("checkpoint {id} belongs to a {kind} store, but {dir} uses a {current} store")]
    WrongStore {
        /// The checkpoint asked for.
        id: String,
        /// The store kind it was captured in.
        kind: String,
        /// The store kind this directory uses now.
        current: String,
        /// The directory being restored.
        dir: PathBuf,
    },
    /// A restore would overwrite files the current checkpoint does not hold (ignored, kept out
    /// or too large to capture): the user's only copies.
    #[error("cannot restore in {dir}: the checkpoint holds {paths}, which exist here but were not captured (ignored or too large); move them away first")]
    Uncaptured {
        /// The directory being restored.
        dir: PathBuf,
        /// The paths at risk, comma-separated.
        paths: String,
    },
    /// Filesystem trouble in the snapshot store or the worktree.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory the operation was on.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A snapshot manifest or settings value that does not parse.
    #[error("{what}: {message}")]
    Invalid {
        /// What did not parse (a manifest path, a settings key).
        what: String,
        /// Why it is rejected.
        message: String,
    },
    /// A session id that cannot be used in a ref name or a directory name.
    #[error("session id {0:?} cannot name checkpoints (use letters, digits, '-', '_' and '.')")]
    BadSessionId(String),
}

impl CheckpointError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        CheckpointError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn invalid(what: impl Into<String>, message: impl Into<String>) -> Self {
        CheckpointError::Invalid {
            what: what.into(),
            message: message.into(),
        }
    }

    /// True for the refusals a UI shows as "cannot restore" rather than as a failure.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            CheckpointError::Busy { .. }
                | CheckpointError::Gone { .. }
                | CheckpointError::WrongStore { .. }
                | CheckpointError::Uncaptured { .. }
        )
    }
}

/// The crate's result type, [`CheckpointError`] by default.
pub type Result<T, E = CheckpointError> = std::result::Result<T, E>;
