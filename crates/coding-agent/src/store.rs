//! The bridge to the session layer (`arbor_agent::session` and `arbor_agent::context`):
//! opening files, projecting contexts, building trees, listing, forking and migrating. Keeping
//! every call into the session layer here leaves the commands and renderers independent of its
//! exact API.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_agent::context::projection::build_session_context_from_window;
use arbor_agent::context::{ContextOptions, DerivedState, SessionContext};
use arbor_agent::message::AgentMessage;
use arbor_agent::session::jsonl::layout;
use arbor_agent::session::{
    ForkOptions, ForkPosition, JsonlRepository, JsonlStorage, SessionInfo, SessionRepository,
    SessionStorage,
};

use crate::error::{CliError, Result};
use crate::lookup::SessionDirs;
use crate::render::transcript::TranscriptHeader;
use crate::render::tree;

/// A projected context ready for the transcript renderer.
pub struct LoadedContext {
    pub header: TranscriptHeader,
    pub messages: Arc<Vec<AgentMessage>>,
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
    layout::encode_cwd(cwd)
}

/// The repository for this invocation's directories.
fn repository(dirs: &SessionDirs) -> JsonlRepository {
    match dirs {
        SessionDirs::Layout { root } => JsonlRepository::new(root.clone()),
        SessionDirs::Flat { dir } => JsonlRepository::flat(dir.clone()),
    }
}

/// A path argument the repository will not mistake for an id.
fn path_arg(path: &Path) -> String {
    let text = path.display().to_string();
    if crate::lookup::looks_like_path(&text) {
        text
    } else {
        format!("./{text}")
    }
}

/// Opens a session file read-only: no lock, nothing written (v1/v2 files are migrated in
/// memory only; a torn tail is reported by the store and left alone).
pub(crate) async fn open_storage(path: &Path) -> Result<JsonlStorage> {
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let storage = JsonlRepository::flat(dir)
        .open_read_only(&path_arg(path))
        .await?;
    if let Some(torn) = storage.report().await.torn_tail {
        // Not an error (DECISIONS §4.2): the rest of the file is intact. Say so on stderr.
        eprintln!(
            "arbor: warning: {} ends in an incomplete line ({} bytes at offset {}, ignored; \
             the next writable open moves them aside)",
            path.display(),
            torn.len,
            torn.offset
        );
    }
    Ok(storage)
}

async fn open(path: &Path) -> Result<arbor_agent::session::Session> {
    Ok(arbor_agent::session::Session::new(Arc::new(
        open_storage(path).await?,
    )))
}

/// Checks `--leaf` up front so a typo is reported as such rather than as an empty context.
pub(crate) async fn leaf_or_current(
    storage: &impl SessionStorage,
    leaf: Option<&str>,
) -> Result<Option<String>> {
    match leaf {
        Some(id) => {
            if storage.get_entry(id).await?.is_none() {
                return Err(CliError::NotFound(format!(
                    "no entry '{id}' in {}",
                    storage.location()
                )));
            }
            Ok(Some(id.to_string()))
        }
        None => Ok(storage.leaf_id().await?),
    }
}

/// The context at `leaf`, reading only what it shows. The messages come from the bounded
/// branch (from the newest compaction's boundary to the leaf: everything the window can
/// contain), the derived settings from the store's index walk over the full ancestry
/// (DECISIONS §3.2); `build_session_context_from_window` guarantees the same result as
/// projecting the whole ancestry, without parsing the summarized past (on a 100 MB session:
/// 99 entries parsed instead of 9,610).
pub(crate) async fn project(
    storage: &impl SessionStorage,
    leaf: Option<&str>,
) -> Result<SessionContext> {
    let window = storage.path_to_root_or_compaction(leaf).await?;
    let settings = storage.derived_settings(leaf).await?;
    let state = DerivedState::from_settings(settings);
    Ok(build_session_context_from_window(
        window,
        state,
        &ContextOptions::default(),
    ))
}

/// A projected context and the leaf it was projected at.
pub struct Projected {
    pub context: SessionContext,
    pub leaf: Option<String>,
}

