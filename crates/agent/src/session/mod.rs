//! The session: an append-only entry tree behind one async storage contract.

mod common;
pub mod entry;
mod fast;
pub mod handle;
mod index;
mod json_bytes;
pub mod jsonl;
pub mod materialized;
pub mod memory;
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

pub use entry::*;
pub use handle::{BranchSummaryDraft, CompactionDraft, Session};
pub use jsonl::{JsonlRepository, JsonlStorage, SyncPolicy};
pub use materialized::MaterializedState;
pub use memory::{MemoryRepository, MemoryStorage};
pub use rows::{EntryRows, RowCaps, RowKind, RowSource, RowSourceRef, RowSummary};
pub use storage::*;
pub use tree::{LinkItem, SessionTree, TreeLinks, TreeNode};
