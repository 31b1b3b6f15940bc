//! PostgreSQL session storage for Arbor: sessions in a database server that many machines
//! reach at once (hosted agents, CI bots, a team sharing sessions).
//!
//! Each entry is one row whose `payload` (`json`) is the exact JSON line pi would write, with
//! `parent_id`, `type`, `role` and `target_id` copied into columns (so no read parses JSON on
//! the server; only the lookups a read path makes are indexed); the `sessions` row
//! materializes leaf, name, counts, statistics and latest compaction and is updated in the same
//! statement as the entry insert. One writer per session is enforced by the server with an
//! advisory lock held on the writer's own connection (DECISIONS §24). See docs/ARCHITECTURE.md.
//!
//! ```no_run
//! # async fn demo() -> arbor_session::Result<()> {
//! use arbor_session::{CreateOptions, SessionRepository, SessionStorage};
//! use arbor_session_postgres::PostgresRepository;
//!
//! let repo = PostgresRepository::connect("postgres://arbor@db.internal/agents").await?;
//! let session = repo
//!     .create(CreateOptions::new("/work/project"))
//!     .await?;
//! session.save_point().await?; // turn end: every append so far is on the server's disk
//! println!("{}", session.location());
//! # Ok(()) }
//! ```

#![deny(missing_docs)]
#![deny(missing_debug_implementations)]

mod config;
mod connector;
mod db;
mod envelopes;
mod listing;
mod ops;
mod repository;
/// Public for the schema version, the migrations as shipped (tests build older stores from
/// them) and the statements whose query plans tests check.
pub mod schema;
/// Throwaway schemas for tests, benchmarks and the conformance run.
pub mod scratch;
mod sid;
mod state;
mod storage;
mod transfer;
mod writer;

pub use config::{is_postgres_url, PostgresOptions, Synchronous};
pub use listing::{ListCursor, ListPage, ListQuery};
pub use repository::PostgresRepository;
pub use storage::PostgresStorage;
pub use transfer::Imported;
