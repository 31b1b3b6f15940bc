//! Scaffolding shared by the checkpoint suites (`checkpoints`, `checkpoint_harness`,
//! `checkpoint_app`): temporary git repositories and files, a JSONL session with its recorder,
//! the `write` / `bash` tools the faux model calls, a harness with the checkpoint hook, and
//! the shape of a session log.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use arbor_agent::agent::{AgentTool, ToolError, ToolInvocation, ToolOutput, ToolRef};
use arbor_agent::harness::{AgentHarness, HarnessOptions, SystemPrompt};
use arbor_agent::session::{CreateOptions, EntryKind, JsonlRepository, Session, SessionRepository};
use arbor_ai::faux::FauxProvider;
use arbor_checkpoint::CheckpointSettings;
use arbor_coding_agent::checkpoints::{CheckpointHook, Recorder, CHECKPOINT_TYPE, RESTORE_TYPE};
use serde_json::{json, Value};

/// Runs git in `dir` with a fixed identity; fails the test with git's stderr. Returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "user")
        .env("GIT_AUTHOR_EMAIL", "user@example.com")
        .env("GIT_COMMITTER_NAME", "user")
        .env("GIT_COMMITTER_EMAIL", "user@example.com")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs a bash script in `dir`; fails the test with its stderr.
pub fn sh(dir: &Path, script: &str) {
    let out = Command::new("bash")
        .current_dir(dir)
        .args(["-c", script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes `root/rel`, creating its folders.
pub fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

/// `root/rel` as text (`None`: missing).
pub fn read(root: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(root.join(rel)).ok()
}

/// Every file under `root` except `.git`, with its bytes, sorted by path.
pub fn files(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            if e.file_name() == ".git" {
                continue;
            }
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((
                    p.strip_prefix(root).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

/// A git repository in a temporary folder with `files` committed; returns the folder and its
/// canonical path (what the recorder sees).
pub fn repo_with(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    for (p, c) in files {
        write(&root, p, c.as_bytes());
    }
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "init"]);
    (dir, root)
}

/// The refs of every checkpoint in `root`'s repository.
pub fn checkpoint_refs(root: &Path) -> Vec<String> {
    git(
        root,
        &["for-each-ref", "--format=%(refname)", "refs/arbor/"],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

/// A fresh JSONL session under `home/sessions` for `cwd`: the session, its id and its file.
pub async fn new_session(home: &Path, cwd: &Path) -> (Session, String, PathBuf) {
    let storage = JsonlRepository::new(home.join("sessions"))
        .create(CreateOptions::new(cwd.display().to_string()))
        .await
        .unwrap();
    let header = arbor_agent::session::SessionStorage::header(&storage)
        .await
        .unwrap();
    let path = PathBuf::from(arbor_agent::session::SessionStorage::location(&storage));
    (Session::new(Arc::new(storage)), header.id, path)
}

/// The recorder of session `session_id` for `cwd` with default settings (checkpoints on).
pub fn recorder(cwd: &Path, session_id: &str, home: &Path) -> Recorder {
    Recorder::open(cwd, session_id, &CheckpointSettings::default(), home)
        .unwrap()
        .unwrap()
}

fn object_schema() -> &'static Value {
    static S: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    S.get_or_init(|| json!({"type": "object"}))
}

/// `write {path, content}` inside the root (folders created).
pub struct WriteTool(pub PathBuf);

#[async_trait::async_trait]
impl AgentTool for WriteTool {
    fn name(&self) -> &str {
        "write"
    }
    fn description(&self) -> &str {
        "Writes a file"
    }
    fn parameters(&self) -> &Value {
        object_schema()
    }
    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        write(
            &self.0,
            call.arguments["path"].as_str().unwrap(),
            call.arguments["content"].as_str().unwrap().as_bytes(),
        );
        Ok(ToolOutput::text("written"))
    }
}

/// `bash {command, sleepMs?}` in the root: runs the command (it must succeed), then waits
/// `sleepMs` before answering, ending early with an error when the call is cancelled.
pub struct BashTool(pub PathBuf);

#[async_trait::async_trait]
impl AgentTool for BashTool {
    fn name(&self) -> &str {
        "bash"
    }
    fn description(&self) -> &str {
        "Runs a command"
    }
    fn parameters(&self) -> &Value {
        object_schema()
    }
    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        sh(&self.0, call.arguments["command"].as_str().unwrap());
        let ms = call.arguments["sleepMs"].as_u64().unwrap_or(0);
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(ms)) => Ok(ToolOutput::text("ran")),
            _ = call.cancel.cancelled() => Err(ToolError::new("aborted")),
        }
    }
}

/// A harness over a JSONL session for `root` with the faux provider, the `write` and `bash`
/// tools and the checkpoint hook installed (what the app wires).
pub struct Rig {
    pub _home: tempfile::TempDir,
    pub session: Arc<Session>,
    pub faux: FauxProvider,
    pub harness: AgentHarness,
    pub recorder: Arc<Recorder>,
    pub hook: Arc<CheckpointHook>,
}

pub async fn rig(root: &Path) -> Rig {
    let home = tempfile::tempdir().unwrap();
    let (session, sid, _) = new_session(home.path(), root).await;
    let session = Arc::new(session);
    let recorder = Arc::new(recorder(root, &sid, home.path()));
    let faux = FauxProvider::builder().seed(7).build();
    let tools: Vec<ToolRef> = vec![
        Arc::new(WriteTool(root.to_path_buf())),
        Arc::new(BashTool(root.to_path_buf())),
    ];
    let harness = AgentHarness::new(
        session.clone(),
        Arc::new(faux.clone()),
        HarnessOptions::new(faux.model())
            .with_tools(tools)
            .with_system_prompt(SystemPrompt::Text("test".into())),
    )
    .unwrap();
    let hook = Arc::new(CheckpointHook::new(recorder.clone(), session.clone()));
    harness.add_hook(hook.clone());
    Rig {
        _home: home,
        session,
        faux,
        harness,
        recorder,
        hook,
    }
}

/// The log in order: `cp:<trigger>` for checkpoints, `restore:<mode>` for restores, the role
/// of each message.
pub async fn shape(session: &Session) -> Vec<String> {
    session
        .entries()
        .await
        .unwrap()
        .iter()
        .filter_map(|e| match &e.kind {
            EntryKind::Custom(c) if c.custom_type == CHECKPOINT_TYPE => Some(format!(
                "cp:{}",
                c.data.as_ref().unwrap()["trigger"].as_str().unwrap()
            )),
            EntryKind::Custom(c) if c.custom_type == RESTORE_TYPE => Some(format!(
                "restore:{}",
                c.data.as_ref().unwrap()["mode"].as_str().unwrap()
            )),
            EntryKind::Message(_) => {
                let v = serde_json::to_value(e).unwrap();
                Some(v["message"]["role"].as_str().unwrap().to_string())
            }
            _ => None,
        })
        .collect()
}

/// The id of the first entry whose JSON contains `needle`.
pub async fn id_of_text(session: &Session, needle: &str) -> String {
    session
        .entries()
        .await
        .unwrap()
        .into_iter()
        .find(|e| e.to_json().contains(needle))
        .unwrap()
        .id
}
