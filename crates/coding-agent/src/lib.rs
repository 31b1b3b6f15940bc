//! `arbor-coding-agent`: the `arbor` app — an interactive coding agent over `arbor-agent`'s
//! harness and a session store, with the same agent reachable four ways: the terminal UI
//! ([`tui`]), print mode (`-p`), JSON events (`--mode json`) and an RPC protocol on stdin and
//! stdout (`--mode rpc`), plus the `arbor session …` commands that inspect and manage stored
//! sessions.
//!
//! Where things are:
//! - [`app`]: the entry point (`main`): arguments, then a run mode or a session command.
//! - `startup`: builds what every mode drives (settings, credentials, model, session, tools,
//!   system prompt, harness); `modes`: print, JSON and RPC; [`tui`]: the terminal UI.
//! - `command`: the one command layer (typed commands, replies and errors) RPC runs and whose
//!   rules (session stats, model and thinking cycling) the TUI shares; `policy`: retries and
//!   automatic compaction around a prompt.
//! - the agent's tools (read, write, edit, bash, grep, find, ls) and the process groups of the
//!   commands they and the user run come from `arbor-tools`;
//!   [`checkpoints`]: workspace checkpoints beside the session; [`mcp`]: MCP servers' tools;
//!   [`hooks`]: commands run on the harness's events.
//! - `session_commands`, [`store`], `render`: the `arbor session` commands, opening stores
//!   and rendering sessions as text; [`config`]: settings files.
//! - [`trust`]: project trust, the gate every loader of project resources asks;
//!   `resources`: skills and prompt templates.
//!
//! Only what the tests and benches use is public; everything else is `pub(crate)`.

pub mod app;
pub(crate) mod auth;
pub mod checkpoints;
pub(crate) mod cli;
pub(crate) mod command;
pub mod config;
pub mod error;
pub(crate) mod export;
pub mod hooks;
pub(crate) mod initial_prompts;
pub(crate) mod key_command;
pub(crate) mod lookup;
pub mod mcp;
pub(crate) mod models_json;
pub(crate) mod modes;
pub mod notices;
pub mod onboarding;
pub(crate) mod pgstore;
pub(crate) mod policy;
pub(crate) mod provider;
pub(crate) mod render;
pub mod resources;
pub(crate) mod scope;
pub mod secrets;
pub(crate) mod session_commands;
pub(crate) mod session_import;
pub mod session_search;
pub(crate) mod settings_edit;
pub(crate) mod shutdown;
pub(crate) mod startup;
pub mod store;
pub(crate) mod summaries;
pub mod trust;
pub mod tui;
pub(crate) mod user_bash;

pub use error::{CliError, Result};
