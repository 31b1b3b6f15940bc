//! What a checkpoint records of the user's own state: HEAD's commit and tree, and the user's
//! index, which the private index starts from whenever it changed.

use std::ffi::OsStr;
use std::fs;
use std::path::Path;

use super::{GitStore, IndexStamp};
use crate::error::{CheckpointError, Result};

impl GitStore {
    /// HEAD's commit and tree (`None`: unborn branch). HEAD and a loose branch ref are read
    /// as files (a process spawn saved per capture); anything unusual asks `git rev-parse`.
    pub(super) fn head(&mut self) -> Result<Option<(String, String)>> {
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
    pub(super) fn sync_user_index(&mut self) -> Result<Option<String>> {
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
}

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
