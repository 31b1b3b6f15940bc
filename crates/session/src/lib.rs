//! `arbor-session`: a session is an append-only tree of entries behind one async storage
//! contract, with memory and JSONL backends, repositories, and the projection from the log to
//! what the model sees.
//!
//! Layering: depends on `arbor-ai` for message types only; no provider, HTTP or terminal detail.
//! The agent loop and harness (`arbor-agent`) and the SQLite and PostgreSQL backends build on it.

pub mod append;
pub mod context;
pub mod entry;
pub mod error;
pub mod handle;
pub mod ids;
mod index;
mod index_reads;
pub mod jsonl;
#[cfg(feature = "internals")]
pub mod line;
#[cfg(not(feature = "internals"))]
mod line;
pub mod materialized;
pub mod memory;
pub mod message;
pub mod prelude;
pub mod rows;
pub mod rules;
pub mod storage;
mod storage_handles;
pub mod stored_lines;
pub mod tree;
pub mod tree_view;
mod workers;

#[cfg(feature = "conformance")]
pub mod conformance;

/// Timestamps (re-exported from `arbor-ai`, where message timestamps live).
pub use arbor_ai::time;

pub use error::{Result, SessionError};
pub use message::AgentMessage;

pub use context::{render_context_entries, visit_context_entries, EntryRenderer};
pub use entry::*;
pub use handle::{BranchSummaryDraft, CompactionDraft, Session};
pub use jsonl::{JsonlRepository, JsonlStorage, SyncPolicy};
pub use materialized::MaterializedState;
pub use memory::{MemoryRepository, MemoryStorage};
pub use rows::{
    row_source, visit_row_summaries, EntryRows, RowCaps, RowKind, RowSource, RowSourceRef,
    RowSummary,
};
pub use storage::*;
pub use stored_lines::{LineSnapshot, Lines, StoredLines};
pub use tree::{LinkItem, SessionTree, TreeLinks, TreeNode};
