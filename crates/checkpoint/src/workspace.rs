//! [`Workspace`]: the store a directory gets — git when it is inside a work tree, the snapshot
//! store otherwise — behind one set of operations.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::checkpoint::*;
use crate::error::Result;
use crate::git::discover;
use crate::git_store::GitStore;
use crate::settings::CheckpointSettings;
use crate::snapshot::{SnapshotLimits, SnapshotStore, DEFAULT_GRACE};

/// The checkpoint store of one session in one directory.
#[derive(Debug)]
pub enum Workspace {
    /// The directory is inside a git work tree: checkpoints are git objects.
    Git(GitStore),
    /// Anywhere else: content-addressed snapshots under `<ARBOR_HOME>/checkpoints/`.
    Snapshot(SnapshotStore),
}

/// Which stored checkpoints pruning removes (besides those of deleted sessions).
#[derive(Debug, Clone, Copy)]
pub struct PrunePolicy {
    /// Keep at most this many per session (the newest).
    pub max_per_session: usize,
    /// Remove checkpoints older than this.
    pub max_age: Option<Duration>,
    /// Snapshot store files younger than this are never deleted (a concurrent capture may be
    /// about to refer to them).
    pub grace: Duration,
}

impl PrunePolicy {
    /// The policy the user's `checkpoints` settings ask for (`maxAgeDays` 0: no age limit), with
    /// the default grace period.
    pub fn from_settings(settings: &CheckpointSettings) -> Self {
        PrunePolicy {
            max_per_session: settings.max_per_session,
            max_age: (settings.max_age_days > 0)
                .then(|| Duration::from_secs(settings.max_age_days * 86_400)),
            grace: DEFAULT_GRACE,
        }
    }
}

impl Workspace {
    /// Opens the store for `cwd`: git when `cwd` is inside a work tree (the whole work tree is
    /// checkpointed), else the snapshot store under `<arbor_home>/checkpoints`.
    pub fn open(
        cwd: &Path,
        session_id: &str,
        settings: &CheckpointSettings,
        arbor_home: &Path,
    ) -> Result<Workspace> {
        match discover(cwd)? {
            Some(located) => Ok(Workspace::Git(GitStore::new(
                located,
                session_id,
                settings.max_untracked_file_bytes,
            )?)),
            None => Ok(Workspace::Snapshot(SnapshotStore::new(
                cwd.to_path_buf(),
                arbor_home.join("checkpoints"),
                session_id,
                SnapshotLimits {
                    max_bytes: settings.max_snapshot_bytes,
                    max_files: settings.max_snapshot_files,
                    max_file_bytes: settings.max_untracked_file_bytes,
                },
            )?)),
        }
    }

    /// Which store this directory uses.
    pub fn kind(&self) -> StoreKind {
        match self {
            Workspace::Git(_) => StoreKind::Git,
            Workspace::Snapshot(_) => StoreKind::Snapshot,
        }
    }

    /// The directory the checkpoints cover (a git work tree's top, or the session's cwd).
    pub fn root(&self) -> PathBuf {
        match self {
            Workspace::Git(g) => g.root().to_path_buf(),
            Workspace::Snapshot(s) => s.root().to_path_buf(),
        }
    }

    /// Captures the workspace; `previous` is the state the session last recorded on its active
    /// path (equal state → [`Captured::Unchanged`], nothing written).
    pub fn capture(&mut self, previous: Option<&Checkpoint>) -> Result<Captured> {
        match self {
            Workspace::Git(g) => g.capture(previous),
            Workspace::Snapshot(s) => s.capture(previous),
        }
    }

    /// Refuses (mid-merge/rebase, objects gone, other store) before anything is touched.
    pub fn check_restorable(&self, target: &Checkpoint) -> Result<()> {
        match self {
            Workspace::Git(g) => g.check_restorable(target),
            Workspace::Snapshot(s) => s.check_restorable(target),
        }
    }

