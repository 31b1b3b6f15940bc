//! SQLite session storage for Arbor: many sessions in one database file.
//!
//! Each entry is one row holding the exact JSON line pi would write, with `parent_id`, `type`
//! and `target_id` copied into indexed columns; a `session_state` row per session materializes
//! the leaf, name, counts, statistics and latest compaction and is updated in the same
//! transaction as the entry (one transaction per append, WAL journal). See `docs/parts/sqlite.md`.
//!
//! Kept in its own crate so users of `arbor-agent` who do not want a C build don't pay for it.

mod db;
mod keys;
mod ops;
mod repository;
mod rows;
pub mod schema;
mod state;
mod storage;

pub use db::{SqliteOptions, Synchronous};
pub use repository::SqliteRepository;
pub use storage::SqliteStorage;
