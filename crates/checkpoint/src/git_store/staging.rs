//! Staging the worktree into the private index: the stat check's verdict first, then
//! `git status` for what differs and `git add` of just those paths (DECISIONS §27.50).

use super::{os, GitStore, IndexStamp, Known};
use crate::checkpoint::{Change, ChangeStatus};
use crate::error::{CheckpointError, Result};
use crate::git::Locks;
use crate::stat_watch::{self, Verdict};

impl GitStore {
    /// Stages the whole worktree into the private index and returns its tree.
    ///
    /// The in-process stat check comes first (DECISIONS §27.60): nothing changed means no
    /// git process at all; only files changed in place means `git add` of just those.
    /// Otherwise `git status` decides, and the next capture builds a new watch.
    ///
    /// Also returns the changes from the tree the private index held before, when they are
    /// known without asking git (`diff-tree` is a process, DECISIONS §27.61).
    pub(super) fn worktree_tree(&mut self) -> Result<(String, Option<Known>)> {
        let before = self.private_tree.clone();
        match self.quick_check() {
            Verdict::Unchanged => {
                if let Some(tree) = &self.private_tree {
                    return Ok((tree.clone(), Some((tree.clone(), Vec::new()))));
                }
            }
            Verdict::Files(paths) => {
                let stamp = stat_watch::stamp(&self.quick.stamp_path)?;
                // Every suspect is an index path; one the user does not track may have
                // grown past the size limit (DECISIONS §27.41).
                let (paths, grown) = self.screen_grown(paths)?;
                for g in grown {
                    if !self.last_skipped.iter().any(|s| s.path == g.path) {
                        self.last_skipped.push(g);
                    }
                }
                self.last_skipped.sort_by(|a, b| a.path.cmp(&b.path));
                let staged = if paths.is_empty() {
                    Vec::new()
                } else {
                    self.add_paths(&paths, Tracked::Yes)?
                };
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
        let Some((tracked, untracked)) = self.worktree_changes()? else {
            // Staging everything blindly would ignore the size limit and the keep-out list.
            return Err(CheckpointError::GitOutput {
                command: "status --porcelain=v2".into(),
                output: "a record this version of arbor does not know".into(),
            });
        };
        let (tracked, grown) = self.screen_grown(tracked)?;
        let (untracked, mut skipped) = self.screen_untracked(untracked)?;
        skipped.extend(grown);
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        skipped.dedup_by(|a, b| a.path == b.path);
        self.last_skipped = skipped;
        if tracked.is_empty() && untracked.is_empty() {
            if let Some(tree) = &self.private_tree {
                return Ok(tree.clone());
            }
        }
        let mut staged = Vec::new();
        if !tracked.is_empty() {
            staged = self.add_paths(&tracked, Tracked::Yes)?;
        }
        if !untracked.is_empty() {
            staged.extend(self.add_paths(&untracked, Tracked::No)?);
        }
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
            // Every untracked file by name (sizes, keep-out: DECISIONS §27.41); git keeps the
            // untracked cache for `-uall` only when this names the same mode.
            "-c",
            "status.showUntrackedFiles=all",
            "status",
            "--porcelain=v2",
            "-z",
            "--untracked-files=all",
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
}

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
