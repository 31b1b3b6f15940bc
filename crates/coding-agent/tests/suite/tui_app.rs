//! The interactive app driven by keys with no terminal: the state machine and the driver over a
//! real harness on the faux provider (steering, follow-ups, abort, double-Esc, `/tree`), and
//! `TestBackend` snapshots of the whole screen and the footer.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor_agent::harness::{AgentHarness, HarnessOptions, Phase, SystemPrompt};
use arbor_agent::message::AgentMessage;
use arbor_agent::session::{EntryKind, MemoryStorage, Session};
use arbor_ai::faux::{FauxProvider, FauxResponse};
use arbor_ai::Message;
use arbor_coding_agent::config::Settings;
use arbor_coding_agent::tui::driver::{Driver, TuiApp};
use arbor_coding_agent::tui::footer::FooterInfo;
use arbor_coding_agent::tui::state::{AppEvent, AppState, Effect, Overlay};
use arbor_coding_agent::tui::theme::Theme;
use arbor_tools::{self as tools, ToolEnv, ToolSettings};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;

pub(crate) fn key(code: KeyCode) -> AppEvent {
    AppEvent::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn alt_enter() -> AppEvent {
    AppEvent::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT))
}

pub(crate) struct Rig {
    pub(crate) faux: FauxProvider,
    pub(crate) driver: Driver,
    _dir: tempfile::TempDir,
}

async fn rig() -> Rig {
    rig_with_settings(json!({"retry": {"enabled": false}})).await
}

/// A rig over an in-memory session with these settings.json contents.
pub(crate) async fn rig_with_settings(settings: serde_json::Value) -> Rig {
    let faux = FauxProvider::builder().seed(3).build();
    let dir = tempfile::tempdir().unwrap();
    let session = Arc::new(Session::new(Arc::new(MemoryStorage::new(
        dir.path().display().to_string(),
    ))));
    let env = ToolEnv::new(dir.path().to_path_buf(), ToolSettings::default());
    let harness = AgentHarness::new(
        session.clone(),
        Arc::new(faux.clone()),
        HarnessOptions::new(faux.model())
            .with_tools(tools::builtin_tools(&env))
            .with_system_prompt(SystemPrompt::Text("You are a test agent.".into()))
            .with_compaction(arbor_agent::compaction::CompactionSettings {
                enabled: true,
                reserve_tokens: 16_384,
                keep_recent_tokens: 1,
            }),
    )
    .unwrap();
    let ctx = TuiApp {
        harness,
        session,
        session_file: None,
        session_id: "test-session".into(),
        registry: Arc::new(arbor_ai::models::ModelRegistry::builtin().unwrap()),
        cycle_models: Vec::new(),
        usable_models: Vec::new(),
        settings: Settings::from_value(settings),
        cwd: PathBuf::from("/work/project"),
        repo: None,
        session_store: None,
        checkpoints: None,
        env_policy: Default::default(),
        resources: arbor_coding_agent::resources::LiveResources::empty(std::path::Path::new(
            "/work/project",
        )),
        trust: arbor_coding_agent::trust::ProjectTrust::new(
            true,
            arbor_coding_agent::trust::TrustSource::NothingToProtect,
        ),
        mcp: None,
        logins: None,
    };
    let driver = Driver::new(ctx, Theme::monochrome()).await.unwrap();
    Rig {
        faux,
        driver,
        _dir: dir,
    }
}

