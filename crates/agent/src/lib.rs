//! `arbor-agent`: the agent loop, the harness that runs it over a session, compaction and
//! branch summaries.
//!
//! Sessions themselves (entries, storage, projection) live in `arbor-session`, re-exported here
//! as [`session`] so a harness user needs one dependency. Layering: depends on `arbor-ai` for
//! messages and streaming and on `arbor-session` for the log; no HTTP client or terminal detail.

pub mod agent;
pub mod branch_summary;
pub mod compaction;
pub mod harness;
pub mod prelude;

/// The attribute for implementing [`agent::AgentTool`] and [`agent::TypedTool`] (their methods
/// are `async`).
pub use async_trait::async_trait;
/// The schema derivation [`agent::TypedTool`] uses (its `JsonSchema` derive), at the version this
/// crate builds with.
pub use schemars;

/// The session crate, whole: entries, storage backends, repositories, projection.
pub use arbor_session as session;
pub use arbor_session::{context, error, ids, message, time};
pub use arbor_session::{AgentMessage, Result, SessionError};
