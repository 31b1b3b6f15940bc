//! Checkpoints as git objects (DECISIONS §27.1–§27.5).
//!
//! The worktree is staged into a *private* index (`<git dir>/arbor/<session>.index`): `git
//! status` on it names what differs (git's own stat cache and untracked cache decide), `git add
//! -A` of those paths stages them (DECISIONS §27.50); `write-tree` turns it into a tree. A
//! checkpoint is a commit of that tree whose parents are HEAD and (when it is neither HEAD's
//! tree nor the worktree's) a commit of the user's index tree, kept alive by
//! `refs/arbor/checkpoints/<session>/<commit>`. Nothing here writes the user's index, branches,
//! stash or HEAD unless a restore is asked to.
//!
//! This file holds the store's state and the capture that ties the steps together; each step
//! has a file of its own: [`head_and_index`] (what the commit's parents are), [`staging`] (the
//! worktree into the private index), [`change_detection`] (what changed since the last capture,
//! without git when it can), [`restore`] and [`refs`].

mod change_detection;
mod head_and_index;
mod modes;
mod refs;
mod restore;
mod staging;
mod untracked;

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::checkpoint::{
    check_session_id, Captured, Change, ChangeStatus, Checkpoint, SkippedFile, StoreKind,
};
use crate::error::{CheckpointError, Result};
use crate::git::{Git, Located};
use crate::keep_out::KeepOut;
use crate::notify::Notify;
use crate::stat_watch::{Ignored, Watch};

/// With change notification, the full stat check still runs when this long has passed since
/// the last one: the safety net for writes inotify does not report (through a shared `mmap`,
/// through a hard link in an unwatched directory; DECISIONS §27.72).
const STAT_PASS_EVERY: Duration = Duration::from_secs(60);

/// Where this crate's refs live.
pub const REF_PREFIX: &str = "refs/arbor/checkpoints/";

/// The checkpoint store of one session in one git work tree.
#[derive(Debug)]
pub struct GitStore {
    git: Git,
    toplevel: PathBuf,
    git_dir: PathBuf,
    common_dir: PathBuf,
    session_id: String,
    private_index: PathBuf,
    /// The tree the private index held after our last write (skips re-checking it).
    private_tree: Option<String>,
    /// Commit → tree of the last HEAD seen (HEAD rarely moves between captures).
    head_tree: Option<(String, String)>,
    /// The user's index as last seen: its identity and its tree. Re-read only when it changed.
    user_index: Option<(IndexStamp, Option<String>)>,
    /// The in-process stat check's state (DECISIONS §27.60), boxed: most stores are small.
    quick: Box<QuickState>,
    /// Untracked files above this many bytes are left out (DECISIONS §27.41).
    max_untracked_bytes: u64,
    /// Untracked files left out by the last look at the worktree.
    last_skipped: Vec<SkippedFile>,
    /// Paths a restore un-ignored (DECISIONS §27.40), read on first use.
    keep_out: Option<KeepOut>,
}

/// What the stat check keeps between captures.
#[derive(Debug)]
struct QuickState {
    /// The stat of everything the last capture depended on.
    watch: Option<Watch>,
    /// The private index's identity after our last write: another writer voids the watch.
    watched_index: Option<IndexStamp>,
    /// The directories git does not look into, and the files that decide it.
    ignored: Option<Ignored>,
    /// Written before git looks at the worktree; its ctime is when it looked.
    stamp_path: PathBuf,
    /// The stamp and tree of the last `git status` capture, for the next capture to build
    /// its watch from.
    pending_watch: Option<((i64, i64), String)>,
    /// Change notification for `watch` (DECISIONS §27.70): armed before the stat pass or
    /// git run it takes over from; `None` when off, lost, or not built yet.
    notify: Option<Notify>,
    /// A watch could not be added: no new one until the next watch is built.
    notify_refused: bool,
    /// When the last full stat pass ran, and how often the safety net makes one.
    last_stat_pass: Option<Instant>,
    stat_pass_every: Duration,
    stats: WatchStats,
    /// Test hook: runs after a capture's git processes looked at the worktree.
    after_git: Option<AfterGit>,
}

/// A test's code run after git has read the worktree (to change a file behind its back).
struct AfterGit(Box<dyn FnMut() + Send + Sync>);

impl std::fmt::Debug for AfterGit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AfterGit")
    }
}

