//! Text renderings of sessions for the terminal. Pure functions from session data to `String`,
//! so they are snapshot-tested without touching files.

pub mod checkpoints;
pub mod list;
pub mod text;
pub mod transcript;
pub mod tree;
