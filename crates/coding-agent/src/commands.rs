//! The `arbor session` commands: resolve the session, call the session layer, print.
//!
//! stdout carries only results; every failure is one line on stderr (see [`crate::app::main`]).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use arbor_agent::session::{ForkPosition, JsonlRepository};

use crate::cli::SessionCommand;
use crate::error::{CliError, Result, EXIT_INVALID};
use crate::lookup::SessionDirs;
use crate::pgstore;
use crate::render::{list, transcript};
use crate::store;
use crate::summaries;

/// Runs one `arbor session` subcommand (on JSONL files, or on the PostgreSQL store `store`).
pub async fn session(
    session_dir: Option<&Path>,
    store: Option<&str>,
    cmd: SessionCommand,
) -> Result<ExitCode> {
    if let Some(url) = store {
        return on_store(url, cmd).await;
    }
    match cmd {
        SessionCommand::Context {
            session,
            leaf,
            json,
            full,
        } => {
            let path = find(session_dir, &session)?;
            if json {
                context_json(&path, leaf.as_deref()).await
            } else {
                let ctx = store::load_context(&path, leaf.as_deref()).await?;
                let text = transcript::render(
                    &ctx.header,
                    &ctx.messages,
                    transcript::TranscriptOptions { full },
                );
                emit(text.as_bytes())
            }
        }
        SessionCommand::Tree { session } => {
            let path = find(session_dir, &session)?;
            let view = store::tree_view(&path).await?;
            if view.rows.is_empty() {
                eprintln!("arbor: {} has no entries", path.display());
            }
            if !view.links.unreachable.is_empty() {
                let ids: Vec<&str> = view
                    .links
                    .unreachable
                    .iter()
                    .take(5)
                    .filter_map(|&n| view.rows.get(n).map(|r| &*r.id))
                    .collect();
                let more = view.links.unreachable.len().saturating_sub(ids.len());
                eprintln!(
                    "arbor: warning: {} of {} unreachable from any root (parentId cycle): {}{}; shown last",
                    crate::render::tree::plural(view.links.unreachable.len(), "entry", "entries"),
                    path.display(),
                    ids.join(", "),
                    if more > 0 { format!(" and {more} more") } else { String::new() }
                );
            }
            write_tree(&view)
        }
        SessionCommand::List { all } => {
            let dirs = SessionDirs::resolve(session_dir)?;
            let cwd = current_dir()?;
            print_listing(&store::list(&dirs, &cwd, all).await?, all)
        }
        SessionCommand::Fork { session, entry, at } => {
            let path = find(session_dir, &session)?;
            let position = if at {
                ForkPosition::At
            } else {
                ForkPosition::Before
            };
            let dirs = SessionDirs::for_writing(session_dir)?;
            let forked = store::fork(&dirs, &path, entry.as_deref(), position).await?;
            emit(format!("{}\t{}\n", forked.id, forked.path.display()).as_bytes())
        }
        SessionCommand::Import { to, files } => import(&to, &files).await,
        SessionCommand::Export { from, session, out } => export(&from, &session, &out).await,
        SessionCommand::Checkpoints { session } => {
            let path = find(session_dir, &session)?;
            let text = store::checkpoints(&path).await?;
            if text.is_empty() {
                eprintln!(
                    "arbor: {} has no workspace checkpoints on its active path",
                    path.display()
                );
            }
            emit(text.as_bytes())
        }
        SessionCommand::Diff { session, from, to } => {
            let path = find(session_dir, &session)?;
            let text = store::diff(&path, &from, &to).await?;
            if text.is_empty() {
                eprintln!("arbor: no difference between the code of {from} and {to}");
            }
            emit(text.as_bytes())
        }
        SessionCommand::PruneCheckpoints { dir } => {
            let dir = match dir {
                Some(d) => d,
                None => PathBuf::from(current_dir()?),
            };
            let sessions = match SessionDirs::resolve(session_dir)? {
                SessionDirs::Layout { root } => JsonlRepository::new(root),
                SessionDirs::Flat { dir } => JsonlRepository::flat(dir),
            };
            let home = arbor_agent::session::jsonl::layout::arbor_home();
            let settings = crate::checkpoints::housekeeping::load_settings(&home)?;
            let pruned =
                crate::checkpoints::housekeeping::prune(&dir, &sessions, &settings, &home).await?;
            emit(
                format!(
                    "pruned {} checkpoints of deleted sessions, {} beyond the limits, {} unreferenced snapshot files\n",
                    pruned.deleted_sessions, pruned.over_limits, pruned.unreferenced_files
                )
                .as_bytes(),
            )
        }
        SessionCommand::Compact {
            session,
            keep_recent_tokens,
            instructions,
            model,
            dry_run,
            json,
        } => {
            let path = find(session_dir, &session)?;
            let args = summaries::CompactArgs {
                keep_recent_tokens,
                instructions,
                model,
                dry_run,
                json,
            };
            summaries::compact_command(&path, args).await?;
            Ok(ExitCode::SUCCESS)
        }
        SessionCommand::Navigate {
            session,
            to,
            summarize,
            instructions,
            replace_instructions,
            model,
            token_budget,
            dry_run,
            json,
        } => {
            let path = find(session_dir, &session)?;
            let args = summaries::NavigateArgs {
                to,
                summarize,
                instructions,
                replace_instructions,
                model,
                token_budget,
                dry_run,
                json,
            };
            summaries::navigate_command(&path, args).await?;
            Ok(ExitCode::SUCCESS)
        }
        SessionCommand::Migrate { file } => {
            if !file.is_file() {
                return Err(CliError::NotFound(format!(
                    "session file not found: {}",
                    file.display()
                )));
            }
            let outcome = store::migrate(&file).await?;
            let line = match outcome.backup {
                Some(backup) => format!(
                    "migrated {} from v{} to v3 (original kept as {})\n",
                    file.display(),
                    outcome.from_version,
                    backup.display()
                ),
                None => format!(
                    "{} is already v{}; nothing to do\n",
                    file.display(),
                    outcome.from_version
                ),
            };
            emit(line.as_bytes())
        }
    }
}

