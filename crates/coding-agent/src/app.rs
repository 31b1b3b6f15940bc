//! The top-level dispatch: parse the arguments, run the command on a worker thread, turn
//! failures into one stderr line and an exit code.

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::error::{report, CliError};
use crate::session_commands;

/// Parses the arguments, runs the command and turns failures into one stderr line.
pub fn main() -> ExitCode {
    let argv = session_flags_after_session(std::env::args_os().collect());
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) => return parse_failure(&e, &argv),
    };
    // The command runs on a worker thread so that a panic (a bug) is caught and reported as an
    // internal error with its own exit code. Nothing recurses over the size of a session (trees
    // are arenas walked with explicit stacks, JSON nesting is capped by serde_json at 128), so
    // the worker gets the stack a main thread has.
    let worker = std::thread::Builder::new()
        .name("arbor".into())
        .stack_size(8 * 1024 * 1024)
        .spawn(move || run(cli));
    let outcome = match worker {
        Ok(handle) => handle
            .join()
            .unwrap_or_else(|payload| Err(CliError::internal(payload.as_ref()))),
        Err(e) => Err(CliError::io("thread", e)),
    };
    // Whatever the command started and left running — a `server &` from a finished bash call,
    // a group a dropped future was still ending — ends with arbor, however the command ended,
    // a panic included (DECISIONS §28.3).
    arbor_tools::process::end_all();
    match outcome {
        Ok(code) => code,
        Err(err) => {
            report(&err);
            ExitCode::from(err.exit_code())
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::io("tokio runtime", e))?;
    let outcome = runtime.block_on(async move {
        match cli.command {
            Some(Command::Session(cmd)) => {
                session_commands::session(cli.session_dir.as_deref(), cli.store.as_deref(), cmd)
                    .await
            }
            Some(Command::Mcp(cmd)) => crate::mcp::commands::run(cmd).await,
            None => crate::modes::run(cli.agent, cli.session_dir.as_deref()).await,
        }
    });
    // Everything the command writes is awaited above. What may still run is a blocking read of
    // a stdin the client keeps open (RPC mode after SIGTERM): dropping the runtime would wait
    // for it forever, so it is left behind (DECISIONS §22.33).
    runtime.shutdown_background();
    outcome
}

/// The flags `arbor session` shares with the agent (`--session-dir`, `--store`, each with its
/// value) may come before the word `session`: they are moved after it, where clap reads them
/// as the subcommand's. Without this, `args_conflicts_with_subcommands` made `arbor
/// --session-dir D session list` an agent run with the prompt "session list" (DECISIONS
/// §22.70). Anything else before `session` (an agent flag, a message) leaves the line as it is.
fn session_flags_after_session(argv: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    const SHARED: [&str; 2] = ["--session-dir", "--store"];
    let mut at = 1;
    while let Some(arg) = argv.get(at).and_then(|a| a.to_str()) {
        if SHARED.contains(&arg) {
            at += 2;
        } else if SHARED
            .iter()
            .any(|f| arg.strip_prefix(f).is_some_and(|v| v.starts_with('=')))
        {
            at += 1;
        } else {
            break;
        }
    }
    let leads_to_session = at > 1 && argv.get(at).is_some_and(|a| a == "session");
    if !leads_to_session {
        return argv;
    }
    let mut out = Vec::with_capacity(argv.len());
    out.extend(argv.first().cloned());
    out.push(argv[at].clone());
    out.extend(argv[1..at].iter().cloned());
    out.extend(argv[at + 1..].iter().cloned());
    out
}

/// Agent-flag errors in pi's words and with its exit code 1 (DECISIONS §22.14): "Error:
/// Unknown option: -x" (every unknown `--long` flag listed, as pi lists the flags no extension
/// claimed), "Error: Invalid mode "xml". Valid values: text, json,
/// rpc", "Error: --mode requires text, json, or rpc". `arbor session …` keeps clap's texts and
/// exit 2; help and version print as usual.
fn parse_failure(e: &clap::Error, argv: &[std::ffi::OsString]) -> ExitCode {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let subcommand = argv
        .iter()
        .skip(1)
        .find(|a| !a.to_string_lossy().starts_with('-'))
        .is_some_and(|a| a == "session");
    let context = |kind: ContextKind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let pi_text = match e.kind() {
        _ if subcommand => None,
        ErrorKind::UnknownArgument => context(ContextKind::InvalidArg).map(|arg| {
            let unknown = unknown_long_flags(argv, &arg);
            if unknown.len() > 1 {
                format!("Error: Unknown options: {}", unknown.join(", "))
            } else {
                format!("Error: Unknown option: {}", flag_name(&arg))
            }
        }),
        ErrorKind::InvalidValue
            if context(ContextKind::InvalidArg)
                .is_some_and(|a| a == "--mode" || a.starts_with("--mode ")) =>
        {
            match context(ContextKind::InvalidValue) {
                Some(v) if !v.is_empty() => Some(format!(
                    "Error: Invalid mode \"{v}\". Valid values: text, json, rpc"
                )),
                _ => Some("Error: --mode requires text, json, or rpc".to_owned()),
            }
        }
        _ => None,
    };
    match pi_text {
        Some(text) => {
            eprintln!("{text}");
            ExitCode::from(1)
        }
        None => {
            let _ = e.print();
            ExitCode::from(if e.use_stderr() { 2 } else { 0 })
        }
    }
}

/// `--flag=value` → `--flag`.
fn flag_name(arg: &str) -> &str {
    if arg.starts_with("--") {
        arg.split_once('=').map_or(arg, |(f, _)| f)
    } else {
        arg
    }
}

/// Every unknown `--long` flag of the command line, found by parsing again without each one
/// clap stops at (bounded: at most 32 rounds).
fn unknown_long_flags(argv: &[std::ffi::OsString], first: &str) -> Vec<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !first.starts_with("--") {
        return vec![first.to_owned()];
    }
    let mut rest: Vec<std::ffi::OsString> = argv.to_vec();
    let mut found: Vec<String> = Vec::new();
    let mut next = first.to_owned();
    for _ in 0..32 {
        if !next.starts_with("--") {
            break;
        }
        found.push(flag_name(&next).to_owned());
        // pi takes the next word as the unknown flag's value unless it looks like a flag or
        // an @file.
        let name = flag_name(&next).to_owned();
        let at = rest.iter().position(|a| {
            let a = a.to_string_lossy();
            a == name || a.starts_with(&format!("{name}="))
        });
        if let Some(i) = at {
            let takes_value = !rest[i].to_string_lossy().contains('=')
                && rest.get(i + 1).is_some_and(|v| {
                    let v = v.to_string_lossy();
                    !v.starts_with('-') && !v.starts_with('@')
                });
            rest.drain(i..=i + usize::from(takes_value));
        } else {
            break;
        }
        match Cli::try_parse_from(&rest) {
            Err(e) if e.kind() == ErrorKind::UnknownArgument => {
                match e.get(ContextKind::InvalidArg) {
                    Some(ContextValue::String(s)) => next = s.clone(),
                    _ => break,
                }
            }
            _ => break,
        }
    }
    found
}
