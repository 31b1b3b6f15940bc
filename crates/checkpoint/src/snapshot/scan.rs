//! Walking the directory into a manifest: ignore rules applied, contents hashed into the store
//! unless the stat cache (size, mtime, inode → hash) vouches for them, limits enforced.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

use super::{
    now_nanos, write_atomic, FileKind, FileRecord, Manifest, SnapshotLimits, SnapshotStore,
};
use crate::checkpoint::SkippedFile;
use crate::error::{CheckpointError, Result};
use crate::keep_out::KeepOut;

#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct StatCache {
    /// Unix nanoseconds when the capture that wrote this cache started.
    taken: u64,
    files: HashMap<String, (u64, u64, u64, String)>,
}

/// What a walk of the directory found.
pub(super) enum Scan {
    Complete(Manifest),
    /// A limit was exceeded: no snapshot is taken.
    OverLimit(OverLimit),
}

/// The limit a directory exceeds; its text is the notice the user is shown.
pub(super) struct OverLimit {
    root: PathBuf,
    /// The file count was reached (else the byte total was passed).
    by_files: bool,
    limits: SnapshotLimits,
}

impl std::fmt::Display for OverLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = if self.by_files {
            format!("{} files", self.limits.max_files)
        } else {
            format!("{} bytes", self.limits.max_bytes)
        };
        write!(
            f,
            "workspace checkpoint skipped: {} holds more than {held} (the limit is {} files and {} bytes; settings.json checkpoints.maxSnapshotBytes)",
            self.root.display(),
            self.limits.max_files,
            self.limits.max_bytes
        )
    }
}

