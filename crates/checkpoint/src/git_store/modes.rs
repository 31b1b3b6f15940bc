//! File modes git does not keep (DECISIONS §27.44).
//!
//! A git tree stores only "executable or not"; a checkout writes `0666`/`0777` less the umask.
//! A `0600` secret that a restore removes would come back world-readable from its undo. So
//! before a restore writes or removes a file, its exact mode is remembered with the blob it
//! holds (`<git dir>/arbor/<session>.modes`, JSON `{"<blob> <path>": mode}`), and after any
//! restore a file written with that same blob at that same path gets the mode back. Only modes
//! other than git's own `0644`/`0755` are kept.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use super::GitStore;
use crate::error::{CheckpointError, Result};

/// One path of a `diff-tree --raw` between two trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RawChange {
    pub old_mode: u32,
    pub new_mode: u32,
    pub old_blob: String,
    pub new_blob: String,
    /// git's status letter (`A`, `D`, `M`, `T`).
    pub status: u8,
    pub path: String,
}

/// A regular file in a tree (`100644` or `100755`).
fn is_regular(tree_mode: u32) -> bool {
    tree_mode & 0o170000 == 0o100000
}

/// The permission bits git gives a file of this tree mode (with the usual umask).
fn git_default(tree_mode: u32) -> u32 {
    if tree_mode & 0o111 != 0 {
        0o755
    } else {
        0o644
    }
}

type Memory = BTreeMap<String, u32>;

fn key(blob: &str, path: &str) -> String {
    format!("{blob} {path}")
}

impl GitStore {
    fn modes_path(&self) -> std::path::PathBuf {
        self.git_dir
            .join("arbor")
            .join(format!("{}.modes", self.session_id))
    }

    fn load_modes(&self) -> Result<Memory> {
        let path = self.modes_path();
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                CheckpointError::invalid(format!("file modes {}", path.display()), e.to_string())
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Memory::new()),
            Err(e) => Err(CheckpointError::io(&path, e)),
        }
    }

    /// Before a restore: remembers the mode of every file it is about to remove or overwrite
    /// whose mode git would not give back.
    pub(super) fn remember_modes(&self, changes: &[RawChange]) -> Result<()> {
        let mut memory: Option<Memory> = None;
        for c in changes.iter().filter(|c| is_regular(c.old_mode)) {
            let Some(mode) = file_mode(&self.toplevel.join(&c.path)) else {
                continue;
            };
            if mode == git_default(c.old_mode) {
                continue;
            }
            let map = match &mut memory {
                Some(map) => map,
                None => memory.insert(self.load_modes()?),
            };
            map.insert(key(&c.old_blob, &c.path), mode);
        }
        match memory {
            Some(map) => {
                let path = self.modes_path();
                let bytes = serde_json::to_vec(&map)
                    .map_err(|e| CheckpointError::invalid("file modes", e.to_string()))?;
                let tmp = path.with_extension("modes.tmp");
                fs::write(&tmp, bytes).map_err(|e| CheckpointError::io(&tmp, e))?;
                fs::rename(&tmp, &path).map_err(|e| CheckpointError::io(&path, e))
            }
            None => Ok(()),
        }
    }

    /// After a restore: gives each file it wrote the mode remembered for its blob and path.
    pub(super) fn apply_modes(&self, changes: &[RawChange]) -> Result<()> {
        let written: Vec<&RawChange> = changes.iter().filter(|c| is_regular(c.new_mode)).collect();
        if written.is_empty() || !self.modes_path().exists() {
            return Ok(());
        }
        let memory = self.load_modes()?;
        for c in written {
            if let Some(mode) = memory.get(&key(&c.new_blob, &c.path)) {
                set_mode(&self.toplevel.join(&c.path), *mode)?;
            }
        }
        Ok(())
    }
}

/// Parses `diff-tree -r -z --raw` output: `:OLD NEW OLDBLOB NEWBLOB STATUS\0PATH\0`.
pub(super) fn parse_raw(out: &[u8]) -> Option<Vec<RawChange>> {
    let mut fields = out.split(|b| *b == 0).filter(|f| !f.is_empty());
    let mut changes = Vec::new();
    while let Some(head) = fields.next() {
        let path = fields.next()?;
        let head = std::str::from_utf8(head).ok()?.strip_prefix(':')?;
        let parts: Vec<&str> = head.split(' ').collect();
        let [old_mode, new_mode, old_blob, new_blob, status] = parts.as_slice() else {
            return None;
        };
        changes.push(RawChange {
            old_mode: u32::from_str_radix(old_mode, 8).ok()?,
            new_mode: u32::from_str_radix(new_mode, 8).ok()?,
            old_blob: old_blob.to_string(),
            new_blob: new_blob.to_string(),
            status: *status.as_bytes().first()?,
            path: String::from_utf8_lossy(path).into_owned(),
        });
    }
    Some(changes)
}

#[cfg(unix)]
fn file_mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let meta = fs::symlink_metadata(path).ok()?;
    meta.is_file().then(|| meta.permissions().mode() & 0o7777)
}
#[cfg(not(unix))]
fn file_mode(_path: &Path) -> Option<u32> {
    None
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => fs::set_permissions(path, fs::Permissions::from_mode(mode))
            .map_err(|e| CheckpointError::io(path, e)),
        _ => Ok(()),
    }
}
#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_raw;

    #[test]
    fn raw_records_give_modes_blobs_and_paths() {
        let out = b":100644 000000 aaaa 0000 D\0notes.txt\0:000000 100755 0000 bbbb A\0bin/run\0";
        let parsed = parse_raw(out).unwrap();
        assert_eq!(parsed.len(), 2);
        assert_eq!((parsed[0].old_mode, parsed[0].new_mode), (0o100644, 0));
        assert_eq!(parsed[0].old_blob, "aaaa");
        assert_eq!(parsed[1].path, "bin/run");
        assert_eq!(parsed[1].new_mode, 0o100755);
        assert!(parse_raw(b":100644 short\0p\0").is_none());
        assert!(parse_raw(b":100644 000000 a 0 D\0").is_none());
    }
}