impl Rig {
    pub(crate) async fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            self.driver.dispatch(key(KeyCode::Char(c))).await;
        }
    }

    /// Types `text` and presses Enter.
    pub(crate) async fn send(&mut self, text: &str) {
        self.type_text(text).await;
        self.driver.dispatch(key(KeyCode::Enter)).await;
    }

    /// Lets spawned tasks run until the harness is in a turn.
    pub(crate) async fn until_running(&mut self) {
        for _ in 0..2000 {
            if self.driver.app.harness.phase() == Phase::Turn {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("the prompt never started");
    }

    /// Delivers the events that arrived so far without waiting for tasks.
    pub(crate) async fn pump(&mut self) {
        tokio::time::sleep(Duration::from_millis(5)).await;
        self.driver.settle_available().await;
    }

    pub(crate) async fn user_texts(&self) -> Vec<String> {
        let mut out = Vec::new();
        for e in self.driver.app.session.entries().await.unwrap() {
            if let EntryKind::Message(m) = &e.kind {
                if let AgentMessage::Llm(Message::User(u)) = &m.message {
                    out.push(u.content.joined_text(""));
                }
            }
        }
        out
    }

    pub(crate) async fn entry_with_text(&self, text: &str) -> String {
        for e in self.driver.app.session.entries().await.unwrap() {
            if let EntryKind::Message(m) = &e.kind {
                let t = match &m.message {
                    AgentMessage::Llm(Message::User(u)) => u.content.joined_text(""),
                    AgentMessage::Llm(Message::Assistant(a)) => a.text(),
                    _ => continue,
                };
                if t == text {
                    return e.id.clone();
                }
            }
        }
        panic!("no entry with text {text:?}");
    }

    /// Moves the open `/tree` selection up to `target`.
    pub(crate) async fn select_in_tree(&mut self, target: &str) {
        for _ in 0..40 {
            let Some(Overlay::Tree(nav)) = &self.driver.state.overlay else {
                panic!("the tree closed")
            };
            if nav.selected_id() == Some(target) {
                return;
            }
            self.driver.dispatch(key(KeyCode::Up)).await;
        }
        panic!("{target} never got selected");
    }

    pub(crate) fn screen(&mut self, w: u16, h: u16) -> String {
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        term.draw(|f| {
            let area = f.area();
            self.driver.render(area, f.buffer_mut());
        })
        .unwrap();
        buffer_text(term.backend().buffer())
    }
}

fn buffer_text(buf: &ratatui::buffer::Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn slow_text(text: &str) -> FauxResponse {
    FauxResponse::text(text).chunk_delay(Duration::from_millis(30))
}

#[tokio::test]
async fn enter_steers_and_alt_enter_queues_a_follow_up_while_running() {
    let mut r = rig().await;
    r.faux
        .push(slow_text("first answer that streams in several chunks"));
    r.faux.push(FauxResponse::text("after steering"));
    r.faux.push(FauxResponse::text("after the follow-up"));
    r.send("go").await;
    assert!(r.driver.state.is_running());
    r.until_running().await;
    r.send("steer me").await;
    r.type_text("later").await;
    r.driver.dispatch(alt_enter()).await;
    assert!(r.driver.state.editor.is_empty());
    r.pump().await;
    // Both wait above the editor until the harness takes them.
    assert_eq!(r.driver.state.steering, ["steer me"]);
    assert_eq!(r.driver.state.follow_ups, ["later"]);
    let screen = r.screen(60, 16);
    assert!(screen.contains("steer: steer me"), "{screen}");
    assert!(screen.contains("follow-up: later"), "{screen}");
    r.driver.settle().await;
    assert!(!r.driver.state.is_running());
    assert_eq!(r.user_texts().await, ["go", "steer me", "later"]);
    assert!(r.driver.state.steering.is_empty() && r.driver.state.follow_ups.is_empty());
    // The steering message went in before the follow-up's answer was asked for.
    let reqs = r.faux.requests();
    assert_eq!(reqs.len(), 3);
}

#[tokio::test]
async fn esc_aborts_a_slow_stream_within_200ms() {
    let mut r = rig().await;
    r.faux
        .push(FauxResponse::text("x ".repeat(400)).chunk_delay(Duration::from_millis(50)));
    r.send("stream a lot").await;
    r.until_running().await;
    tokio::time::sleep(Duration::from_millis(60)).await;
    let t = Instant::now();
    r.driver.dispatch(key(KeyCode::Esc)).await;
    r.driver.settle().await;
    let took = t.elapsed();
    assert!(took < Duration::from_millis(200), "abort took {took:?}");
    assert!(!r.driver.state.is_running());
    assert_eq!(r.driver.app.harness.phase(), Phase::Idle);
}

#[tokio::test]
async fn esc_aborts_a_running_tool_within_200ms() {
    let mut r = rig().await;
    r.faux.push(FauxResponse::tool_call(
        "bash",
        json!({"command": "sleep 5"}),
    ));
    r.faux.push(FauxResponse::text("never asked"));
    r.send("run something slow").await;
    r.until_running().await;
    // Wait until the tool runs.
    for _ in 0..200 {
        r.pump().await;
        let started = r.screen(80, 20).contains("sleep 5");
        if started {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let t = Instant::now();
    r.driver.dispatch(key(KeyCode::Esc)).await;
    r.driver.settle().await;
    let took = t.elapsed();
    assert!(took < Duration::from_millis(200), "abort took {took:?}");
    assert_eq!(r.faux.requests().len(), 1, "no request after the abort");
}

#[test]
fn double_esc_on_an_empty_editor_opens_the_tree() {
    let mut s = AppState::new(FooterInfo::default(), Theme::monochrome());
    let t0 = Instant::now();
    assert!(s.handle(key(KeyCode::Esc), t0).is_empty());
    assert_eq!(
        s.handle(key(KeyCode::Esc), t0 + Duration::from_millis(300)),
        [Effect::OpenTree]
    );
    // Too slow: two single presses.
    assert!(s
        .handle(key(KeyCode::Esc), t0 + Duration::from_secs(2))
        .is_empty());
    assert!(s
        .handle(key(KeyCode::Esc), t0 + Duration::from_secs(3))
        .is_empty());
    // Not on a non-empty editor.
    s.handle(key(KeyCode::Char('x')), t0);
    assert!(s.handle(key(KeyCode::Esc), t0).is_empty());
    assert!(s
        .handle(key(KeyCode::Esc), t0 + Duration::from_millis(100))
        .is_empty());
    // A key in between breaks the pair.
    let mut s = AppState::default();
    s.handle(key(KeyCode::Esc), t0);
    s.handle(key(KeyCode::Left), t0);
    assert!(s
        .handle(key(KeyCode::Esc), t0 + Duration::from_millis(100))
        .is_empty());
}

#[test]
fn keys_map_to_effects() {
    let mut s = AppState::default();
    let now = Instant::now();
    for c in "hello".chars() {
        s.handle(key(KeyCode::Char(c)), now);
    }
    s.handle(
        AppEvent::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT)),
        now,
    );
    s.handle(
        AppEvent::Key(KeyEvent::new(KeyCode::Char('j'), KeyModifiers::CONTROL)),
        now,
    );
    // Idle Alt+Enter is a newline too.
    s.handle(alt_enter(), now);
    s.handle(key(KeyCode::Char('x')), now);
    assert_eq!(s.editor.text(), "hello\n\n\nx");
    assert_eq!(
        s.handle(key(KeyCode::Enter), now),
        [Effect::Prompt("hello\n\n\nx".into())]
    );
    // Running: Esc aborts, Enter steers.
    for c in "more".chars() {
        s.handle(key(KeyCode::Char(c)), now);
    }
    assert_eq!(
        s.handle(key(KeyCode::Enter), now),
        [Effect::Steer("more".into())]
    );
    assert_eq!(s.handle(key(KeyCode::Esc), now), [Effect::Abort]);
    // Commands.
    let mut s = AppState::default();
    for c in "/compact keep the API".chars() {
        s.handle(key(KeyCode::Char(c)), now);
    }
    assert_eq!(
        s.handle(key(KeyCode::Enter), now),
        [Effect::Compact(Some("keep the API".into()))]
    );
    let mut s = AppState::default();
    for c in "!!ls -a".chars() {
        s.handle(key(KeyCode::Char(c)), now);
    }
    assert_eq!(
        s.handle(key(KeyCode::Enter), now),
        [Effect::Bash {
            command: "ls -a".into(),
            include: false
        }]
    );
    // Slash completion: "/tr" + Tab completes, Enter runs it.
    let mut s = AppState::default();
    for c in "/tr".chars() {
        s.handle(key(KeyCode::Char(c)), now);
    }
    assert!(s.completion.is_some());
    s.handle(key(KeyCode::Tab), now);
    assert_eq!(s.editor.text(), "/tree");
    assert_eq!(s.handle(key(KeyCode::Enter), now), [Effect::OpenTree]);
    // Unknown command: an error, the text stays.
    let mut s = AppState::default();
    for c in "/frobnicate".chars() {
        s.handle(key(KeyCode::Char(c)), now);
    }
    s.handle(key(KeyCode::Esc), now);
    assert!(s.handle(key(KeyCode::Enter), now).is_empty());
    assert_eq!(s.editor.text(), "/frobnicate");
    assert_eq!(
        format!("{:?}", s.notes.last().unwrap()),
        "Error(\"Unknown command: /frobnicate (type / to see the list)\")"
    );
    // @ completion from the project's files.
    let mut s = AppState::default();
    s.files = vec!["src/main.rs".into(), "README.md".into()];
    for c in "see @mai".chars() {
        s.handle(key(KeyCode::Char(c)), now);
    }
    s.handle(key(KeyCode::Tab), now);
    assert_eq!(s.editor.text(), "see @src/main.rs ");
}

/// Two exchanges, then `/tree` to the second user message.
/// Two exchanges, then `/tree` with "plan A" chosen.
pub(crate) async fn two_exchanges(r: &mut Rig) -> String {
    r.faux.push(FauxResponse::text("hi"));
    r.send("hello").await;
    r.driver.settle().await;
    r.faux.push(FauxResponse::text("A it is"));
    r.send("plan A").await;
    r.driver.settle().await;
    let target = r.entry_with_text("plan A").await;
    r.send("/tree").await;
    assert!(matches!(r.driver.state.overlay, Some(Overlay::Tree(_))));
    r.select_in_tree(&target).await;
    r.driver.dispatch(key(KeyCode::Enter)).await;
    target
}

async fn two_exchanges_and_tree(r: &mut Rig) -> String {
    r.faux.push(FauxResponse::text("hi"));
    r.send("hello").await;
    r.driver.settle().await;
    r.faux.push(FauxResponse::text("A it is"));
    r.send("plan A").await;
    r.driver.settle().await;
    let target = r.entry_with_text("plan A").await;
    r.send("/tree").await;
    assert!(matches!(r.driver.state.overlay, Some(Overlay::Tree(_))));
    for _ in 0..20 {
        let Some(Overlay::Tree(nav)) = &r.driver.state.overlay else {
            panic!("the tree closed")
        };
        if nav.selected_id() == Some(target.as_str()) {
            break;
        }
        r.driver.dispatch(key(KeyCode::Up)).await;
    }
    r.driver.dispatch(key(KeyCode::Enter)).await;
    assert!(
        matches!(r.driver.state.overlay, Some(Overlay::Summarize { .. })),
        "{:?}",
        r.driver.state.overlay
    );
    target
}

#[tokio::test]
async fn tree_to_a_user_message_puts_it_in_the_editor_and_moves_to_its_parent() {
    let mut r = rig().await;
    let target = two_exchanges_and_tree(&mut r).await;
    let screen = r.screen(80, 20);
    assert!(screen.contains("Summarize branch?"), "{screen}");
    // "No summary" is the first choice.
    r.driver.dispatch(key(KeyCode::Enter)).await;
    r.driver.settle().await;
    assert!(r.driver.state.overlay.is_none());
    assert_eq!(r.driver.state.editor.text(), "plan A");
    let parent = r
        .driver
        .app
        .session
        .get_entry(&target)
        .await
        .unwrap()
        .unwrap()
        .parent_id;
    assert_eq!(r.driver.app.session.leaf_id().await.unwrap(), parent);
    assert_eq!(parent, Some(r.entry_with_text("hi").await));
    // No summary entry.
    let entries = r.driver.app.session.entries().await.unwrap();
    assert!(!entries
        .iter()
        .any(|e| matches!(e.kind, EntryKind::BranchSummary(_))));
}

/// A rig over a git repository with workspace checkpoints recorded, as `arbor` wires them.
pub(crate) async fn rig_with_checkpoints(root: &std::path::Path, home: &std::path::Path) -> Rig {
    use arbor_agent::session::{CreateOptions, JsonlRepository, SessionRepository};
    let storage = JsonlRepository::new(home.join("sessions"))
        .create(CreateOptions::new(root.display().to_string()))
        .await
        .unwrap();
    rig_over(storage, root, home, json!({"retry": {"enabled": false}})).await
}

/// A rig over a stored session file (`settings`: the merged settings.json), with the
/// session's own checkpoint recorder.
pub(crate) async fn rig_over(
    storage: arbor_agent::session::JsonlStorage,
    root: &std::path::Path,
    home: &std::path::Path,
    settings: serde_json::Value,
) -> Rig {
    use arbor_agent::session::SessionStorage;
    use arbor_coding_agent::checkpoints::{CheckpointHook, Recorder};
    let faux = FauxProvider::builder().seed(3).build();
    let sid = storage.header().await.unwrap().id;
    let file = PathBuf::from(storage.location());
    let session = Arc::new(Session::new(Arc::new(storage)));
    let recorder = Recorder::open(
        root,
        &sid,
        &arbor_checkpoint::CheckpointSettings::default(),
        home,
    )
    .unwrap()
    .unwrap();
    let env = ToolEnv::new(root.to_path_buf(), ToolSettings::default());
    let harness = AgentHarness::new(
        session.clone(),
        Arc::new(faux.clone()),
        HarnessOptions::new(faux.model())
            .with_tools(tools::builtin_tools(&env))
            .with_system_prompt(SystemPrompt::Text("You are a test agent.".into())),
    )
    .unwrap();
    let hook = Arc::new(CheckpointHook::new(Arc::new(recorder), session.clone()));
    harness.add_hook(hook.clone());
    let ctx = TuiApp {
        harness,
        session,
        session_file: Some(file),
        session_id: sid,
        registry: Arc::new(arbor_ai::models::ModelRegistry::builtin().unwrap()),
        cycle_models: Vec::new(),
        usable_models: Vec::new(),
        settings: Settings::from_value(settings),
        cwd: root.to_path_buf(),
        repo: None,
        session_store: None,
        checkpoints: Some(hook),
        env_policy: Default::default(),
        resources: arbor_coding_agent::resources::LiveResources::empty(root),
        trust: arbor_coding_agent::trust::ProjectTrust::new(
            true,
            arbor_coding_agent::trust::TrustSource::NothingToProtect,
        ),
        mcp: None,
        logins: None,
    };
    let driver = Driver::new(ctx, Theme::monochrome()).await.unwrap();
    Rig {
        faux,
        driver,
        _dir: tempfile::tempdir().unwrap(),
    }
}

pub(crate) fn git(dir: &std::path::Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "u")
        .env("GIT_AUTHOR_EMAIL", "u@e")
        .env("GIT_COMMITTER_NAME", "u")
        .env("GIT_COMMITTER_EMAIL", "u@e")
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

#[tokio::test]
async fn tree_restores_the_code_and_the_conversation_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    git(&root, &["init", "-q"]);
    std::fs::write(root.join("app.txt"), "v1\n").unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "init"]);
    let mut r = rig_with_checkpoints(&root, &home).await;
    r.faux.push(FauxResponse::tool_call(
        "write",
        json!({"path": "app.txt", "content": "plan A\n"}),
    ));
    r.faux.push(FauxResponse::text("A done"));
    r.send("plan A").await;
    r.driver.settle().await;
    assert_eq!(
        std::fs::read_to_string(root.join("app.txt")).unwrap(),
        "plan A\n"
    );
    let target = r.entry_with_text("plan A").await;
    r.send("/tree").await;
    for _ in 0..20 {
        let Some(Overlay::Tree(nav)) = &r.driver.state.overlay else {
            panic!("the tree closed")
        };
        if nav.selected_id() == Some(target.as_str()) {
            break;
        }
        r.driver.dispatch(key(KeyCode::Up)).await;
    }
    r.driver.dispatch(key(KeyCode::Enter)).await;
    let screen = r.screen(80, 20);
    assert!(screen.contains("Restore what?"), "{screen}");
    // Conversation only, code only, both: "both", then "No summary".
    r.driver.dispatch(key(KeyCode::Down)).await;
    r.driver.dispatch(key(KeyCode::Down)).await;
    r.driver.dispatch(key(KeyCode::Enter)).await;
    let screen = r.screen(80, 20);
    assert!(screen.contains("Summarize branch?"), "{screen}");
    r.driver.dispatch(key(KeyCode::Enter)).await;
    r.driver.settle().await;
    assert!(r.driver.state.overlay.is_none());
    assert_eq!(
        std::fs::read_to_string(root.join("app.txt")).unwrap(),
        "v1\n"
    );
    assert_eq!(r.driver.state.editor.text(), "plan A");
    let screen = r.screen(80, 20);
    assert!(screen.contains("Workspace restored"), "{screen}");
}

