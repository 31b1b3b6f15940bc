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
//! `.gitignore` and `.ignore` files are honoured as in a repository.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::checkpoint::*;
use crate::error::{CheckpointError, Result};

/// Size and count limits above which a directory is not snapshotted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotLimits {
    pub max_bytes: u64,
    pub max_files: usize,
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
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Manifest {
    version: u32,
    files: Vec<FileRecord>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StatCache {
    /// Unix nanoseconds when the capture that wrote this cache started.
    taken: u64,
    files: HashMap<String, (u64, u64, u64, String)>,
}

/// What a walk of the directory found.
enum Scan {
    Complete(Manifest),
    /// A limit was exceeded: no snapshot is taken.
    OverLimit(OverLimit),
}

/// The limit a directory exceeds; its text is the notice the user is shown.
struct OverLimit {
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

/// The snapshot store of one session for one directory.
#[derive(Debug)]
pub struct SnapshotStore {
    root: PathBuf,
    store: PathBuf,
    session_id: String,
    limits: SnapshotLimits,
    cache: Option<StatCache>,
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
        })
    }

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
    fn scan(&mut self) -> Result<Scan> {
        let started = now_nanos();
        let old = self.load_cache();
        let mut fresh = StatCache {
            taken: started,
            files: HashMap::with_capacity(old.files.len()),
        };
        let store = self.store.clone();
        let walker = ignore::WalkBuilder::new(&self.root)
            .hidden(false)
            .git_ignore(true)
            .git_exclude(false)
            .git_global(false)
            .ignore(true)
            .parents(true)
            .require_git(false)
            .follow_links(false)
            .filter_entry(move |e| !e.path().starts_with(&store) && e.file_name() != ".git")
            .build();
        let mut files = Vec::new();
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
            });
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        self.cache = Some(fresh);
        Ok(Scan::Complete(Manifest { version: 1, files }))
    }

    fn store_object(&self, bytes: &[u8]) -> Result<String> {
        let hash = hex(&Sha256::digest(bytes));
        let path = self.object_path(&hash);
        if !path.exists() {
            write_atomic(&path, bytes)?;
        }
        Ok(hash)
    }

    fn save_cache(&self) -> Result<()> {
        if let Some(cache) = &self.cache {
            let bytes = serde_json::to_vec(cache)
                .map_err(|e| CheckpointError::invalid("stat cache", e.to_string()))?;
            write_atomic(&self.cache_path(), &bytes)?;
        }
        Ok(())
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
            checkpoint: checkpoint_of(&id),
            changed: changes(&before, &manifest),
        })
    }

    fn write_ref(&self, session: &str, id: &str) -> Result<()> {
        let record = serde_json::json!({
            "root": self.root.display().to_string(),
            "created": now_nanos() / 1_000_000_000,
        });
        write_atomic(&self.ref_path(session, id), record.to_string().as_bytes())
    }

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

    /// Moves the directory from `current` (captured just now) to `target`: removes what the
    /// target lacks, writes what differs. Ignored files are left alone.
    pub fn restore(&mut self, target: &Checkpoint, current: &Checkpoint) -> Result<Restored> {
        self.check_restorable(target)?;
        let from = self.load_manifest(&current.id)?;
        let to = self.load_manifest(&target.id)?;
        let changed = changes(&from, &to);
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
                    write_atomic(&path, &bytes)?;
                    set_executable(&path, kind == FileKind::Exec)?;
                }
            }
        }
        self.cache = None;
        Ok(Restored {
            changed,
            index_restored: false,
            head_moved: false,
            head_differs: false,
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

    /// Gives this session a ref to `checkpoint` (see [`crate::GitStore::adopt`]).
    pub fn adopt(&self, checkpoint: &Checkpoint) -> Result<()> {
        if checkpoint.store != StoreKind::Snapshot {
            return Ok(());
        }
        self.load_manifest(&checkpoint.id)?;
        self.write_ref(&self.session_id, &checkpoint.id)
    }

    /// Every snapshot ref in the store (all sessions, all directories).
    pub fn list_all(&self) -> Result<Vec<StoredCheckpoint>> {
        let refs = self.store.join("refs");
        let mut all = Vec::new();
        for session in read_dir_names(&refs)? {
            for id in read_dir_names(&refs.join(&session))? {
                let path = refs.join(&session).join(&id);
                let created = fs::read(&path)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                    .and_then(|v| v.get("created").and_then(serde_json::Value::as_i64))
                    .unwrap_or(0);
                all.push(StoredCheckpoint {
                    session_id: session.clone(),
                    id,
                    created,
                });
            }
        }
        Ok(all)
    }

    pub(crate) fn delete_refs(&self, doomed: &[StoredCheckpoint]) -> Result<()> {
        for c in doomed {
            remove_file_if_present(&self.ref_path(&c.session_id, &c.id))?;
        }
        Ok(())
    }

    pub(crate) fn forget_session(&self, session_id: &str) {
        let _ = fs::remove_dir(self.store.join("refs").join(session_id));
        let _ = fs::remove_file(self.store.join("cache").join(format!("{session_id}.json")));
    }

    /// Deletes manifests no ref names and objects no kept manifest names, if older than `grace`.
    pub(crate) fn collect_garbage(&self, grace: Duration) -> Result<usize> {
        let now = SystemTime::now();
        let old_enough = |p: &Path| {
            fs::metadata(p)
                .and_then(|m| m.modified())
                .map(|t| now.duration_since(t).unwrap_or_default() >= grace)
                .unwrap_or(false)
        };
        let kept: HashSet<String> = self.list_all()?.into_iter().map(|c| c.id).collect();
        let mut live_objects = HashSet::new();
        let mut removed = 0;
        let manifests = self.store.join("manifests");
        for a in read_dir_names(&manifests)? {
            for b in read_dir_names(&manifests.join(&a))? {
                let id = format!("{a}{}", b.trim_end_matches(".json"));
                let path = manifests.join(&a).join(&b);
                if kept.contains(&id) || !old_enough(&path) {
                    if let Ok(m) = self.load_manifest(&id) {
                        live_objects.extend(m.files.into_iter().map(|f| f.hash));
                    }
                } else {
                    remove_file_if_present(&path)?;
                    removed += 1;
                }
            }
        }
        let objects = self.store.join("objects");
        for a in read_dir_names(&objects)? {
            for b in read_dir_names(&objects.join(&a))? {
                let path = objects.join(&a).join(&b);
                if !live_objects.contains(&format!("{a}{b}")) && old_enough(&path) {
                    remove_file_if_present(&path)?;
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }
}

fn checkpoint_of(id: &str) -> Checkpoint {
    Checkpoint {
        store: StoreKind::Snapshot,
        id: id.to_string(),
        tree: id.to_string(),
        head: None,
        index: None,
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
            Some(new) if new.kind != old.kind => out.push(Change {
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
fn is_executable(meta: &fs::Metadata) -> bool {
    std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0
}
#[cfg(not(unix))]
fn is_executable(_meta: &fs::Metadata) -> bool {
    false
}

#[cfg(unix)]
fn set_executable(path: &Path, exec: bool) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = if exec { 0o755 } else { 0o644 };
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| CheckpointError::io(path, e))
}
#[cfg(not(unix))]
fn set_executable(_path: &Path, _exec: bool) -> Result<()> {
    Ok(())
}

#[cfg(unix)]
fn make_symlink(target: &str, path: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, path).map_err(|e| CheckpointError::io(path, e))
}
#[cfg(not(unix))]
fn make_symlink(target: &str, path: &Path) -> Result<()> {
    write_atomic(path, target.as_bytes())
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

fn make_parent(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| CheckpointError::io(dir, e))?;
    }
    Ok(())
}

/// Writes through a temporary file and a rename, so a crash never leaves half a file.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    make_parent(path)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.arbor-tmp-{}", std::process::id()));
    let mut file = fs::File::create(&tmp).map_err(|e| CheckpointError::io(&tmp, e))?;
    file.write_all(bytes)
        .map_err(|e| CheckpointError::io(&tmp, e))?;
    drop(file);
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
