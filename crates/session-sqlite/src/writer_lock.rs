//! One writer process per session (DECISIONS §25.8), as the JSONL backend has.
//!
//! SQLite's own locking serializes transactions, not sessions: without this, two agents could
//! append to one session from two processes and their turns would interleave in one tree. A
//! writable handle therefore holds an advisory lock (`File::try_lock`) on a per-session lock
//! file `<db>.writers/<sid>.lock`. Handles of one repository share the lock (they share the
//! connection too); another repository, in this process or another, is refused with the JSONL
//! backend's error text. The lock is released when the last handle drops, and by the OS when a
//! process dies, so a crash leaves nothing to clean up.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use arbor_agent::error::SessionError;

type Result<T> = std::result::Result<T, SessionError>;

/// A held writer lock (released on drop with the file handle).
pub(crate) struct WriterLock {
    _file: File,
}

/// The writer locks this repository holds, by session row id.
#[derive(Default)]
pub(crate) struct WriterLocks {
    /// `None` for databases without a file (`:memory:`): nothing to share across processes.
    dir: Option<PathBuf>,
    held: Mutex<HashMap<i64, Weak<WriterLock>>>,
}

impl WriterLocks {
    pub(crate) fn for_database(db_file: Option<&Path>) -> WriterLocks {
        WriterLocks {
            dir: db_file.map(|f| {
                let mut os = f.as_os_str().to_owned();
                os.push(".writers");
                PathBuf::from(os)
            }),
            held: Mutex::default(),
        }
    }

    /// Takes (or shares) the writer lock of session `sid`; `location` names it in the error.
    pub(crate) fn acquire(&self, sid: i64, location: &str) -> Result<Option<Arc<WriterLock>>> {
        let Some(dir) = &self.dir else {
            return Ok(None);
        };
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(lock) = held.get(&sid).and_then(Weak::upgrade) {
            return Ok(Some(lock));
        }
        let io = |p: &Path, e: std::io::Error| SessionError::io(p.display().to_string(), e);
        create_private_dir(dir).map_err(|e| io(dir, e))?;
        let path = dir.join(format!("{sid}.lock"));
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io(&path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(SessionError::Storage(format!(
                    "session is open for writing by another process: {location}"
                )))
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(&path, e)),
        }
        held.retain(|_, w| w.strong_count() > 0);
        let lock = Arc::new(WriterLock { _file: file });
        held.insert(sid, Arc::downgrade(&lock));
        Ok(Some(lock))
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}
