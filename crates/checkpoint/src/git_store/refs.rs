//! The refs that keep checkpoints alive: `refs/arbor/checkpoints/<session>/<commit>`, one per
//! checkpoint a session refers to; listing and deleting them is how pruning works.

use std::ffi::OsStr;
use std::fs;

use super::{GitStore, REF_PREFIX};
use crate::checkpoint::{Checkpoint, StoreKind, StoredCheckpoint};
use crate::error::{CheckpointError, Result};

impl GitStore {
    pub(super) fn ref_name(&self, commit: &str) -> String {
        format!("{REF_PREFIX}{}/{commit}", self.session_id)
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
    /// Removes a gone session's private files: its index, keep-out list and file modes.
    pub(crate) fn forget_session_index(&self, session_id: &str) {
        for ext in ["index", "keep-out", "modes"] {
            let path = self
                .git_dir
                .join("arbor")
                .join(format!("{session_id}.{ext}"));
            let _ = fs::remove_file(path);
        }
    }
}
