//! The session: an append-only entry tree behind one async storage contract.

mod common;
pub mod entry;
mod index;
pub mod jsonl;
pub mod memory;
mod probe;
pub mod rules;
#[allow(clippy::module_inception)]
pub mod session;
pub mod storage;
pub mod tree;
pub mod tree_view;
mod utf8;

#[cfg(feature = "conformance")]
pub mod conformance;
#[cfg(feature = "conformance")]
pub mod conformance_process;

pub use entry::*;
pub use jsonl::{JsonlRepository, JsonlStorage, SyncPolicy};
pub use memory::{MemoryRepository, MemoryStorage};
pub use session::{BranchSummaryDraft, CompactionDraft, Session};
pub use storage::*;
pub use tree::{LinkItem, SessionTree, TreeLinks, TreeNode};
