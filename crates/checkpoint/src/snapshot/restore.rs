//! Restoring a snapshot into the directory (only what differs is written or removed), the
//! check that refuses when its contents are gone, and diffs between snapshots.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::Path;

use super::{
    changes, make_parent, remove_empty_parents, remove_file_if_present, write_restored, FileKind,
    FileRecord, Manifest, SnapshotStore,
};
use crate::checkpoint::{Change, ChangeStatus, Checkpoint, Restored, StoreKind};
use crate::error::{CheckpointError, Result};
use crate::keep_out::touches_ignore_rules;

impl SnapshotStore {
    /// Refuses when the target's manifest or any of its files is gone.
    pub fn check_restorable(&self, target: &Checkpoint) -> Result<()> {
        if target.store != StoreKind::Snapshot {
            return Err(CheckpointError::WrongStore {
                id: target.id.clone(),
                kind: target.store.as_str().to_string(),
                current: "snapshot".to_string(),
                dir: self.root.clone(),
            });
        }
        let manifest = self.load_manifest(&target.id)?;
        for f in &manifest.files {
            if !self.object_path(&f.hash).exists() {
                return Err(CheckpointError::Gone {
                    id: target.id.clone(),
                    what: format!("content of {}", f.path),
                    store: self.store.display().to_string(),
                });
            }
        }
        Ok(())
    }

    /// The files a restore from `current` to `target` would remove (DECISIONS §27.43): outside
    /// git nothing is tracked, so every one of them is the user's only copy besides `current`.
    pub fn untracked_at_risk(
        &self,
        target: &Checkpoint,
        current: &Checkpoint,
    ) -> Result<Vec<Change>> {
        if target.store != StoreKind::Snapshot || current.store != StoreKind::Snapshot {
            return Ok(Vec::new());
        }
        let from = self.load_manifest(&current.id)?;
        let to = self.load_manifest(&target.id)?;
        Ok(removed(&changes(&from, &to)))
    }

