//! The user's files git does not track, as checkpoints see them: which untracked files a
//! restore would remove or overwrite (DECISIONS §27.43), which files are ignored right now
//! (DECISIONS §27.40), and which untracked files are too large to capture (DECISIONS §27.41).

use std::ffi::OsStr;
use std::fs;

use super::{os, GitStore};
use crate::checkpoint::{Change, ChangeStatus, Checkpoint, SkippedFile, StoreKind};
use crate::error::{CheckpointError, Result};
use crate::keep_out::KeepOut;

impl GitStore {
    /// The session's keep-out list, read on first use.
    pub(super) fn keep_out(&mut self) -> Result<&mut KeepOut> {
        if self.keep_out.is_none() {
            let file = self
                .git_dir
                .join("arbor")
                .join(format!("{}.keep-out", self.session_id));
            self.keep_out = Some(KeepOut::load(file)?);
        }
        match &mut self.keep_out {
            Some(k) => Ok(k),
            None => Err(CheckpointError::invalid("keep-out list", "not loaded")),
        }
    }

    /// The untracked files (in neither the user's index nor, when it is unmerged, HEAD) a
    /// restore from `current` to `target` would remove or overwrite. Call right after
    /// capturing `current`; nothing is written.
    pub fn untracked_at_risk(
        &self,
        target: &Checkpoint,
        current: &Checkpoint,
    ) -> Result<Vec<Change>> {
        if target.store != StoreKind::Git || current.store != StoreKind::Git {
            return Ok(Vec::new());
        }
        let changed = self.tree_changes(&current.tree, &target.tree)?;
        self.untracked_among(current, &changed)
    }

    /// Of `changed` (from `current`), the paths that exist in `current` but in no tree the
    /// user's git knows: not in `current`'s index tree (or HEAD's tree when the index was
    /// unmerged). One `cat-file --batch-check` for all of them.
    pub(super) fn untracked_among(
        &self,
        current: &Checkpoint,
        changed: &[Change],
    ) -> Result<Vec<Change>> {
        let existing: Vec<&Change> = changed
            .iter()
            .filter(|c| c.status != ChangeStatus::Added)
            .collect();
        if existing.is_empty() {
            return Ok(Vec::new());
        }
        let known_tree = match (&current.index, &current.head) {
            (Some(index), _) => Some(index.clone()),
            (None, Some(head)) => Some(format!("{head}^{{tree}}")),
            (None, None) => None,
        };
        let Some(tree) = known_tree else {
            return Ok(existing.into_iter().cloned().collect());
        };
        // A path with a newline cannot be asked about on one line: it counts as untracked.
        let asked: Vec<&Change> = existing
            .iter()
            .copied()
            .filter(|c| !c.path.contains('\n'))
            .collect();
        let input: String = asked
            .iter()
            .map(|c| format!("{tree}:{}\n", c.path))
            .collect();
        let out = self.git.run_os(
            &[
                OsStr::new("cat-file"),
                OsStr::new("--batch-check=%(objecttype)"),
            ],
            None,
            Some(input.as_bytes()),
        )?;
        let text = String::from_utf8_lossy(&out);
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() != asked.len() {
            return Err(CheckpointError::GitOutput {
                command: "cat-file --batch-check".into(),
                output: text.into_owned(),
            });
        }
        let mut untracked: Vec<Change> = existing
            .iter()
            .filter(|c| c.path.contains('\n'))
            .map(|c| (*c).clone())
            .collect();
        for (c, line) in asked.iter().zip(lines) {
            if line.ends_with(" missing") {
                untracked.push((*c).clone());
            }
        }
        untracked.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(untracked)
    }

    /// What git ignores in the worktree now (a wholly ignored directory as `dir/`), against
    /// the private index.
    pub(super) fn ignored_now(&self) -> Result<Vec<String>> {
        let out = self.git.run_os(
            &os(&[
                "ls-files",
                "-z",
                "--others",
                "--ignored",
                "--exclude-standard",
                "--directory",
            ]),
            Some(&self.private_index),
            None,
        )?;
        Ok(out
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect())
    }

