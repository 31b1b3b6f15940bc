//! Restoring a checkpoint into the worktree (and the index and HEAD when asked), the checks
//! that refuse an unsafe restore first, and diffs between checkpoints.

use std::ffi::OsStr;

use super::modes::{parse_raw, RawChange};
use super::GitStore;
use crate::checkpoint::{Change, ChangeStatus, Checkpoint, RestoreOptions, Restored, StoreKind};
use crate::error::{CheckpointError, Result};
use crate::keep_out::touches_ignore_rules;

impl GitStore {
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
        let raw = self.raw_changes(&current.tree, &target.tree)?;
        let changed = changes_of(&raw);
        // Named before anything moves: the notice lists them, the checkpoint `current` holds
        // them (DECISIONS §27.43).
        let untracked = self.untracked_among(current, &changed)?;
        // A restore that changes a `.gitignore` must not turn ignored files into captured
        // ones (DECISIONS §27.40): what it un-ignores is kept out of later captures.
        let ignored_before = if touches_ignore_rules(&changed) {
            Some(self.ignored_now()?)
        } else {
            None
        };
        self.remember_modes(&raw)?;
        // A two-tree switch, like `git checkout` does: only differing paths are written or
        // removed, and git refuses rather than overwrite a file that changed in between or an
        // untracked file in the way (ignored or too large to capture).
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
        self.apply_modes(&raw)?;
        if let Some(before) = ignored_before {
            let after = self.ignored_now()?;
            self.keep_out()?.add_unignored(&before, &after)?;
        }
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
            untracked,
            index_restored,
            head_moved,
            head_differs: target.head.is_some() && head_after != target.head,
        })
    }

    /// `diff-tree --raw` from one tree to another: modes and blobs besides the paths.
    fn raw_changes(&self, from: &str, to: &str) -> Result<Vec<RawChange>> {
        if from == to {
            return Ok(Vec::new());
        }
        let out = self.git.run(
            &["diff-tree", "-r", "-z", "--no-renames", "--raw", from, to],
            None,
        )?;
        parse_raw(&out).ok_or_else(|| CheckpointError::GitOutput {
            command: "diff-tree --raw".into(),
            output: String::from_utf8_lossy(&out).into_owned(),
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
}

/// The changes of a raw diff, as [`GitStore::tree_changes`] reports them.
fn changes_of(raw: &[RawChange]) -> Vec<Change> {
    raw.iter()
        .map(|c| Change {
            status: match c.status {
                b'A' => ChangeStatus::Added,
                b'D' => ChangeStatus::Deleted,
                b'T' => ChangeStatus::TypeChanged,
                _ => ChangeStatus::Modified,
            },
            path: c.path.clone(),
        })
        .collect()
}
