//! The byte sink under a JSONL session, injectable so tests can simulate a full disk.

use std::fs::File;
use std::io::{self, Write};
use std::str::FromStr;
use std::sync::Arc;

/// When appended lines are forced to stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncPolicy {
    /// fsync after every append (slowest, loses nothing on power failure).
    Always,
    /// fsync at save points (turn end); the default: one fsync per turn.
    #[default]
    SavePoint,
    /// Never fsync; the OS decides. A process crash still loses nothing already appended.
    Never,
}

impl SyncPolicy {
    /// The policy's name (`always`, `save_point`, `never`), which [`str::parse`] reads back.
    pub fn as_str(self) -> &'static str {
        match self {
            SyncPolicy::Always => "always",
            SyncPolicy::SavePoint => "save_point",
            SyncPolicy::Never => "never",
        }
    }
}

/// A name [`SyncPolicy`]'s `FromStr` does not know; the name is kept for the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown sync policy {0:?} (expected always, save_point or never)")]
pub struct UnknownSyncPolicy(pub String);

impl FromStr for SyncPolicy {
    type Err = UnknownSyncPolicy;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "always" => Ok(SyncPolicy::Always),
            "save_point" | "save-point" => Ok(SyncPolicy::SavePoint),
            "never" => Ok(SyncPolicy::Never),
            other => Err(UnknownSyncPolicy(other.to_owned())),
        }
    }
}

/// Append-only access to one session file. Every `append` is one complete line; the storage
/// truncates back to the last committed length when an append fails part-way.
pub trait SessionWriter: Send + Sync {
    /// Writes all of `bytes` at the end of the file.
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Forces written data to stable storage.
    fn sync(&mut self) -> io::Result<()>;
    /// Cuts the file back to `len` bytes (undoing a partial append).
    fn truncate(&mut self, len: u64) -> io::Result<()>;
}

/// Builds the writer for a freshly opened (locked, append-mode) session file.
pub type WriterFactory = Arc<dyn Fn(File) -> Box<dyn SessionWriter> + Send + Sync>;

/// The real writer: an append-mode file handle.
#[derive(Debug)]
pub struct FileWriter {
    file: File,
}

impl FileWriter {
    /// A writer over `file`, which must be open for appending (writes go to its end).
    pub fn new(file: File) -> Self {
        FileWriter { file }
    }
}

impl SessionWriter for FileWriter {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)
    }
    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }
}

/// The default factory.
pub fn file_writer_factory() -> WriterFactory {
    Arc::new(|file| Box::new(FileWriter::new(file)) as Box<dyn SessionWriter>)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_policy_parses_and_prints() {
        for p in [SyncPolicy::Always, SyncPolicy::SavePoint, SyncPolicy::Never] {
            assert_eq!(p.as_str().parse::<SyncPolicy>(), Ok(p));
        }
        assert_eq!(SyncPolicy::default(), SyncPolicy::SavePoint);
        let err = "sometimes".parse::<SyncPolicy>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown sync policy \"sometimes\" (expected always, save_point or never)"
        );
    }
}
