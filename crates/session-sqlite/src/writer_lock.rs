//! One writer process per session (DECISIONS §25.9), as the JSONL backend has.
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

use arbor_session::error::SessionError;

type Result<T> = std::result::Result<T, SessionError>;

/// How many 1 ms waits for a release already under way in this repository (§25.9).
const RELEASE_TRIES: u32 = 200;

/// A held writer lock (released on drop with the file handle).
pub(crate) struct WriterLock {
    _file: File,
}

/// Tests widen the moment between a lock's last handle going and its file closing.
#[cfg(test)]
static SLOW_RELEASE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[cfg(test)]
impl Drop for WriterLock {
    fn drop(&mut self) {
        if SLOW_RELEASE.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(30));
        }
    }
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
        // This repository's own last handle may be dropping on another thread right now: its
        // lock's strong count is already 0 (so it cannot be shared) but its file is not closed
        // yet. That release finishes within microseconds, so wait for it (DECISIONS §25.9).
        let ours_closing = held.get(&sid).is_some_and(|w| w.strong_count() == 0);
        let mut tries = 0u32;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if ours_closing && tries < RELEASE_TRIES => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(SessionError::Storage(format!(
                        "session is open for writing by another process: {location}"
                    )))
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io(&path, e)),
            }
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

#[cfg(test)]
mod tests {
    use super::{WriterLocks, SLOW_RELEASE};
    use std::sync::atomic::Ordering;

    /// The last handle dropping on another thread while the repository takes the lock again
    /// (the file still open for 30 ms after the handle went): the reopen waits for that
    /// release instead of calling it another process (DECISIONS §25.9). A lock held by a
    /// second repository is still refused at once.
    #[test]
    fn a_handle_dropped_on_another_thread_does_not_refuse_the_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("sessions.db");
        let locks = WriterLocks::for_database(Some(&db));
        let lock = locks.acquire(1, "db#1").expect("first acquire");
        SLOW_RELEASE.store(true, Ordering::SeqCst);
        let dropper = std::thread::spawn(move || drop(lock));
        // The dropper is inside its slow release: the handle is gone, the file still open.
        std::thread::sleep(std::time::Duration::from_millis(10));
        let again = locks.acquire(1, "db#1");
        dropper.join().expect("dropper");
        SLOW_RELEASE.store(false, Ordering::SeqCst);
        let again = again.expect("the reopen waits for its own release");
        let other = WriterLocks::for_database(Some(&db));
        let err = other.acquire(1, "db#1").err().map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("open for writing by another process")),
            "{err:?}"
        );
        drop(again);
    }
}
