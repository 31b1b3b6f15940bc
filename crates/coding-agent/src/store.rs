//! The bridge to the session layer (`arbor_agent::session` and `arbor_agent::context`):
//! opening files, projecting contexts, building trees, listing, forking and migrating. Keeping
//! every call into the session layer here leaves the commands and renderers independent of its
//! exact API.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_agent::context::{expected_json, ContextOptions};
use arbor_agent::message::AgentMessage;
use arbor_agent::session::{ForkPosition, Session, SessionInfo, SessionStorage};
use serde_json::Value;

use crate::error::{CliError, Result};
use crate::lookup::SessionDirs;
use crate::render::transcript::TranscriptHeader;
use crate::render::tree;

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

/// pi's per-cwd folder name (`--srv-proj--`) under a layout root.
pub fn cwd_folder_name(cwd: &str) -> String {
    arbor_agent::session::jsonl::layout::encode_cwd(cwd)
}

/// Opens a session file read-only (v1/v2 files are migrated in memory, nothing is written).
async fn open(path: &Path) -> Result<Session> {
    // TEMPORARY (development only, until the JSONL backend lands): v3 files via memory.
    let text = std::fs::read_to_string(path).map_err(|e| CliError::io(path.display().to_string(), e))?;
    let storage = arbor_agent::session::MemoryStorage::new("/tmp");
    for (i, line) in text.lines().enumerate().skip(1) {
        let entry = arbor_agent::session::SessionEntry::from_json(line).map_err(|m| {
            arbor_agent::SessionError::Line { file: path.display().to_string(), line: i + 1, message: m }
        })?;
        storage.append_entry(entry).await?;
    }
    Ok(Session::new(Arc::new(storage)))
}

/// Checks `--leaf` up front so a typo is reported as such rather than as an empty context.
async fn leaf_or_current(session: &Session, leaf: Option<&str>) -> Result<Option<String>> {
    match leaf {
        Some(id) => {
            if session.get_entry(id).await?.is_none() {
                return Err(CliError::NotFound(format!(
                    "no entry '{id}' in {}",
                    session.storage().location()
                )));
            }
            Ok(Some(id.to_string()))
        }
        None => Ok(session.leaf_id().await?),
    }
}

/// The `--json` shape: `{"ok":true,"leafId","model","thinkingLevel","activeToolNames","llm"}`.
pub async fn context_json(path: &Path, leaf: Option<&str>) -> Result<Value> {
    let session = open(path).await?;
    let leaf = leaf_or_current(&session, leaf).await?;
    let context = session
        .build_context_at(leaf.as_deref(), &ContextOptions::default())
        .await?;
    Ok(expected_json(&context, leaf.as_deref()))
}

/// The projected (pre-`convert_to_llm`) messages plus the derived state, for the transcript.
pub async fn load_context(path: &Path, leaf: Option<&str>) -> Result<LoadedContext> {
    let session = open(path).await?;
    let leaf = leaf_or_current(&session, leaf).await?;
    let context = session
        .build_context_at(leaf.as_deref(), &ContextOptions::default())
        .await?;
    let header = session.storage().header().await?;
    Ok(LoadedContext {
        header: TranscriptHeader {
            session_id: header.id,
            location: session.storage().location(),
            leaf_id: leaf,
            model: context
                .model
                .as_ref()
                .map(|m| format!("{}/{}", m.provider, m.model_id)),
            thinking_level: context.thinking_level.clone(),
            active_tools: context.active_tool_names.clone(),
        },
        messages: context.messages,
    })
}

pub async fn render_tree(path: &Path) -> Result<String> {
    let session = open(path).await?;
    let tree = session.tree().await?;
    Ok(tree::render(&tree))
}

pub async fn list(dirs: &SessionDirs, cwd: &str, all: bool) -> Result<Listing> {
    let _ = (dirs, cwd, all);
    Err(CliError::Usage("the JSONL session store is not wired in yet".into()))
}

pub async fn fork(
    path: &Path,
    entry: Option<&str>,
    at: bool,
    position: ForkPosition,
    target_dir: Option<PathBuf>,
) -> Result<Forked> {
    let _ = (path, entry, at, position, target_dir);
    Err(CliError::Usage("the JSONL session store is not wired in yet".into()))
}

pub async fn migrate(path: &Path) -> Result<Migrated> {
    let _ = path;
    Err(CliError::Usage("the JSONL session store is not wired in yet".into()))
}

#[allow(dead_code)]
fn _storage_is_object_safe(_: Arc<dyn SessionStorage>) {}
