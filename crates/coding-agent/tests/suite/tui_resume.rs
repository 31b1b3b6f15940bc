//! A large resumed session through the driver (DECISIONS §23.102): the first frame comes from
//! the active path's tail while the full context loads behind it; a prompt sent meanwhile
//! waits and goes out once loading ends; Esc withdraws it.

use std::sync::Arc;
use std::time::Duration;

use arbor_agent::harness::{AgentHarness, HarnessOptions, Phase};
use arbor_agent::message::AgentMessage;
use arbor_agent::session::{EntryKind, MemoryStorage, Session};
use arbor_ai::faux::{FauxProvider, FauxResponse};
use arbor_ai::Message;
use arbor_coding_agent::config::Settings;
use arbor_coding_agent::tui::driver::{Driver, TuiApp, FIRST_FRAME_ENTRIES};
use arbor_coding_agent::tui::state::AppEvent;
use arbor_coding_agent::tui::theme::Theme;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;

const TURNS: usize = 400;

fn key(code: KeyCode) -> AppEvent {
    AppEvent::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn msg(v: serde_json::Value) -> AgentMessage {
    serde_json::from_value(v).expect("a valid agent message")
}

/// A session of `TURNS` question/answer turns; every answer used 10 input and 5 output tokens.
async fn long_session(faux: &FauxProvider) -> Arc<Session> {
    let session = Arc::new(Session::new(Arc::new(MemoryStorage::new("/work/project"))));
    for i in 0..TURNS {
        session
            .append_message(msg(
                json!({"role": "user", "content": format!("question {i}"), "timestamp": 1}),
            ))
            .await
            .unwrap();
        let m = faux.model();
        session
            .append_message(msg(json!({
                "role": "assistant", "content": [{"type": "text", "text": format!("answer {i}")}],
                "api": m.api, "provider": m.provider, "model": m.id, "stopReason": "stop",
                "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0,
                    "totalTokens": 15, "cost": {"input": 0, "output": 0, "cacheRead": 0,
                    "cacheWrite": 0, "total": 0}},
                "timestamp": 1
            })))
            .await
            .unwrap();
    }
    session
}

async fn resumed() -> (FauxProvider, Driver) {
    let faux = FauxProvider::builder().seed(5).build();
    let session = long_session(&faux).await;
    let (harness, _) = AgentHarness::resume(
        session.clone(),
        Arc::new(faux.clone()),
        HarnessOptions::new(faux.model()),
    )
    .await
    .unwrap();
    let ctx = TuiApp {
        harness,
        session,
        session_file: None,
        session_id: "resumed".into(),
        registry: Arc::new(arbor_ai::models::ModelRegistry::builtin().unwrap()),
        cycle_models: Vec::new(),
        usable_models: Vec::new(),
        settings: Settings::from_value(json!({"retry": {"enabled": false}})),
        cwd: "/work/project".into(),
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
    (faux, driver)
}

fn screen(d: &mut Driver, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| {
        let area = f.area();
        d.render(area, f.buffer_mut());
    })
    .unwrap();
    let buf = term.backend().buffer();
    let mut rows = Vec::new();
    for y in 0..buf.area.height {
        let mut row = String::new();
        for x in 0..buf.area.width {
            row.push_str(buf[(x, y)].symbol());
        }
        rows.push(row.trim_end().to_owned());
    }
    rows.join("\n")
}

