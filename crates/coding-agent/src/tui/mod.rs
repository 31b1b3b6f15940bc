//! The interactive terminal UI: ratatui + crossterm on top of the
//! [`AgentHarness`](arbor_agent::harness::AgentHarness) and its events only — no session or
//! provider logic lives here (DECISIONS §23.1, §23.24).
//!
//! The UI is split into parts that know nothing of the terminal: each one is a plain state
//! machine (`handle_key` → outcome) plus a `render` into a ratatui `Buffer`, so every frame and
//! every key sequence is testable with `TestBackend` and no terminal.
//!
//! - [`theme`]: the styles, with `NO_COLOR` honoured in one place; `theme_file`: `--theme`.
//! - [`component`]: the contract overlays share (what a key did to them).
//! - [`state`]: the app's state machine (events in, effects out).
//! - `external_editor`: Ctrl+G's round trip through `$VISUAL` / `$EDITOR`.
//! - `editor`, [`footer`], `slash`, `view`: the editor, the footer, slash commands and
//!   the screen layout; `slash_extra`: pi's `/scoped-models`, `/import`, `/changelog`,
//!   `/debug`.
//! - [`driver`]: carries out effects against the harness (async, still no terminal).
//! - `terminal`: the real terminal and its restoration; [`run`] is the loop tying them up.
//! - `loading`: a resumed session's first frame and the rest loaded behind it.
//! - `list`: the selection and scroll position every list overlay shares.
//! - [`tree`]: the `/tree` navigator; [`summarize`]: the prompt after a choice there
//!   (restore mode, "Summarize branch?") and the summary's progress.
//! - [`picker`]: the session picker (`/resume`, `-r`) and the model picker (`/model`);
//!   `query`: the search line they share.
//! - [`restore_confirm`]: "Restore anyway?" before a restore removes untracked files.
//! - `fork_picker`: `/fork`'s list (its "Restore what?" is a [`summarize`] prompt).
//! - `image_label`: how an image block reads in the transcript.
//! - `kill_ring`: the text Ctrl+W/U/K deleted, for Ctrl+Y and Alt+Y.
//! - `project_files`: the files offered for `@` completion.
//! - [`trust_prompt`]: the project-trust question asked before the session starts.
//! - [`headless`]: the start-up to the first frame without a terminal (the start-up benchmark).

pub mod component;
pub mod driver;
pub(crate) mod editor;
pub(crate) mod external_editor;
pub mod footer;
pub(crate) mod fork_picker;
pub mod headless;
pub mod help;
pub(crate) mod image_label;
pub(crate) mod kill_ring;
pub(crate) mod list;
pub(crate) mod loading;
pub mod login;
pub(crate) mod onboarding;
pub mod picker;
pub(crate) mod project_files;
pub(crate) mod query;
pub mod restore_confirm;
pub(crate) mod slash;
pub(crate) mod slash_extra;
pub mod state;
pub mod summarize;
pub(crate) mod terminal;
pub mod theme;
pub(crate) mod theme_file;
pub mod transcript;
pub mod tree;
pub mod trust_prompt;
pub(crate) mod view;

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use crossterm::event::{Event, EventStream, MouseEventKind};
use futures::StreamExt;

use crate::cli::AgentArgs;
use crate::error::CliError;
use driver::{Driver, TuiApp};
use state::{AppEvent, Effect, Outcome};
use terminal::TerminalGuard;
use theme::Theme;

/// Spinner / elapsed-time refresh while working.
const TICK: Duration = Duration::from_millis(100);

/// Maps a terminal event to an app event (`None`: not one the app uses).
pub fn app_event(e: Event) -> Option<AppEvent> {
    match e {
        Event::Key(k) => Some(AppEvent::Key(k)),
        Event::Paste(p) => Some(AppEvent::Paste(p)),
        Event::Resize(w, h) => Some(AppEvent::Resize(w, h)),
        Event::Mouse(m) => match m.kind {
            MouseEventKind::ScrollUp => Some(AppEvent::Scroll(-3)),
            MouseEventKind::ScrollDown => Some(AppEvent::Scroll(3)),
            _ => None,
        },
        _ => None,
    }
}

