//! [`SessionStorage`] through shared handles: `&T`, `Arc<T>` and `Box<T>` (also for
//! `T = dyn SessionStorage`) are storages themselves, so anything generic over a storage (the
//! row and context views, a tree reader) works on the session a `Session` or a harness already
//! holds, without opening a second handle (DECISIONS §12.15).

use std::sync::Arc;

use async_trait::async_trait;

use crate::entry::{SessionEntry, SessionHeader};
use crate::error::Result;
use crate::storage::{DerivedSettings, EntryDraft, EntryPage, SessionStats, SessionStorage};
use crate::stored_lines::StoredLines;

/// Forwards every method, the provided ones included, so a backend's faster override is kept.
macro_rules! forward_storage {
    ($($handle:ty),*) => {$(
        #[async_trait]
        impl<T: SessionStorage + ?Sized> SessionStorage for $handle {
            async fn header(&self) -> Result<SessionHeader> {
                (**self).header().await
            }
            fn location(&self) -> String {
                (**self).location()
            }
            async fn leaf_id(&self) -> Result<Option<String>> {
                (**self).leaf_id().await
            }
            async fn set_leaf(&self, target: Option<&str>) -> Result<SessionEntry> {
                (**self).set_leaf(target).await
            }
            async fn create_entry_id(&self) -> Result<String> {
                (**self).create_entry_id().await
            }
            async fn append(&self, draft: EntryDraft) -> Result<SessionEntry> {
                (**self).append(draft).await
            }
            async fn append_entry(&self, entry: SessionEntry) -> Result<()> {
                (**self).append_entry(entry).await
            }
            async fn get_entry(&self, id: &str) -> Result<Option<SessionEntry>> {
                (**self).get_entry(id).await
            }
            async fn find_entries(&self, entry_type: &str) -> Result<Vec<SessionEntry>> {
                (**self).find_entries(entry_type).await
            }
            async fn get_label(&self, id: &str) -> Result<Option<String>> {
                (**self).get_label(id).await
            }
            async fn session_name(&self) -> Result<Option<String>> {
                (**self).session_name().await
            }
            async fn stats(&self) -> Result<SessionStats> {
                (**self).stats().await
            }
            async fn path_to_root_or_compaction(
                &self,
                leaf: Option<&str>,
            ) -> Result<Vec<SessionEntry>> {
                (**self).path_to_root_or_compaction(leaf).await
            }
            async fn ancestry(&self, leaf: Option<&str>) -> Result<Vec<SessionEntry>> {
                (**self).ancestry(leaf).await
            }
            async fn entries(
                &self,
                after_seq: Option<u64>,
                limit: Option<usize>,
            ) -> Result<EntryPage> {
                (**self).entries(after_seq, limit).await
            }
            async fn children(&self, id: Option<&str>) -> Result<Vec<SessionEntry>> {
                (**self).children(id).await
            }
            async fn entry_count(&self) -> Result<u64> {
                (**self).entry_count().await
            }
            async fn derived_settings(&self, leaf: Option<&str>) -> Result<DerivedSettings> {
                (**self).derived_settings(leaf).await
            }
            async fn path_tail(
                &self,
                leaf: Option<&str>,
                max_entries: usize,
            ) -> Result<Vec<SessionEntry>> {
                (**self).path_tail(leaf, max_entries).await
            }
            fn lines(&self) -> Option<&dyn StoredLines> {
                (**self).lines()
            }
            async fn save_point(&self) -> Result<()> {
                (**self).save_point().await
            }
        }
    )*};
}

forward_storage!(&T, Arc<T>, Box<T>);