/// The commands on a PostgreSQL store (`--store URL`).
async fn on_store(url: &str, cmd: SessionCommand) -> Result<ExitCode> {
    match cmd {
        SessionCommand::Context {
            session,
            leaf,
            json,
            full,
        } => {
            if json {
                let projected = pgstore::context_json(url, &session, leaf.as_deref()).await;
                print_projection(projected)
            } else {
                let ctx = pgstore::load_context(url, &session, leaf.as_deref()).await?;
                let text = transcript::render(
                    &ctx.header,
                    &ctx.messages,
                    transcript::TranscriptOptions { full },
                );
                emit(text.as_bytes())
            }
        }
        SessionCommand::Tree { session } => {
            let view = pgstore::tree_view(url, &session).await?;
            if view.rows.is_empty() {
                eprintln!("arbor: session {session} has no entries");
            }
            write_tree(&view)
        }
        SessionCommand::List { all } => {
            print_listing(&pgstore::list(url, &current_dir()?, all).await?, all)
        }
        SessionCommand::Fork { session, entry, at } => {
            let position = if at {
                ForkPosition::At
            } else {
                ForkPosition::Before
            };
            let (id, location) = pgstore::fork(url, &session, entry.as_deref(), position).await?;
            emit(format!("{id}\t{location}\n").as_bytes())
        }
        SessionCommand::Import { to, files } => import(&to, &files).await,
        SessionCommand::Export { from, session, out } => export(&from, &session, &out).await,
        SessionCommand::Migrate { .. } => Err(CliError::Usage(
            "migrate rewrites JSONL files; it does not take --store".into(),
        )),
        SessionCommand::Compact { .. } | SessionCommand::Navigate { .. } => Err(CliError::Usage(
            "compact and navigate work on session files; they do not take --store yet".into(),
        )),
        SessionCommand::Checkpoints { .. }
        | SessionCommand::Diff { .. }
        | SessionCommand::PruneCheckpoints { .. } => Err(CliError::Usage(
            "workspace checkpoints are read from session files; this command does not take --store"
                .into(),
        )),
    }
}