    /// Moves the directory from `current` (captured just now) to `target`: removes what the
    /// target lacks, writes what differs, each file with its recorded mode. Files `current`
    /// did not capture (ignored, kept out, too large) are never removed, and the restore is
    /// refused before anything changes when the target would overwrite one.
    pub fn restore(&mut self, target: &Checkpoint, current: &Checkpoint) -> Result<Restored> {
        self.check_restorable(target)?;
        let from = self.load_manifest(&current.id)?;
        let to = self.load_manifest(&target.id)?;
        let changed = changes(&from, &to);
        self.refuse_uncaptured_in_the_way(&from, &to)?;
        let ignored_before = if touches_ignore_rules(&changed) {
            Some(self.ignored_now()?)
        } else {
            None
        };
        let wanted: HashMap<&str, &FileRecord> =
            to.files.iter().map(|f| (f.path.as_str(), f)).collect();
        let had: HashMap<&str, &FileRecord> =
            from.files.iter().map(|f| (f.path.as_str(), f)).collect();
        for f in &from.files {
            if !wanted.contains_key(f.path.as_str()) {
                let path = self.root.join(&f.path);
                remove_file_if_present(&path)?;
                remove_empty_parents(&self.root, &path);
            }
        }
        for f in &to.files {
            if had.get(f.path.as_str()).is_some_and(|h| *h == f) {
                continue;
            }
            let path = self.root.join(&f.path);
            let src = self.object_path(&f.hash);
            let bytes = fs::read(&src).map_err(|e| CheckpointError::io(&src, e))?;
            if let Ok(meta) = fs::symlink_metadata(&path) {
                if meta.is_dir() {
                    return Err(CheckpointError::io(
                        &path,
                        std::io::Error::other(
                            "a directory is in the way of a file the checkpoint holds",
                        ),
                    ));
                }
            }
            match f.kind {
                FileKind::Symlink => {
                    remove_file_if_present(&path)?;
                    make_parent(&path)?;
                    make_symlink(&String::from_utf8_lossy(&bytes), &path)?;
                }
                kind => {
                    if fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
                        remove_file_if_present(&path)?;
                    }
                    let mode = f
                        .mode
                        .unwrap_or(if kind == FileKind::Exec { 0o755 } else { 0o644 });
                    write_restored(&path, &bytes, mode)?;
                }
            }
        }
        if let Some(before) = ignored_before {
            let after = self.ignored_now()?;
            self.keep_out()?.add_unignored(&before, &after)?;
        }
        self.cache = None;
        Ok(Restored {
            untracked: removed(&changed),
            changed,
            index_restored: false,
            head_moved: false,
            head_differs: false,
        })
    }

    /// Refuses when a file the target holds is on disk but not in `current` (ignored, kept
    /// out or too large to capture): writing it would destroy the user's only copy.
    fn refuse_uncaptured_in_the_way(&self, from: &Manifest, to: &Manifest) -> Result<()> {
        let had: HashMap<&str, &FileRecord> =
            from.files.iter().map(|f| (f.path.as_str(), f)).collect();
        let in_the_way: Vec<&str> = to
            .files
            .iter()
            .filter(|f| !had.contains_key(f.path.as_str()))
            .filter(|f| fs::symlink_metadata(self.root.join(&f.path)).is_ok_and(|m| !m.is_dir()))
            .map(|f| f.path.as_str())
            .collect();
        if in_the_way.is_empty() {
            return Ok(());
        }
        Err(CheckpointError::Uncaptured {
            dir: self.root.clone(),
            paths: in_the_way.join(", "),
        })
    }

    /// A unified diff between two snapshots (binary files are named, not shown).
    pub fn diff(&self, from: &Checkpoint, to: &Checkpoint) -> Result<String> {
        let a = self.load_manifest(&from.id)?;
        let b = self.load_manifest(&to.id)?;
        let a_map: BTreeMap<&str, &FileRecord> =
            a.files.iter().map(|f| (f.path.as_str(), f)).collect();
        let b_map: BTreeMap<&str, &FileRecord> =
            b.files.iter().map(|f| (f.path.as_str(), f)).collect();
        let mut paths: Vec<&str> = a_map.keys().chain(b_map.keys()).copied().collect();
        paths.sort_unstable();
        paths.dedup();
        let mut out = String::new();
        for path in paths {
            let (old, new) = (a_map.get(path), b_map.get(path));
            if let (Some(o), Some(n)) = (old, new) {
                if o.hash == n.hash && o.kind == n.kind {
                    continue;
                }
            }
            let read = |r: Option<&&FileRecord>| -> Result<Vec<u8>> {
                match r {
                    Some(r) => {
                        let p = self.object_path(&r.hash);
                        fs::read(&p).map_err(|e| CheckpointError::io(&p, e))
                    }
                    None => Ok(Vec::new()),
                }
            };
            let (old_bytes, new_bytes) = (read(old)?, read(new)?);
            out.push_str(&format!("diff --git a/{path} b/{path}\n"));
            match (old, new) {
                (None, Some(_)) => out.push_str("new file\n"),
                (Some(_), None) => out.push_str("deleted file\n"),
                (Some(o), Some(n)) if o.kind != n.kind => {
                    out.push_str(&format!("kind changed from {:?} to {:?}\n", o.kind, n.kind))
                }
                _ => {}
            }
            let a_name = if old.is_some() {
                format!("a/{path}")
            } else {
                "/dev/null".into()
            };
            let b_name = if new.is_some() {
                format!("b/{path}")
            } else {
                "/dev/null".into()
            };
            match (
                std::str::from_utf8(&old_bytes)
                    .ok()
                    .filter(|s| !s.contains('\0')),
                std::str::from_utf8(&new_bytes)
                    .ok()
                    .filter(|s| !s.contains('\0')),
            ) {
                (Some(o), Some(n)) => {
                    let diff = similar::TextDiff::from_lines(o, n);
                    out.push_str(
                        &diff
                            .unified_diff()
                            .context_radius(3)
                            .header(&a_name, &b_name)
                            .to_string(),
                    );
                }
                _ => out.push_str(&format!("Binary files {a_name} and {b_name} differ\n")),
            }
        }
        Ok(out)
    }
}

/// The removals among `changed`.
fn removed(changed: &[Change]) -> Vec<Change> {
    changed
        .iter()
        .filter(|c| c.status == ChangeStatus::Deleted)
        .cloned()
        .collect()
}

#[cfg(unix)]
fn make_symlink(target: &str, path: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, path).map_err(|e| CheckpointError::io(path, e))
}
#[cfg(not(unix))]
fn make_symlink(target: &str, path: &Path) -> Result<()> {
    write_restored(path, target.as_bytes(), 0o644)
}