    /// The untracked files a restore from `current` (captured just before) to `target` would
    /// remove or overwrite (DECISIONS §27.43); nothing is written.
    pub fn untracked_at_risk(
        &self,
        target: &Checkpoint,
        current: &Checkpoint,
    ) -> Result<Vec<Change>> {
        match self {
            Workspace::Git(g) => g.untracked_at_risk(target, current),
            Workspace::Snapshot(s) => s.untracked_at_risk(target, current),
        }
    }

    /// Moves the workspace from `current` (captured just before) to `target`.
    pub fn restore(
        &mut self,
        target: &Checkpoint,
        current: &Checkpoint,
        opts: RestoreOptions,
    ) -> Result<Restored> {
        match self {
            Workspace::Git(g) => g.restore(target, current, opts),
            Workspace::Snapshot(s) => s.restore(target, current),
        }
    }

    /// Unified diff from one checkpoint's files to another's.
    pub fn diff(&self, from: &Checkpoint, to: &Checkpoint) -> Result<String> {
        self.check_same_store(from)?;
        self.check_same_store(to)?;
        match self {
            Workspace::Git(g) => g.diff(from, to),
            Workspace::Snapshot(s) => s.diff(from, to),
        }
    }

    fn check_same_store(&self, c: &Checkpoint) -> Result<()> {
        if c.store != self.kind() {
            return Err(crate::CheckpointError::WrongStore {
                id: c.id.clone(),
                kind: c.store.as_str().to_string(),
                current: self.kind().as_str().to_string(),
                dir: self.root(),
            });
        }
        Ok(())
    }

    /// Keeps `checkpoint` alive under this session too (after a fork).
    pub fn adopt(&self, checkpoint: &Checkpoint) -> Result<()> {
        match self {
            Workspace::Git(g) => g.adopt(checkpoint),
            Workspace::Snapshot(s) => s.adopt(checkpoint),
        }
    }

    /// Every stored checkpoint of every session in this repository / snapshot store.
    pub fn list_all(&self) -> Result<Vec<StoredCheckpoint>> {
        match self {
            Workspace::Git(g) => g.list_all(),
            Workspace::Snapshot(s) => s.list_all(),
        }
    }

    /// Removes the checkpoints of sessions for which `session_exists` is false, and those
    /// beyond `policy` (count per session, age). Git objects go with `git gc`; snapshot files
    /// no checkpoint needs are deleted here.
    pub fn prune(
        &self,
        session_exists: &dyn Fn(&str) -> bool,
        policy: &PrunePolicy,
    ) -> Result<Pruned> {
        let mut all = self.list_all()?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        // Newest first within each session.
        all.sort_by(|a, b| {
            a.session_id
                .cmp(&b.session_id)
                .then(b.created.cmp(&a.created))
                .then(a.id.cmp(&b.id))
        });
        let mut doomed = Vec::new();
        let mut report = Pruned::default();
        let mut gone_sessions = Vec::new();
        let mut rank = 0usize;
        let mut current: Option<String> = None;
        for c in all {
            if current.as_deref() != Some(c.session_id.as_str()) {
                current = Some(c.session_id.clone());
                rank = 0;
            }
            rank += 1;
            if !session_exists(&c.session_id) {
                report.deleted_sessions += 1;
                if gone_sessions.last() != Some(&c.session_id) {
                    gone_sessions.push(c.session_id.clone());
                }
                doomed.push(c);
                continue;
            }
            let too_old = policy
                .max_age
                .is_some_and(|age| now.saturating_sub(c.created) > age.as_secs() as i64);
            if rank > policy.max_per_session || too_old {
                report.over_limits += 1;
                doomed.push(c);
            }
        }
        match self {
            Workspace::Git(g) => {
                g.delete_refs(&doomed)?;
                for s in &gone_sessions {
                    g.forget_session_index(s);
                }
            }
            Workspace::Snapshot(s) => {
                s.delete_refs(&doomed)?;
                for id in &gone_sessions {
                    s.forget_session(id);
                }
                report.unreferenced_files = s.collect_garbage(policy.grace)?;
            }
        }
        Ok(report)
    }
}
