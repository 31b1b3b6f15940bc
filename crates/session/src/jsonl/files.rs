//! File-system rules every session file operation follows (DECISIONS §25.3–§25.5):
//! private modes, crash-safe copies, and cleanup of temporaries nobody holds.

use crate::error::{Result, SessionError};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Mode of new session files: transcripts hold file contents and command output.
pub const FILE_MODE: u32 = 0o600;
/// Mode of the folders Arbor creates (`~/.arbor`, `sessions/`, per-cwd folders).
pub const DIR_MODE: u32 = 0o700;

/// How long a lock-free temporary must have been left alone before an open removes it (covers
/// the instant between a writer creating its temporary and locking it).
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

pub(crate) fn io_err(path: &Path) -> impl Fn(std::io::Error) -> SessionError + '_ {
    move |e| SessionError::io(path.display().to_string(), e)
}

/// Creates `path` exclusively (read + append) with `mode`, whatever the umask.
pub(crate) fn create_new(path: &Path, mode: u32) -> Result<File> {
    let mut opts = OpenOptions::new();
    opts.read(true).append(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(mode);
    }
    let file = opts.open(path).map_err(io_err(path))?;
    set_mode(&file, path, mode)?;
    Ok(file)
}

/// Applies `mode` to an open file (the umask may have narrowed it; a copy must not widen it).
pub(crate) fn set_mode(file: &File, path: &Path, mode: u32) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(io_err(path))?;
    }
    #[cfg(not(unix))]
    let _ = (file, path, mode);
    Ok(())
}

/// The permission bits of an existing file (`FILE_MODE` where there are none).
pub(crate) fn mode_of(meta: &std::fs::Metadata) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o7777
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        FILE_MODE
    }
}

/// `create_dir_all`, with every folder it creates made `DIR_MODE` (existing ones are left as
/// their owner set them).
pub(crate) fn create_private_dirs(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(DIR_MODE);
    }
    // Note which ancestors are missing: recursive creation applies the umask to them.
    let mut missing: Vec<&Path> = Vec::new();
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if d.exists() {
            break;
        }
        missing.push(d);
        cur = d.parent();
    }
    builder.create(dir).map_err(io_err(dir))?;
    #[cfg(unix)]
    for d in missing {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(DIR_MODE))
            .map_err(io_err(d))?;
    }
    #[cfg(not(unix))]
    let _ = missing;
    Ok(())
}

/// fsyncs a directory so a create/rename in it is durable (no-op where unsupported).
pub(crate) fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// The file a path names, symlinks followed: rewrites replace the target, never the link.
pub(crate) fn real_path(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// Whether two files hold the same bytes (compared in chunks).
fn same_bytes(a: &Path, b: &Path) -> std::io::Result<bool> {
    let (mut fa, mut fb) = (File::open(a)?, File::open(b)?);
    if fa.metadata()?.len() != fb.metadata()?.len() {
        return Ok(false);
    }
    let (mut ba, mut bb) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = read_full(&mut fa, &mut ba)?;
        let m = read_full(&mut fb, &mut bb)?;
        if n != m || ba[..n] != bb[..m] {
            return Ok(false);
        }
        if n == 0 {
            return Ok(true);
        }
    }
}

fn read_full(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Makes `backup` an exact, durable copy of `original` (DECISIONS §25.3): an existing backup
/// counts only when its bytes match; otherwise (e.g. truncated by a crash mid-copy) the copy
/// is made again, to a temporary, fsynced and renamed into place, so a backup name never
/// holds a partial copy. The backup keeps the original's mode.
pub(crate) fn make_backup(original: &Path, backup: &Path) -> Result<()> {
    if backup.is_file() && same_bytes(original, backup).map_err(io_err(backup))? {
        return Ok(());
    }
    let mode = mode_of(&std::fs::metadata(original).map_err(io_err(original))?);
    let tmp = crate::jsonl::layout::temp_path(backup, crate::time::now_ms());
    let made = (|| -> Result<()> {
        let mut out = create_new(&tmp, FILE_MODE)?;
        lock_temp(&out, &tmp)?;
        let mut src = File::open(original).map_err(io_err(original))?;
        std::io::copy(&mut src, &mut out).map_err(io_err(&tmp))?;
        out.flush().map_err(io_err(&tmp))?;
        set_mode(&out, &tmp, mode)?;
        out.sync_all().map_err(io_err(&tmp))?;
        std::fs::rename(&tmp, backup).map_err(io_err(backup))
    })();
    if let Err(e) = made {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    if let Some(dir) = backup.parent() {
        sync_dir(dir);
    }
    Ok(())
}

/// Locks a temporary as soon as it exists, so a sweep in another process leaves it alone.
pub(crate) fn lock_temp(file: &File, path: &Path) -> Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(SessionError::Storage(format!(
            "temporary file {} is locked by another process",
            path.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => Err(io_err(path)(e)),
    }
}

/// Whether a file name is one of our temporaries (`<name>.tmp-<pid>-<ms>`).
fn is_temp_name(name: &str) -> bool {
    let Some((_, rest)) = name.rsplit_once(".tmp-") else {
        return false;
    };
    let mut parts = rest.split('-');
    let digits =
        |s: Option<&str>| s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    digits(parts.next()) && digits(parts.next()) && parts.next().is_none()
}

/// Removes temporaries in `dir` that an interrupted rewrite or fork left behind: ones no
/// process holds locked and untouched for a moment. Best effort: failures are ignored (the
/// files are only wasted space). Returns what was removed.
pub(crate) fn sweep_stale_temps(dir: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return removed;
    };
    let now = std::time::SystemTime::now();
    for e in rd.flatten() {
        let name = e.file_name();
        if !name.to_str().is_some_and(is_temp_name) {
            continue;
        }
        let path = e.path();
        let Ok(meta) = e.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let fresh = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_none_or(|age| age < STALE_AFTER);
        if fresh {
            continue;
        }
        let Ok(f) = File::open(&path) else { continue };
        if f.try_lock().is_ok() && std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_recognized_exactly() {
        assert!(is_temp_name("a.jsonl.tmp-12-1781967600000"));
        assert!(is_temp_name("a.jsonl.v1.bak.tmp-1-2"));
        assert!(!is_temp_name("a.jsonl"));
        assert!(!is_temp_name("a.jsonl.tmp-12"));
        assert!(!is_temp_name("notes.tmp-x-1"));
    }
}
