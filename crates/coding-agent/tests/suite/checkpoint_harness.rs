//! The checkpoint hook on a real `AgentHarness` with the faux provider: the seed-001 plan A /
//! plan B switch driven by model tool calls (`write`, `bash` with `sed`), navigated with
//! `navigate_tree` plus the recorder's restore steps.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arbor_agent::agent::{AgentTool, ToolError, ToolInvocation, ToolOutput, ToolRef};
use arbor_agent::harness::{AgentHarness, HarnessOptions, NavigateOptions, SystemPrompt};
use arbor_agent::session::{
    CreateOptions, EntryKind, JsonlRepository, Session, SessionRepository, SessionStorage,
};
use arbor_ai::faux::{FauxProvider, FauxResponse};
use arbor_checkpoint::CheckpointSettings;
use arbor_coding_agent::checkpoints::{
    navigation_leaf, CheckpointHook, Recorder, RestoreMode, CHECKPOINT_TYPE, RESTORE_TYPE,
};
use serde_json::{json, Value};

/// `write {path, content}` inside `root`.
struct WriteTool(PathBuf);
/// `bash {command}` run in `root`.
struct BashTool(PathBuf);

fn object_schema() -> &'static Value {
    static S: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    S.get_or_init(|| json!({"type": "object"}))
}

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
        let path = self.0.join(call.arguments["path"].as_str().unwrap_or("x"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, call.arguments["content"].as_str().unwrap_or("")).unwrap();
        Ok(ToolOutput::text("written"))
    }
}

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
        let out = Command::new("bash")
            .current_dir(&self.0)
            .args(["-c", call.arguments["command"].as_str().unwrap_or("true")])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(ToolOutput::text("ran"))
    }
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "u")
        .env("GIT_AUTHOR_EMAIL", "u@e")
        .env("GIT_COMMITTER_NAME", "u")
        .env("GIT_COMMITTER_EMAIL", "u@e")
        .args(args)
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

fn files(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().unwrap() == ".git" {
                continue;
            }
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

/// Custom types and message roles of the log, in order (`cp`, `restore`, roles).
async fn shape(session: &Session) -> Vec<String> {
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
            EntryKind::Custom(c) if c.custom_type == RESTORE_TYPE => Some("restore".into()),
            EntryKind::Message(_) => {
                let v = serde_json::to_value(e).unwrap();
                Some(v["message"]["role"].as_str().unwrap().to_string())
            }
            _ => None,
        })
        .collect()
}

async fn navigate(
    harness: &AgentHarness,
    recorder: &Recorder,
    session: &Session,
    target: &str,
    mode: RestoreMode,
) {
    let leaf = navigation_leaf(session, Some(target)).await.unwrap();
    let plan = recorder
        .prepare_restore(session, leaf.as_deref(), mode)
        .await
        .unwrap();
    let result = harness
        .navigate_tree(Some(target), NavigateOptions::default())
        .await
        .unwrap();
    assert!(!result.cancelled);
    assert_eq!(session.leaf_id().await.unwrap(), leaf);
    if let Some(plan) = plan {
        recorder.finish_restore(session, plan).await.unwrap();
    }
}

#[tokio::test]
async fn the_hook_captures_harness_turns_and_navigation_switches_plans() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    git(&root, &["init", "-q"]);
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/login.rs"), "fn login() { password() }\n").unwrap();
    std::fs::write(root.join("config.toml"), "mode = \"password\"\n").unwrap();
    std::fs::write(root.join("README.md"), "# login\n").unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "init"]);
    let initial = files(&root);

    let home = tempfile::tempdir().unwrap();
    let storage = JsonlRepository::new(home.path().join("sessions"))
        .create(CreateOptions {
            cwd: root.display().to_string(),
            ..Default::default()
        })
        .await
        .unwrap();
    let sid = storage.header().await.unwrap().id;
    let session = Arc::new(Session::new(Arc::new(storage)));
    let recorder = Arc::new(
        Recorder::open(&root, &sid, &CheckpointSettings::default(), home.path())
            .unwrap()
            .unwrap(),
    );
    let faux = FauxProvider::builder().seed(7).build();
    let tools: Vec<ToolRef> = vec![
        Arc::new(WriteTool(root.clone())),
        Arc::new(BashTool(root.clone())),
    ];
    let harness = AgentHarness::new(
        session.clone(),
        Arc::new(faux.clone()),
        HarnessOptions {
            model: faux.model(),
            tools,
            system_prompt: SystemPrompt::Text("test".into()),
            ..HarnessOptions::default()
        },
    )
    .unwrap();
    let hook = Arc::new(CheckpointHook::new(recorder.clone(), session.clone()));
    harness.add_hook(hook.clone());

    // Plan A: a write and a bash sed in one batch.
    faux.push(
        FauxResponse::tool_call(
            "write",
            json!({"path": "src/token.rs", "content": "pub fn t() {}\n"}),
        )
        .with_tool_call(
            "bash",
            json!({"command": "sed -i 's/password/token/' config.toml src/login.rs"}),
        ),
    );
    faux.push(FauxResponse::text("plan A done"));
    harness
        .prompt("请用方案 A 重构登录流程。", &[])
        .await
        .unwrap();
    let files_a = files(&root);
    assert_ne!(files_a, initial);
    let plan_a_tip = session.leaf_id().await.unwrap().unwrap();
    assert_eq!(
        shape(&session).await,
        [
            "cp:turn_start",
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "cp:tool_batch",
            "assistant"
        ]
    );
    assert!(hook.take_notices().is_empty());

    // Edit the plan A prompt: back to its parent, code included.
    let prompt_a = session
        .entries()
        .await
        .unwrap()
        .into_iter()
        .find(|e| e.to_json().contains("方案 A"))
        .unwrap()
        .id;
    navigate(&harness, &recorder, &session, &prompt_a, RestoreMode::Both).await;
    assert_eq!(files(&root), initial);

    faux.push(FauxResponse::tool_call(
        "bash",
        json!({"command": "rm README.md && echo 'fn login() { sso() }' > src/login.rs"}),
    ));
    faux.push(FauxResponse::text("plan B done"));
    harness
        .prompt("请用方案 B 重构登录流程。", &[])
        .await
        .unwrap();
    let files_b = files(&root);
    let plan_b_tip = session.leaf_id().await.unwrap().unwrap();

    navigate(
        &harness,
        &recorder,
        &session,
        &plan_a_tip,
        RestoreMode::Both,
    )
    .await;
    assert_eq!(files(&root), files_a, "plan A's files, byte for byte");
    // The next prompt continues plan A with plan A's code (the restore entry is on the path).
    faux.push(FauxResponse::text("continuing A"));
    harness.prompt("继续", &[]).await.unwrap();
    let continued = session.leaf_id().await.unwrap().unwrap();

    navigate(
        &harness,
        &recorder,
        &session,
        &plan_b_tip,
        RestoreMode::Both,
    )
    .await;
    assert_eq!(files(&root), files_b, "plan B's files, byte for byte");
    navigate(
        &harness,
        &recorder,
        &session,
        &continued,
        RestoreMode::ConversationOnly,
    )
    .await;
    assert_eq!(files(&root), files_b, "conversation only leaves the files");
}
