//! The app's one command layer: typed [`Command`]s (deserialized from pi's RPC JSON shapes),
//! typed [`Reply`]s (serialized to the same JSON), one [`execute`] over the harness and the
//! session, and a [`CommandError`] whose texts are the answers clients read. RPC mode parses a
//! line into a command, executes it and serializes the reply; the TUI's slash commands and
//! keys share its rules through [`session_stats`] (stats), [`models`] (model and thinking
//! cycling) and [`set_session_name`].

mod error;
mod execute;
pub mod models;
mod reply;
mod request;
pub mod session_stats;

pub use error::CommandError;
pub use execute::{execute, set_session_name, CommandHost};
pub use reply::*;
pub use request::{Command, Gate};
