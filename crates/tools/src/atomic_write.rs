//! Replacing a file's contents all at once: the new bytes go to a temporary file in the same
//! directory, are flushed to disk, and the temporary file is renamed over the target — a
//! SIGKILL or power loss leaves the old contents or the new, never a truncated mix
//! (DECISIONS §28.7). The target's mode (and owner, where the user may set it) is kept; a
//! symlink is written through to the file it names, as a plain write would.

use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

/// Links followed before a symlink chain counts as a loop (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// What happened on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The target now holds the new bytes.
    Replaced,
    /// Cancelled before the rename: the target is untouched and the temporary file removed.
    Abandoned,
}

/// Why the new contents could not be put in place (the target is unchanged).
#[derive(Debug, thiserror::Error)]
pub enum AtomicWriteError {
    #[error("{op} '{}': {source}", path.display())]
    /// A filesystem call failed.
    Io {
        /// The call that failed (`rename`, `write`, …).
        op: &'static str,
        /// The path it failed on.
        path: PathBuf,
        #[source]
        /// What the system said.
        source: std::io::Error,
    },
    #[error("too many levels of symbolic links: '{}'", .0.display())]
    /// The target's chain of symbolic links does not end.
    SymlinkLoop(PathBuf),
    #[error("the write was interrupted: {0}")]
    /// Cancelled or cut short before the rename; says how.
    Interrupted(String),
}

impl AtomicWriteError {
    /// The I/O error behind the failure, when there is one (for the tools' `ENOENT`-style texts).
    pub fn io(&self) -> Option<(&std::io::Error, &Path, &'static str)> {
        match self {
            AtomicWriteError::Io { op, path, source } => Some((source, path, op)),
            _ => None,
        }
    }
}

fn io<'a>(
    op: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> AtomicWriteError + 'a {
    move |source| AtomicWriteError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// Puts `bytes` in place of `target`'s contents; `cancel` is looked at just before the rename,
/// the last moment the change can still be called off.
pub async fn replace(
    target: &Path,
    bytes: Vec<u8>,
    cancel: &CancellationToken,
) -> Result<Outcome, AtomicWriteError> {
    let target = target.to_path_buf();
    let cancel = cancel.clone();
    tokio::task::spawn_blocking(move || replace_blocking(&target, &bytes, &cancel))
        .await
        .map_err(|e| AtomicWriteError::Interrupted(e.to_string()))?
}

/// The file a write to `path` lands in: `path` itself, or the end of its symlink chain (which
/// may not exist yet).
pub fn write_target(path: &Path) -> Result<PathBuf, AtomicWriteError> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let next = std::fs::read_link(&current).map_err(io("readlink", &current))?;
                current = match current.parent() {
                    Some(parent) if next.is_relative() => parent.join(next),
                    _ => next,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(AtomicWriteError::SymlinkLoop(path.to_path_buf()))
}

fn replace_blocking(
    path: &Path,
    bytes: &[u8],
    cancel: &CancellationToken,
) -> Result<Outcome, AtomicWriteError> {
    let target = write_target(path)?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let existing = std::fs::metadata(&target).ok();
    if existing.is_some() {
        // A file the user may not write stays refused, as a plain write would refuse it (a
        // rename only needs the directory to be writable). Opening without truncating
        // changes nothing.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&target)
            .map_err(io("open", &target))?;
    }
    let tmp = dir.join(format!(".{name}.arbor-{:016x}.tmp", rand::random::<u64>()));
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    // A new file gets what a plain create would (0666 less the umask); an existing one its mode.
    opts.mode(existing.as_ref().map_or(0o666, |m| m.mode() & 0o7777));
    let mut file = match opts.open(&tmp) {
        Ok(f) => f,
        // A writable file in a directory the user may not write: only an in-place write is
        // possible (not atomic; DECISIONS §28.7).
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && existing.is_some() => {
            return write_in_place(&target, bytes, cancel);
        }
        Err(e) => return Err(io("open", &tmp)(e)),
    };
    let written = (|| {
        if let Some(meta) = &existing {
            keep_owner_and_mode(&file, meta);
        }
        file.write_all(bytes).map_err(io("write", &tmp))?;
        file.sync_all().map_err(io("fsync", &tmp))
    })();
    drop(file);
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    if cancel.is_cancelled() {
        let _ = std::fs::remove_file(&tmp);
        return Ok(Outcome::Abandoned);
    }
    if let Err(e) = std::fs::rename(&tmp, &target) {
        let _ = std::fs::remove_file(&tmp);
        return Err(io("rename", &target)(e));
    }
    // The rename itself is durable once the directory is flushed; failing that is no reason to
    // call the write failed (the data is in place).
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(Outcome::Replaced)
}

fn write_in_place(
    target: &Path,
    bytes: &[u8],
    cancel: &CancellationToken,
) -> Result<Outcome, AtomicWriteError> {
    if cancel.is_cancelled() {
        return Ok(Outcome::Abandoned);
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(target)
        .map_err(io("open", target))?;
    f.write_all(bytes).map_err(io("write", target))?;
    f.sync_all().map_err(io("fsync", target))?;
    Ok(Outcome::Replaced)
}

/// Gives the temporary file the target's owner (only root or the owner may; a failure keeps
/// ours) and then its mode (set after the owner: `chown` clears set-id bits).
fn keep_owner_and_mode(file: &std::fs::File, meta: &std::fs::Metadata) {
    let _ = std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid()));
    let _ = file.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_replacement_keeps_the_mode_and_writes_through_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("run.sh");
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o751)).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("run.sh", &link).unwrap();
        let none = CancellationToken::new();
        assert_eq!(
            replace(&link, b"new".to_vec(), &none).await.unwrap(),
            Outcome::Replaced
        );
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o7777, 0o751);
        // Nothing but the file and the link is left in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[tokio::test]
    async fn a_cancelled_replacement_leaves_the_target_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "old").unwrap();
        let cancelled = CancellationToken::new();
        cancelled.cancel();
        assert_eq!(
            replace(&file, b"new".to_vec(), &cancelled).await.unwrap(),
            Outcome::Abandoned
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_symlink_loop_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::os::unix::fs::symlink("b", &a).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        assert!(matches!(
            write_target(&a),
            Err(AtomicWriteError::SymlinkLoop(_))
        ));
        // A dangling link names the file it would create.
        let d = dir.path().join("d");
        std::os::unix::fs::symlink("new.txt", &d).unwrap();
        assert_eq!(write_target(&d).unwrap(), dir.path().join("new.txt"));
    }
}