#[tokio::test]
async fn tree_without_checkpoints_asks_no_restore_question() {
    let mut r = rig().await;
    let _ = two_exchanges_and_tree(&mut r).await;
    let screen = r.screen(80, 20);
    assert!(!screen.contains("Restore what?"), "{screen}");
    assert!(screen.contains("Summarize branch?"), "{screen}");
}

#[tokio::test]
async fn tree_with_a_summary_appends_a_branch_summary() {
    let mut r = rig().await;
    let _ = two_exchanges_and_tree(&mut r).await;
    r.faux.push(FauxResponse::text("## Goal\nTried plan A."));
    r.driver.dispatch(key(KeyCode::Down)).await;
    r.driver.dispatch(key(KeyCode::Enter)).await;
    assert!(matches!(r.driver.state.overlay, Some(Overlay::Progress(_))));
    r.driver.settle().await;
    assert!(r.driver.state.overlay.is_none());
    assert_eq!(r.driver.state.editor.text(), "plan A");
    let entries = r.driver.app.session.entries().await.unwrap();
    let summary = entries
        .iter()
        .find_map(|e| match &e.kind {
            EntryKind::BranchSummary(b) => Some((e, b)),
            _ => None,
        })
        .expect("a branch_summary entry");
    assert!(summary.1.summary.contains("Tried plan A."));
    assert_eq!(
        summary.0.parent_id,
        Some(r.entry_with_text("hi").await),
        "the summary hangs under the new position"
    );
    assert_eq!(
        r.driver.app.session.leaf_id().await.unwrap(),
        Some(summary.0.id.clone())
    );
}

