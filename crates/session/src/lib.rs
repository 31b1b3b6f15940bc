//! `arbor-session`: a session is an append-only tree of entries behind one async storage
//! contract, with memory and JSONL backends, repositories, and the projection from the log to
//! what the model sees.
//!
//! Layering: depends on `arbor-ai` for message types only; no provider, HTTP or terminal detail.
//! The agent loop and harness (`arbor-agent`) and the SQLite and PostgreSQL backends build on it.

pub mod append;
mod common;
pub mod context;
pub mod entry;
pub mod error;
mod fast;
pub mod handle;
pub mod ids;
mod index;
mod json_bytes;
pub mod jsonl;
pub mod materialized;
pub mod memory;
pub mod message;
mod probe;
pub mod rows;
pub mod rules;
mod skim;
pub mod storage;
pub mod tree;
pub mod tree_text;
pub mod tree_view;

#[cfg(feature = "conformance")]
pub mod conformance;

/// Timestamps (re-exported from `arbor-ai`, where message timestamps live).
pub use arbor_ai::time;

pub use error::{Result, SessionError};
pub use message::AgentMessage;

pub use entry::*;
pub use handle::{BranchSummaryDraft, CompactionDraft, Session};
pub use jsonl::{JsonlRepository, JsonlStorage, SyncPolicy};
pub use materialized::MaterializedState;
pub use memory::{MemoryRepository, MemoryStorage};
pub use rows::{EntryRows, RowCaps, RowKind, RowSource, RowSourceRef, RowSummary};
pub use storage::*;
pub use tree::{LinkItem, SessionTree, TreeLinks, TreeNode};
