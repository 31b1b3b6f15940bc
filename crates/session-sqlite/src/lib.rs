//! SQLite session storage for Arbor: many sessions in one database file.
//!
//! Each entry is one row holding the exact JSON line pi would write, with `parent_id`, `type`
//! and `target_id` copied into indexed columns; a `session_state` row per session materializes
//! the leaf, name, counts, statistics and latest compaction and is updated in the same
//! transaction as the entry (one transaction per append, WAL journal). See docs/ARCHITECTURE.md.
//!
//! Kept in its own crate so users of `arbor-session` who do not want a C build don't pay for it.
//!
//! ```no_run
//! # async fn demo() -> arbor_session::Result<()> {
//! use arbor_session::{CreateOptions, EntryKind, SessionRepository, SessionStorage};
//! use arbor_session_sqlite::SqliteRepository;
//!
//! let repo = SqliteRepository::open("sessions.db").await?;
//! let session = repo
//!     .create(CreateOptions::new("/work/project"))
//!     .await?;
//! let user: arbor_session::AgentMessage = serde_json::from_value(serde_json::json!(
//!     {"role": "user", "content": "hello", "timestamp": 1}
//! ))
//! .map_err(|e| arbor_session::SessionError::InvalidEntry(e.to_string()))?;
//! let entry = session.append(EntryKind::message(user).into()).await?;
//! session.save_point().await?; // turn end: everything so far is durable
//! let reopened = repo.open(&session.location()).await?;
//! assert_eq!(reopened.leaf_id().await?, Some(entry.id));
//! # Ok(()) }
//! ```

#![deny(missing_docs)]
#![deny(missing_debug_implementations)]

mod append;
mod conn;
mod db;
mod error;
mod keys;
mod paths;
mod reads;
mod repository;
mod rows;
/// Public for the schema version a database is migrated to (tests and tools check stores
/// against it); everything else is reached through the three types below.
pub mod schema;
mod sessions;
mod storage;
mod writer_lock;

pub use db::{SqliteOptions, Synchronous};
pub use repository::SqliteRepository;
pub use storage::SqliteStorage;
