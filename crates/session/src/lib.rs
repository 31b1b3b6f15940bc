//! `arbor-session`: a session is an append-only tree of entries behind one async storage
//! contract, with memory and JSONL backends, repositories, and the projection from the log to
//! what the model sees.
//!
//! Sessions are pi's v3 JSONL entry trees (`{type, id, parentId, timestamp, ...}` per line,
//! after one `session` header line); v1 and v2 files are read as v3 and rewritten on the first
//! write. [`SessionRepository`] creates, opens, lists, deletes and forks sessions of one backend
//! ([`JsonlRepository`], [`MemoryRepository`]; SQLite and PostgreSQL in their own crates);
//! [`SessionStorage`] is one open session; [`Session`] wraps any storage with typed appends,
//! navigation and a cached context.
//!
//! # Writing a session and reading it back
//!
//! ```
//! use std::sync::Arc;
//! use arbor_session::prelude::*;
//! use arbor_session::context::convert_to_llm;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), SessionError> {
//! let dir = tempfile::tempdir().map_err(|e| SessionError::io("tempdir", e))?;
//! let repo = JsonlRepository::flat(dir.path());
//! let storage = repo.create(CreateOptions::new("/work/project")).await?;
//! let session = Session::new(Arc::new(storage));
//!
//! let hello = session
//!     .append_message(arbor_ai::Message::user("hello", 0).into())
//!     .await?;
//! session.append_message(arbor_ai::Message::user("again", 1).into()).await?;
//! // Back to the first message and on from there: a second branch.
//! session.move_to(Some(&hello), None).await?;
//! session.append_message(arbor_ai::Message::user("other way", 2).into()).await?;
//! session.storage().save_point().await?; // turn end: one fsync
//!
//! // What the model sees at the leaf, as provider messages.
//! let context = session.build_context(&ContextOptions::default()).await?;
//! assert_eq!(convert_to_llm(&context.messages).len(), 2);
//!
//! // The whole tree, laid out as `arbor session tree` does.
//! let tree = session.tree().await?;
//! assert_eq!(tree.nodes.len(), 3);
//! print!("{}", tree.render());
//!
//! // Reopen the file without its write lock and without ever changing it.
//! let location = session.storage().location();
//! let reader = repo.open_read_only(&location).await?;
//! assert_eq!(reader.entry_count().await?, 4); // three messages and the `leaf` move
//! # Ok(())
//! # }
//! ```
//!
//! Layering: depends on `arbor-ai` for message types only; no provider, HTTP or terminal detail.
//! The agent loop and harness (`arbor-agent`) and the SQLite and PostgreSQL backends build on it.
//!
//! Features: `conformance` exposes the storage conformance suite for third-party backends;
//! `internals` exposes test and parity helpers and is not a stable API.

#![deny(missing_docs)]
#![deny(missing_debug_implementations)]

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
