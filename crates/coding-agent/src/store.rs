//! The bridge to the session layer (`arbor_agent::session` and `arbor_agent::context`):
//! opening files, projecting contexts, building trees, listing, forking and migrating. Keeping
//! every call into the session layer here leaves the commands and renderers independent of its
//! exact API.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_agent::context::projection::build_session_context_from_window;
use arbor_agent::context::{ContextOptions, DerivedState, ModelRef, SessionContext};
use arbor_agent::message::AgentMessage;
use arbor_agent::session::jsonl::layout;
use arbor_agent::session::{
    ForkOptions, ForkPosition, JsonlRepository, JsonlStorage, Session, SessionInfo,
    SessionRepository, SessionStorage,
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
async fn open_storage(path: &Path) -> Result<JsonlStorage> {
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

async fn open(path: &Path) -> Result<Session> {
    Ok(Session::new(Arc::new(open_storage(path).await?)))
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
    let state = DerivedState {
        model: settings
            .model
            .map(|(provider, model_id)| ModelRef { provider, model_id }),
        thinking_level: settings
            .thinking_level
            .unwrap_or_else(|| DerivedState::default().thinking_level),
        active_tool_names: settings.active_tool_names,
    };
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

/// The context for `--json` (written by `context::write_expected_json`).
pub async fn context_json(path: &Path, leaf: Option<&str>) -> Result<Projected> {
    let storage = open_storage(path).await?;
    projected(&storage, leaf).await
}

/// [`context_json`] for any open storage.
pub(crate) async fn projected(
    storage: &impl SessionStorage,
    leaf: Option<&str>,
) -> Result<Projected> {
    let leaf = leaf_or_current(storage, leaf).await?;
    let context = project(storage, leaf.as_deref()).await?;
    Ok(Projected { context, leaf })
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

pub async fn render_tree(path: &Path) -> Result<String> {
    let session = open(path).await?;
    let tree = session.tree().await?;
    Ok(tree::render(&tree))
}

/// Sessions of `cwd` (or of every directory with `all`), newest first.
pub async fn list(dirs: &SessionDirs, cwd: &str, all: bool) -> Result<Listing> {
    let repo = repository(dirs);
    let mut result = if all {
        repo.list().await?
    } else {
        repo.list_cwd(cwd).await?
    };
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
    let opts = ForkOptions {
        entry_id,
        position,
        ..ForkOptions::default()
    };
    let forked = repository(dirs).fork(&source, opts).await?;
    let header = forked.header().await?;
    Ok(Forked {
        id: header.id,
        path: forked.path().to_path_buf(),
    })
}

/// Rewrites a v1/v2 file as v3 (DECISIONS §4.3): the store's in-memory migration, written to
/// a temporary sibling, fsynced and renamed over the original, which is kept first as
/// `<file>.v<N>.bak` (an existing backup is never overwritten). A v3 file is left untouched.
///
/// Adapter: the JSONL store migrates files on their first append but has no public "migrate
/// now" call yet; this writes the same result through its public read API.
pub async fn migrate(path: &Path) -> Result<Migrated> {
    // The writer's advisory lock (DECISIONS §4.4), held until the new file is in place, so a
    // session open for writing elsewhere is never replaced under its writer.
    let guard =
        std::fs::File::open(path).map_err(|e| CliError::io(path.display().to_string(), e))?;
    lock(&guard, path)?;
    let storage = open_storage(path).await?;
    let header = storage.header().await?;
    let Some(from_version) = storage.report().await.migrated_from else {
        return Ok(Migrated {
            from_version: header.format_version(),
            backup: None,
        });
    };
    let mut text = header.to_json();
    text.push('\n');
    let mut after = None;
    loop {
        let page = storage.entries(after, None).await?;
        for (_, entry) in &page.entries {
            text.push_str(&entry.to_json());
            text.push('\n');
        }
        match page.next_after_seq {
            Some(next) if Some(next) != after => after = Some(next),
            _ => break,
        }
    }
    drop(storage);
    let backup = layout::backup_path(path, from_version);
    let io = |p: &Path| {
        let p = p.display().to_string();
        move |e| CliError::io(p, e)
    };
    if !backup.exists() {
        std::fs::copy(path, &backup).map_err(io(&backup))?;
    }
    let tmp = layout::temp_path(path, arbor_agent::time::now_ms());
    let written = (|| -> Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(io(&tmp))?;
        file.write_all(text.as_bytes()).map_err(io(&tmp))?;
        file.sync_all().map_err(io(&tmp))?;
        lock(&file, &tmp)?;
        std::fs::rename(&tmp, path).map_err(io(path))
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(Migrated {
        from_version,
        backup: Some(backup),
    })
}

/// Takes the advisory write lock without waiting; a held lock means another writer.
// `File::try_lock` is std since Rust 1.89; the workspace builds with a newer toolchain.
#[allow(clippy::incompatible_msrv)]
fn lock(file: &std::fs::File, path: &Path) -> Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(CliError::Session(
            arbor_agent::SessionError::Storage(format!(
                "session is open for writing by another process: {}",
                path.display()
            )),
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(CliError::io(path.display().to_string(), e)),
    }
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
