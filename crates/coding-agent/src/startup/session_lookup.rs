//! Where the session a run asks for lives: the session folder and its layout, the PostgreSQL
//! store, a session named by path, id or id prefix, and the code state of a fork point.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_agent::session::{
    JsonlRepository, Session, SessionHeader, SessionRepository, SessionStorage,
};

use crate::checkpoints::Recorder;
use crate::cli::AgentArgs;
use crate::config::Settings;
use crate::error::CliError;
use crate::lookup::{looks_like_path, SessionDirs};
use arbor_tools as tools;

/// The directory sessions go to and whether it is a per-cwd layout (`false` for an override,
/// whose files sit directly in it).
pub(super) fn session_location(
    a: &AgentArgs,
    global_dir: Option<&Path>,
    settings: &Settings,
    cwd: &Path,
    home: &Path,
) -> (PathBuf, bool) {
    if let Some(d) = global_dir {
        return (d.to_path_buf(), false);
    }
    if let Some(d) = std::env::var_os("ARBOR_SESSION_DIR").filter(|v| !v.is_empty()) {
        return (
            PathBuf::from(tools::path::expand(&d.to_string_lossy())),
            false,
        );
    }
    if let Some(d) = settings.session_dir(cwd) {
        return (d, false);
    }
    let _ = a;
    (home.join("sessions"), true)
}

/// The PostgreSQL store for the agent's session, if any (DECISIONS §24.13): `--session-store`,
/// else the `sessionStore` setting unless a session folder was named explicitly
/// (`--session-dir` or `ARBOR_SESSION_DIR`), which wins over a setting.
pub(super) fn session_store_url(
    a: &AgentArgs,
    global_dir: Option<&Path>,
    settings: &Settings,
) -> Option<String> {
    if let Some(url) = &a.session_store {
        return Some(url.clone());
    }
    let dir_named = global_dir.is_some()
        || std::env::var_os("ARBOR_SESSION_DIR").is_some_and(|v| !v.is_empty());
    if dir_named {
        return None;
    }
    settings.session_store()
}

/// The newest session file (by mtime) of `dir` whose header cwd is `cwd` and that holds a user
/// or assistant message (DECISIONS §29.5: `-c` passes over files of starts that never reached
/// a prompt).
pub(super) fn newest_in(dir: &Path, cwd: &str, check_cwd: bool) -> Option<PathBuf> {
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let Ok(meta) = e.metadata() else { continue };
        let Ok(mtime) = meta.modified() else { continue };
        if check_cwd
            && crate::lookup::read_header(&p)
                .map(|h| h.cwd != cwd)
                .unwrap_or(true)
        {
            continue;
        }
        found.push((mtime, p));
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found
        .into_iter()
        .map(|(_, p)| p)
        .find(|p| arbor_agent::session::jsonl::holds_conversation(p))
}

pub(super) fn missing_cwd(header: &SessionHeader, file: &Path, cwd: &Path) -> Result<(), CliError> {
    if !header.cwd.is_empty() && !Path::new(&header.cwd).is_dir() {
        return Err(CliError::Startup(format!(
            "Stored session working directory does not exist: {}\nSession file: {}\nCurrent working directory: {}",
            header.cwd,
            file.display(),
            cwd.display()
        )));
    }
    Ok(())
}

/// The code state of the fork point (the source session's leaf) for `--fork --restore`,
/// checked restorable: errors when checkpoints are off, when no checkpoint is at or above the
/// leaf, when the repository is mid-merge/rebase or the objects are gone.
pub(super) async fn fork_point_state(
    repo: &JsonlRepository,
    source: &Path,
    cwd: &Path,
    settings: &arbor_checkpoint::CheckpointSettings,
    home: &Path,
) -> Result<(Option<String>, arbor_checkpoint::Checkpoint), CliError> {
    let storage = repo.open(&source.display().to_string()).await?;
    let source_id = storage.header().await?.id;
    let session = Session::new(Arc::new(storage));
    let leaf = session.leaf_id().await?;
    let Some((entry, state)) = crate::checkpoints::state_of(&session, leaf.as_deref()).await?
    else {
        return Err(CliError::Workspace(format!(
            "--restore: {} has no workspace checkpoint at or above its leaf {}; only the conversation can be forked",
            source.display(),
            leaf.as_deref().unwrap_or("(empty session)")
        )));
    };
    let Some(recorder) = Recorder::open(cwd, &source_id, settings, home)? else {
        return Err(CliError::Workspace(
            "--restore needs workspace checkpoints, and settings.json checkpoints.enabled is false"
                .into(),
        ));
    };
    recorder.check_restorable(&state).await?;
    Ok((Some(entry), state))
}

/// A session by path, id or id prefix: the project's sessions first, then every project.
pub(super) fn find_session(
    arg: &str,
    dir: &Path,
    layout: bool,
    cwd: &Path,
) -> Result<PathBuf, CliError> {
    if looks_like_path(arg) {
        let p = tools::path::resolve(arg, cwd);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(CliError::Startup(format!(
                "No session found matching '{arg}'"
            )))
        };
    }
    let dirs = if layout {
        SessionDirs::Layout {
            root: dir.to_path_buf(),
        }
    } else {
        SessionDirs::Flat {
            dir: dir.to_path_buf(),
        }
    };
    dirs.find(arg, None).map_err(|e| match e {
        CliError::NotFound(_) => CliError::Startup(format!("No session found matching '{arg}'")),
        other => other,
    })
}

pub(super) fn find_in_project(project_dir: &Path, id: &str) -> Option<PathBuf> {
    let entries = std::fs::read_dir(project_dir).ok()?;
    entries.flatten().map(|e| e.path()).find(|p| {
        crate::lookup::session_id_of(p).as_deref() == Some(id)
            || crate::lookup::read_header(p)
                .map(|h| h.id == id)
                .unwrap_or(false)
    })
}