#[tokio::test]
async fn bang_commands_record_bash_executions() {
    let mut r = rig().await;
    r.driver.app.cwd = r._dir.path().to_path_buf();
    r.send("!echo in-context").await;
    r.driver.settle().await;
    r.send("!!echo not-in-context").await;
    r.driver.settle().await;
    let mut seen = Vec::new();
    for e in r.driver.app.session.entries().await.unwrap() {
        if let EntryKind::Message(m) = &e.kind {
            if let AgentMessage::BashExecution(b) = &m.message {
                seen.push((
                    b.command.clone(),
                    b.output.trim().to_owned(),
                    b.exit_code,
                    b.exclude_from_context,
                ));
            }
        }
    }
    assert_eq!(
        seen,
        [
            ("echo in-context".into(), "in-context".into(), Some(0), None),
            (
                "echo not-in-context".into(),
                "not-in-context".into(),
                Some(0),
                Some(true)
            ),
        ]
    );
}

#[tokio::test]
async fn screen_snapshots() {
    let mut r = rig().await;
    r.faux.push(FauxResponse::text(
        "Here is the **plan**:\n\n1. read the code\n2. change it",
    ));
    r.send("what is the plan?").await;
    r.driver.settle().await;
    r.type_text("next question").await;
    insta::assert_snapshot!("tui_screen_80x20", r.screen(80, 20));
    insta::assert_snapshot!("tui_screen_60x16", r.screen(60, 16));
}

