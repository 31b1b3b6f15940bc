//! The session picker (`/resume`, `-r`) and the model picker (`/model`): frames and keys
//! (DECISIONS §23.76–§23.84).

use arbor_agent::session::SessionInfo;
use arbor_ai::models::ModelRegistry;
use arbor_coding_agent::tui::component::Flow;
use arbor_coding_agent::tui::picker::model::{ModelChoice, ModelPicker};
use arbor_coding_agent::tui::picker::session::{age, Scope, SessionPick, SessionPicker};
use arbor_coding_agent::tui::theme::Theme;
use crossterm::event::KeyCode;

use super::tui_tree::{chars, ctrl, frame, key};

const NOW: i64 = 1_782_000_000_000;
const MIN: i64 = 60_000;

fn session(id: &str, cwd: &str, mins_ago: i64, first: &str) -> SessionInfo {
    SessionInfo {
        id: id.into(),
        location: format!("/h/sessions/{id}.jsonl"),
        cwd: cwd.into(),
        name: None,
        created: "2026-06-20T15:00:00.000Z".into(),
        modified_ms: NOW - mins_ago * MIN,
        entry_count: Some(12),
        first_message: Some(first.into()),
        parent_session: None,
    }
}

/// Two projects; in /w a fork (`f1`, from `s1`) and a fork of the fork (`f2`).
fn sessions() -> Vec<SessionInfo> {
    let mut s1 = session("s1", "/w", 600, "Build a small notes CLI");
    s1.name = Some("notes cli".into());
    let mut f1 = session("f1", "/w", 30, "Try plan B with JSON");
    f1.parent_session = Some(s1.location.clone());
    let mut f2 = session("f2", "/w", 5, "Plan B: add tags");
    f2.parent_session = Some(f1.location.clone());
    let s2 = session("s2", "/w", 120, "Fix the flaky test in ci");
    let mut o1 = session("o1", "/other", 3 * 24 * 60, "Write the README");
    o1.entry_count = None;
    vec![f2, f1, s2, s1, o1]
}

fn picker() -> SessionPicker {
    SessionPicker::new(
        sessions(),
        "/w",
        Some("/h/sessions/s2.jsonl"),
        NOW,
        Theme::monochrome(),
    )
}

fn shown(p: &SessionPicker) -> Vec<(&str, usize)> {
    p.shown().collect()
}

#[test]
fn sessions_are_threaded_by_parent_session() {
    let mut p = picker();
    assert_eq!(p.scope(), Scope::CurrentDir);
    // s1's thread holds the newest activity (f2, 5 min ago), so it comes before s2.
    assert_eq!(shown(&p), [("s1", 0), ("f1", 1), ("f2", 2), ("s2", 0)]);
    insta::assert_snapshot!(frame(72, 9, |a, b| p.render(a, b)));
}

#[test]
fn tab_shows_every_folder() {
    let mut p = picker();
    p.handle_key(key(KeyCode::Tab));
    assert_eq!(p.scope(), Scope::All);
    assert_eq!(
        shown(&p),
        [("s1", 0), ("f1", 1), ("f2", 2), ("s2", 0), ("o1", 0)]
    );
    insta::assert_snapshot!(frame(80, 10, |a, b| p.render(a, b)));
    p.handle_key(key(KeyCode::Tab));
    assert_eq!(p.scope(), Scope::CurrentDir);
}

#[test]
fn search_covers_names_and_first_messages() {
    let mut p = picker();
    for k in chars("plan b") {
        p.handle_key(k);
    }
    // A search lists matches flat, newest first.
    assert_eq!(shown(&p), [("f2", 0), ("f1", 0)]);
    insta::assert_snapshot!(frame(72, 7, |a, b| p.render(a, b)));
    // The name matches too (s1 is "notes cli"); the README is in another folder.
    p.handle_key(ctrl('u'));
    for k in chars("NOTES") {
        p.handle_key(k);
    }
    assert_eq!(shown(&p), [("s1", 0)]);
    for k in chars(" readme") {
        p.handle_key(k);
    }
    assert!(shown(&p).is_empty());
    p.handle_key(ctrl('u'));
    for k in chars("readme") {
        p.handle_key(k);
    }
    assert!(shown(&p).is_empty());
    p.handle_key(key(KeyCode::Tab));
    assert_eq!(shown(&p), [("o1", 0)]);
    // Esc clears the search, then closes.
    assert_eq!(p.handle_key(key(KeyCode::Esc)), Flow::Pending);
    assert_eq!(p.query(), "");
    assert_eq!(p.handle_key(key(KeyCode::Esc)), Flow::Cancel);
}

#[test]
fn delete_asks_first() {
    let mut p = picker();
    p.handle_key(key(KeyCode::Down));
    p.handle_key(ctrl('d'));
    assert!(p.is_confirming_delete());
    insta::assert_snapshot!(frame(72, 9, |a, b| p.render(a, b)));
    // Any key but y keeps it.
    assert_eq!(p.handle_key(key(KeyCode::Char('n'))), Flow::Pending);
    assert!(!p.is_confirming_delete());
    p.handle_key(ctrl('d'));
    let pick = p.handle_key(key(KeyCode::Char('y')));
    assert_eq!(
        pick,
        Flow::Done(SessionPick::Delete {
            id: "f1".into(),
            location: "/h/sessions/f1.jsonl".into()
        })
    );
    assert!(matches!(&pick, Flow::Done(x) if x.keeps_open()));
    // After the shell deleted it: f2's parent is gone, so it becomes a thread of its own.
    p.remove("/h/sessions/f1.jsonl");
    assert_eq!(shown(&p), [("f2", 0), ("s2", 0), ("s1", 0)]);
    // The open session (s2) is never deleted from here.
    p.handle_key(key(KeyCode::Home));
    p.handle_key(key(KeyCode::Down));
    p.handle_key(ctrl('d'));
    assert!(!p.is_confirming_delete());
    assert!(frame(72, 9, |a, b| p.render(a, b)).contains("cannot be deleted"));
}

