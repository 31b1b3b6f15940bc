//! `arbor-coding-agent`: the `arbor` command-line app. For now its commands inspect and manage
//! sessions (`arbor session ...`); the interactive agent builds on the same parts.

pub mod app;
pub mod auth;
pub mod checkpoints;
pub mod cli;
pub mod command;
pub mod config;
pub mod error;
pub mod export;
pub mod initial_prompts;
pub mod lookup;
pub mod modes;
pub mod pgstore;
pub mod policy;
pub mod prompt;
pub mod provider;
pub mod render;
pub mod scope;
pub mod session_commands;
pub mod shutdown;
pub mod startup;
pub mod store;
pub mod summaries;
pub mod tools;
pub mod tui;
pub mod user_bash;

pub use error::{CliError, Result};