/// Delivers events until the background load has been handled.
async fn until_loaded(d: &mut Driver) {
    for _ in 0..5000 {
        d.settle_available().await;
        if !d.state.is_loading() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("the session never finished loading");
}

async fn user_texts(d: &Driver) -> Vec<String> {
    let mut out = Vec::new();
    for e in d.app.session.entries().await.unwrap() {
        if let EntryKind::Message(m) = &e.kind {
            if let AgentMessage::Llm(Message::User(u)) = &m.message {
                out.push(u.content.joined_text(""));
            }
        }
    }
    out
}

#[tokio::test]
async fn first_frame_from_the_tail_then_the_waiting_prompt_goes_out() {
    let (faux, mut d) = resumed().await;
    // The first frame: the tail only, the footer says the rest is loading.
    assert!(d.state.is_loading());
    assert!(
        d.transcript.len() <= FIRST_FRAME_ENTRIES,
        "{}",
        d.transcript.len()
    );
    let first = screen(&mut d, 70, 14);
    assert!(first.contains("answer 399"), "{first}");
    assert!(first.contains("loading session…"), "{first}");
    insta::assert_snapshot!("tui_resume_loading", first);

    // A prompt sent now waits: nothing reaches the harness.
    faux.push(FauxResponse::text("the new answer"));
    for c in "next question".chars() {
        d.dispatch(key(KeyCode::Char(c))).await;
    }
    d.dispatch(key(KeyCode::Enter)).await;
    assert_eq!(d.state.waiting_prompt(), Some("next question"));
    assert_eq!(d.app.harness.phase(), Phase::Idle);
    assert!(faux.requests().is_empty());
    let waiting = screen(&mut d, 70, 14);
    insta::assert_snapshot!("tui_resume_prompt_waits", waiting);

    // Loaded: the whole branch, the totals of all 400 answers, and the prompt goes out.
    until_loaded(&mut d).await;
    d.settle().await;
    assert_eq!(d.state.waiting_prompt(), None);
    assert!(!d.state.is_running());
    assert_eq!(faux.requests().len(), 1);
    // The request carried the whole history (the context was built, not the tail).
    let sent = &faux.requests()[0];
    assert_eq!(sent.context.messages.len(), 2 * TURNS + 1);
    assert_eq!(d.transcript.len(), 2 * TURNS + 2);
    assert_eq!(
        d.state.footer.input,
        10 * TURNS as u64 + last_answer_input(&d).await
    );
    let users = user_texts(&d).await;
    assert_eq!(users.last().map(String::as_str), Some("next question"));
    let done = screen(&mut d, 70, 14);
    assert!(done.contains("the new answer"), "{done}");
    assert!(!done.contains("loading session"), "{done}");
    insta::assert_snapshot!("tui_resume_loaded", done);

    // Home reaches the first message of the full branch.
    d.transcript.scroll_to_top();
    let top = screen(&mut d, 70, 14);
    assert!(top.contains("question 0"), "{top}");
}

/// The input tokens the session's last answer reports (the faux provider's own count).
async fn last_answer_input(d: &Driver) -> u64 {
    let entries = d.app.session.entries().await.unwrap();
    entries
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EntryKind::Message(m) => match &m.message {
                AgentMessage::Llm(Message::Assistant(a)) => Some(a.usage.input),
                _ => None,
            },
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn esc_withdraws_a_prompt_that_waits_for_the_load() {
    let (faux, mut d) = resumed().await;
    for c in "never sent".chars() {
        d.dispatch(key(KeyCode::Char(c))).await;
    }
    d.dispatch(key(KeyCode::Enter)).await;
    assert!(d.state.is_running());
    d.dispatch(key(KeyCode::Esc)).await;
    assert!(!d.state.is_running());
    assert_eq!(d.state.waiting_prompt(), None);
    until_loaded(&mut d).await;
    d.settle().await;
    assert!(faux.requests().is_empty());
    assert_eq!(user_texts(&d).await.len(), TURNS);
    // Commands that change the session refuse while loading; after it, they work again.
    assert!(!d.state.is_loading());
}

#[tokio::test]
async fn a_short_session_loads_at_once() {
    let faux = FauxProvider::builder().seed(5).build();
    let session = Arc::new(Session::new(Arc::new(MemoryStorage::new("/work/project"))));
    session
        .append_message(msg(
            json!({"role": "user", "content": "hi", "timestamp": 1}),
        ))
        .await
        .unwrap();
    let harness = AgentHarness::new(
        session.clone(),
        Arc::new(faux.clone()),
        HarnessOptions::new(faux.model()),
    )
    .unwrap();
    let ctx = TuiApp {
        harness,
        session,
        session_file: None,
        session_id: "short".into(),
        registry: Arc::new(arbor_ai::models::ModelRegistry::builtin().unwrap()),
        cycle_models: Vec::new(),
        usable_models: Vec::new(),
        settings: Settings::from_value(json!({})),
        cwd: "/work/project".into(),
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
    let d = Driver::new(ctx, Theme::monochrome()).await.unwrap();
    assert!(!d.state.is_loading());
    assert_eq!(d.transcript.len(), 1);
}
