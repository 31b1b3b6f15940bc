//! The refs that keep snapshots alive (`refs/<session>/<manifest>`), and the garbage
//! collection of manifests and objects no ref keeps.

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::{now_nanos, read_dir_names, remove_file_if_present, write_atomic, SnapshotStore};
use crate::checkpoint::{Checkpoint, StoreKind, StoredCheckpoint};
use crate::error::Result;

impl SnapshotStore {
    pub(super) fn write_ref(&self, session: &str, id: &str) -> Result<()> {
        let record = serde_json::json!({
            "root": self.root.display().to_string(),
            "created": now_nanos() / 1_000_000_000,
        });
        write_atomic(&self.ref_path(session, id), record.to_string().as_bytes())
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
        let _ = fs::remove_file(
            self.store
                .join("cache")
                .join(format!("{session_id}.keep-out")),
        );
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