/// Runs the interactive UI until the user quits (or SIGTERM/SIGHUP).
pub async fn run(mut args: AgentArgs, session_dir: Option<&Path>) -> Result<ExitCode, CliError> {
    let cwd = std::env::current_dir().map_err(|e| CliError::io("current directory", e))?;
    let theme = theme_file::load(args.theme.as_deref(), &cwd)?;
    // Trust is settled before anything reads the project (DECISIONS §32.13).
    if !ask_trust(&mut args, theme).await? {
        return Ok(ExitCode::from(130));
    }
    // `-r` opens the picker over a fresh session (DECISIONS §23.13): startup's own `--resume`
    // would pick the newest session without asking.
    let pick_at_start = args.resume;
    let first = AgentArgs {
        resume: false,
        ..args.clone()
    };
    // From here on arbor's own notices (start-up warnings, hooks, MCP, compaction) become
    // transcript lines, never text behind the screen (DECISIONS §23.172).
    let (notice_tx, mut notices) = tokio::sync::mpsc::unbounded_channel();
    let redirect = crate::notices::redirect(move |n| {
        let _ = notice_tx.send(n);
    });
    let mut guard = None;
    let mut left_text = String::new();
    let app = match crate::startup::start(&first, session_dir).await {
        Ok(app) => app,
        // No model: the onboarding screen, then the app it found (DECISIONS §23.170).
        Err(CliError::NoModel { models_json }) => {
            let mut g = TerminalGuard::new().map_err(|e| CliError::io("terminal", e))?;
            let found =
                onboarding::run(&mut g, &first, session_dir, &models_json, &mut notices).await?;
            guard = Some(g);
            match found {
                Some((app, text)) => {
                    left_text = text;
                    app
                }
                None => return Ok(ExitCode::SUCCESS),
            }
        }
        Err(e) => {
            // A failed start says what it noticed on the way, on the shell's screen.
            drop(redirect);
            while let Ok(n) = notices.try_recv() {
                crate::notices::to_stderr(&n);
            }
            return Err(e);
        }
    };
    let mut driver = Driver::new(TuiApp::from_app(app), theme).await?;
    driver.show_banner();
    if args.verbose {
        driver.announce_startup();
    }
    if !left_text.is_empty() {
        driver.state.editor.set_text(&left_text);
    }
    if pick_at_start {
        driver.dispatch_effect(Effect::Resume).await;
    }
    // Messages on the command line (and @files) are sent at start: the first as the prompt,
    // the rest as follow-ups (DECISIONS §23.22).
    let prompts = crate::initial_prompts::collect_prompts(&args, None, &driver.app.cwd)?;
    let mut prompts = prompts.into_iter();
    if let Some(first) = prompts.next() {
        // Waits for a large session to finish loading (DECISIONS §23.102).
        for effect in driver.state.prompt(first.text) {
            driver.dispatch_effect(effect).await;
        }
        driver.state.pending_prompts.extend(prompts.map(|p| p.text));
    }
    let mut guard = match guard {
        Some(g) => g,
        None => TerminalGuard::new().map_err(|e| CliError::io("terminal", e))?,
    };
    if let Ok(size) = guard.terminal.size() {
        driver.state.size = (size.width, size.height);
    }
    let mut events = EventStream::new();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let signal = crate::shutdown::shutdown_signal();
    tokio::pin!(signal);
    // In raw mode Ctrl+C is a key; a SIGINT can only come from outside (`kill -INT`), and it
    // ends the UI in order like SIGTERM (DECISIONS §23.127).
    let mut interrupt =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok();
    let mut code = 0u8;
    let mut first_frame = true;
    loop {
        draw(&mut guard, &mut driver)?;
        if first_frame {
            first_frame = false;
            panic_after_first_frame_if_asked();
        }
        tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(e)) => {
                    if let Some(ev) = app_event(e) {
                        driver.dispatch(ev).await;
                    }
                }
                Some(Err(e)) => return Err(CliError::io("terminal input", e)),
                None => break,
            },
            ev = driver.next_event() => {
                if let Some(ev) = ev {
                    driver.dispatch(ev).await;
                    // A burst of stream deltas is one frame, not one frame per delta.
                    driver.settle_available().await;
                }
            }
            _ = tick.tick(), if driver.busy() => driver.dispatch(AppEvent::Tick).await,
            Some(n) = notices.recv() => driver.push_sink_notice(n).await,
            c = &mut signal => {
                code = c;
                break;
            }
            Some(()) = async { interrupt.as_mut()?.recv().await }, if interrupt.is_some() => {
                code = 130;
                break;
            }
        }
        for effect in driver.take_terminal_effects() {
            match effect {
                Effect::Quit => driver.state.quit = true,
                Effect::ExternalEditor(text) => {
                    let edited = guard
                        .suspended(|| external_editor::edit(&text))
                        .map_err(|e| CliError::io("terminal", e))?;
                    match edited {
                        Ok(t) => {
                            driver
                                .dispatch(AppEvent::Done(Outcome::EditorText(t)))
                                .await
                        }
                        Err(e) => {
                            driver
                                .dispatch(AppEvent::Done(Outcome::Error(e.to_string())))
                                .await
                        }
                    }
                }
                Effect::Copy => {
                    if let Some(t) = &driver.clipboard {
                        osc52(t);
                    }
                }
                Effect::Suspend => {
                    // The shell gets its terminal back and the job stops; `fg` continues here,
                    // and the loop draws the whole screen again (DECISIONS §23.153).
                    guard.pause();
                    suspend_process().await;
                    guard.resume().map_err(|e| CliError::io("terminal", e))?;
                    if let Ok(size) = guard.terminal.size() {
                        driver
                            .dispatch(AppEvent::Resize(size.width, size.height))
                            .await;
                    }
                }
                // A hit in the session already open: no switch (it would find the session
                // locked by this run), the tree opens on the entry.
                Effect::OpenSessionAt { location, entry_id }
                    if driver.app.is_current(&location) =>
                {
                    driver.open_tree_at(&entry_id).await;
                }
                Effect::New
                | Effect::Clone
                | Effect::ForkAt { .. }
                | Effect::OpenSession(_)
                | Effect::OpenSessionAt { .. } => {
                    match switch(&args, session_dir, &driver, &effect).await {
                        Ok(Some(next)) => {
                            let plan = driver.take_fork_restore();
                            // The next session starts its own MCP servers.
                            if let Some(old) = driver.app.mcp.take() {
                                old.shutdown().await;
                            }
                            driver = Driver::new(TuiApp::from_app(next), theme).await?;
                            if matches!(effect, Effect::ForkAt { .. } | Effect::Clone) {
                                driver.finish_fork_restore(plan).await;
                            }
                            if let Effect::ForkAt { text, .. } = &effect {
                                driver.state.editor.set_text(text);
                            }
                            if let Effect::OpenSessionAt { entry_id, .. } = &effect {
                                driver.open_tree_at(entry_id).await;
                            }
                            // pi's words for a switch the screen would otherwise not explain
                            // (DECISIONS §23.161).
                            let said = match &effect {
                                Effect::New => Some("New session started".to_owned()),
                                Effect::Clone => Some("Cloned to new session".to_owned()),
                                Effect::ForkAt { .. } => Some("Forked to new session".to_owned()),
                                _ => None,
                            };
                            if let Some(text) = said {
                                let file = driver
                                    .app
                                    .session_file
                                    .as_ref()
                                    .map_or("in memory".to_owned(), |p| p.display().to_string());
                                driver
                                    .dispatch(AppEvent::Done(Outcome::Notice(format!(
                                        "{text} ({file})"
                                    ))))
                                    .await;
                            }
                            if let Ok(size) = guard.terminal.size() {
                                driver.state.size = (size.width, size.height);
                            }
                            let _ = guard.redraw_all();
                        }
                        Ok(None) => {}
                        Err(e) => {
                            driver
                                .dispatch(AppEvent::Done(Outcome::Error(e.to_string())))
                                .await;
                        }
                    }
                }
                _ => {}
            }
        }
        if driver.state.quit {
            break;
        }
    }
    // Orderly end: stop a running turn and the user's `!cmd` so their last entries are
    // written; their process groups end with them (DECISIONS §28.2).
    driver.cancel_user_bash();
    if driver.busy() {
        driver.app.harness.abort().await;
        driver.settle().await;
    }
    drop(guard);
    drop(redirect);
    Ok(ExitCode::from(code))
}

