//! The vocabulary shared by both stores: what a checkpoint is, what a capture yields, and the
//! paths that changed between two of them.

use serde::{Deserialize, Serialize};

/// Which store holds a checkpoint's contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// Git objects in the repository, kept alive by `refs/arbor/checkpoints/<session>/<commit>`.
    Git,
    /// Content-addressed files under `<ARBOR_HOME>/checkpoints/` (a directory outside git).
    Snapshot,
}

impl StoreKind {
    /// The lowercase name (`git`, `snapshot`), as serialized and as shown to users.
    pub fn as_str(self) -> &'static str {
        match self {
            StoreKind::Git => "git",
            StoreKind::Snapshot => "snapshot",
        }
    }
}

/// One recorded state of the workspace. Equal trees (and HEAD and index) mean equal states, so
/// an unchanged workspace is never recorded twice (DECISIONS §27.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    /// The store the contents live in; a checkpoint restores only through a store of this kind.
    pub store: StoreKind,
    /// Git: the checkpoint commit. Snapshot: the manifest hash.
    pub id: String,
    /// Git: the tree of the worktree (tracked + untracked, not ignored). Snapshot: the manifest
    /// hash again.
    pub tree: String,
    /// The commit HEAD pointed at (`None`: unborn branch, or not a git store).
    pub head: Option<String>,
    /// The tree of the user's index (`None` when it had unmerged entries, or not a git store).
    pub index: Option<String>,
    /// Untracked files left out of this checkpoint because they exceed
    /// `checkpoints.maxUntrackedFileBytes` (DECISIONS §27.41): a restore never removes them,
    /// and refuses rather than overwrite one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedFile>,
}

/// A file a capture left out because of its size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFile {
    /// Relative to the workspace root, `/`-separated.
    pub path: String,
    /// Its size in bytes when the capture saw it.
    pub size: u64,
}

impl Checkpoint {
    /// Same workspace state (the id may differ: two commits of one tree are one state).
    pub fn same_state(&self, other: &Checkpoint) -> bool {
        self.store == other.store
            && self.tree == other.tree
            && self.head == other.head
            && self.index == other.index
    }
}

/// How a path differs between two checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChangeStatus {
    /// Present in the newer checkpoint only.
    #[serde(rename = "A")]
    Added,
    /// Present in both with different contents.
    #[serde(rename = "M")]
    Modified,
    /// Present in the older checkpoint only.
    #[serde(rename = "D")]
    Deleted,
    /// The kind changed (file ⇄ symlink ⇄ submodule) or the executable bit.
    #[serde(rename = "T")]
    TypeChanged,
}

impl ChangeStatus {
    /// The one-letter code git's `--name-status` uses (`A`, `M`, `D`, `T`), also the serialized form.
    pub fn letter(self) -> char {
        match self {
            ChangeStatus::Added => 'A',
            ChangeStatus::Modified => 'M',
            ChangeStatus::Deleted => 'D',
            ChangeStatus::TypeChanged => 'T',
        }
    }
}

/// One changed path (relative to the workspace root, `/`-separated).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// How the path differs.
    pub status: ChangeStatus,
    /// Relative to the workspace root, `/`-separated.
    pub path: String,
}

/// What [`crate::Workspace::capture`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Captured {
    /// The state equals `previous`: nothing was written.
    Unchanged(Checkpoint),
    /// A new checkpoint, with the paths changed since `previous` (or since HEAD when there was
    /// none).
    Created {
        /// The checkpoint just written.
        checkpoint: Checkpoint,
        /// Paths that differ from the previous checkpoint (or from HEAD when there was none).
        changed: Vec<Change>,
    },
    /// Not captured (snapshot store limits); `notice` says why, for the user.
    Skipped {
        /// One sentence naming the limit that was exceeded.
        notice: String,
    },
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq)]
pub struct Restored {
    /// Paths the restore wrote or removed (from the current state to the target).
    pub changed: Vec<Change>,
    /// Of those, the untracked files (in no git index; outside git: every file) it removed or
    /// overwrote. The checkpoint captured just before holds them (DECISIONS §27.43).
    pub untracked: Vec<Change>,
    /// The index was set to the target's index tree.
    pub index_restored: bool,
    /// HEAD was moved (detached) to the target's HEAD.
    pub head_moved: bool,
    /// The target's HEAD differs from HEAD after the restore (the user or the agent committed
    /// since): the worktree shows the target's files on top of the current HEAD.
    pub head_differs: bool,
}

/// How much of the repository a restore may move besides the worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestoreOptions {
    /// Set the user's index to the checkpoint's index tree (default: yes).
    pub index: bool,
    /// Detach HEAD at the checkpoint's HEAD when it differs (default: no; never moves a branch).
    pub head: bool,
}

impl Default for RestoreOptions {
    fn default() -> Self {
        RestoreOptions {
            index: true,
            head: false,
        }
    }
}

/// A checkpoint kept alive for a session (a ref, or a snapshot store ref file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCheckpoint {
    /// The session whose ref (or ref file) keeps it.
    pub session_id: String,
    /// The checkpoint's id ([`Checkpoint::id`]).
    pub id: String,
    /// Unix seconds of the capture.
    pub created: i64,
}

/// What pruning removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Checkpoints of sessions that no longer exist.
    pub deleted_sessions: usize,
    /// Checkpoints beyond the per-session count or older than the age limit.
    pub over_limits: usize,
    /// Snapshot store files (objects and manifests) no checkpoint refers to any more.
    pub unreferenced_files: usize,
}

/// Checks that a session id can be part of a ref name and a directory name.
pub(crate) fn check_session_id(id: &str) -> crate::Result<()> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && !id.ends_with(".lock")
        && !id.contains("..")
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(crate::CheckpointError::BadSessionId(id.to_string()))
    }
}
