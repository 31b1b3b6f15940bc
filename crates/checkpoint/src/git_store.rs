//! Checkpoints as git objects (DECISIONS §27.1–§27.5).
//!
//! The worktree is staged into a *private* index (`<git dir>/arbor/<session>.index`): `git
//! status` on it names what differs (git's own stat cache and untracked cache decide), `git add
//! -A` of those paths stages them (DECISIONS §27.50); `write-tree` turns it into a tree. A checkpoint is a commit of that tree whose parents are HEAD and (when it is
//! neither HEAD's tree nor the worktree's) a commit of the user's index tree, kept alive by
//! `refs/arbor/checkpoints/<session>/<commit>`. Nothing here writes the user's index, branches,
//! stash or HEAD unless a restore is asked to.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::checkpoint::*;
use crate::error::{CheckpointError, Result};
use crate::git::{Git, Located, Locks};
use crate::notify::{Drained, Lost, Notify};
use crate::stat_watch::{self, Ignored, Unwatchable, Verdict, Watch};

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
    pub(crate) fn new(located: Located, session_id: &str) -> Result<Self> {
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
        })
    }

    /// The work tree's top directory (checkpoints always cover the whole work tree).
    pub fn root(&self) -> &Path {
        &self.toplevel
    }

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

    fn ref_name(&self, commit: &str) -> String {
        format!("{REF_PREFIX}{}/{commit}", self.session_id)
    }

    /// HEAD's commit and tree (`None`: unborn branch). HEAD and a loose branch ref are read
    /// as files (a process spawn saved per capture); anything unusual asks `git rev-parse`.
    fn head(&mut self) -> Result<Option<(String, String)>> {
        let commit = match self.read_head_fast() {
            Some(commit) => Some(commit),
            None => {
                let out = self.git.run_raw(
                    &[
                        OsStr::new("rev-parse"),
                        OsStr::new("-q"),
                        OsStr::new("--verify"),
                        OsStr::new("HEAD^{commit}"),
                    ],
                    None,
                    None,
                )?;
                if out.status != 0 {
                    return Ok(None); // unborn branch
                }
                Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
            }
        };
        let Some(commit) = commit else {
            return Ok(None);
        };
        if let Some((c, t)) = &self.head_tree {
            if *c == commit {
                return Ok(Some((c.clone(), t.clone())));
            }
        }
        let tree = self
            .git
            .line(&["rev-parse", &format!("{commit}^{{tree}}")], None)?;
        self.head_tree = Some((commit.clone(), tree.clone()));
        Ok(Some((commit, tree)))
    }

    /// HEAD → `ref: refs/heads/x` → a loose ref file holding a hex id, or a detached id.
    /// `None` for everything else (packed refs, unborn branches, symbolic chains).
    fn read_head_fast(&self) -> Option<String> {
        let head = fs::read_to_string(self.git_dir.join("HEAD")).ok()?;
        let head = head.trim();
        let id = match head.strip_prefix("ref: ") {
            Some(name) if name.starts_with("refs/") && !name.contains("..") => {
                let path = if name.starts_with("refs/heads/") || name.starts_with("refs/tags/") {
                    self.common_dir.join(name)
                } else {
                    self.git_dir.join(name)
                };
                fs::read_to_string(path).ok()?.trim().to_string()
            }
            Some(_) => return None,
            None => head.to_string(),
        };
        let hex = (id.len() == 40 || id.len() == 64) && id.bytes().all(|b| b.is_ascii_hexdigit());
        hex.then_some(id)
    }

    /// Makes the private index start from the user's index whenever the user's index changed
    /// (so `git add -f`'d files and the stat cache carry over), and returns the user's index
    /// tree (`None` with unmerged entries).
    fn sync_user_index(&mut self) -> Result<Option<String>> {
        let user_index = self.git_dir.join("index");
        let stamp = IndexStamp::of(&user_index);
        if let (Some(stamp), Some((seen, tree))) = (stamp, &self.user_index) {
            if stamp == *seen && self.private_index.exists() {
                return Ok(tree.clone());
            }
        }
        if let Some(dir) = self.private_index.parent() {
            fs::create_dir_all(dir).map_err(|e| CheckpointError::io(dir, e))?;
        }
        self.private_tree = None;
        match stamp {
            Some(_) => copy_keeping_mtime(&user_index, &self.private_index)?,
            None => match fs::remove_file(&self.private_index) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(CheckpointError::io(&self.private_index, e)),
            },
        }
        let out = self
            .git
            .run_raw(&[OsStr::new("write-tree")], Some(&self.private_index), None)?;
        let tree = if out.status == 0 {
            Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else if out.stderr.contains("unmerged") || out.stderr.contains("not able to write") {
            None
        } else {
            return Err(self.git.failure(&[OsStr::new("write-tree")], out.stderr));
        };
        if let Some(stamp) = stamp {
            self.user_index = Some((stamp, tree.clone()));
        } else {
            self.user_index = None;
        }
        Ok(tree)
    }

    /// Stages the whole worktree into the private index and returns its tree.
    ///
    /// The in-process stat check comes first (DECISIONS §27.60): nothing changed means no
    /// git process at all; only files changed in place means `git add` of just those.
    /// Otherwise `git status` decides, and the next capture builds a new watch.
    ///
    /// Also returns the changes from the tree the private index held before, when they are
    /// known without asking git (`diff-tree` is a process, DECISIONS §27.61).
    fn worktree_tree(&mut self) -> Result<(String, Option<Known>)> {
        let before = self.private_tree.clone();
        match self.quick_check() {
            Verdict::Unchanged => {
                if let Some(tree) = &self.private_tree {
                    return Ok((tree.clone(), Some((tree.clone(), Vec::new()))));
                }
            }
            Verdict::Files(paths) => {
                let stamp = stat_watch::stamp(&self.quick.stamp_path)?;
                // Every suspect is an index path.
                let staged = self.add_paths(&paths, Tracked::Yes)?;
                let tree = self.tree_after(&staged)?;
                self.after_git();
                self.quick.watched_index = IndexStamp::of(&self.private_index);
                if let Some(watch) = &mut self.quick.watch {
                    watch.refresh(stamp, tree.clone());
                }
                let known = before.and_then(|before| {
                    if before == tree {
                        return Some((before, Vec::new()));
                    }
                    let [path] = paths.as_slice() else {
                        return None;
                    };
                    single_change(&staged, path).map(|change| (before, vec![change]))
                });
                return Ok((tree, known));
            }
            Verdict::Unknown => {}
        }
        // The next capture builds a new watch and arms a new notification with it.
        self.quick.notify = None;
        let stamp = stat_watch::stamp(&self.quick.stamp_path)?;
        let tree = self.status_tree()?;
        self.after_git();
        // Built lazily by the next capture: a restore that follows at once would void it.
        self.quick.watched_index = IndexStamp::of(&self.private_index);
        self.quick.pending_watch = Some((stamp, tree.clone()));
        Ok((tree, None))
    }

    /// The watch's verdict: `Unknown` when there is none or the private index is not the one
    /// it describes. The first check after a `git status` builds the watch (and arms change
    /// notification as it walks). Later ones read the notification queue and, when it names
    /// only files changed in place, check just those; otherwise (no notification, a lost one,
    /// the safety net due) they make the full stat check, arming a new notification first.
    fn quick_check(&mut self) -> Verdict {
        let pending = self.quick.pending_watch.take();
        let Some(tree) = self.private_tree.clone() else {
            return Verdict::Unknown;
        };
        if IndexStamp::of(&self.private_index) != self.quick.watched_index {
            return Verdict::Unknown;
        }
        if let Some((stamp, built_for)) = pending {
            if built_for != tree {
                return Verdict::Unknown;
            }
            self.build_watch(stamp, &tree);
            let q = &mut *self.quick;
            q.stats.stat_passes += 1;
            q.last_stat_pass = Some(Instant::now());
            return match (&mut q.watch, &q.ignored) {
                (Some(watch), Some(ignored)) => watch.first_verdict(ignored),
                _ => Verdict::Unknown,
            };
        }
        let q = &mut *self.quick;
        let (Some(watch), Some(ignored)) = (&mut q.watch, &q.ignored) else {
            return Verdict::Unknown;
        };
        if watch.tree != tree {
            return Verdict::Unknown;
        }
        let due = q
            .last_stat_pass
            .is_none_or(|at| at.elapsed() >= q.stat_pass_every);
        let named = match q.notify.as_mut().map(Notify::drain) {
            Some(Drained::Files(named)) if !due => {
                q.stats.notified += 1;
                return watch.notified(ignored, &named);
            }
            Some(Drained::Files(named)) => {
                q.stats.safety_passes += 1;
                named
            }
            Some(Drained::Lost(why)) => {
                match why {
                    Lost::Directory => q.stats.directory_events += 1,
                    Lost::Overflow => q.stats.overflows += 1,
                    Lost::Unwatched => q.stats.unwatched += 1,
                }
                q.notify = None;
                Vec::new()
            }
            None => Vec::new(),
        };
        if q.notify.is_none() && !q.notify_refused && cfg!(target_os = "linux") {
            // Armed before the stat pass, so that from here on it can take over.
            let armed = Notify::new().and_then(|mut notify| {
                let all = watch.arm_all(&mut notify);
                all.then_some(notify)
            });
            if armed.is_none() {
                q.stats.arm_failures += 1;
                q.notify_refused = true;
            }
            q.notify = armed;
        }
        q.stats.stat_passes += 1;
        q.last_stat_pass = Some(Instant::now());
        watch.check(ignored, &named)
    }

    /// A new watch of the worktree `git status` staged as `tree` (`stamp` written before it
    /// looked). Failing to build one only means the next capture asks git again.
    fn build_watch(&mut self, stamp: (i64, i64), tree: &str) {
        if let Some(old) = self.quick.watch.take() {
            self.quick.stats.index_lstats += old.lstats;
        }
        self.quick.notify = None;
        self.quick.notify_refused = false;
        let mut ignored = match self.quick.ignored.take().filter(Ignored::still_valid) {
            Some(ignored) => ignored,
            None => match self.excludes_file() {
                Ok(excludes) => Ignored::new(self.guard_paths(excludes), stamp),
                Err(_) => return,
            },
        };
        // Each round classifies one more level of directories the walk has not seen, and arms
        // a new notification: the last round's walk is the one whose watch is kept.
        for _ in 0..32 {
            let mut notify = if cfg!(target_os = "linux") {
                let notify = Notify::new();
                if notify.is_none() {
                    self.quick.stats.arm_failures += 1;
                }
                notify
            } else {
                None
            };
            match Watch::build(
                &self.toplevel,
                &self.private_index,
                tree,
                stamp,
                &mut ignored,
                notify.as_mut(),
            ) {
                Ok(watch) => {
                    match notify {
                        Some(n) if n.failed() => {
                            self.quick.stats.arm_failures += 1;
                            self.quick.notify_refused = true;
                        }
                        Some(n) => self.quick.notify = Some(n),
                        None => self.quick.notify_refused = true,
                    }
                    self.quick.watch = Some(watch);
                    self.quick.ignored = Some(ignored);
                    return;
                }
                Err(Unwatchable::Never) => {
                    self.quick.ignored = Some(ignored);
                    return;
                }
                Err(Unwatchable::Unclassified(dirs)) => {
                    if dirs.is_empty() {
                        continue;
                    }
                    let Ok(ignored_ones) = self.check_ignore(&dirs) else {
                        return;
                    };
                    ignored.learn(dirs, &ignored_ones);
                }
            }
        }
    }

    /// Which of `dirs` an ignore rule matches, so that `git status` does not look inside
    /// (one `git check-ignore` for the whole list).
    fn check_ignore(&self, dirs: &[Vec<u8>]) -> Result<HashSet<Vec<u8>>> {
        // `check-ignore` refuses literal pathspecs; a leading `./` keeps `:x` from being
        // read as magic (git echoes each path as given).
        let mut input = Vec::new();
        for d in dirs {
            input.extend_from_slice(b"./");
            input.extend_from_slice(d);
            input.push(0);
        }
        let args = os(&["check-ignore", "-z", "--stdin"]);
        let out = self
            .git
            .run_raw(&args, Some(&self.private_index), Some(&input))?;
        // 0: some are ignored, 1: none is.
        if out.status != 0 && out.status != 1 {
            return Err(self.git.failure(&args, out.stderr));
        }
        Ok(stat_watch::parse_nul_list(&out.stdout))
    }

    /// `core.excludesFile`, when the configuration names one.
    fn excludes_file(&self) -> Result<Option<PathBuf>> {
        let out = self.git.run_raw(
            &os(&["config", "-z", "--path", "--get", "core.excludesFile"]),
            None,
            None,
        )?;
        Ok((out.status == 0)
            .then(|| {
                let text = String::from_utf8_lossy(&out.stdout);
                text.trim_end_matches('\0').to_string()
            })
            .filter(|p| !p.is_empty())
            .map(PathBuf::from))
    }

    /// The files whose contents change what git ignores or how it reads the worktree.
    fn guard_paths(&self, excludes: Option<PathBuf>) -> Vec<PathBuf> {
        let mut paths = vec![
            self.common_dir.join("info").join("exclude"),
            self.common_dir.join("config"),
            self.common_dir.join("config.worktree"),
            self.git_dir.join("config.worktree"),
            PathBuf::from("/etc/gitconfig"),
        ];
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".config")));
        if let Some(home) = &home {
            paths.push(home.join(".gitconfig"));
        }
        if let Some(xdg) = &xdg {
            paths.push(xdg.join("git").join("config"));
            paths.push(xdg.join("git").join("ignore"));
        }
        for var in ["GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"] {
            if let Some(p) = std::env::var_os(var).filter(|v| !v.is_empty()) {
                paths.push(PathBuf::from(p));
            }
        }
        if let Some(p) = excludes {
            paths.push(if p.is_absolute() {
                p
            } else {
                self.toplevel.join(p)
            });
        }
        paths
    }

    /// `git add` of exactly `paths` into the private index; returns its `--verbose` list.
    /// Paths known to be in the index go to `add -u`, the rest to `add -A`: with a pathspec,
    /// `add -A` also walks for untracked files and fails (after staging) when a tracked path
    /// lies in an ignored directory, as a force-added file does (DECISIONS §27.73).
    fn add_paths(&self, paths: &[Vec<u8>], tracked: Tracked) -> Result<Vec<u8>> {
        let mut list = Vec::new();
        for p in paths {
            list.extend_from_slice(p);
            list.push(0);
        }
        self.git.run_os_untranslated(
            &os(&[
                "--literal-pathspecs",
                "-c",
                "core.fsmonitor=false",
                "add",
                match tracked {
                    Tracked::Yes => "-u",
                    Tracked::No => "-A",
                },
                "--verbose",
                "--no-warn-embedded-repo",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ]),
            Some(&self.private_index),
            Some(&list),
        )
    }

    /// The private index's tree after a `git add --verbose` that printed `staged`: nothing
    /// printed means the index holds the tree we wrote last time, and `write-tree` (a
    /// process) is skipped.
    fn tree_after(&mut self, staged: &[u8]) -> Result<String> {
        if staged.iter().all(u8::is_ascii_whitespace) {
            if let Some(tree) = &self.private_tree {
                return Ok(tree.clone());
            }
        }
        let tree = self.git.line(&["write-tree"], Some(&self.private_index))?;
        self.private_tree = Some(tree.clone());
        Ok(tree)
    }

    /// `git status` on the private index finds what differs from it (DECISIONS §27.50): it
    /// uses the untracked cache, which `git add -A` never consults, and writes back what it
    /// refreshed. Only the paths it names are then staged; nothing named means the index
    /// still holds the tree we wrote last time, and no further process runs.
    fn status_tree(&mut self) -> Result<String> {
        let staged = match self.worktree_changes()? {
            Some((tracked, untracked)) if tracked.is_empty() && untracked.is_empty() => {
                if let Some(tree) = &self.private_tree {
                    return Ok(tree.clone());
                }
                Vec::new()
            }
            Some((tracked, untracked)) => {
                let mut staged = Vec::new();
                if !tracked.is_empty() {
                    staged = self.add_paths(&tracked, Tracked::Yes)?;
                }
                if !untracked.is_empty() {
                    staged.extend(self.add_paths(&untracked, Tracked::No)?);
                }
                staged
            }
            // Output we do not understand: stage everything, as a full `add -A` does.
            None => self.git.run(
                &[
                    "-c",
                    "core.fsmonitor=false",
                    "add",
                    "-A",
                    "--verbose",
                    "--no-warn-embedded-repo",
                ],
                Some(&self.private_index),
            )?,
        };
        self.tree_after(&staged)
    }

    /// The paths where the worktree differs from the private index, from one `git status`:
    /// index paths (modified, deleted, type changed, unmerged), then untracked ones (an
    /// untracked directory as `dir/`). `None` when its output has a record this parser does
    /// not know.
    fn worktree_changes(&self) -> Result<Option<WorktreeChanges>> {
        let args = os(&[
            "-c",
            "core.untrackedCache=true",
            "-c",
            "core.fsmonitor=false",
            "status",
            "--porcelain=v2",
            "-z",
            "--untracked-files=normal",
            "--ignore-submodules=dirty",
            "--no-renames",
        ]);
        let out = self
            .git
            .run_raw_with(&args, Some(&self.private_index), None, Locks::Optional)?;
        if out.status != 0 {
            return Err(self.git.failure(&args, out.stderr));
        }
        Ok(parse_worktree_changes(&out.stdout))
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
        let message = format!(
            "arbor checkpoint\n\nsession: {}\nhead: {}\nindex: {}\n",
            self.session_id,
            head_commit.as_deref().unwrap_or("none"),
            index.as_deref().unwrap_or("unmerged")
        );
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

    /// The operation that makes restoring unsafe right now, if any.
    pub fn busy(&self) -> Option<&'static str> {
        let checks: [(&str, &str); 5] = [
            ("rebase-merge", "rebase"),
            ("rebase-apply", "rebase"),
            ("MERGE_HEAD", "merge"),
            ("CHERRY_PICK_HEAD", "cherry-pick"),
            ("REVERT_HEAD", "revert"),
        ];
        checks
            .iter()
            .find(|(file, _)| self.git_dir.join(file).exists())
            .map(|(_, op)| *op)
    }

    /// Refuses when a restore to `target` cannot be done: mid-merge/rebase, or objects gone.
    pub fn check_restorable(&self, target: &Checkpoint) -> Result<()> {
        if target.store != StoreKind::Git {
            return Err(CheckpointError::WrongStore {
                id: target.id.clone(),
                kind: target.store.as_str().to_string(),
                current: "git".to_string(),
                dir: self.toplevel.clone(),
            });
        }
        if let Some(op) = self.busy() {
            return Err(CheckpointError::Busy {
                repo: self.toplevel.clone(),
                operation: op.to_string(),
            });
        }
        let mut wanted = vec![
            ("commit", format!("{}^{{commit}}", target.id)),
            ("worktree tree", format!("{}^{{tree}}", target.tree)),
        ];
        if let Some(index) = &target.index {
            wanted.push(("index tree", format!("{index}^{{tree}}")));
        }
        let input: String = wanted.iter().map(|(_, spec)| format!("{spec}\n")).collect();
        let out = self.git.run_os(
            &[OsStr::new("cat-file"), OsStr::new("--batch-check")],
            None,
            Some(input.as_bytes()),
        )?;
        let text = String::from_utf8_lossy(&out);
        for ((what, _), line) in wanted.iter().zip(text.lines()) {
            if line.ends_with(" missing") || line.ends_with(" ambiguous") {
                return Err(CheckpointError::Gone {
                    id: target.id.clone(),
                    what: what.to_string(),
                    store: self.git_dir.display().to_string(),
                });
            }
        }
        // A tree further down may still be missing in a damaged store: `read-tree` reads
        // them all before it writes a file, so the restore then fails without changes.
        Ok(())
    }

    /// Moves the worktree (and the index; HEAD only when asked) from `current` — a checkpoint
    /// the caller captured just now — to `target`.
    pub fn restore(
        &mut self,
        target: &Checkpoint,
        current: &Checkpoint,
        opts: RestoreOptions,
    ) -> Result<Restored> {
        self.check_restorable(target)?;
        if current.store != StoreKind::Git {
            return Err(CheckpointError::WrongStore {
                id: current.id.clone(),
                kind: current.store.as_str().to_string(),
                current: "git".to_string(),
                dir: self.toplevel.clone(),
            });
        }
        // Make sure the private index is exactly `current.tree`: it is after a capture, but a
        // capture in another process (same session id) could have moved it.
        let now = match &self.private_tree {
            Some(tree) => tree.clone(),
            None => self.git.line(&["write-tree"], Some(&self.private_index))?,
        };
        if now != current.tree {
            self.git
                .run(&["read-tree", &current.tree], Some(&self.private_index))?;
            self.git
                .run(
                    &["update-index", "-q", "--refresh"],
                    Some(&self.private_index),
                )
                .ok();
        }
        let changed = self.tree_changes(&current.tree, &target.tree)?;
        // A two-tree switch, like `git checkout` does: only differing paths are written or
        // removed, and git refuses rather than overwrite a file that changed in between or an
        // ignored file in the way.
        self.private_tree = None;
        // The worktree is about to change under the watch (DECISIONS §27.60): the next
        // capture asks git, and the one after builds a new watch.
        self.quick.pending_watch = None;
        self.quick.notify = None;
        if let Some(watch) = &mut self.quick.watch {
            watch.invalidate();
        }
        self.git.run(
            &["read-tree", "-m", "-u", &current.tree, &target.tree],
            Some(&self.private_index),
        )?;
        self.private_tree = Some(target.tree.clone());
        let mut index_restored = false;
        if opts.index {
            if let Some(index) = &target.index {
                if current.index.as_deref() != Some(index.as_str()) {
                    // `--reset` without `-u`: entries equal to the tree keep their stat data,
                    // the worktree is not checked (it was just moved), then one refresh so
                    // the next `git status` need not re-hash.
                    self.git.run(&["read-tree", "--reset", index], None)?;
                    let _ = self.git.run_raw(
                        &[
                            OsStr::new("update-index"),
                            OsStr::new("-q"),
                            OsStr::new("--refresh"),
                        ],
                        None,
                        None,
                    )?;
                }
                index_restored = true;
            }
        }
        let mut head_moved = false;
        let head_now = current.head.clone();
        if opts.head {
            if let Some(head) = &target.head {
                if head_now.as_deref() != Some(head.as_str()) {
                    let msg = format!("arbor: restore checkpoint {}", target.id);
                    self.git.run(
                        &["update-ref", "--no-deref", "-m", &msg, "HEAD", head],
                        None,
                    )?;
                    head_moved = true;
                }
            }
        }
        let head_after = if head_moved {
            target.head.clone()
        } else {
            head_now
        };
        // The private index now mirrors the target with fresh stat data. If we rewrote the
        // user's index its identity changed, and the next capture re-seeds from it.
        Ok(Restored {
            changed,
            index_restored,
            head_moved,
            head_differs: target.head.is_some() && head_after != target.head,
        })
    }

    /// A unified diff between the worktrees of two checkpoints (binary files are named, not
    /// shown).
    pub fn diff(&self, from: &Checkpoint, to: &Checkpoint) -> Result<String> {
        let out = self.git.run(
            &[
                "diff",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--no-renames",
                &from.tree,
                &to.tree,
            ],
            None,
        )?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Makes sure `checkpoint` has a ref under this session (a forked session refers to its
    /// source's checkpoints; pruning the source must not take them away).
    pub fn adopt(&self, checkpoint: &Checkpoint) -> Result<()> {
        if checkpoint.store != StoreKind::Git {
            return Ok(());
        }
        self.git.run(
            &["update-ref", &self.ref_name(&checkpoint.id), &checkpoint.id],
            None,
        )?;
        Ok(())
    }

    /// Every checkpoint ref in the repository (all sessions).
    pub fn list_all(&self) -> Result<Vec<StoredCheckpoint>> {
        let out = self.git.run(
            &[
                "for-each-ref",
                "--format=%(refname)%09%(objectname)%09%(committerdate:unix)",
                REF_PREFIX,
            ],
            None,
        )?;
        let text = String::from_utf8_lossy(&out);
        let mut all = Vec::new();
        for line in text.lines() {
            let mut parts = line.split('\t');
            let (Some(name), Some(id), Some(date)) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(CheckpointError::GitOutput {
                    command: "for-each-ref".into(),
                    output: line.to_string(),
                });
            };
            let Some((session, _)) = name
                .strip_prefix(REF_PREFIX)
                .and_then(|rest| rest.split_once('/'))
            else {
                continue;
            };
            all.push(StoredCheckpoint {
                session_id: session.to_string(),
                id: id.to_string(),
                created: date.parse().unwrap_or(0),
            });
        }
        Ok(all)
    }

    /// Deletes the refs `doomed` (objects go with git's own garbage collection).
    pub(crate) fn delete_refs(&self, doomed: &[StoredCheckpoint]) -> Result<()> {
        if doomed.is_empty() {
            return Ok(());
        }
        let input: String = doomed
            .iter()
            .map(|c| format!("delete {REF_PREFIX}{}/{}\n", c.session_id, c.id))
            .collect();
        self.git.run_os(
            &[OsStr::new("update-ref"), OsStr::new("--stdin")],
            None,
            Some(input.as_bytes()),
        )?;
        Ok(())
    }

    /// Removes the private index of a session whose checkpoints are all gone.
    pub(crate) fn forget_session_index(&self, session_id: &str) {
        let path = self
            .git_dir
            .join("arbor")
            .join(format!("{session_id}.index"));
        let _ = fs::remove_file(path);
    }
}