/// The whole projected context of a session file (what `--json` printed before it streamed;
/// kept for callers that want the messages, and as the reference the streamed output is
/// checked against).
pub async fn context_json(path: &Path, leaf: Option<&str>) -> Result<Projected> {
    let storage = open_storage(path).await?;
    let leaf = leaf_or_current(&storage, leaf).await?;
    let context = project(&storage, leaf.as_deref()).await?;
    Ok(Projected { context, leaf })
}

/// `context --json` for a session file, streamed into `out` entry by entry (DECISIONS §25.100).
pub async fn write_context_json<W: std::io::Write + Send>(
    path: &Path,
    leaf: Option<&str>,
    out: W,
) -> Result<W> {
    let storage = open_storage(path).await?;
    write_projected_json(&storage, leaf, out).await
}

/// [`write_context_json`] for any open storage: `--leaf` is checked before anything is written.
pub(crate) async fn write_projected_json<W: std::io::Write + Send>(
    storage: &impl SessionStorage,
    leaf: Option<&str>,
    out: W,
) -> Result<W> {
    let leaf = leaf_or_current(storage, leaf).await?;
    // The serializer writes a few bytes at a time: a buffer in front of `out` turns that into
    // one write per 64 KiB, whatever `out` costs per call (DECISIONS §25.119).
    let buffered = std::io::BufWriter::with_capacity(1 << 16, out);
    let buffered =
        arbor_agent::context::write_context_json(storage, leaf.as_deref(), buffered).await?;
    buffered.into_inner().map_err(|e| {
        arbor_agent::SessionError::io(arbor_agent::context::stream::OUTPUT, e.into_error()).into()
    })
}

/// The projected (pre-`convert_to_llm`) messages plus the derived state, for the transcript.
pub async fn load_context(path: &Path, leaf: Option<&str>) -> Result<LoadedContext> {
    let storage = open_storage(path).await?;
    loaded(&storage, leaf).await
}

