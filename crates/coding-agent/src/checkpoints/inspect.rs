//! Reading checkpoints back for `arbor session checkpoints` and `arbor session diff`.

use std::path::Path;

use arbor_agent::session::{Session, SessionEntry};
use arbor_checkpoint::{Checkpoint, CheckpointSettings, Workspace};

use super::record::StateMarker;
use crate::error::{CliError, Result};

/// One marker on the active path, root first.
#[derive(Debug, Clone, PartialEq)]
pub struct PathMarker {
    pub entry_id: String,
    pub timestamp: String,
    pub marker: StateMarker,
}

/// Every checkpoint and restore entry on the active path (root to leaf).
pub async fn along_active_path(session: &Session) -> Result<Vec<PathMarker>> {
    let mut out = Vec::new();
    for entry in session.ancestry(None).await? {
        if let Some(marker) = StateMarker::of(&entry)? {
            out.push(PathMarker {
                entry_id: entry.id.clone(),
                timestamp: entry.timestamp.clone(),
                marker,
            });
        }
    }
    Ok(out)
}

/// The state of a node: the nearest marker at or above it.
pub async fn state_of_node(session: &Session, node: &str) -> Result<(String, Checkpoint)> {
    let mut cursor = Some(node.to_string());
    while let Some(id) = cursor {
        let entry: SessionEntry = session
            .get_entry(&id)
            .await?
            .ok_or_else(|| CliError::NotFound(format!("entry {id} not found in the session")))?;
        if let Some(marker) = StateMarker::of(&entry)? {
            return Ok((entry.id, marker.state().clone()));
        }
        cursor = entry.parent_id;
    }
    Err(CliError::Workspace(format!(
        "no workspace checkpoint at or above entry {node}"
    )))
}

/// The unified diff between the code of two nodes, read from the store of `cwd` (the
/// session's working directory).
pub async fn diff_nodes(
    session: &Session,
    cwd: &Path,
    session_id: &str,
    arbor_home: &Path,
    from: &str,
    to: &str,
) -> Result<String> {
    let (_, a) = state_of_node(session, from).await?;
    let (_, b) = state_of_node(session, to).await?;
    let (cwd, sid, home) = (
        cwd.to_path_buf(),
        session_id.to_string(),
        arbor_home.to_path_buf(),
    );
    tokio::task::spawn_blocking(move || -> Result<String> {
        if !cwd.is_dir() {
            return Err(CliError::NotFound(format!(
                "the session's working directory {} does not exist",
                cwd.display()
            )));
        }
        let ws = Workspace::open(&cwd, &sid, &CheckpointSettings::default(), &home)?;
        Ok(ws.diff(&a, &b)?)
    })
    .await
    .map_err(|e| CliError::Workspace(format!("diff task failed: {e}")))?
}
