//! The names most programs over sessions use: `use arbor_session::prelude::*;`.
//!
//! Traits come with it (their methods need them in scope); the crate's `Result` alias is left
//! out so it does not shadow `std`'s.

pub use crate::context::ContextOptions;
pub use crate::entry::{EntryKind, SessionEntry, SessionHeader};
pub use crate::error::SessionError;
pub use crate::handle::Session;
pub use crate::jsonl::{JsonlRepository, JsonlStorage};
pub use crate::memory::{MemoryRepository, MemoryStorage};
pub use crate::message::AgentMessage;
pub use crate::storage::{
    CreateOptions, EntryDraft, ForkOptions, ForkPosition, SessionRepository, SessionStorage,
};
pub use crate::tree::{SessionTree, TreeNode};
