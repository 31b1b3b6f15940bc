//! Running `git` plumbing: one place that builds the command, scrubs the environment the user's
//! shell or hook may have set, and turns failures into [`CheckpointError::Git`].

use std::ffi::OsStr;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{CheckpointError, Result};

/// Variables that would redirect git away from the repository we were opened on, or change the
/// index it uses behind our back.
const SCRUBBED: [&str; 8] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_COMMON_DIR",
];

/// Whether git may take the locks it calls optional: `git status` writes back the index it read
/// (refreshed stat data, the untracked cache) only when it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Locks {
    /// `GIT_OPTIONAL_LOCKS=0`: the default for every command, so nothing run on the user's
    /// index rewrites it behind their back.
    None,
    /// Allowed: only for commands on the private index (DECISIONS §27.50).
    Optional,
}

/// The output of one git run.
pub(crate) struct Output {
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// Runs git in one directory.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    pub dir: PathBuf,
    /// Processes started so far (shared by clones): what a capture cost in spawns.
    spawned: Arc<AtomicU64>,
}

impl Git {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Git {
            dir: dir.into(),
            spawned: Arc::new(AtomicU64::new(0)),
        }
    }

    /// How many git processes this runner has started.
    pub fn spawned(&self) -> u64 {
        self.spawned.load(Ordering::Relaxed)
    }

    fn command(&self, args: &[&OsStr], index: Option<&Path>, locks: Locks) -> Command {
        let mut cmd = Command::new("git");
        cmd.current_dir(&self.dir);
        for var in SCRUBBED {
            cmd.env_remove(var);
        }
        // Checkpoint commits carry a fixed identity: capturing must work in a repository whose
        // user never configured one, and must not look like the user's own commits.
        cmd.env("GIT_AUTHOR_NAME", "arbor")
            .env("GIT_AUTHOR_EMAIL", "arbor@localhost")
            .env("GIT_COMMITTER_NAME", "arbor")
            .env("GIT_COMMITTER_EMAIL", "arbor@localhost")
            .env("GIT_TERMINAL_PROMPT", "0");
        match locks {
            Locks::None => {
                cmd.env("GIT_OPTIONAL_LOCKS", "0");
            }
            Locks::Optional => {
                cmd.env_remove("GIT_OPTIONAL_LOCKS");
            }
        }
        if let Some(index) = index {
            cmd.env("GIT_INDEX_FILE", index);
        }
        cmd.args([
            "-c",
            "core.quotePath=false",
            "-c",
            "advice.addEmbeddedRepo=false",
        ]);
        cmd.args(args);
        cmd
    }

    /// Runs and returns whatever happened (non-zero exits included).
    pub fn run_raw(
        &self,
        args: &[&OsStr],
        index: Option<&Path>,
        stdin: Option<&[u8]>,
    ) -> Result<Output> {
        self.run_raw_with(args, index, stdin, Locks::None)
    }

    /// [`Git::run_raw`] with a choice of optional locks.
    pub fn run_raw_with(
        &self,
        args: &[&OsStr],
        index: Option<&Path>,
        stdin: Option<&[u8]>,
        locks: Locks,
    ) -> Result<Output> {
        self.finish(self.command(args, index, locks), stdin)
    }

    /// [`Git::run_os`] with git's messages in English, for output that is parsed (`git add
    /// --verbose` translates its `add '…'` lines).
    pub fn run_os_untranslated(
        &self,
        args: &[&OsStr],
        index: Option<&Path>,
        stdin: Option<&[u8]>,
    ) -> Result<Vec<u8>> {
        let mut cmd = self.command(args, index, Locks::None);
        cmd.env("LC_ALL", "C").env_remove("LANGUAGE");
        let out = self.finish(cmd, stdin)?;
        if out.status == 0 {
            Ok(out.stdout)
        } else {
            Err(self.failure(args, out.stderr))
        }
    }

    fn finish(&self, mut cmd: Command, stdin: Option<&[u8]>) -> Result<Output> {
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(CheckpointError::GitMissing)?;
        self.spawned.fetch_add(1, Ordering::Relaxed);
        if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(bytes)
                .map_err(|e| CheckpointError::io(&self.dir, e))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| CheckpointError::io(&self.dir, e))?;
        Ok(Output {
            status: out.status.code().unwrap_or(-1),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }

    /// Runs and fails unless git exits 0.
    pub fn run(&self, args: &[&str], index: Option<&Path>) -> Result<Vec<u8>> {
        let os: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        self.run_os(&os, index, None)
    }

    pub fn run_os(
        &self,
        args: &[&OsStr],
        index: Option<&Path>,
        stdin: Option<&[u8]>,
    ) -> Result<Vec<u8>> {
        let out = self.run_raw(args, index, stdin)?;
        if out.status == 0 {
            Ok(out.stdout)
        } else {
            Err(self.failure(args, out.stderr))
        }
    }

    /// Runs and returns stdout as one trimmed line.
    pub fn line(&self, args: &[&str], index: Option<&Path>) -> Result<String> {
        let out = self.run(args, index)?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    pub fn failure(&self, args: &[&OsStr], stderr: String) -> CheckpointError {
        CheckpointError::Git {
            command: args
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            dir: self.dir.clone(),
            stderr: if stderr.is_empty() {
                "(no message)".to_string()
            } else {
                stderr
            },
        }
    }
}

/// Where a work tree's repository lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Located {
    pub toplevel: PathBuf,
    /// This work tree's git dir (HEAD, index, in-progress operations).
    pub git_dir: PathBuf,
    /// The shared git dir (refs, objects); differs from `git_dir` in linked worktrees.
    pub common_dir: PathBuf,
}

/// The repository around a directory, if any. `None` outside a work tree (including inside a
/// bare repository or a `.git` directory).
pub(crate) fn discover(cwd: &Path) -> Result<Option<Located>> {
    let git = Git::new(cwd);
    let args = [
        "rev-parse",
        "--path-format=absolute",
        "--is-inside-work-tree",
        "--show-toplevel",
        "--git-dir",
        "--git-common-dir",
    ];
    let os: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    let out = git.run_raw(&os, None, None)?;
    if out.status != 0 {
        return Ok(None);
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    match lines.as_slice() {
        ["true", top, dir, common] => Ok(Some(Located {
            toplevel: PathBuf::from(top),
            git_dir: PathBuf::from(dir),
            common_dir: PathBuf::from(common),
        })),
        ["false", ..] => Ok(None),
        _ => Err(CheckpointError::GitOutput {
            command: args.join(" "),
            output: text.into_owned(),
        }),
    }
}
