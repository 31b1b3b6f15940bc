//! `arbor-agent`: sessions as append-only entry trees, their storage, context projection,
//! compaction and the agent loop.
//!
//! Layering: depends on `arbor-ai` for message types only; storage, projection and compaction
//! hold no provider or terminal details.

pub mod agent;
pub mod branch_summary;
pub mod compaction;
pub mod context;
pub mod error;
pub mod harness;
pub mod ids;
pub mod message;
pub mod session;
/// Timestamps (re-exported from `arbor-ai`, where message timestamps live).
pub use arbor_ai::time;

pub use error::{Result, SessionError};
pub use message::AgentMessage;