#[test]
fn enter_opens_the_selected_session() {
    let mut p = picker();
    p.handle_key(key(KeyCode::End));
    p.handle_key(key(KeyCode::Up));
    match p.handle_key(key(KeyCode::Enter)) {
        Flow::Done(SessionPick::Open(info)) => assert_eq!(info.id, "f2"),
        other => panic!("expected Open, got {other:?}"),
    }
    let mut empty = SessionPicker::new(Vec::new(), "/w", None, NOW, Theme::monochrome());
    assert_eq!(empty.handle_key(key(KeyCode::Enter)), Flow::Pending);
    insta::assert_snapshot!(frame(60, 5, |a, b| empty.render(a, b)));
}

#[test]
fn ages_read_like_pi() {
    assert_eq!(age(NOW, NOW - 10_000), "now");
    assert_eq!(age(NOW, NOW - 5 * MIN), "5m");
    assert_eq!(age(NOW, NOW - 3 * 60 * MIN), "3h");
    assert_eq!(age(NOW, NOW - 2 * 24 * 60 * MIN), "2d");
    assert_eq!(age(NOW, NOW - 14 * 24 * 60 * MIN), "2w");
    assert_eq!(age(NOW, NOW - 90 * 24 * 60 * MIN), "3mo");
    assert_eq!(age(NOW, NOW - 800 * 24 * 60 * MIN), "2y");
    assert_eq!(age(NOW, NOW + MIN), "now", "a clock skew is not negative");
}

fn registry() -> ModelRegistry {
    let mut r = ModelRegistry::empty();
    r.apply_models_json_str(
        r#"{"providers": {
            "anthropic": {"baseUrl": "http://127.0.0.1:1", "api": "anthropic-messages", "apiKey": "k",
                "models": [
                    {"id": "claude-sonnet-4-5", "name": "Claude Sonnet 4.5", "reasoning": true, "contextWindow": 200000},
                    {"id": "claude-haiku-4-5", "name": "Claude Haiku 4.5", "contextWindow": 200000}
                ]},
            "ollama": {"baseUrl": "http://127.0.0.1:11434/v1", "api": "openai-completions", "apiKey": "ollama",
                "models": [{"id": "qwen3:32b"}]}
        }}"#,
        "models.json",
    )
    .unwrap();
    r
}

#[test]
fn model_picker_marks_the_current_model() {
    let r = registry();
    let mut p = ModelPicker::new(
        &r,
        Some(("anthropic", "claude-haiku-4-5")),
        "",
        Theme::monochrome(),
    );
    assert_eq!(
        p.selected(),
        Some(ModelChoice {
            provider: "anthropic".into(),
            id: "claude-haiku-4-5".into()
        }),
        "opens on the current model"
    );
    insta::assert_snapshot!(frame(80, 7, |a, b| p.render(a, b)));
    p.handle_key(key(KeyCode::Down));
    assert_eq!(
        p.handle_key(key(KeyCode::Enter)),
        Flow::Done(ModelChoice {
            provider: "ollama".into(),
            id: "qwen3:32b".into()
        })
    );
}

#[test]
fn model_picker_searches_provider_id_and_name() {
    let r = registry();
    let mut p = ModelPicker::new(&r, None, "", Theme::monochrome());
    assert_eq!(p.shown().count(), 3);
    for k in chars("sonnet") {
        p.handle_key(k);
    }
    assert_eq!(
        p.shown().collect::<Vec<_>>(),
        ["anthropic/claude-sonnet-4-5"]
    );
    insta::assert_snapshot!(frame(80, 5, |a, b| p.render(a, b)));
    p.handle_key(ctrl('u'));
    for k in chars("ollama qwen") {
        p.handle_key(k);
    }
    assert_eq!(p.shown().collect::<Vec<_>>(), ["ollama/qwen3:32b"]);
    for k in chars("x") {
        p.handle_key(k);
    }
    assert_eq!(p.shown().count(), 0);
    assert_eq!(p.handle_key(key(KeyCode::Enter)), Flow::Pending);
    p.handle_key(key(KeyCode::Backspace));
    assert_eq!(p.shown().count(), 1);
    assert_eq!(p.handle_key(key(KeyCode::Esc)), Flow::Pending);
    assert_eq!(p.shown().count(), 3);
    assert_eq!(p.handle_key(key(KeyCode::Esc)), Flow::Cancel);
    // `/model haiku` opens pre-filtered.
    let p = ModelPicker::new(&r, None, "haiku", Theme::monochrome());
    assert_eq!(p.query(), "haiku");
    assert_eq!(
        p.shown().collect::<Vec<_>>(),
        ["anthropic/claude-haiku-4-5"]
    );
}
