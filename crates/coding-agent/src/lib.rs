//! `arbor-coding-agent`: the `arbor` command-line app. For now its commands inspect and manage
//! sessions (`arbor session ...`); the interactive agent builds on the same parts.

pub mod app;
pub mod cli;
pub mod commands;
pub mod error;
pub mod lookup;
pub mod pgstore;
pub mod render;
pub mod store;

pub use error::{CliError, Result};
