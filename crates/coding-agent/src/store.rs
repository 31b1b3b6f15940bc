//! The bridge to the session layer (`arbor_agent::session`): opening files, projecting
//! contexts, building trees, listing, forking and migrating. Keeping every call into the
//! session layer here leaves the commands and renderers independent of its exact API.

use std::path::{Path, PathBuf};

use arbor_agent::message::AgentMessage;
use arbor_agent::session::{ForkPosition, SessionInfo};
use serde_json::Value;

use crate::error::{CliError, Result};
use crate::lookup::SessionDirs;
use crate::render::transcript::TranscriptHeader;

/// A projected context ready for the transcript renderer.
pub struct LoadedContext {
    pub header: TranscriptHeader,
    pub messages: Vec<AgentMessage>,
}

/// A listing with the place it came from, for "no sessions in ..." messages.
pub struct Listing {
    pub sessions: Vec<SessionInfo>,
    pub skipped: Vec<(String, String)>,
    pub scanned: String,
}

pub struct Forked {
    pub id: String,
    pub path: PathBuf,
}

pub struct Migrated {
    pub from_version: u32,
    /// `None` when the file was already current.
    pub backup: Option<PathBuf>,
}

fn pending() -> CliError {
    CliError::Usage("the session store is not wired in yet".into())
}

pub fn cwd_folder_name(cwd: &str) -> String {
    let _ = cwd;
    String::new()
}

pub async fn context_json(path: &Path, leaf: Option<&str>) -> Result<Value> {
    let _ = (path, leaf);
    Err(pending())
}

pub async fn load_context(path: &Path, leaf: Option<&str>) -> Result<LoadedContext> {
    let _ = (path, leaf);
    Err(pending())
}

pub async fn render_tree(path: &Path) -> Result<String> {
    let _ = path;
    Err(pending())
}

pub async fn list(dirs: &SessionDirs, cwd: &str, all: bool) -> Result<Listing> {
    let _ = (dirs, cwd, all);
    Err(pending())
}

pub async fn fork(
    path: &Path,
    entry: Option<&str>,
    at: bool,
    position: ForkPosition,
    target_dir: Option<PathBuf>,
) -> Result<Forked> {
    let _ = (path, entry, at, position, target_dir);
    Err(pending())
}

pub async fn migrate(path: &Path) -> Result<Migrated> {
    let _ = path;
    Err(pending())
}
