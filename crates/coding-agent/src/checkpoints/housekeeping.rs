//! Pruning checkpoints (DECISIONS §27.8): those of sessions whose files are gone, and those
//! beyond `checkpoints.maxPerSession` / `maxAgeDays` — on demand, and automatically at start
//! at most once per `autoPruneHours` (DECISIONS §27.14).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use arbor_agent::session::{JsonlRepository, SessionRepository};
use arbor_checkpoint::{CheckpointSettings, PrunePolicy, Pruned, Workspace};

use crate::error::{CliError, Result};

/// Prunes the checkpoint store that `dir` uses (its git repository, or the snapshot store).
/// A session counts as alive when any session file under `sessions` carries its id — a
/// session may live in another cwd folder than `dir`'s (a subdirectory of the repository).
/// Sessions that could not be read are kept alive (their id comes from the file name): a
/// broken file is no reason to drop its code.
pub async fn prune(
    dir: &Path,
    sessions: &JsonlRepository,
    settings: &CheckpointSettings,
    arbor_home: &Path,
) -> Result<Pruned> {
    let listing = sessions.list().await?;
    let mut alive: HashSet<String> = listing.sessions.into_iter().map(|s| s.id).collect();
    alive.extend(listing.skipped.into_iter().filter_map(|(location, _)| {
        Path::new(&location)
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.rsplit('_').next())
            .map(str::to_string)
    }));
    let (dir, home, settings) = (
        dir.to_path_buf(),
        arbor_home.to_path_buf(),
        settings.clone(),
    );
    tokio::task::spawn_blocking(move || -> Result<Pruned> {
        // The id only names this process's private index; pruning writes none.
        let ws = Workspace::open(&dir, "housekeeping", &settings, &home)?;
        let policy = PrunePolicy::from_settings(&settings);
        Ok(ws.prune(&|id: &str| alive.contains(id), &policy)?)
    })
    .await
    .map_err(|e| CliError::Workspace(format!("prune task failed: {e}")))?
}

/// `checkpoints` from `<arbor_home>/settings.json` (absent file → defaults). A file that does
/// not parse is an error naming it.
pub fn load_settings(arbor_home: &Path) -> Result<CheckpointSettings> {
    let path = arbor_home.join("settings.json");
    // Through the bounded reader (DECISIONS §30.3), like every settings read.
    let Some(file) =
        arbor_tools::files::read_bounded(&path, arbor_tools::files::FileKind::SETTINGS)?
    else {
        return Ok(CheckpointSettings::default());
    };
    let text = file.text();
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| CliError::Workspace(format!("{}: {e}", path.display())))?;
    Ok(CheckpointSettings::from_settings(&value)?)
}

/// The file whose mtime says when [`auto_prune`] last ran for a directory.
fn stamp_path(arbor_home: &Path, dir: &Path) -> PathBuf {
    let key = arbor_ai::transform::short_hash(&dir.display().to_string());
    arbor_home
        .join("checkpoints")
        .join(format!("last-prune-{key}"))
}

/// Prunes `dir`'s store when `checkpoints.autoPruneHours` allows (> 0, and that long since the
/// last automatic prune of this store, as of `now`); `None` when it was not due. The stamp is
/// written before pruning, so a failing prune is not retried on every start.
pub async fn auto_prune(
    dir: &Path,
    sessions: &JsonlRepository,
    settings: &CheckpointSettings,
    arbor_home: &Path,
    now: SystemTime,
) -> Result<Option<Pruned>> {
    if !settings.enabled || settings.auto_prune_hours == 0 {
        return Ok(None);
    }
    // Keyed by directory: two directories of one repository each prune once per interval,
    // which costs a second `for-each-ref` and nothing else.
    let stamp = stamp_path(arbor_home, dir);
    let interval = Duration::from_secs(settings.auto_prune_hours * 3600);
    if let Ok(meta) = std::fs::metadata(&stamp) {
        if let Ok(last) = meta.modified() {
            if now.duration_since(last).is_ok_and(|age| age < interval) {
                return Ok(None);
            }
        }
    }
    if let Some(parent) = stamp.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| CliError::io(parent.display().to_string(), e))?;
    }
    let file =
        std::fs::File::create(&stamp).map_err(|e| CliError::io(stamp.display().to_string(), e))?;
    file.set_modified(now)
        .map_err(|e| CliError::io(stamp.display().to_string(), e))?;
    prune(dir, sessions, settings, arbor_home).await.map(Some)
}