/// What a store's change detection has done so far (DECISIONS §27.70): tests and the bench
/// read it to tell which path a capture took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WatchStats {
    /// Captures decided by change notification alone: no `lstat` of the index paths beyond
    /// those reported or not yet trusted.
    pub notified: u64,
    /// Full stat passes over the index paths (a new watch, no or lost notification, the
    /// safety net).
    pub stat_passes: u64,
    /// Of those, passes made only because the safety net was due.
    pub safety_passes: u64,
    /// `lstat`s of index paths, in all.
    pub index_lstats: u64,
    /// Notification lost to an entry created, removed or renamed in a watched directory.
    pub directory_events: u64,
    /// Notification lost to an overflow of the kernel's queue.
    pub overflows: u64,
    /// Notification lost to a watch the kernel removed, or to a failed read.
    pub unwatched: u64,
    /// Notification that could not be set up (no inotify instance, a watch refused).
    pub arm_failures: u64,
}

/// Identity of an index file: a rewrite changes at least one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IndexStamp {
    len: u64,
    modified: Option<SystemTime>,
    ino: u64,
}

impl IndexStamp {
    fn of(path: &Path) -> Option<IndexStamp> {
        let meta = fs::metadata(path).ok()?;
        #[cfg(unix)]
        let ino = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let ino = 0;
        Some(IndexStamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            ino,
        })
    }
}

impl GitStore {
    pub(crate) fn new(
        located: Located,
        session_id: &str,
        max_untracked_bytes: u64,
    ) -> Result<Self> {
        check_session_id(session_id)?;
        let Located {
            toplevel,
            git_dir,
            common_dir,
        } = located;
        let private_index = git_dir.join("arbor").join(format!("{session_id}.index"));
        let stamp_path = git_dir.join("arbor").join(format!("{session_id}.stamp"));
        Ok(GitStore {
            git: Git::new(&toplevel),
            toplevel,
            git_dir,
            common_dir,
            session_id: session_id.to_string(),
            private_index,
            private_tree: None,
            head_tree: None,
            user_index: None,
            quick: Box::new(QuickState {
                watch: None,
                watched_index: None,
                ignored: None,
                stamp_path,
                pending_watch: None,
                notify: None,
                notify_refused: false,
                last_stat_pass: None,
                stat_pass_every: STAT_PASS_EVERY,
                stats: WatchStats::default(),
                after_git: None,
            }),
            max_untracked_bytes,
            last_skipped: Vec::new(),
            keep_out: None,
        })
    }

    /// The work tree's top directory (checkpoints always cover the whole work tree).
    pub fn root(&self) -> &Path {
        &self.toplevel
    }

    /// This work tree's git dir (in a linked worktree, its own dir under the shared one); the
    /// store keeps its private index and stamp under `<git_dir>/arbor/`.
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// How many git processes this store has started: an unchanged capture with a warm
    /// watch starts none (DECISIONS §27.60).
    pub fn git_processes(&self) -> u64 {
        self.git.spawned()
    }

    /// What change detection has done so far (DECISIONS §27.70).
    pub fn watch_stats(&self) -> WatchStats {
        let mut stats = self.quick.stats;
        stats.index_lstats += self.quick.watch.as_ref().map_or(0, |w| w.lstats);
        stats
    }

    /// True while change notification stands in for the stat pass.
    pub fn notifying(&self) -> bool {
        self.quick.notify.is_some() && self.quick.watch.is_some()
    }

    /// How long change notification may go without a full stat pass (tests shorten it).
    #[doc(hidden)]
    pub fn set_stat_pass_interval(&mut self, every: Duration) {
        self.quick.stat_pass_every = every;
    }

    /// Test hook: `hook` runs in each capture after its git processes read the worktree.
    #[doc(hidden)]
    pub fn set_after_git_hook(&mut self, hook: Option<Box<dyn FnMut() + Send + Sync>>) {
        self.quick.after_git = hook.map(AfterGit);
    }

    fn after_git(&mut self) {
        if let Some(AfterGit(hook)) = &mut self.quick.after_git {
            hook();
        }
    }

