//! MCP servers (Model Context Protocol) on the official Rust SDK, `rmcp`: `mcp.json` files
//! ([`config`]), one live server ([`connection`]; streamable HTTP through [`http_client`]),
//! the servers of a run started in the background ([`manager`]), their tools as agent tools
//! under collision-free names ([`tool`], [`names`]) and the `arbor mcp` commands
//! ([`commands`]). DECISIONS §33.

pub mod commands;
pub mod config;
pub mod connection;
pub mod gate;
pub mod http_client;
pub mod manager;
pub mod names;
pub mod panel;
pub mod tool;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use config::{ConfigFiles, Diagnostic, LoadedConfig, ServerConfig, Transport};
pub use manager::{McpManager, ServerState, ServerStatus};

/// What can go wrong with an MCP server or its configuration.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {message}", .path.display())]
    Invalid { path: PathBuf, message: String },
    #[error("cannot start \"{command}\" for MCP server \"{server}\": {source}")]
    Spawn {
        server: String,
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("MCP server \"{server}\" failed to start: {message}")]
    Handshake { server: String, message: String },
    #[error("MCP server \"{server}\" did not answer within {} s ({what})", .after.as_secs_f64())]
    Timeout {
        server: String,
        what: &'static str,
        after: Duration,
    },
    #[error("no MCP server named \"{server}\"")]
    UnknownServer { server: String },
    #[error("MCP server \"{server}\" is disabled (/mcp enable {server})")]
    Disabled { server: String },
    #[error("MCP server \"{server}\" is not available: {message}")]
    Unavailable { server: String, message: String },
    #[error("MCP tool \"{tool}\" on server \"{server}\" failed: {message}")]
    Call {
        server: String,
        tool: String,
        message: String,
    },
}

/// The user's home directory (pi's files live under it).
fn user_home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// Reads the standard `mcp.json` files. `trusted`: whether the project's own files may be
/// used (the project-trust gate decides; DECISIONS §33.8).
pub fn load_standard(arbor_home: &Path, cwd: &Path, trusted: bool) -> LoadedConfig {
    let files = ConfigFiles::standard(arbor_home, user_home().as_deref(), cwd, trusted);
    config::load(&files, &|v| std::env::var(v).ok())
}

/// The run's servers, configured and started in the background: returns at once. `--no-mcp`
/// callers do not call this. `start_timeout` bounds each server's start and the wait of a
/// prompt for servers still starting (`mcpStartTimeoutMs`).
pub fn start(arbor_home: &Path, cwd: &Path, trusted: bool, start_timeout: Duration) -> McpManager {
    let loaded = load_standard(arbor_home, cwd, trusted);
    let manager = McpManager::new(loaded, cwd.to_path_buf(), start_timeout);
    manager.start_all();
    manager
}
