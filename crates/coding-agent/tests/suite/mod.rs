//! Integration tests, one module per topic, plus shared helpers.

mod basics;
mod context_json;
mod errors;
mod fork_migrate;
mod views;
mod window;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The shared fixture folder (`shared/` beside the repository checkout). `ARBOR_SHARED_DIR`
/// overrides; otherwise the nearest ancestor of this crate holding `shared/fixtures` wins.
pub fn shared_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ARBOR_SHARED_DIR") {
        return PathBuf::from(dir);
    }
    let mut dir: &Path = Path::new(env!("CARGO_MANIFEST_DIR"));
    loop {
        let candidate = dir.join("shared");
        if candidate.join("fixtures").is_dir() {
            return candidate;
        }
        match dir.parent() {
            Some(parent) => dir = parent,
            None => panic!(
                "shared/fixtures not found above {}; set ARBOR_SHARED_DIR",
                env!("CARGO_MANIFEST_DIR")
            ),
        }
    }
}

/// Every `*.jsonl` in `shared/fixtures/<sub>`, sorted.
pub fn fixture_files(sub: &str) -> Vec<PathBuf> {
    let dir = shared_dir().join("fixtures").join(sub);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {}", dir.display());
    files
}

pub fn fixture(sub: &str, name: &str) -> PathBuf {
    let path = shared_dir().join("fixtures").join(sub).join(name);
    assert!(path.is_file(), "missing fixture {}", path.display());
    path
}

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
