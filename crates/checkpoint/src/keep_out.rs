//! The files a restore un-ignored, kept out of the session's checkpoints anyway
//! (DECISIONS §27.40).
//!
//! A restore that removes or changes a `.gitignore` turns files the user keeps out of version
//! control (a `local.env`) into untracked files. Captured then, they would be copied into the
//! store and removed again by the next restore (its undo included). So each restore that
//! changes an ignore file lists what was ignored before and after it, and the difference goes
//! here: one `/`-separated path per line (`dir/` for a whole directory), in a file of the
//! session's own. An entry is dropped once nothing exists at its path.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{CheckpointError, Result};

/// The session's keep-out list, as stored in its file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KeepOut {
    file: PathBuf,
    entries: BTreeSet<String>,
}

impl KeepOut {
    /// Reads the list from `file` (absent → empty).
    pub fn load(file: PathBuf) -> Result<KeepOut> {
        let entries = match fs::read(&file) {
            Ok(bytes) => bytes
                .split(|b| *b == 0)
                .filter(|e| !e.is_empty())
                .map(|e| String::from_utf8_lossy(e).into_owned())
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeSet::new(),
            Err(e) => return Err(CheckpointError::io(&file, e)),
        };
        Ok(KeepOut { file, entries })
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// True when `path` (a file, `/`-separated) is an entry or lies in an entry's directory.
    pub fn covers(&self, path: &str) -> bool {
        let path = path.trim_end_matches('/');
        if self.entries.contains(path) || self.entries.contains(&format!("{path}/")) {
            return true;
        }
        let mut rest = path;
        while let Some(cut) = rest.rfind('/') {
            rest = &rest[..cut];
            if self.entries.contains(&format!("{rest}/")) {
                return true;
            }
        }
        false
    }

    /// Adds the paths ignored `before` a restore that are not ignored `after` it; writes the
    /// file when that changed anything.
    pub fn add_unignored(&mut self, before: &[String], after: &[String]) -> Result<()> {
        let still: BTreeSet<&str> = after.iter().map(String::as_str).collect();
        let mut grew = false;
        for path in before {
            if !still.contains(path.as_str()) {
                grew |= self.entries.insert(path.clone());
            }
        }
        if grew {
            self.save()?;
        }
        Ok(())
    }

    /// Drops entries nothing exists at any more (under `root`); writes the file if it did.
    pub fn prune(&mut self, root: &Path) -> Result<()> {
        let before = self.entries.len();
        self.entries
            .retain(|e| fs::symlink_metadata(root.join(e.trim_end_matches('/'))).is_ok());
        if self.entries.len() != before {
            self.save()?;
        }
        Ok(())
    }

    fn save(&self) -> Result<()> {
        if self.entries.is_empty() {
            return match fs::remove_file(&self.file) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(CheckpointError::io(&self.file, e)),
            };
        }
        let mut bytes = Vec::new();
        for e in &self.entries {
            bytes.extend_from_slice(e.as_bytes());
            bytes.push(0);
        }
        if let Some(dir) = self.file.parent() {
            fs::create_dir_all(dir).map_err(|e| CheckpointError::io(dir, e))?;
        }
        let tmp = self.file.with_extension("keep-out.tmp");
        fs::write(&tmp, &bytes).map_err(|e| CheckpointError::io(&tmp, e))?;
        fs::rename(&tmp, &self.file).map_err(|e| CheckpointError::io(&self.file, e))
    }
}

/// True when a restore that changes `paths` changes what is ignored: one of them is an ignore
/// file (`.gitignore`; outside git also `.ignore`).
pub(crate) fn touches_ignore_rules(paths: &[crate::checkpoint::Change]) -> bool {
    paths.iter().any(|c| {
        let name = c.path.rsplit('/').next().unwrap_or(&c.path);
        name == ".gitignore" || name == ".ignore"
    })
}

#[cfg(test)]
mod tests {
    use super::KeepOut;

    #[test]
    fn entries_cover_their_files_and_directories_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut k = KeepOut::load(dir.path().join("s.keep-out")).unwrap();
        assert!(k.is_empty());
        let before = [
            "local.env".to_string(),
            "build/".to_string(),
            "x.log".to_string(),
        ];
        k.add_unignored(&before, &["x.log".to_string()]).unwrap();
        assert!(k.covers("local.env"));
        assert!(k.covers("build/out.bin"));
        assert!(k.covers("build/deep/er.bin"));
        assert!(k.covers("build/"));
        assert!(!k.covers("x.log"), "still ignored after the restore");
        assert!(!k.covers("local.env.bak"));
        assert!(!k.covers("builder/a"));
        // Stored and read back.
        let again = KeepOut::load(dir.path().join("s.keep-out")).unwrap();
        assert_eq!(again, k);
        // Entries whose paths are gone are dropped.
        std::fs::write(dir.path().join("local.env"), b"k").unwrap();
        k.prune(dir.path()).unwrap();
        assert!(k.covers("local.env"));
        assert!(!k.covers("build/out.bin"));
    }
}
