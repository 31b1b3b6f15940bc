//! Child processes arbor starts on the user's behalf — the `bash` tool, `!cmd` in the TUI,
//! RPC `bash`, `!command` keys — run in a process group of their own, and every way a run
//! ends ends the whole group: SIGTERM, then SIGKILL after [`KILL_GRACE`] (DECISIONS §28.1).
//! [`group`] holds one group and its drop guard, [`registry`] the groups still alive so
//! arbor's own exit can end them, [`probe`] whether a group still runs, [`helper`] the bounded run of a short helper command.

pub mod group;
pub mod helper;
pub mod probe;
pub mod registry;

use std::time::Duration;

/// How long a group has, after SIGTERM, to exit before SIGKILL (DECISIONS §28.1).
pub const KILL_GRACE: Duration = Duration::from_secs(2);

pub use group::{Ending, ProcessGroup};
pub use helper::{run_helper, HelperError};
pub use registry::end_all;
