//! `settings.json` → `checkpoints { enabled, maxPerSession, maxSnapshotBytes, … }`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{CheckpointError, Result};

/// Checkpoint settings; every field is optional in the file (defaults: DECISIONS §27.8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CheckpointSettings {
    /// Capture at all (default true).
    pub enabled: bool,
    /// Checkpoints kept per session; older ones are pruned (default 200).
    pub max_per_session: usize,
    /// Checkpoints older than this many days are pruned (default 30; 0 = never by age).
    pub max_age_days: u64,
    /// A directory outside git whose non-ignored files exceed this is not snapshotted
    /// (default 50 MiB).
    pub max_snapshot_bytes: u64,
    /// … or that holds more files than this (default 10,000).
    pub max_snapshot_files: usize,
    /// Untracked files larger than this are left out of checkpoints and recorded as skipped
    /// (default 10 MiB; DECISIONS §27.41). Outside git every file counts as untracked.
    pub max_untracked_file_bytes: u64,
    /// Prune by the rules above when the app starts, at most once per `autoPruneHours`
    /// (default 24; 0 = only `arbor session prune-checkpoints` prunes).
    pub auto_prune_hours: u64,
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        CheckpointSettings {
            enabled: true,
            max_per_session: 200,
            max_age_days: 30,
            max_snapshot_bytes: 50 * 1024 * 1024,
            max_snapshot_files: 10_000,
            max_untracked_file_bytes: 10 * 1024 * 1024,
            auto_prune_hours: 24,
        }
    }
}

impl CheckpointSettings {
    /// Reads the `checkpoints` member of a parsed `settings.json` (absent → defaults). Errors
    /// name the offending key, e.g. `settings.json checkpoints.maxPerSession: invalid type…`.
    pub fn from_settings(settings: &Value) -> Result<Self> {
        match settings.get("checkpoints") {
            None | Some(Value::Null) => Ok(CheckpointSettings::default()),
            Some(value) => serde_path_to_error::deserialize(value).map_err(|e| {
                let path = e.path().to_string();
                CheckpointError::invalid(
                    format!("settings.json checkpoints.{path}"),
                    e.into_inner().to_string(),
                )
            }),
        }
    }
}
