//! The JSONL backend: pi v3 session files, one entry per line.

pub mod layout;
mod migrate;
pub mod writer;

pub use writer::{SessionWriter, SyncPolicy, WriterFactory};
