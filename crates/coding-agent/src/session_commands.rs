//! The `arbor session` commands: resolve the session, call the session layer, print.
//!
//! stdout carries only results; every failure is one line on stderr (see [`crate::app::main`]).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use arbor_agent::session::{ForkPosition, JsonlRepository};

use crate::cli::{SearchArgs, SessionCommand};
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
        return match cmd {
            SessionCommand::Search(args) => search(session_dir, Some(url), args).await,
            cmd => on_store(url, cmd).await,
        };
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
        SessionCommand::Search(args) => search(session_dir, None, args).await,
        SessionCommand::List { all } => {
            let dirs = SessionDirs::resolve(session_dir)?;
            let cwd = current_dir()?;
            print_listing(&store::list(&dirs, &cwd, all).await?, all)
        }
        SessionCommand::Fork {
            session,
            entry,
            at,
            restore,
        } => {
            let path = find(session_dir, &session)?;
            let position = if at {
                ForkPosition::At
            } else {
                ForkPosition::Before
            };
            let mode = match restore.as_deref() {
                None => crate::checkpoints::RestoreMode::ConversationOnly,
                Some(m) => crate::checkpoints::RestoreMode::parse(m).ok_or_else(|| {
                    CliError::Usage(format!(
                        "--restore {m}: expected conversation, code or both"
                    ))
                })?,
            };
            let dirs = SessionDirs::for_writing(session_dir)?;
            let done =
                store::fork_restoring(&dirs, &path, entry.as_deref(), position, mode).await?;
            if let Some((at, report)) = &done.restored {
                eprintln!(
                    "arbor: restored the workspace to the fork point's checkpoint ({}; recorded in {})",
                    crate::checkpoints::report::restore_summary(report),
                    at.display()
                );
            }
            match done.forked {
                Some(forked) => {
                    emit(format!("{}\t{}\n", forked.id, forked.path.display()).as_bytes())
                }
                None => Ok(ExitCode::SUCCESS),
            }
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
                let mut out = HeldOutput::stdout();
                let written =
                    pgstore::write_context_json(url, &session, leaf.as_deref(), &mut out).await;
                finish_projection(written.map(|_| ()), out)
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
        SessionCommand::Fork {
            session,
            entry,
            at,
            restore,
        } => {
            if restore.is_some() {
                return Err(CliError::Usage(
                    "--restore works on session files; it does not take --store".into(),
                ));
            }
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
        SessionCommand::Search(args) => search(None, Some(url), args).await,
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
    let mut out = HeldOutput::stdout();
    let written = store::write_context_json(path, leaf, &mut out).await;
    finish_projection(written.map(|_| ()), out)
}

/// The exit of a streamed `context --json`. A refusal found before any byte reached stdout is
/// the only output, as before streaming; one found after (a broken entry deep in a context
/// longer than [`HOLD_BYTES`]) ends the partial line and puts the refusal on the next line
/// (DECISIONS §25.102). Either way the error is on stderr and the exit code is 2.
fn finish_projection(written: Result<()>, mut out: HeldOutput) -> Result<ExitCode> {
    if let Some((kind, message)) = out.failed.take() {
        // stdout itself failed: a closed pipe (`| head`) is not an error.
        return if kind == io::ErrorKind::BrokenPipe {
            Ok(ExitCode::SUCCESS)
        } else {
            Err(CliError::io("stdout", io::Error::new(kind, message)))
        };
    }
    let err = match written {
        Ok(()) => return Ok(ExitCode::SUCCESS),
        Err(err) => err,
    };
    let spilled = out.discard();
    if spilled {
        emit(b"\n")?;
    }
    if err.is_invalid_session() {
        let refusal = arbor_agent::context::refusal_json(&err.to_string());
        emit(format!("{refusal}\n").as_bytes())?;
        crate::error::report(&err);
        Ok(ExitCode::from(EXIT_INVALID))
    } else {
        Err(err)
    }
}

/// How much of `context --json`'s output is kept back before any of it is written: a context
/// up to this size is refused cleanly when a broken entry turns up (DECISIONS §25.102). A MiB
/// is a context of roughly 250,000 tokens, more than a model takes.
const HOLD_BYTES: usize = 1 << 20;

/// stdout for a streamed `context --json`: the first [`HOLD_BYTES`] are held in memory and
/// written only when the output grows past them or is complete (`flush`); after that, writes
/// go through a 64 KiB buffer. Remembers a failure of stdout itself, which is not a refusal.
struct HeldOutput {
    held: Vec<u8>,
    /// Whether bytes have gone to stdout (then they cannot be taken back).
    spilled: bool,
    out: io::BufWriter<io::Stdout>,
    failed: Option<(io::ErrorKind, String)>,
}

impl HeldOutput {
    fn stdout() -> Self {
        HeldOutput {
            held: Vec::new(),
            spilled: false,
            out: io::BufWriter::with_capacity(1 << 16, io::stdout()),
            failed: None,
        }
    }

    /// Drops what is still held; flushes what was already let through. Returns whether any of
    /// the output reached stdout.
    fn discard(&mut self) -> bool {
        self.held = Vec::new();
        if self.spilled {
            let _ = self.out.flush();
        }
        self.spilled
    }

    fn spill(&mut self) -> io::Result<()> {
        self.spilled = true;
        let held = std::mem::take(&mut self.held);
        self.out.write_all(&held)
    }

    fn note<T>(&mut self, r: io::Result<T>) -> io::Result<T> {
        if let Err(e) = &r {
            self.failed.get_or_insert((e.kind(), e.to_string()));
        }
        r
    }
}

impl Write for HeldOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.spilled {
            if self.held.len() + buf.len() <= HOLD_BYTES {
                self.held.extend_from_slice(buf);
                return Ok(buf.len());
            }
            let r = self.spill();
            self.note(r)?;
        }
        let r = self.out.write(buf);
        self.note(r)
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.spilled {
            let r = self.spill();
            self.note(r)?;
        }
        let r = self.out.flush();
        self.note(r)
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

/// `arbor session search`: the session files, and with `store` the sessions of that
/// PostgreSQL store too (DECISIONS §34.15).
async fn search(
    session_dir: Option<&Path>,
    store: Option<&str>,
    args: SearchArgs,
) -> Result<ExitCode> {
    let dirs = SessionDirs::resolve(session_dir)?;
    let query = arbor_search::Query {
        text: args.query,
        branch: crate::session_search::branch_filter(&args.branch)?,
        since: args.since,
        cwd: if args.cwd { Some(current_dir()?) } else { None },
        limit: (!args.all).then_some(crate::session_search::DEFAULT_LIMIT),
        // Set by the search to the store it reaches (DECISIONS §34.20).
        stores: arbor_search::Stores::default(),
    };
    let outcome = crate::session_search::run(&dirs, store, query).await?;
    for warning in &outcome.warnings {
        eprintln!("arbor: warning: {warning}");
    }
    if args.json {
        let text = serde_json::to_string(&outcome.hits)
            .map_err(|e| CliError::Internal(format!("search hits as JSON: {e}")))?;
        emit(format!("{text}\n").as_bytes())
    } else {
        if outcome.hits.is_empty() {
            eprintln!("arbor: no session matches");
        }
        emit(crate::session_search::render_text(&outcome.hits).as_bytes())
    }
}