fn footer_info(working: bool) -> FooterInfo {
    FooterInfo {
        cwd: "/work/projects/arbor/crates/coding-agent".into(),
        session_name: Some("refactor the tool registry".into()),
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        thinking: Some("medium".into()),
        context_tokens: Some(45_300),
        context_window: 200_000,
        input: 123_456,
        output: 7_890,
        cache_read: 98_000,
        cache_write: 1_200,
        cost: 0.4213,
        working: working.then(|| Duration::from_secs(83)),
        compacting: None,
        loading: false,
        frame: 2,
        hint: None,
    }
}

fn footer_text(info: &FooterInfo, width: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(width, 2)).unwrap();
    term.draw(|f| {
        let area = f.area();
        info.render(area, f.buffer_mut(), &Theme::monochrome());
    })
    .unwrap();
    buffer_text(term.backend().buffer())
}

#[test]
fn footer_snapshots_at_60_and_160_columns() {
    let idle = footer_info(false);
    let busy = footer_info(true);
    let mut compacting = footer_info(false);
    compacting.compacting = Some("compacting…".into());
    let out = format!(
        "idle 60:\n{}busy 60:\n{}compacting 60:\n{}idle 160:\n{}busy 160:\n{}",
        footer_text(&idle, 60),
        footer_text(&busy, 60),
        footer_text(&compacting, 60),
        footer_text(&idle, 160),
        footer_text(&busy, 160),
    );
    for line in out.lines() {
        assert!(unicode_width::UnicodeWidthStr::width(line) <= 160);
    }
    insta::assert_snapshot!("tui_footer", out);
}

