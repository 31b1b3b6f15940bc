//! The two `custom` entries checkpoints write, and how to read the workspace state of a node
//! from them. pi skips `custom` entries when it builds a context, so these never reach a model.

use arbor_agent::session::{EntryKind, SessionEntry};
use arbor_checkpoint::{Change, Checkpoint};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{CliError, Result};

/// `customType` of a capture.
pub const CHECKPOINT_TYPE: &str = "arbor.checkpoint";
/// `customType` of a restore.
pub const RESTORE_TYPE: &str = "arbor.workspace_restore";
/// At most this many changed paths are stored per checkpoint entry (`changedCount` has all).
pub const MAX_RECORDED_CHANGES: usize = 200;

/// `data` of an `arbor.checkpoint` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointRecord {
    #[serde(flatten)]
    pub checkpoint: Checkpoint,
    /// Paths changed since the previous checkpoint on the path (at most
    /// [`MAX_RECORDED_CHANGES`]).
    pub changed: Vec<Change>,
    /// How many paths changed in all.
    pub changed_count: usize,
    /// What made the capture: `turn_start`, `tool_batch`, `before_restore` or `manual`.
    pub trigger: String,
}

/// `data` of an `arbor.workspace_restore` entry: the workspace moved from `from` (captured just
/// before) to `to`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreRecord {
    pub from: Checkpoint,
    pub to: Checkpoint,
    /// The entry whose checkpoint was restored (`None`: a checkpoint given directly, e.g. undo).
    pub to_entry: Option<String>,
    /// `code` or `both`.
    pub mode: String,
}

/// An entry that fixes the workspace state of itself and its descendants.
#[derive(Debug, Clone, PartialEq)]
pub enum StateMarker {
    Checkpoint(CheckpointRecord),
    Restore(RestoreRecord),
}

impl StateMarker {
    /// The state the workspace is in from this entry on.
    pub fn state(&self) -> &Checkpoint {
        match self {
            StateMarker::Checkpoint(c) => &c.checkpoint,
            StateMarker::Restore(r) => &r.to,
        }
    }

    /// Reads a marker from an entry; `Ok(None)` for every other entry. A marker whose data
    /// does not parse is an error naming the entry (it would silently hide a state otherwise).
    pub fn of(entry: &SessionEntry) -> Result<Option<StateMarker>> {
        let EntryKind::Custom(custom) = &entry.kind else {
            return Ok(None);
        };
        let parse = |data: &Option<Value>| -> Result<Value> {
            data.clone().ok_or_else(|| {
                CliError::Workspace(format!(
                    "entry {}: {} entry has no data",
                    entry.id, custom.custom_type
                ))
            })
        };
        let bad = |e: serde_json::Error| {
            CliError::Workspace(format!(
                "entry {}: {} data is not valid: {e}",
                entry.id, custom.custom_type
            ))
        };
        match custom.custom_type.as_str() {
            CHECKPOINT_TYPE => serde_json::from_value(parse(&custom.data)?)
                .map(|r| Some(StateMarker::Checkpoint(r)))
                .map_err(bad),
            RESTORE_TYPE => serde_json::from_value(parse(&custom.data)?)
                .map(|r| Some(StateMarker::Restore(r)))
                .map_err(bad),
            _ => Ok(None),
        }
    }
}
