//! The interactive terminal UI (coding-agent.md §6, §8): ratatui + crossterm on top of the
//! [`AgentHarness`](arbor_agent::harness::AgentHarness) and its events only — no session or
//! provider logic lives here.
//!
//! The UI is split into parts that know nothing of the terminal: each one is a plain state
//! machine (`handle_key` → outcome) plus a `render` into a ratatui `Buffer`, so every frame and
//! every key sequence is testable with `TestBackend` and no terminal.
//!
//! - [`theme`]: the styles, with `NO_COLOR` honoured in one place.
//! - [`component`]: the contract overlays share (what a key did to them).
//! - [`list`]: the selection and scroll position every list overlay shares.
//! - [`tree`]: the `/tree` navigator; [`summarize`]: the prompt after a choice there
//!   (restore mode, "Summarize branch?") and the summary's progress.
//! - [`picker`]: the session picker (`/resume`, `-r`) and the model picker (`/model`).

pub mod component;
pub mod list;
pub mod picker;
pub mod summarize;
pub mod theme;
pub mod tree;