async fn import(url: &str, files: &[PathBuf]) -> Result<ExitCode> {
    let mut out = String::new();
    for (file, id, entries) in pgstore::import(url, files).await? {
        out.push_str(&format!("{id}\t{entries}\t{}\n", file.display()));
    }
    emit(out.as_bytes())
}

async fn export(url: &str, session: &str, out: &Path) -> Result<ExitCode> {
    let n = pgstore::export(url, session, out).await?;
    emit(format!("exported {n} entries to {}\n", out.display()).as_bytes())
}

/// `context --json`: the projection as one JSON line, or `{"ok":false,"error"}` with exit 2
/// when the file is refused (the error is also reported on stderr).
async fn context_json(path: &Path, leaf: Option<&str>) -> Result<ExitCode> {
    print_projection(store::context_json(path, leaf).await)
}

fn print_projection(projected: Result<store::Projected>) -> Result<ExitCode> {
    match projected {
        Ok(projected) => {
            // Streamed message by message: no JSON tree of the whole context is built.
            let stdout = io::stdout().lock();
            let written = arbor_agent::context::write_expected_json(
                io::BufWriter::with_capacity(1 << 16, stdout),
                &projected.context,
                projected.leaf.as_deref(),
            );
            match written {
                Ok(()) => Ok(ExitCode::SUCCESS),
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
                Err(e) => Err(CliError::io("stdout", e)),
            }
        }
        Err(err) if err.is_invalid_session() => {
            let refusal = arbor_agent::context::refusal_json(&err.to_string());
            emit(format!("{refusal}\n").as_bytes())?;
            crate::error::report(&err);
            Ok(ExitCode::from(EXIT_INVALID))
        }
        Err(err) => Err(err),
    }
}

/// Resolves a SESSION argument. Paths need no directory scan (and no valid `--session-dir`).
fn find(session_dir: Option<&Path>, arg: &str) -> Result<PathBuf> {
    if crate::lookup::looks_like_path(arg) {
        let path = PathBuf::from(arg);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(CliError::NotFound(format!("session file not found: {arg}")))
        };
    }
    let dirs = SessionDirs::resolve(session_dir)?;
    let prefer = match &dirs {
        SessionDirs::Layout { root } => current_dir()
            .ok()
            .map(|cwd| root.join(store::cwd_folder_name(&cwd))),
        SessionDirs::Flat { .. } => None,
    };
    dirs.find(arg, prefer.as_deref())
}

fn current_dir() -> Result<String> {
    let cwd = std::env::current_dir().map_err(|e| CliError::io("current directory", e))?;
    Ok(cwd.to_string_lossy().into_owned())
}

/// Writes to stdout; a closed pipe (`| head`) ends quietly rather than as an error.
/// `arbor session list` output, whichever store listed: skipped files on stderr, a hint when
/// nothing was found, else the table. Sessions of many projects are mixed only with `--all`:
/// then each row shows its cwd.
fn print_listing(listing: &store::Listing, all: bool) -> Result<ExitCode> {
    for (location, reason) in &listing.skipped {
        eprintln!("arbor: skipped {location}: {reason}");
    }
    if listing.sessions.is_empty() {
        let hint = if all {
            ""
        } else {
            " (--all lists every directory)"
        };
        eprintln!("arbor: no sessions in {}{hint}", listing.scanned);
        return Ok(ExitCode::SUCCESS);
    }
    emit(list::render(&listing.sessions, all).as_bytes())
}

fn emit(bytes: &[u8]) -> Result<ExitCode> {
    let mut stdout = io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(CliError::io("stdout", e)),
    }
}

/// Streams a tree view to stdout; a closed pipe (`| head`) is not an error.
fn write_tree(view: &crate::render::tree::TreeView) -> Result<ExitCode> {
    let stdout = io::stdout().lock();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout);
    match crate::render::tree::write(&mut out, view).and_then(|()| out.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(CliError::io("stdout", e)),
    }
}
