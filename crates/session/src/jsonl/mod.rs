//! The JSONL backend: pi v3 session files, one entry per line, appended in place.
//!
//! Format and rules: DECISIONS §4. Opening scans each line's envelope and keeps only byte
//! offsets; entries are parsed when read. Writable opens hold an advisory lock on the file.

mod file_source;
mod files;
pub mod layout;
mod list;
mod load;
mod migrate;
mod pending;
mod repo;
mod storage;
mod writer;

pub use files::{DIR_MODE, FILE_MODE};
pub use list::holds_conversation;
pub use repo::{JsonlRepository, Layout, Migration};
pub use storage::{JsonlStorage, OpenReport, TornTail};
/// The byte sink under a session file, replaceable in tests to simulate failing disks (feature
/// `internals`, not a stable API).
#[cfg(feature = "internals")]
pub use writer::{FileWriter, SessionWriter, WriterFactory};
pub use writer::{SyncPolicy, UnknownSyncPolicy};

/// Names the file only: the index and the write side are internal and large.
impl std::fmt::Debug for JsonlStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonlStorage")
            .field("path", &self.path())
            .finish_non_exhaustive()
    }
}