/// Changes from a tree (the first) to the one a capture staged, known without `diff-tree`.
type Known = (String, Vec<Change>);

/// The one change `git add --verbose` (untranslated) reports for the one index path it was
/// given: `add 'p'` stages new contents or mode of a path the tree had (modified), `remove 'p'`
/// its deletion. `None` for any other output.
fn single_change(staged: &[u8], path: &[u8]) -> Option<Change> {
    let line = staged.strip_suffix(b"\n")?;
    let (status, quoted) = if let Some(rest) = line.strip_prefix(b"add ") {
        (ChangeStatus::Modified, rest)
    } else {
        (ChangeStatus::Deleted, line.strip_prefix(b"remove ")?)
    };
    let named = quoted.strip_prefix(b"'")?.strip_suffix(b"'")?;
    (named == path).then(|| Change {
        status,
        path: String::from_utf8_lossy(path).into_owned(),
    })
}

/// Stands for the empty tree in [`GitStore::tree_changes`] (its id depends on the hash).
const EMPTY_TREE_MARKER: &str = "<empty>";

/// Copies a file and gives the copy the original's modification time: git's racy-clean check
/// compares entries against the index file's own mtime, so a newer copy could make a file
/// changed within the same second look clean.
fn copy_keeping_mtime(from: &Path, to: &Path) -> Result<()> {
    let tmp = to.with_extension("index.tmp");
    fs::copy(from, &tmp).map_err(|e| CheckpointError::io(from, e))?;
    let modified = fs::metadata(from)
        .and_then(|m| m.modified())
        .map_err(|e| CheckpointError::io(from, e))?;
    let file = fs::OpenOptions::new()
        .write(true)
        .open(&tmp)
        .map_err(|e| CheckpointError::io(&tmp, e))?;
    file.set_modified(modified)
        .map_err(|e| CheckpointError::io(&tmp, e))?;
    drop(file);
    fs::rename(&tmp, to).map_err(|e| CheckpointError::io(to, e))
}