    /// Splits the untracked paths `git status` named into those to stage and those to leave
    /// out: kept out after a restore un-ignored them (DECISIONS §27.40), or larger than the
    /// limit (returned as skipped, DECISIONS §27.41). Directories (nested repositories) are
    /// staged as they are.
    pub(super) fn screen_untracked(
        &mut self,
        paths: Vec<Vec<u8>>,
    ) -> Result<(Vec<Vec<u8>>, Vec<SkippedFile>)> {
        let limit = self.max_untracked_bytes;
        let root = self.toplevel.clone();
        let keep_out = self.keep_out()?;
        if !keep_out.is_empty() {
            keep_out.prune(&root)?;
        }
        let mut staged = Vec::with_capacity(paths.len());
        let mut skipped = Vec::new();
        for p in paths {
            let text = String::from_utf8_lossy(&p).into_owned();
            if keep_out.covers(&text) {
                continue;
            }
            if !text.ends_with('/') {
                if let Ok(meta) = fs::symlink_metadata(root.join(&text)) {
                    if meta.is_file() && meta.len() > limit {
                        skipped.push(SkippedFile {
                            path: text,
                            size: meta.len(),
                        });
                        continue;
                    }
                }
            }
            staged.push(p);
        }
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        Ok((staged, skipped))
    }

    /// Of index paths about to be staged, those the user's index does not track that grew
    /// past the limit: removed from the private index (so the next tree leaves them out) and
    /// returned as skipped; the rest are returned to be staged.
    pub(super) fn screen_grown(
        &mut self,
        paths: Vec<Vec<u8>>,
    ) -> Result<(Vec<Vec<u8>>, Vec<SkippedFile>)> {
        let limit = self.max_untracked_bytes;
        let large: Vec<(Vec<u8>, u64)> = paths
            .iter()
            .filter(|p| !p.contains(&b'\n'))
            .filter_map(|p| {
                let meta =
                    fs::symlink_metadata(self.toplevel.join(String::from_utf8_lossy(p).as_ref()))
                        .ok()?;
                (meta.is_file() && meta.len() > limit).then(|| (p.clone(), meta.len()))
            })
            .collect();
        if large.is_empty() {
            return Ok((paths, Vec::new()));
        }
        // Which of them the user's own index tracks (those are always captured): `:path`
        // names a path's entry in the index. A path with a newline counts as tracked.
        let input: String = large
            .iter()
            .map(|(p, _)| format!(":{}\n", String::from_utf8_lossy(p)))
            .collect();
        let out = self.git.run_os(
            &[
                OsStr::new("cat-file"),
                OsStr::new("--batch-check=%(objecttype)"),
            ],
            None,
            Some(input.as_bytes()),
        )?;
        let text = String::from_utf8_lossy(&out);
        let missing: Vec<bool> = text.lines().map(|l| l.ends_with(" missing")).collect();
        let mut dropped = Vec::new();
        let mut skipped = Vec::new();
        for ((p, size), untracked) in large.iter().zip(missing) {
            if untracked {
                dropped.extend_from_slice(p);
                dropped.push(0);
                skipped.push(SkippedFile {
                    path: String::from_utf8_lossy(p).into_owned(),
                    size: *size,
                });
            }
        }
        if skipped.is_empty() {
            return Ok((paths, skipped));
        }
        self.git.run_os(
            &os(&[
                "--literal-pathspecs",
                "rm",
                "--cached",
                "--force",
                "-q",
                "--ignore-unmatch",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ]),
            Some(&self.private_index),
            Some(&dropped),
        )?;
        self.private_tree = None;
        let out: Vec<Vec<u8>> = paths
            .into_iter()
            .filter(|p| !skipped.iter().any(|s| s.path.as_bytes() == p.as_slice()))
            .collect();
        Ok((out, skipped))
    }
}
