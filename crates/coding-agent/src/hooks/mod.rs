//! Hooks: shell commands run on the harness's events (pi's event names), the event as JSON on
//! stdin and an optional JSON reply on stdout that can block or change a tool call, replace a
//! tool result, or cancel a compaction or a tree navigation. Configured under `hooks` in
//! `settings.json` ([`config`]), run by [`runner`], attached to the harness by [`harness`].
//! DECISIONS §33.10–§33.12.

pub mod config;
pub mod harness;
pub mod runner;

pub use config::{Hook, HookEvent, HookSet};
pub use harness::CommandHooks;
pub use runner::HookError;