    /// Captures the workspace. `previous` is the state the caller believes the workspace is in
    /// (the nearest checkpoint on the session's active path); an equal state writes nothing.
    pub fn capture(&mut self, previous: Option<&Checkpoint>) -> Result<Captured> {
        let head = self.head()?;
        let index = self.sync_user_index()?;
        let (tree, known) = self.worktree_tree()?;
        let head_commit = head.as_ref().map(|(c, _)| c.clone());
        if let Some(prev) = previous {
            if prev.store == StoreKind::Git
                && prev.tree == tree
                && prev.head == head_commit
                && prev.index == index
                && prev.skipped == self.last_skipped
            {
                return Ok(Captured::Unchanged(prev.clone()));
            }
        }
        let mut args: Vec<String> = vec!["commit-tree".into(), tree.clone()];
        if let Some((commit, _)) = &head {
            args.push("-p".into());
            args.push(commit.clone());
        }
        if let Some(index_tree) = &index {
            let reachable =
                *index_tree == tree || head.as_ref().is_some_and(|(_, t)| t == index_tree);
            if !reachable {
                let index_commit = self.git.line(
                    &[
                        "commit-tree",
                        index_tree,
                        "-m",
                        "arbor checkpoint: the index",
                    ],
                    None,
                )?;
                args.push("-p".into());
                args.push(index_commit);
            }
        }
        let mut message = format!(
            "arbor checkpoint\n\nsession: {}\nhead: {}\nindex: {}\n",
            self.session_id,
            head_commit.as_deref().unwrap_or("none"),
            index.as_deref().unwrap_or("unmerged")
        );
        for s in &self.last_skipped {
            message.push_str(&format!("skipped: {} ({} bytes)\n", s.path, s.size));
        }
        args.push("-m".into());
        args.push(message);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let commit = self.git.line(&argv, None)?;
        self.git
            .run(&["update-ref", &self.ref_name(&commit), &commit], None)?;
        let base = match previous {
            Some(p) if p.store == StoreKind::Git => Some(p.tree.clone()),
            _ => head.as_ref().map(|(_, t)| t.clone()),
        };
        let changed = match (base, known) {
            (Some(base), Some((from, changes))) if base == from => changes,
            (Some(base), _) => self.tree_changes(&base, &tree)?,
            (None, _) => self.tree_changes(EMPTY_TREE_MARKER, &tree)?,
        };
        Ok(Captured::Created {
            checkpoint: Checkpoint {
                store: StoreKind::Git,
                id: commit,
                tree,
                head: head_commit,
                index,
                skipped: self.last_skipped.clone(),
            },
            changed,
        })
    }

    /// Paths that differ between two trees (no rename detection: a rename is a D and an A).
    pub fn tree_changes(&self, from: &str, to: &str) -> Result<Vec<Change>> {
        if from == to {
            return Ok(Vec::new());
        }
        let from = if from == EMPTY_TREE_MARKER {
            self.empty_tree()?
        } else {
            from.to_string()
        };
        let out = self.git.run(
            &[
                "diff-tree",
                "-r",
                "-z",
                "--no-renames",
                "--name-status",
                &from,
                to,
            ],
            None,
        )?;
        parse_name_status(&out)
    }

    fn empty_tree(&self) -> Result<String> {
        self.git
            .line(&["hash-object", "-t", "tree", "/dev/null"], None)
    }
}

/// Changes from a tree (the first) to the one a capture staged, known without `diff-tree`.
type Known = (String, Vec<Change>);

/// Stands for the empty tree in [`GitStore::tree_changes`] (its id depends on the hash).
const EMPTY_TREE_MARKER: &str = "<empty>";

fn os<'a>(args: &[&'a str]) -> Vec<&'a OsStr> {
    args.iter().map(|a| OsStr::new(*a)).collect()
}

/// Parses `diff-tree -z --name-status` output: `STATUS\0PATH\0` pairs.
fn parse_name_status(out: &[u8]) -> Result<Vec<Change>> {
    let mut fields = out.split(|b| *b == 0).filter(|f| !f.is_empty());
    let mut changes = Vec::new();
    while let Some(status) = fields.next() {
        let Some(path) = fields.next() else {
            return Err(CheckpointError::GitOutput {
                command: "diff-tree --name-status".into(),
                output: String::from_utf8_lossy(out).into_owned(),
            });
        };
        let status = match status.first() {
            Some(b'A') => ChangeStatus::Added,
            Some(b'D') => ChangeStatus::Deleted,
            Some(b'T') => ChangeStatus::TypeChanged,
            _ => ChangeStatus::Modified,
        };
        changes.push(Change {
            status,
            path: String::from_utf8_lossy(path).into_owned(),
        });
    }
    Ok(changes)
}
