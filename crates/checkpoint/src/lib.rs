//! `arbor-checkpoint`: the state of a session's working directory, captured at turn starts and
//! after tool batches, restorable when the user navigates the session tree (DECISIONS §27).
//!
//! Inside a git work tree checkpoints are git objects written with the `git` CLI's plumbing
//! under `refs/arbor/checkpoints/<session>/`, through a private index, so the user's branches,
//! index, stash and HEAD stay as they are ([`GitStore`]). Elsewhere a content-addressed store
//! under `<ARBOR_HOME>/checkpoints/` does the same job within size limits ([`SnapshotStore`]).
//! The crate knows nothing of sessions' entries or of terminals: the coding agent records each
//! capture in the session and decides when to restore.

#![deny(missing_docs)]
#![deny(missing_debug_implementations)]

// The modules are private: the crate's surface is the list below, so a file can move or split
// without changing what users of the crate name.
mod checkpoint;
mod error;
mod git;
mod git_store;
mod keep_out;
mod notify;
mod settings;
mod snapshot;
mod stat_watch;
mod workspace;

// What a checkpoint is and what capturing, restoring and pruning report.
pub use checkpoint::{
    Captured, Change, ChangeStatus, Checkpoint, Pruned, RestoreOptions, Restored, SkippedFile,
    StoreKind, StoredCheckpoint,
};
pub use error::{CheckpointError, Result};
// The two stores: git objects inside a work tree, content-addressed snapshots elsewhere.
pub use git_store::{GitStore, WatchStats, REF_PREFIX};
pub use settings::CheckpointSettings;
pub use snapshot::{SnapshotLimits, SnapshotStore};
// The entry point: opens the right store for a directory.
pub use workspace::{PrunePolicy, Workspace};
