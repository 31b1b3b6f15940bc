//! Integration tests, one module per topic, plus shared helpers.

mod agent_e2e;
mod basics;
mod bounded_input;
mod checkpoint_app;
mod checkpoint_harness;
mod checkpoint_support;
mod checkpoints;
mod context_json;
mod errors;
mod fork_migrate;
mod hooks;
mod html_export;
mod mcp;
mod mcp_http;
mod mcp_tui;
mod pi_flags;
mod pi_open;
mod plans;
mod postgres;
mod resources;
mod retries;
mod rpc_concurrency;
mod rpc_parity;
mod rpc_replay;
mod run_endings;
mod search_store;
mod session_files;
mod session_search;
mod store_fuzz;
mod summaries;
mod tmux;
mod tree_view;
mod trust_tui;
mod tui_app;
mod tui_keys;
mod tui_onboarding;
mod tui_pickers;
mod tui_restore;
mod tui_restore_confirm;
mod tui_resume;
mod tui_search;
mod tui_smoke;
mod tui_transcript;
mod tui_tree;
mod views;
mod window;

pub use arbor_test_support::fixtures::{fixture, fixture_files, pi_script, testdata_dir};
use std::path::Path;
use std::process::{Command, Output};

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Self {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
        }
    }
}

/// A command for the real binary with a private, empty ARBOR_HOME (never the user's).
pub fn arbor(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_arbor"));
    cmd.env("ARBOR_HOME", home)
        .env_remove("HOME")
        .env("NO_COLOR", "1")
        .current_dir(home);
    cmd
}

/// Runs `arbor ARGS` with an empty temporary home.
pub fn run(args: &[&str]) -> Run {
    let home = tempfile::tempdir().unwrap();
    run_in(home.path(), args)
}

pub fn run_in(home: &Path, args: &[&str]) -> Run {
    arbor(home)
        .args(args)
        .output()
        .expect("running arbor")
        .into()
}

/// A run that must succeed with an empty stderr.
pub fn ok(run: Run) -> Run {
    assert_eq!(run.code, 0, "exit code; stderr: {}", run.stderr);
    run
}