impl SnapshotStore {
    fn load_cache(&mut self) -> StatCache {
        if let Some(cache) = self.cache.take() {
            return cache;
        }
        fs::read(self.cache_path())
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Walks the directory (ignore rules applied) into a manifest, hashing and storing what the
    /// stat cache cannot vouch for; [`Scan::OverLimit`] when a limit is exceeded.
    pub(super) fn scan(&mut self) -> Result<Scan> {
        let started = now_nanos();
        let old = self.load_cache();
        let mut fresh = StatCache {
            taken: started,
            files: HashMap::with_capacity(old.files.len()),
        };
        let root = self.root.clone();
        let keep_out = {
            let k = self.keep_out()?;
            if !k.is_empty() {
                k.prune(&root)?;
            }
            k.clone()
        };
        let walker = self.walker(Some(keep_out));
        let mut files = Vec::new();
        let mut skipped = Vec::new();
        let mut total: u64 = 0;
        for entry in walker {
            let entry = entry.map_err(|e| {
                CheckpointError::io(
                    &self.root,
                    std::io::Error::other(format!("walking the directory: {e}")),
                )
            })?;
            let path = entry.path();
            if path == self.root {
                continue;
            }
            let meta = fs::symlink_metadata(path).map_err(|e| CheckpointError::io(path, e))?;
            let kind = if meta.file_type().is_symlink() {
                FileKind::Symlink
            } else if meta.is_file() {
                if is_executable(&meta) {
                    FileKind::Exec
                } else {
                    FileKind::File
                }
            } else {
                continue;
            };
            if kind != FileKind::Symlink && meta.len() > self.limits.max_file_bytes {
                skipped.push(SkippedFile {
                    path: relative(&self.root, path)?,
                    size: meta.len(),
                });
                continue;
            }
            total += meta.len();
            if files.len() >= self.limits.max_files || total > self.limits.max_bytes {
                self.cache = Some(old);
                return Ok(Scan::OverLimit(OverLimit {
                    root: self.root.clone(),
                    by_files: files.len() >= self.limits.max_files,
                    limits: self.limits,
                }));
            }
            let rel = relative(&self.root, path)?;
            let stat = (meta.len(), mtime_nanos(&meta), inode(&meta));
            let cached = old.files.get(&rel).filter(|(size, mtime, ino, _)| {
                (*size, *mtime, *ino) == stat
                    // Racy clean: a file changed within the second before the cache was
                    // written may have kept its size and mtime; hash it again.
                    && mtime.saturating_add(2_000_000_000) < old.taken
            });
            let hash = match cached {
                Some((.., hash)) if self.object_path(hash).exists() => hash.clone(),
                _ => {
                    let bytes = match kind {
                        FileKind::Symlink => fs::read_link(path)
                            .map_err(|e| CheckpointError::io(path, e))?
                            .to_string_lossy()
                            .into_owned()
                            .into_bytes(),
                        _ => fs::read(path).map_err(|e| CheckpointError::io(path, e))?,
                    };
                    self.store_object(&bytes)?
                }
            };
            fresh
                .files
                .insert(rel.clone(), (stat.0, stat.1, stat.2, hash.clone()));
            files.push(FileRecord {
                path: rel,
                kind,
                size: meta.len(),
                hash,
                mode: (kind != FileKind::Symlink).then(|| permission_bits(&meta)),
            });
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        self.cache = Some(fresh);
        Ok(Scan::Complete(Manifest {
            version: 1,
            files,
            skipped,
        }))
    }

    /// The walk of the directory: `.gitignore` and `.ignore` files honoured (DECISIONS
    /// §27.6), `.git` and the store itself left out, and with `keep_out` its entries too.
    fn walker(&self, keep_out: Option<KeepOut>) -> ignore::Walk {
        let store = self.store.clone();
        let root = self.root.clone();
        ignore::WalkBuilder::new(&self.root)
            .hidden(false)
            .git_ignore(true)
            .git_exclude(false)
            .git_global(false)
            .ignore(true)
            .parents(true)
            .require_git(false)
            .follow_links(false)
            .filter_entry(move |e| {
                if e.path().starts_with(&store) || e.file_name() == ".git" {
                    return false;
                }
                match (&keep_out, e.path().strip_prefix(&root)) {
                    (Some(k), Ok(rel)) if !rel.as_os_str().is_empty() => {
                        !k.covers(&rel.to_string_lossy().replace('\\', "/"))
                    }
                    _ => true,
                }
            })
            .build()
    }

    /// What the ignore rules leave out of the directory right now (a wholly ignored
    /// directory as `dir/`): the entries of each directory the walk visits that it does not
    /// visit itself.
    pub(super) fn ignored_now(&self) -> Result<Vec<String>> {
        let mut visited = std::collections::HashSet::new();
        let mut dirs = Vec::new();
        for entry in self.walker(None) {
            let entry = entry.map_err(|e| {
                CheckpointError::io(
                    &self.root,
                    std::io::Error::other(format!("walking the directory: {e}")),
                )
            })?;
            if entry.file_type().is_some_and(|t| t.is_dir()) {
                dirs.push(entry.path().to_path_buf());
            }
            visited.insert(entry.path().to_path_buf());
        }
        let mut ignored = Vec::new();
        for dir in dirs {
            let Ok(children) = fs::read_dir(&dir) else {
                continue;
            };
            for child in children.flatten() {
                let path = child.path();
                if visited.contains(&path)
                    || child.file_name() == ".git"
                    || path.starts_with(&self.store)
                {
                    continue;
                }
                let mut rel = relative(&self.root, &path)?;
                if child.file_type().is_ok_and(|t| t.is_dir()) {
                    rel.push('/');
                }
                ignored.push(rel);
            }
        }
        ignored.sort();
        Ok(ignored)
    }

    pub(super) fn save_cache(&self) -> Result<()> {
        if let Some(cache) = &self.cache {
            let bytes = serde_json::to_vec(cache)
                .map_err(|e| CheckpointError::invalid("stat cache", e.to_string()))?;
            write_atomic(&self.cache_path(), &bytes)?;
        }
        Ok(())
    }
}

fn mtime_nanos(meta: &fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

#[cfg(unix)]
fn inode(meta: &fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}
#[cfg(not(unix))]
fn inode(_meta: &fs::Metadata) -> u64 {
    0
}

#[cfg(unix)]
fn permission_bits(meta: &fs::Metadata) -> u32 {
    std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777
}
#[cfg(not(unix))]
fn permission_bits(meta: &fs::Metadata) -> u32 {
    if meta.permissions().readonly() {
        0o444
    } else {
        0o644
    }
}

#[cfg(unix)]
fn is_executable(meta: &fs::Metadata) -> bool {
    std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0
}
#[cfg(not(unix))]
fn is_executable(_meta: &fs::Metadata) -> bool {
    false
}

fn relative(root: &Path, path: &Path) -> Result<String> {
    let rel = path.strip_prefix(root).map_err(|_| {
        CheckpointError::io(path, std::io::Error::other("outside the snapshot root"))
    })?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::{OverLimit, SnapshotLimits};
    use std::path::PathBuf;

    #[test]
    fn the_over_limit_notice_names_the_limit_reached() {
        let over = |by_files| OverLimit {
            root: PathBuf::from("/w"),
            by_files,
            limits: SnapshotLimits {
                max_bytes: 100,
                max_files: 3,
                max_file_bytes: 10,
            },
        };
        assert_eq!(
            over(true).to_string(),
            "workspace checkpoint skipped: /w holds more than 3 files (the limit is 3 files and \
             100 bytes; settings.json checkpoints.maxSnapshotBytes)"
        );
        assert_eq!(
            over(false).to_string(),
            "workspace checkpoint skipped: /w holds more than 100 bytes (the limit is 3 files and \
             100 bytes; settings.json checkpoints.maxSnapshotBytes)"
        );
    }
}