/// Asks the trust question when the folder needs a decision and nothing gives one; saves the
/// answer, or (for "this session only") turns it into `--approve` / `--no-approve` so `/new`
/// and the other session switches keep it. `false`: the user quit instead of answering.
async fn ask_trust(args: &mut AgentArgs, theme: Theme) -> Result<bool, CliError> {
    if crate::startup::trust_flag(args).is_some() {
        return Ok(true);
    }
    let cwd = std::env::current_dir().map_err(|e| CliError::io("current directory", e))?;
    let home = crate::config::arbor_home();
    let global = crate::config::Settings::load_global(&home)?;
    let mut store = crate::trust::TrustStore::load(&home.join("trust.json"))
        .map_err(|e| CliError::Config(e.to_string()))?;
    let resolution = crate::trust::resolve(None, &store, &cwd, global.default_project_trust());
    if resolution != crate::trust::Resolution::Ask {
        return Ok(true);
    }
    let Some(choice) = trust_prompt::ask(&cwd, theme).await? else {
        return Ok(false);
    };
    crate::trust::save_choice(&mut store, &choice).map_err(|e| CliError::Config(e.to_string()))?;
    if choice.saves.is_empty() {
        args.approve = choice.trusted;
        args.no_approve = !choice.trusted;
    }
    Ok(true)
}

/// The environment variable that makes a debug build panic right after its first frame.
pub const TEST_PANIC_ENV: &str = "ARBOR_TEST_PANIC_AFTER_FIRST_FRAME";

