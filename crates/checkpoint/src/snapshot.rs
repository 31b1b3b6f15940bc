//! Checkpoints of a directory outside git: a content-addressed store under
//! `<ARBOR_HOME>/checkpoints/` (DECISIONS §27.6).
//!
//! - `objects/ab/cdef…`: file contents, named by their SHA-256;
//! - `manifests/ab/cdef….json`: one snapshot (sorted paths with kind, size, hash), named by the
//!   SHA-256 of its bytes, so equal workspaces are one manifest;
//! - `refs/<session>/<manifest>`: which sessions keep which snapshots alive;
//! - `cache/<session>.json`: the stat cache (size, mtime, inode → hash) that spares re-hashing
//!   unchanged files.
//!
//! `.gitignore` and `.ignore` files are honoured as in a repository (`.git/info/exclude` and
//! git's global excludes are not: there is no repository), and a restore that changes one
//! keeps what it un-ignored out (DECISIONS §27.40). Files above `maxUntrackedFileBytes` are
//! left out and recorded (§27.41). The store is private to the user: directories `0700`,
//! files `0600`; each file's mode is in its manifest entry and comes back with it (§27.42).
//!
//! This file holds the store's layout, its types and the capture; [`scan`] walks the
//! directory into a manifest, [`restore`] moves the directory to a snapshot, [`refs`] keeps
//! snapshots alive and collects the rest.

mod refs;
mod restore;
mod scan;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::checkpoint::{
    check_session_id, Captured, Change, ChangeStatus, Checkpoint, SkippedFile, StoreKind,
};
use crate::error::{CheckpointError, Result};
use crate::keep_out::KeepOut;
use scan::{Scan, StatCache};

/// Size and count limits above which a directory is not snapshotted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotLimits {
    /// Total bytes of the captured files (skipped ones not counted); above it nothing is captured.
    pub max_bytes: u64,
    /// Number of captured files; reaching it means nothing is captured.
    pub max_files: usize,
    /// A file above this size is left out and recorded as skipped (DECISIONS §27.41).
    pub max_file_bytes: u64,
}

/// What kind of file a manifest entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum FileKind {
    File,
    Exec,
    Symlink,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct FileRecord {
    path: String,
    kind: FileKind,
    size: u64,
    hash: String,
    /// The permission bits (`0o600`); absent in manifests written before modes were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mode: Option<u32>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Manifest {
    version: u32,
    files: Vec<FileRecord>,
    /// Files left out for their size (DECISIONS §27.41).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    skipped: Vec<SkippedFile>,
}

/// The snapshot store of one session for one directory.
#[derive(Debug)]
pub struct SnapshotStore {
    root: PathBuf,
    store: PathBuf,
    session_id: String,
    limits: SnapshotLimits,
    cache: Option<StatCache>,
    /// Paths a restore un-ignored (DECISIONS §27.40), read on first use.
    keep_out: Option<KeepOut>,
}

/// Grace before an unreferenced store file is deleted: a capture in another process writes its
/// objects before its ref.
pub(crate) const DEFAULT_GRACE: Duration = Duration::from_secs(3600);

impl SnapshotStore {
    pub(crate) fn new(
        root: PathBuf,
        store: PathBuf,
        session_id: &str,
        limits: SnapshotLimits,
    ) -> Result<Self> {
        check_session_id(session_id)?;
        Ok(SnapshotStore {
            root,
            store,
            session_id: session_id.to_string(),
            limits,
            cache: None,
            keep_out: None,
        })
    }

    /// The directory this store snapshots (the session's cwd).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The store directory (`<ARBOR_HOME>/checkpoints`).
    pub fn store_dir(&self) -> &Path {
        &self.store
    }

    fn object_path(&self, hash: &str) -> PathBuf {
        let (a, b) = hash.split_at(2.min(hash.len()));
        self.store.join("objects").join(a).join(b)
    }

    fn manifest_path(&self, id: &str) -> PathBuf {
        let (a, b) = id.split_at(2.min(id.len()));
        self.store
            .join("manifests")
            .join(a)
            .join(format!("{b}.json"))
    }

    fn ref_path(&self, session: &str, id: &str) -> PathBuf {
        self.store.join("refs").join(session).join(id)
    }

    fn cache_path(&self) -> PathBuf {
        self.store
            .join("cache")
            .join(format!("{}.json", self.session_id))
    }

    fn keep_out_path(&self) -> PathBuf {
        self.store
            .join("cache")
            .join(format!("{}.keep-out", self.session_id))
    }

    /// The session's keep-out list, read on first use.
    fn keep_out(&mut self) -> Result<&mut KeepOut> {
        if self.keep_out.is_none() {
            self.keep_out = Some(KeepOut::load(self.keep_out_path())?);
        }
        match &mut self.keep_out {
            Some(k) => Ok(k),
            None => Err(CheckpointError::invalid("keep-out list", "not loaded")),
        }
    }

    fn store_object(&self, bytes: &[u8]) -> Result<String> {
        let hash = hex(&Sha256::digest(bytes));
        let path = self.object_path(&hash);
        if !path.exists() {
            write_atomic(&path, bytes)?;
        }
        Ok(hash)
    }

