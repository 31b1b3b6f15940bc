//! The app's one command layer: typed [`Command`]s (deserialized from pi's RPC JSON shapes),
//! typed [`Reply`]s (serialized to the same JSON), one [`execute`] over the harness and the
//! session, and a [`CommandError`] whose texts are the answers clients read. RPC mode parses a
//! line into a command, executes it and serializes the reply. The TUI's slash commands and keys
//! do not go through [`execute`] (its effects own tasks, overlays and notices) but call the same
//! code for every operation both clients perform: [`operations`] (switching the model, parsing
//! and cycling the thinking level, compaction, the last assistant text, HTML export),
//! [`set_session_name`], [`session_stats`] (the counts) and [`models`] (the usable models and
//! the cycling order).
//! [`system_message`] is pi's `role: "system"` message, synthesized for RPC and JSON clients.
//! Each client only maps the typed result or [`CommandError`] to its own output.

mod error;
mod execute;
pub mod models;
pub mod operations;
mod reply;
mod request;
pub mod session_stats;
pub mod system_message;

pub use error::CommandError;
pub use execute::{execute, set_session_name, CommandHost};
pub use reply::*;
pub use request::{Command, Gate};