#[test]
fn command_line_prompts_run_one_after_another_until_an_abort() {
    use arbor_coding_agent::tui::state::Outcome;
    let now = Instant::now();
    let mut s = AppState::default();
    s.pending_prompts
        .extend(["two".to_owned(), "three".to_owned()]);
    s.busy_since = Some(now);
    assert_eq!(
        s.handle(AppEvent::Done(Outcome::PromptFinished(Ok(()))), now),
        [Effect::Prompt("two".into())]
    );
    assert!(s.is_running());
    assert_eq!(s.handle(key(KeyCode::Esc), now), [Effect::Abort]);
    assert!(s
        .handle(AppEvent::Done(Outcome::PromptFinished(Ok(()))), now)
        .is_empty());
    assert!(!s.is_running());
}

#[tokio::test]
async fn slash_commands_name_stats_compact_and_refusals() {
    let mut r = rig().await;
    r.send("/compact").await;
    r.driver.settle().await;
    assert!(r.screen(100, 30).contains("Nothing to compact"));
    r.faux.push(FauxResponse::text("hi"));
    r.send("hello").await;
    r.driver.settle().await;
    r.send("/name  my work ").await;
    r.driver.settle().await;
    assert_eq!(
        r.driver.state.footer.session_name.as_deref(),
        Some("my work")
    );
    assert_eq!(
        r.driver.app.session.name().await.unwrap().as_deref(),
        Some("my work")
    );
    r.faux.push(FauxResponse::text("hi again"));
    r.send("hello again").await;
    r.driver.settle().await;
    r.send("/session").await;
    r.driver.settle().await;
    let screen = r.screen(100, 30);
    assert!(
        screen.contains("Messages: 2 user, 2 assistant, 0 tool calls, 0 tool results"),
        "{screen}"
    );
    r.send("/export").await;
    r.driver.settle().await;
    let screen = r.screen(100, 30);
    assert!(
        screen.contains("Cannot export: the session is not stored"),
        "{screen}"
    );
    r.faux.push(FauxResponse::text("## Goal\nSay hello."));
    r.faux.push(FauxResponse::text("## Prefix\nGreeting."));
    r.send("/compact focus on greetings").await;
    assert!(r.driver.state.footer.compacting.is_some());
    r.driver.settle().await;
    assert!(r.driver.state.footer.compacting.is_none());
    let entries = r.driver.app.session.entries().await.unwrap();
    assert!(
        entries
            .iter()
            .any(|e| matches!(e.kind, EntryKind::Compaction(_))),
        "{}",
        r.screen(100, 30)
    );
    let req = r.faux.requests().last().unwrap().clone();
    assert!(format!("{req:?}").contains("focus on greetings"));
    // Thinking on a model without reasoning is explained, not applied.
    r.driver
        .dispatch(AppEvent::Key(KeyEvent::new(
            KeyCode::BackTab,
            KeyModifiers::SHIFT,
        )))
        .await;
    r.driver.settle().await;
    assert!(r.screen(100, 30).contains("does not support thinking"));
}