    fn load_manifest(&self, id: &str) -> Result<Manifest> {
        let path = self.manifest_path(id);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(CheckpointError::Gone {
                    id: id.to_string(),
                    what: "manifest".into(),
                    store: self.store.display().to_string(),
                })
            }
            Err(e) => return Err(CheckpointError::io(&path, e)),
        };
        serde_json::from_slice(&bytes).map_err(|e| {
            CheckpointError::invalid(
                format!("snapshot manifest {}", path.display()),
                e.to_string(),
            )
        })
    }

    /// Captures the directory; see [`crate::GitStore::capture`] for `previous`.
    pub fn capture(&mut self, previous: Option<&Checkpoint>) -> Result<Captured> {
        make_private_dir(&self.store)?;
        let manifest = match self.scan()? {
            Scan::Complete(m) => m,
            Scan::OverLimit(over) => {
                return Ok(Captured::Skipped {
                    notice: over.to_string(),
                })
            }
        };
        let bytes = serde_json::to_vec(&manifest)
            .map_err(|e| CheckpointError::invalid("snapshot manifest", e.to_string()))?;
        let id = hex(&Sha256::digest(&bytes));
        self.save_cache()?;
        if let Some(prev) = previous {
            if prev.store == StoreKind::Snapshot && prev.id == id {
                return Ok(Captured::Unchanged(prev.clone()));
            }
        }
        let path = self.manifest_path(&id);
        if !path.exists() {
            write_atomic(&path, &bytes)?;
        }
        self.write_ref(&self.session_id, &id)?;
        let before = match previous {
            Some(p) if p.store == StoreKind::Snapshot => {
                self.load_manifest(&p.id).unwrap_or_default()
            }
            _ => Manifest::default(),
        };
        Ok(Captured::Created {
            checkpoint: checkpoint_of(&id, &manifest),
            changed: changes(&before, &manifest),
        })
    }
}

fn checkpoint_of(id: &str, manifest: &Manifest) -> Checkpoint {
    Checkpoint {
        store: StoreKind::Snapshot,
        id: id.to_string(),
        tree: id.to_string(),
        head: None,
        index: None,
        skipped: manifest.skipped.clone(),
    }
}

fn changes(from: &Manifest, to: &Manifest) -> Vec<Change> {
    let a: BTreeMap<&str, &FileRecord> = from.files.iter().map(|f| (f.path.as_str(), f)).collect();
    let b: BTreeMap<&str, &FileRecord> = to.files.iter().map(|f| (f.path.as_str(), f)).collect();
    let mut out = Vec::new();
    for (path, old) in &a {
        match b.get(path) {
            None => out.push(Change {
                status: ChangeStatus::Deleted,
                path: path.to_string(),
            }),
            Some(new) if new.kind != old.kind || new.mode != old.mode => out.push(Change {
                status: ChangeStatus::TypeChanged,
                path: path.to_string(),
            }),
            Some(new) if new.hash != old.hash => out.push(Change {
                status: ChangeStatus::Modified,
                path: path.to_string(),
            }),
            Some(_) => {}
        }
    }
    for path in b.keys() {
        if !a.contains_key(path) {
            out.push(Change {
                status: ChangeStatus::Added,
                path: path.to_string(),
            });
        }
    }
    out.sort_by(|x, y| x.path.cmp(&y.path));
    out
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Creates the missing directories above a file of the user's workspace (default modes).
fn make_parent(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| CheckpointError::io(dir, e))?;
    }
    Ok(())
}

/// Creates `dir` and its missing parents `0700` (the store holds copies of the user's
/// files, secrets included: DECISIONS §27.42); an existing store root is narrowed to `0700`.
fn make_private_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        if let Ok(meta) = fs::metadata(dir) {
            if meta.is_dir() && meta.permissions().mode() & 0o077 != 0 {
                fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                    .map_err(|e| CheckpointError::io(dir, e))?;
            }
            return Ok(());
        }
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| CheckpointError::io(dir, e))
    }
    #[cfg(not(unix))]
    fs::create_dir_all(dir).map_err(|e| CheckpointError::io(dir, e))
}

/// Writes a store file (in a `0700` directory, itself `0600`) through a temporary file and a
/// rename, so a crash never leaves half a file.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        make_private_dir(dir)?;
    }
    write_via_rename(path, bytes, None)
}

/// Writes a file of the user's workspace the same way, with its recorded `mode`.
fn write_restored(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    make_parent(path)?;
    write_via_rename(path, bytes, Some(mode))
}

/// The temporary file is created `0600` and gets `mode` before the rename, so the contents
/// are never readable by others on the way.
fn write_via_rename(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.arbor-tmp-{}", std::process::id()));
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(&tmp)
        .map_err(|e| CheckpointError::io(&tmp, e))?;
    file.write_all(bytes)
        .map_err(|e| CheckpointError::io(&tmp, e))?;
    drop(file);
    #[cfg(unix)]
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(mode))
            .map_err(|e| CheckpointError::io(&tmp, e))?;
    }
    #[cfg(not(unix))]
    let _ = mode;
    fs::rename(&tmp, path).map_err(|e| CheckpointError::io(path, e))
}

fn remove_file_if_present(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CheckpointError::io(path, e)),
    }
}

/// Removes directories left empty by a removal, up to (not including) `root`.
fn remove_empty_parents(root: &Path, path: &Path) {
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d == root || !d.starts_with(root) || fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

fn read_dir_names(dir: &Path) -> Result<Vec<String>> {
    let iter = match fs::read_dir(dir) {
        Ok(it) => it,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(CheckpointError::io(dir, e)),
    };
    let mut names = Vec::new();
    for entry in iter {
        let entry = entry.map_err(|e| CheckpointError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}