fn os<'a>(args: &[&'a str]) -> Vec<&'a OsStr> {
    args.iter().map(|a| OsStr::new(*a)).collect()
}

/// Whether every path handed to [`GitStore::add_paths`] is in the private index.
#[derive(Debug, Clone, Copy)]
enum Tracked {
    Yes,
    No,
}

/// Index paths and untracked paths whose worktree side differs.
type WorktreeChanges = (Vec<Vec<u8>>, Vec<Vec<u8>>);

/// The paths of `git status --porcelain=v2 -z` records whose worktree side differs from the
/// index: ordinary (`1`) and renamed (`2`) entries whose second status letter is not `.` and
/// unmerged (`u`) ones (index paths), untracked (`?`) ones. `None` for any other record.
fn parse_worktree_changes(out: &[u8]) -> Option<WorktreeChanges> {
    let mut records = out.split(|b| *b == 0).filter(|r| !r.is_empty());
    let mut paths = Vec::new();
    let mut untracked = Vec::new();
    while let Some(record) = records.next() {
        // Fields before the path: `1 XY sub mH mI mW hH hI`, `2 XY sub mH mI mW hH hI Xscore`,
        // `u XY sub m1 m2 m3 mW h1 h2 h3`, `? `.
        let (fields, worktree_side) = match record.first() {
            Some(b'1') => (8, record.get(3).copied()),
            Some(b'2') => (9, record.get(3).copied()),
            Some(b'u') => (10, None),
            Some(b'?') => (1, None),
            _ => return None,
        };
        let mut parts = record.splitn(fields + 1, |b| *b == b' ');
        let path = parts.nth(fields)?;
        if record.first() == Some(&b'2') {
            // The rename's original path follows as a record of its own.
            records.next()?;
        }
        if record.first() == Some(&b'?') {
            untracked.push(path.to_vec());
        } else if worktree_side != Some(b'.') {
            paths.push(path.to_vec());
        }
    }
    Some((paths, untracked))
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

#[cfg(test)]
mod tests {
    use super::parse_worktree_changes;

    #[test]
    fn status_records_name_the_worktree_side_only() {
        let out = b"1 M. N... 100644 100644 100644 aaaa bbbb staged only.rs\0\
1 .M N... 100644 100644 100644 aaaa aaaa edited file.rs\0\
1 .D N... 100644 100644 000000 aaaa aaaa gone.rs\0\
2 R. N... 100644 100644 100644 aaaa aaaa R100 new.rs\0old.rs\0\
2 .M N... 100644 100644 100644 aaaa aaaa R100 moved.rs\0was.rs\0\
u UU N... 100644 100644 100644 100644 aaaa bbbb cccc both.rs\0\
? dir/\0? top level.txt\0";
        let paths = parse_worktree_changes(out);
        let bytes = |list: &[&str]| -> Vec<Vec<u8>> {
            list.iter().map(|p| p.as_bytes().to_vec()).collect()
        };
        let tracked = bytes(&["edited file.rs", "gone.rs", "moved.rs", "both.rs"]);
        let untracked = bytes(&["dir/", "top level.txt"]);
        assert_eq!(paths, Some((tracked, untracked)));
    }

    #[test]
    fn one_staged_path_is_a_known_change() {
        use super::single_change;
        use crate::checkpoint::ChangeStatus;
        let m = single_change(b"add 'src/a b.rs'\n", b"src/a b.rs").unwrap();
        assert_eq!(
            (m.status, m.path.as_str()),
            (ChangeStatus::Modified, "src/a b.rs")
        );
        let d = single_change(b"remove 'x'\n", b"x").unwrap();
        assert_eq!(d.status, ChangeStatus::Deleted);
        assert!(single_change(b"add 'y'\n", b"x").is_none());
        assert!(single_change(b"add 'x'\nadd 'y'\n", b"x").is_none());
        assert!(single_change(b"ajout de 'x'\n", b"x").is_none());
    }

    #[test]
    fn nothing_or_unknown_records() {
        assert_eq!(parse_worktree_changes(b""), Some((Vec::new(), Vec::new())));
        assert_eq!(parse_worktree_changes(b"# branch.oid abc\0"), None);
        assert_eq!(parse_worktree_changes(b"1 .M short\0"), None);
    }
}
