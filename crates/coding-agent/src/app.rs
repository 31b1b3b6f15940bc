//! The top-level dispatch: parse the arguments, run the command on a worker thread, turn
//! failures into one stderr line and an exit code.

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::commands;
use crate::error::{report, CliError};

/// Parses the arguments, runs the command and turns failures into one stderr line.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
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
    runtime.block_on(async move {
        match cli.command {
            Command::Session(cmd) => {
                commands::session(cli.session_dir.as_deref(), cli.store.as_deref(), cmd).await
            }
        }
    })
}
