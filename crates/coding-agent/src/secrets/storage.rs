//! The one place entries pass before they are stored: a [`SessionStorage`] wrapper that scrubs
//! known secrets from every string of an entry (tool results, error messages, custom data)
//! before handing it to the real backend (DECISIONS §30.9). One scan of the entry's strings per
//! append; an entry without a secret is passed through untouched.

use std::sync::Arc;

use arbor_agent::session::{
    DerivedSettings, EntryDraft, EntryPage, Result, SessionEntry, SessionError, SessionHeader,
    SessionStats, SessionStorage, StoredLines,
};
use async_trait::async_trait;

use super::Redactor;

/// A backend whose appends are scrubbed by a [`Redactor`].
pub struct RedactingStorage {
    inner: Arc<dyn SessionStorage>,
    redactor: Arc<Redactor>,
}

impl RedactingStorage {
    pub fn new(inner: Arc<dyn SessionStorage>, redactor: Arc<Redactor>) -> RedactingStorage {
        RedactingStorage { inner, redactor }
    }

    /// `entry` with every secret run replaced (the same entry when none is found).
    fn scrub(&self, entry: SessionEntry) -> Result<SessionEntry> {
        if self.redactor.is_empty() {
            return Ok(entry);
        }
        let mut value = serde_json::to_value(&entry)
            .map_err(|e| SessionError::Parse(format!("entry {}: {e}", entry.id)))?;
        if !self.redactor.scrub_value(&mut value) {
            return Ok(entry);
        }
        serde_json::from_value(value).map_err(|e| {
            SessionError::InvalidEntry(format!(
                "entry {}: not valid after redacting secrets: {e}",
                entry.id
            ))
        })
    }
}

#[async_trait]
impl SessionStorage for RedactingStorage {
    async fn header(&self) -> Result<SessionHeader> {
        self.inner.header().await
    }
    fn location(&self) -> String {
        self.inner.location()
    }
    async fn leaf_id(&self) -> Result<Option<String>> {
        self.inner.leaf_id().await
    }
    async fn set_leaf(&self, target: Option<&str>) -> Result<SessionEntry> {
        self.inner.set_leaf(target).await
    }
    async fn create_entry_id(&self) -> Result<String> {
        self.inner.create_entry_id().await
    }
    async fn append(&self, draft: EntryDraft) -> Result<SessionEntry> {
        if self.redactor.is_empty() {
            return self.inner.append(draft).await;
        }
        // The draft goes through the entry's own serialization (a placeholder envelope that is
        // dropped again), so every string of every kind is covered.
        let EntryDraft {
            kind,
            id,
            timestamp,
        } = draft;
        let probe = SessionEntry {
            id: id.clone().unwrap_or_else(|| "00000000".to_owned()),
            parent_id: None,
            timestamp: timestamp
                .clone()
                .unwrap_or_else(|| "2000-01-01T00:00:00.000Z".to_owned()),
            kind,
        };
        let clean = self.scrub(probe)?;
        self.inner
            .append(EntryDraft {
                kind: clean.kind,
                id,
                timestamp,
            })
            .await
    }
    async fn append_entry(&self, entry: SessionEntry) -> Result<()> {
        let clean = self.scrub(entry)?;
        self.inner.append_entry(clean).await
    }
    async fn get_entry(&self, id: &str) -> Result<Option<SessionEntry>> {
        self.inner.get_entry(id).await
    }
    async fn find_entries(&self, entry_type: &str) -> Result<Vec<SessionEntry>> {
        self.inner.find_entries(entry_type).await
    }
    async fn get_label(&self, id: &str) -> Result<Option<String>> {
        self.inner.get_label(id).await
    }
    async fn session_name(&self) -> Result<Option<String>> {
        self.inner.session_name().await
    }
    async fn stats(&self) -> Result<SessionStats> {
        self.inner.stats().await
    }
    async fn path_to_root_or_compaction(&self, leaf: Option<&str>) -> Result<Vec<SessionEntry>> {
        self.inner.path_to_root_or_compaction(leaf).await
    }
    async fn ancestry(&self, leaf: Option<&str>) -> Result<Vec<SessionEntry>> {
        self.inner.ancestry(leaf).await
    }
    async fn entries(&self, after_seq: Option<u64>, limit: Option<usize>) -> Result<EntryPage> {
        self.inner.entries(after_seq, limit).await
    }
    async fn children(&self, id: Option<&str>) -> Result<Vec<SessionEntry>> {
        self.inner.children(id).await
    }
    async fn entry_count(&self) -> Result<u64> {
        self.inner.entry_count().await
    }
    async fn derived_settings(&self, leaf: Option<&str>) -> Result<DerivedSettings> {
        self.inner.derived_settings(leaf).await
    }
    async fn path_tail(&self, leaf: Option<&str>, max_entries: usize) -> Result<Vec<SessionEntry>> {
        self.inner.path_tail(leaf, max_entries).await
    }
    fn lines(&self) -> Option<&dyn StoredLines> {
        self.inner.lines()
    }
    async fn save_point(&self) -> Result<()> {
        self.inner.save_point().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_agent::session::{CustomEntry, EntryKind, MemoryStorage};

    #[tokio::test]
    async fn appended_entries_lose_their_secrets_and_others_pass_unchanged() {
        let redactor = Arc::new(Redactor::new());
        redactor.add("sk-live-ABCDEFGHIJKLMNOP");
        let inner: Arc<dyn SessionStorage> = Arc::new(MemoryStorage::new("/p"));
        let storage = RedactingStorage::new(inner.clone(), redactor);
        let kind = |data: serde_json::Value| {
            EntryKind::Custom(CustomEntry {
                custom_type: "probe".into(),
                data: Some(data),
                extra: Default::default(),
            })
        };
        let a = storage
            .append(EntryDraft::new(kind(
                serde_json::json!({"out": "KEY=sk-live-ABCDEFGHIJKLMNOP", "tail": "…GHIJKLMNOP"}),
            )))
            .await
            .unwrap();
        let stored = inner.get_entry(&a.id).await.unwrap().unwrap();
        let EntryKind::Custom(c) = &stored.kind else {
            panic!("{stored:?}")
        };
        assert_eq!(
            c.data,
            Some(serde_json::json!({"out": "KEY=[redacted]", "tail": "…[redacted]"}))
        );
        let b = storage
            .append(EntryDraft::new(kind(
                serde_json::json!({"out": "nothing secret"}),
            )))
            .await
            .unwrap();
        assert_eq!(inner.get_entry(&b.id).await.unwrap().unwrap(), b);
        assert_eq!(b.parent_id.as_deref(), Some(a.id.as_str()));
    }
}
