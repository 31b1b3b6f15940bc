//! Writes and edits to one file run one at a time: two parallel `edit` calls
//! on the same file would otherwise both read the old text and the second would undo the first (DECISIONS §22.42).
//! The key is the file's real path, so symlinks and `./x` vs `x` share one queue.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

/// A lock per real path, shared by every tool call of a session.
#[derive(Debug, Clone, Default)]
pub struct MutationQueue {
    locks: Arc<Mutex<HashMap<PathBuf, Arc<AsyncMutex<()>>>>>,
}

/// The path with symlinks resolved; for a file that does not exist yet, its parent's real path
/// joined with the name (the parent may not exist either: then the path as given).
pub fn real_path(path: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => real_path(parent).join(name),
        _ => path.to_path_buf(),
    }
}

impl MutationQueue {
    /// Waits for earlier writers of the same real path; the guard releases the turn on drop.
    pub async fn lock(&self, path: &Path) -> OwnedMutexGuard<()> {
        let key = real_path(path);
        let lock = {
            let mut map = self
                .locks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // Forget locks nobody holds or waits for, so the map stays as small as the work.
            map.retain(|_, l| Arc::strong_count(l) > 1);
            map.entry(key).or_default().clone()
        };
        lock.lock_owned().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_symlink_and_its_target_share_one_turn() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "x").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let q = MutationQueue::default();
        let g = q.lock(&file).await;
        let q2 = q.clone();
        let waiter = tokio::spawn(async move {
            q2.lock(&link).await;
        });
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!waiter.is_finished());
        drop(g);
        tokio::time::timeout(Duration::from_secs(2), waiter)
            .await
            .unwrap()
            .unwrap();
        // A different file does not wait.
        let _g = q.lock(&file).await;
        tokio::time::timeout(Duration::from_secs(2), q.lock(&dir.path().join("other")))
            .await
            .unwrap();
    }
}
