//! Shared helpers: temporary repositories and a way to look at everything the user owns.

mod git_capture;
mod git_restore;
#[cfg(target_os = "linux")]
mod notify;
mod prune;
mod snapshot;
mod stat_watch;
mod user_files;

use std::path::{Path, PathBuf};
use std::process::Command;

use arbor_checkpoint::{Captured, Checkpoint, CheckpointSettings, Workspace};

/// Runs git in `dir` with a fixed identity; panics with git's stderr on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "user")
        .env("GIT_AUTHOR_EMAIL", "user@example.com")
        .env("GIT_COMMITTER_NAME", "user")
        .env("GIT_COMMITTER_EMAIL", "user@example.com")
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A repository with one commit of `files`.
pub fn repo(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["config", "commit.gpgsign", "false"]);
    for (path, bytes) in files {
        write(dir.path(), path, bytes);
    }
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "initial"]);
    dir
}

pub fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

pub fn read(root: &Path, rel: &str) -> Option<Vec<u8>> {
    std::fs::read(root.join(rel)).ok()
}

pub fn open(dir: &Path, session: &str) -> Workspace {
    let home = dir.join(".arbor-home-unused");
    Workspace::open(dir, session, &CheckpointSettings::default(), &home).unwrap()
}

/// Captures and expects a new checkpoint.
pub fn created(ws: &mut Workspace, previous: Option<&Checkpoint>) -> Checkpoint {
    match ws.capture(previous).unwrap() {
        Captured::Created { checkpoint, .. } => checkpoint,
        other => panic!("expected a new checkpoint, got {other:?}"),
    }
}

/// Every file under `root` (except `.git`) with its bytes, sorted: the workspace as the user
/// sees it.
pub fn files(root: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_name() == ".git" {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// What the user owns in a repository besides the worktree: branches and tags, the stash, the
/// index file's bytes, HEAD and its reflog.
#[derive(Debug, PartialEq)]
pub struct UserState {
    refs: String,
    stash: String,
    index: Option<Vec<u8>>,
    head: String,
    head_log: Option<Vec<u8>>,
}

pub fn user_state(root: &Path) -> UserState {
    let git_dir = PathBuf::from(git(root, &["rev-parse", "--absolute-git-dir"]).trim());
    UserState {
        refs: git(
            root,
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname)",
                "refs/heads",
                "refs/tags",
                "refs/stash",
            ],
        ),
        stash: git(root, &["stash", "list"]),
        index: std::fs::read(git_dir.join("index")).ok(),
        head: std::fs::read_to_string(git_dir.join("HEAD")).unwrap(),
        head_log: std::fs::read(git_dir.join("logs/HEAD")).ok(),
    }
}