/// [`load_context`] for any open storage.
pub(crate) async fn loaded(
    storage: &impl SessionStorage,
    leaf: Option<&str>,
) -> Result<LoadedContext> {
    let leaf = leaf_or_current(storage, leaf).await?;
    let context = project(storage, leaf.as_deref()).await?;
    let header = storage.header().await?;
    Ok(LoadedContext {
        header: TranscriptHeader {
            session_id: header.id,
            location: storage.location(),
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

/// Builds the tree view of a session from its entries' row summaries (DECISIONS §25.80),
/// keeping only each row's text.
pub async fn tree_view(path: &Path) -> Result<tree::TreeView> {
    let storage = open_storage(path).await?;
    tree_view_of(storage).await
}

/// [`tree_view`] of any backend's session (the storage is dropped once the log is read).
pub async fn tree_view_of<S: SessionStorage>(storage: S) -> Result<tree::TreeView> {
    Ok(tree::TreeView::read(storage).await?)
}

/// Sessions of `cwd` (or of every directory with `all`), newest first.
pub async fn list(dirs: &SessionDirs, cwd: &str, all: bool) -> Result<Listing> {
    let repo = repository(dirs);
    let mut result = if all {
        repo.list().await?
    } else {
        repo.list_cwd(cwd).await?
    };
    result.sessions = with_conversation(result.sessions).await?;
    // The store counts entries only for files it reads whole (listing stays cheap on huge
    // stores); a line count gives the rest without parsing (same rule: non-blank lines after
    // the header).
    let missing: Vec<(usize, PathBuf)> = result
        .sessions
        .iter()
        .enumerate()
        .filter(|(_, s)| s.entry_count.is_none())
        .map(|(i, s)| (i, PathBuf::from(&s.location)))
        .collect();
    if !missing.is_empty() {
        let counts = tokio::task::spawn_blocking(move || {
            missing
                .into_iter()
                .map(|(i, path)| (i, count_entry_lines(&path).ok()))
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| CliError::Usage(format!("counting entries failed: {e}")))?;
        for (i, count) in counts {
            if let Some(session) = result.sessions.get_mut(i) {
                session.entry_count = count;
            }
        }
    }
    let scanned = match (dirs, all) {
        (SessionDirs::Layout { .. }, false) => repo.dir_for_cwd(cwd).display().to_string(),
        (SessionDirs::Flat { dir }, false) => format!("{} for {cwd}", dir.display()),
        (_, true) => dirs.describe(),
    };
    Ok(Listing {
        sessions: result.sessions,
        skipped: result.skipped,
        scanned,
    })
}

/// The sessions of a listing that hold a user or assistant message: a file without one is a
/// start that never reached a prompt, which `session list` and `/resume` pass over
/// (DECISIONS §29.5). A session whose first user text the listing found holds one already.
pub(crate) async fn with_conversation(sessions: Vec<SessionInfo>) -> Result<Vec<SessionInfo>> {
    tokio::task::spawn_blocking(move || {
        sessions
            .into_iter()
            .filter(|s| {
                s.first_message.is_some()
                    || arbor_agent::session::jsonl::holds_conversation(Path::new(&s.location))
            })
            .collect()
    })
    .await
    .map_err(|e| CliError::Usage(format!("listing sessions failed: {e}")))
}

/// Forks into `--session-dir` when given, else into `~/.arbor/sessions` under the source's
/// cwd. `at` without an entry forks at the source's current leaf (a clone of the active path).
pub async fn fork(
    dirs: &SessionDirs,
    path: &Path,
    entry: Option<&str>,
    position: ForkPosition,
) -> Result<Forked> {
    let source = path_arg(path);
    let entry_id = match (entry, position) {
        (Some(id), _) => Some(id.to_string()),
        (None, ForkPosition::At) => {
            let storage = open_storage(path).await?;
            match storage.leaf_id().await? {
                Some(leaf) => Some(leaf),
                None => {
                    return Err(CliError::Usage(format!(
                        "{} has no entries to fork at",
                        path.display()
                    )))
                }
            }
        }
        (None, ForkPosition::Before) => None,
    };
    let opts = {
        let mut o = ForkOptions::default();
        o.entry_id = entry_id;
        o.position = position;
        o
    };
    let forked = repository(dirs).fork(&source, opts).await?;
    let header = forked.header().await?;
    Ok(Forked {
        id: header.id,
        path: forked.path().to_path_buf(),
    })
}

/// What `arbor session fork --restore` did.
pub struct ForkRestore {
    /// The new session (`None` for `code`: nothing is forked).
    pub forked: Option<Forked>,
    /// The session the restore was recorded in, and the restore.
    pub restored: Option<(PathBuf, crate::checkpoints::RestoreReport)>,
}

/// [`fork`] that also (`both`) or only (`code`) moves the files of the session's working
/// directory to the fork point's checkpoint (DECISIONS §27.13). The fork point is where the
/// fork's leaf will be: the entry's parent (`--entry`), the entry (`--entry --at`), else the
/// leaf. Refusals (no checkpoint there, checkpoints off, mid-merge/rebase, objects gone)
/// happen before anything is written. `code` records the restore in the source session.
pub async fn fork_restoring(
    dirs: &SessionDirs,
    path: &Path,
    entry: Option<&str>,
    position: ForkPosition,
    mode: crate::checkpoints::RestoreMode,
) -> Result<ForkRestore> {
    use crate::checkpoints::{housekeeping, state_of, Recorder, RestoreMode};
    if !mode.restores_code() {
        let forked = fork(dirs, path, entry, position).await?;
        return Ok(ForkRestore {
            forked: Some(forked),
            restored: None,
        });
    }
    let source = open(path).await?;
    let header = source.storage().header().await?;
    let point = match (entry, position) {
        (Some(id), ForkPosition::Before) => {
            source
                .get_entry(id)
                .await?
                .ok_or_else(|| {
                    CliError::NotFound(format!("entry {id} not found in {}", path.display()))
                })?
                .parent_id
        }
        (Some(id), ForkPosition::At) => Some(id.to_string()),
        (None, _) => source.leaf_id().await?,
    };
    let Some((marker, state)) = state_of(&source, point.as_deref()).await? else {
        return Err(CliError::Workspace(format!(
            "--restore: {} has no workspace checkpoint at or above entry {}; only the conversation can be forked",
            path.display(),
            point.as_deref().unwrap_or("(root)")
        )));
    };
    drop(source);
    let cwd = PathBuf::from(&header.cwd);
    let home = layout::arbor_home();
    let settings = housekeeping::load_settings(&home)?;
    let disabled = || {
        CliError::Workspace(
            "--restore needs workspace checkpoints, and settings.json checkpoints.enabled is false"
                .into(),
        )
    };
    let checker = Recorder::open(&cwd, &header.id, &settings, &home)?.ok_or_else(disabled)?;
    checker.check_restorable(&state).await?;
    if mode == RestoreMode::CodeOnly {
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let storage = JsonlRepository::flat(dir).open(&path_arg(path)).await?;
        let session = arbor_agent::session::Session::new(Arc::new(storage));
        let report = checker
            .restore_to(&session, Some(marker), state, mode)
            .await?;
        session.storage().save_point().await?;
        return Ok(ForkRestore {
            forked: None,
            restored: Some((path.to_path_buf(), report)),
        });
    }
    drop(checker);
    let forked = fork(dirs, path, entry, position).await?;
    let dir = forked.path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let storage = JsonlRepository::flat(dir)
        .open(&path_arg(&forked.path))
        .await?;
    let session = arbor_agent::session::Session::new(Arc::new(storage));
    let recorder = Recorder::open(&cwd, &forked.id, &settings, &home)?.ok_or_else(disabled)?;
    recorder.adopt_path(&session).await?;
    let report = recorder
        .restore_to(&session, Some(marker), state, mode)
        .await?;
    session.storage().save_point().await?;
    let at = forked.path.clone();
    Ok(ForkRestore {
        forked: Some(forked),
        restored: Some((at, report)),
    })
}

/// Rewrites a v1/v2 file as v3 through the store's own migration (DECISIONS §4.3, §25.3):
/// under the writer's lock, the original kept as a verified `<file>.v<N>.bak`, the new file
/// fsynced and renamed over the original (or over a symlink's target). A v3 file is left
/// untouched.
pub async fn migrate(path: &Path) -> Result<Migrated> {
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let done = JsonlRepository::flat(dir).migrate(&path_arg(path)).await?;
    Ok(Migrated {
        from_version: done.from_version,
        backup: done.backup,
    })
}

/// Non-blank lines after the first (the header): the entry count of a well-formed file,
/// read in chunks so memory stays flat however large the file is.
pub fn count_entry_lines(path: &Path) -> std::io::Result<u64> {
    use std::io::Read as _;
    let mut file = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 18];
    let (mut lines, mut has_content) = (0u64, false);
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        let mut start = 0;
        while let Some(pos) = memchr::memchr(b'\n', &buf[start..n]) {
            let end = start + pos;
            if has_content || !buf[start..end].iter().all(u8::is_ascii_whitespace) {
                lines += 1;
            }
            has_content = false;
            start = end + 1;
        }
        has_content |= !buf[start..n].iter().all(u8::is_ascii_whitespace);
    }
    if has_content {
        lines += 1;
    }
    Ok(lines.saturating_sub(1))
}

/// `arbor session checkpoints`: the checkpoints and restores along the active path.
pub async fn checkpoints(path: &Path) -> Result<String> {
    let session = open(path).await?;
    let markers = crate::checkpoints::inspect::along_active_path(&session).await?;
    Ok(crate::render::checkpoints::render(&markers))
}

/// `arbor session diff`: the code difference between two nodes, from the checkpoint store of
/// the session's working directory.
pub async fn diff(path: &Path, from: &str, to: &str) -> Result<String> {
    let session = open(path).await?;
    let header = session.storage().header().await?;
    crate::checkpoints::inspect::diff_nodes(
        &session,
        Path::new(&header.cwd),
        &header.id,
        &layout::arbor_home(),
        from,
        to,
    )
    .await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn entry_lines_skip_the_header_and_blank_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        for (text, want) in [
            ("{h}\n", 0),
            ("{h}\n{a}\n{b}\n", 2),
            ("{h}\n{a}\n\n  \n{b}", 2),
            ("", 0),
        ] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(count_entry_lines(&path).unwrap(), want, "{text:?}");
        }
        // Lines longer than the read buffer.
        let long = "x".repeat(600_000);
        std::fs::write(&path, format!("{{h}}\n{long}\n{long}\n")).unwrap();
        assert_eq!(count_entry_lines(&path).unwrap(), 2);
    }
}
