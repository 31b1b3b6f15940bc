//! The session: an append-only entry tree behind one async storage contract.

pub mod entry;
#[allow(clippy::module_inception)]
pub mod session;
pub mod storage;
pub mod tree;

pub use entry::*;
pub use storage::*;
pub use session::{BranchSummaryDraft, CompactionDraft, Session};
pub use tree::{SessionTree, TreeNode};