/// Test hook, compiled into debug builds only (DECISIONS §23.121): with
/// `ARBOR_TEST_PANIC_AFTER_FIRST_FRAME=1` the UI panics once it has drawn, so the tmux test
/// can prove the panic hook gives the shell its terminal back. Release builds ignore it.
#[cfg(debug_assertions)]
fn panic_after_first_frame_if_asked() {
    if std::env::var_os(TEST_PANIC_ENV).is_some_and(|v| v == "1") {
        panic!("{TEST_PANIC_ENV}=1: a deliberate panic after the first frame");
    }
}

#[cfg(not(debug_assertions))]
fn panic_after_first_frame_if_asked() {}

fn draw(guard: &mut TerminalGuard, driver: &mut Driver) -> Result<(), CliError> {
    guard
        .terminal
        .draw(|f| {
            let area = f.area();
            let (x, y) = driver.render(area, f.buffer_mut());
            f.set_cursor_position((x, y));
        })
        .map_err(|e| CliError::io("terminal", e))?;
    Ok(())
}

/// Builds the next session's app for `/new` and `/clone` with [`crate::startup::start`] (the
/// one way a harness is built). `Ok(None)`: nothing to switch to.
async fn switch(
    args: &AgentArgs,
    session_dir: Option<&Path>,
    driver: &Driver,
    effect: &Effect,
) -> Result<Option<crate::startup::App>, CliError> {
    let mut next = AgentArgs {
        session: None,
        session_id: None,
        continue_: false,
        resume: false,
        fork: None,
        name: None,
        messages: Vec::new(),
        ..args.clone()
    };
    match effect {
        Effect::New => {
            if args.no_session {
                next.no_session = true;
            }
        }
        Effect::OpenSession(location) | Effect::OpenSessionAt { location, .. } => {
            next.session = Some(location.clone())
        }
        Effect::Clone | Effect::ForkAt { .. } => {
            let before = match effect {
                Effect::ForkAt { entry_id, .. } => Some(entry_id.as_str()),
                _ => None,
            };
            // A copy with no message yet is not written until its first one: start it fresh.
            next.session = driver.fork_file(before).await?;
        }
        _ => return Ok(None),
    }
    Ok(Some(crate::startup::start(&next, session_dir).await?))
}

/// Stops this process group as the shell's job control expects (SIGTSTP to group 0, like
/// pi): the shell prints "Stopped" and takes the terminal; `fg` sends SIGCONT and the call
/// returns. Arbor's own children (tool commands, MCP servers) run in their own groups and
/// are not stopped.
///
/// The stop is asynchronous (another thread may take the signal), so this waits for the
/// SIGCONT of `fg` before the terminal is taken back; taking it back first raced the shell for
/// the terminal. A SIGTSTP the kernel discards (an orphaned process group) ends the wait after
/// a second.
async fn suspend_process() {
    use nix::sys::signal::{killpg, Signal};
    use tokio::signal::unix::{signal, SignalKind};
    let mut resumed = signal(SignalKind::from_raw(Signal::SIGCONT as i32)).ok();
    let _ = killpg(nix::unistd::getpgrp(), Signal::SIGTSTP);
    if let Some(resumed) = resumed.as_mut() {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), resumed.recv()).await;
    }
}

/// Puts `text` on the clipboard with OSC 52 (works over SSH and in tmux with `set-clipboard`).
fn osc52(text: &str) {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(text);
    let mut out = std::io::stdout();
    let _ = write!(out, "\x1b]52;c;{b64}\x07");
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    /// DECISIONS §23.172: no module the TUI runs (its own, start-up, tools, hooks, MCP,
    /// checkpoints, resources, …) writes to stderr itself; they report through `notices`.
    #[test]
    fn no_stderr_writes_reachable_from_the_tui() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        let dirs = [
            "tui",
            "startup",
            "hooks",
            "mcp",
            "checkpoints",
            "resources",
            "trust",
            "secrets",
            "command",
        ];
        let mut stack: Vec<std::path::PathBuf> = dirs.iter().map(|d| src.join(d)).collect();
        // The built-in tools, process groups and bounded reader run under the TUI too.
        stack.push(src.join("../../tools/src"));
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    files.push(p);
                }
            }
        }
        for f in [
            "user_bash.rs",
            "pgstore.rs",
            "auth.rs",
            "provider.rs",
            "key_command.rs",
            "config.rs",
            "onboarding.rs",
            "models_json.rs",
        ] {
            files.push(src.join(f));
        }
        // `arbor mcp` is a command line of its own, never run under the TUI.
        files.retain(|f| !f.ends_with("mcp/commands.rs"));
        assert!(files.len() > 50, "{files:?}");
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or(&text);
            for needle in [
                ["epr", "intln!"].concat(),
                ["epr", "int!"].concat(),
                ["std", "err()"].concat(),
            ] {
                assert!(
                    !code.contains(&needle),
                    "{} writes to stderr ({needle})",
                    f.display()
                );
            }
        }
    }
}
