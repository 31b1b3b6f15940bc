//! The `/tree` navigator and the prompt after a choice: TestBackend frames and key-driven
//! state machines (DECISIONS §23.60–§23.75).

use arbor_agent::session::{SessionEntry, SessionTree};
use arbor_coding_agent::checkpoints::RestoreMode;
use arbor_coding_agent::tui::component::Flow;
use arbor_coding_agent::tui::summarize::{
    NavigateChoice, SummarizePrompt, SummaryChoice, SummaryProgress,
};
use arbor_coding_agent::tui::theme::Theme;
use arbor_coding_agent::tui::tree::{nearest_checkpoint, TreeAction, TreeFilter, TreeNavigator};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::Terminal;
use serde_json::{json, Value};

pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

pub fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

pub fn chars(text: &str) -> Vec<KeyEvent> {
    text.chars()
        .map(|c| {
            let m = if c.is_uppercase() {
                KeyModifiers::SHIFT
            } else {
                KeyModifiers::NONE
            };
            KeyEvent::new(KeyCode::Char(c), m)
        })
        .collect()
}

/// Renders with ratatui's TestBackend and returns the frame as text.
pub fn frame(w: u16, h: u16, draw: impl FnOnce(Rect, &mut Buffer)) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    let mut draw = Some(draw);
    terminal
        .draw(|f| {
            let area = f.area();
            if let Some(d) = draw.take() {
                d(area, f.buffer_mut());
            }
        })
        .unwrap();
    terminal.backend().to_string()
}

fn at(i: u32) -> String {
    format!("2026-06-20T15:{:02}:{:02}.000Z", i / 60, i % 60)
}

fn entry(i: u32, id: &str, parent: Option<&str>, ty: &str, fields: Value) -> SessionEntry {
    let mut map = fields.as_object().cloned().unwrap_or_default();
    map.insert("type".into(), json!(ty));
    map.insert("id".into(), json!(id));
    map.insert("parentId".into(), json!(parent));
    map.insert("timestamp".into(), json!(at(i)));
    SessionEntry::from_map(map).unwrap()
}

fn user(i: u32, id: &str, parent: Option<&str>, text: &str) -> SessionEntry {
    entry(
        i,
        id,
        parent,
        "message",
        json!({"message": {"role": "user", "content": text, "timestamp": 1}}),
    )
}

fn assistant(i: u32, id: &str, parent: &str, content: Value, stop: &str) -> SessionEntry {
    entry(
        i,
        id,
        Some(parent),
        "message",
        json!({"message": {"role": "assistant", "content": content, "api": "anthropic-messages",
            "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": stop, "timestamp": 1}}),
    )
}

fn said(i: u32, id: &str, parent: &str, text: &str) -> SessionEntry {
    assistant(
        i,
        id,
        parent,
        json!([{"type": "text", "text": text}]),
        "stop",
    )
}

/// Plan A / plan B (seed 001): a fork after the model change, tool calls on plan A, a
/// checkpoint, a thinking change and a compaction on plan B, a side branch summary, a label.
pub fn plans(leaf: &str) -> SessionTree {
    let entries = vec![
        user(0, "u1", None, "Build a small notes CLI"),
        said(
            1,
            "a1",
            "u1",
            "Two ways: SQLite (plan A) or JSON files (plan B).",
        ),
        entry(
            2,
            "mc",
            Some("a1"),
            "model_change",
            json!({"provider": "anthropic", "modelId": "claude-opus-4-5"}),
        ),
        user(3, "u2", Some("mc"), "Try plan A with SQLite"),
        assistant(
            4,
            "a2",
            "u2",
            json!([{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "src/db.rs"}}]),
            "toolUse",
        ),
        entry(
            5,
            "t1",
            Some("a2"),
            "message",
            json!({"message": {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                "content": [{"type": "text", "text": "fn open() {}"}], "isError": false, "timestamp": 1}}),
        ),
        said(6, "a3", "t1", "Plan A works: notes live in notes.db."),
        entry(
            7,
            "lb",
            Some("a3"),
            "label",
            json!({"targetId": "a3", "label": "plan-a"}),
        ),
        user(8, "u3", Some("mc"), "Now plan B with JSON files"),
        said(9, "a4", "u3", "Plan B: one JSON file per note."),
        entry(
            10,
            "ck",
            Some("a4"),
            "custom",
            json!({"customType": "arbor.checkpoint", "data": {"tree": "abc"}}),
        ),
        entry(
            11,
            "th",
            Some("ck"),
            "thinking_level_change",
            json!({"thinkingLevel": "high"}),
        ),
        user(12, "u4", Some("th"), "Keep going with B"),
        entry(
            13,
            "cp",
            Some("u4"),
            "compaction",
            json!({"summary": "Plan B so far", "firstKeptEntryId": "u4", "tokensBefore": 12345}),
        ),
        said(14, "a5", "cp", "Plan B is done."),
        entry(
            15,
            "bs",
            Some("a4"),
            "branch_summary",
            json!({"fromId": "a3", "summary": "Tried a plan C with YAML; dropped it."}),
        ),
    ];
    // The leaf's ancestry, for the active-path marks.
    let mut active = Vec::new();
    let mut cur = Some(leaf.to_string());
    while let Some(id) = cur {
        let e = entries.iter().find(|e| e.id == id).unwrap().clone();
        cur = e.parent_id.clone();
        active.push(e);
    }
    SessionTree::build(entries, Some(leaf), &active)
}

fn nav(filter: TreeFilter) -> TreeNavigator {
    TreeNavigator::new(plans("a5"), filter, Theme::monochrome())
}

fn shot(nav: &mut TreeNavigator, w: u16, h: u16) -> String {
    frame(w, h, |area, buf| nav.render(area, buf))
}

fn shown(nav: &TreeNavigator) -> Vec<&str> {
    nav.shown_ids().collect()
}

#[test]
fn tree_default_filter_frame() {
    let mut n = nav(TreeFilter::Default);
    // Settings entries (model/thinking changes, labels, custom) and the tool-call-only
    // assistant message are hidden; their children hang from the nearest shown ancestor.
    assert_eq!(
        shown(&n),
        ["u1", "a1", "u3", "a4", "u4", "cp", "a5", "bs", "u2", "t1", "a3"]
    );
    assert_eq!(n.selected_id(), Some("a5"), "opens on the leaf");
    insta::assert_snapshot!(shot(&mut n, 80, 16));
}

#[test]
fn tree_filters_frames() {
    let mut n = nav(TreeFilter::NoTools);
    assert_eq!(
        shown(&n),
        ["u1", "a1", "u3", "a4", "u4", "cp", "a5", "bs", "u2", "a3"]
    );
    insta::assert_snapshot!("tree_no_tools", shot(&mut n, 80, 15));

    let mut n = nav(TreeFilter::UserOnly);
    assert_eq!(shown(&n), ["u1", "u3", "u4", "u2"]);
    // The leaf is hidden: the selection falls back to its nearest shown ancestor.
    assert_eq!(n.selected_id(), Some("u4"));
    insta::assert_snapshot!("tree_user_only", shot(&mut n, 80, 8));

    let mut n = nav(TreeFilter::LabeledOnly);
    assert_eq!(shown(&n), ["a3"]);
    insta::assert_snapshot!("tree_labeled_only", shot(&mut n, 80, 5));

    let mut n = nav(TreeFilter::All);
    assert_eq!(
        shown(&n),
        [
            "u1", "a1", "mc", "u3", "a4", "ck", "th", "u4", "cp", "a5", "bs", "u2", "t1", "a3",
            "lb"
        ]
    );
    insta::assert_snapshot!("tree_all", shot(&mut n, 80, 19));
}

#[test]
fn tree_search_frame() {
    let mut n = nav(TreeFilter::Default);
    for k in chars("JSON plan") {
        assert_eq!(n.handle_key(k), Flow::Pending);
    }
    assert_eq!(n.query(), "JSON plan");
    // Every word must match, in any order and case.
    assert_eq!(shown(&n), ["a1", "u3", "a4"]);
    insta::assert_snapshot!(shot(&mut n, 80, 9));
    // Esc clears the search first, then closes.
    assert_eq!(n.handle_key(key(KeyCode::Esc)), Flow::Pending);
    assert_eq!(n.query(), "");
    assert_eq!(n.row_count(), 11);
    assert_eq!(n.handle_key(key(KeyCode::Esc)), Flow::Cancel);
}

#[test]
fn tree_label_edit_frame_and_result() {
    let mut n = nav(TreeFilter::Default);
    n.handle_key(key(KeyCode::Home));
    n.handle_key(key(KeyCode::Down));
    assert_eq!(n.selected_id(), Some("a1"));
    assert_eq!(
        n.handle_key(KeyEvent::new(KeyCode::Char('L'), KeyModifiers::SHIFT)),
        Flow::Pending
    );
    assert!(n.is_editing_label());
    for k in chars("fork point") {
        assert_eq!(n.handle_key(k), Flow::Pending);
    }
    insta::assert_snapshot!(shot(&mut n, 80, 16));
    let done = n.handle_key(key(KeyCode::Enter));
    assert_eq!(
        done,
        Flow::Done(TreeAction::SetLabel {
            id: "a1".into(),
            label: Some("fork point".into())
        })
    );
    assert!(matches!(&done, Flow::Done(a) if a.keeps_open()));
    assert!(!n.is_editing_label());
    // Shown at once, and the labeled-only filter now finds it.
    n.handle_key(ctrl('l'));
    assert_eq!(shown(&n), ["a1", "a3"]);

    // Clearing: an empty label removes it; an unchanged one writes nothing.
    n.handle_key(key(KeyCode::Home));
    n.handle_key(KeyEvent::new(KeyCode::Char('L'), KeyModifiers::SHIFT));
    n.handle_key(ctrl('u'));
    assert_eq!(
        n.handle_key(key(KeyCode::Enter)),
        Flow::Done(TreeAction::SetLabel {
            id: "a1".into(),
            label: None
        })
    );
    assert_eq!(shown(&n), ["a3"]);
    n.handle_key(KeyEvent::new(KeyCode::Char('L'), KeyModifiers::SHIFT));
    assert_eq!(n.handle_key(key(KeyCode::Enter)), Flow::Pending);
    // Esc leaves the input without closing the navigator.
    n.handle_key(KeyEvent::new(KeyCode::Char('L'), KeyModifiers::SHIFT));
    assert_eq!(n.handle_key(key(KeyCode::Esc)), Flow::Pending);
    assert!(!n.is_editing_label());
}

#[test]
fn tree_fold_frame() {
    let mut n = nav(TreeFilter::Default);
    // u3 starts the plan B branch: Ctrl+Left folds it.
    while n.selected_id() != Some("u3") {
        n.handle_key(key(KeyCode::Up));
    }
    n.handle_key(KeyEvent::new(KeyCode::Left, KeyModifiers::CONTROL));
    assert_eq!(shown(&n), ["u1", "a1", "u3", "u2", "t1", "a3"]);
    assert_eq!(n.selected_id(), Some("u3"));
    insta::assert_snapshot!(shot(&mut n, 80, 10));
    // Ctrl+Right unfolds; again, it walks down to the next branch start.
    n.handle_key(KeyEvent::new(KeyCode::Right, KeyModifiers::CONTROL));
    assert_eq!(n.row_count(), 11);
    assert_eq!(n.selected_id(), Some("u3"));
    n.handle_key(KeyEvent::new(KeyCode::Right, KeyModifiers::CONTROL));
    assert_eq!(n.selected_id(), Some("u4"), "a4 forks into u4… and bs");
    // Ctrl+Left from inside a segment goes to its start, then to the segment above.
    n.handle_key(key(KeyCode::End));
    assert_eq!(n.selected_id(), Some("a3"));
    n.handle_key(KeyEvent::new(KeyCode::Left, KeyModifiers::CONTROL));
    assert_eq!(n.selected_id(), Some("u2"));
    n.handle_key(key(KeyCode::Up));
    assert_eq!(n.selected_id(), Some("bs"));
    n.handle_key(KeyEvent::new(KeyCode::Left, KeyModifiers::CONTROL));
    assert_eq!(
        n.selected_id(),
        Some("u3"),
        "bs starts a segment: up to the one above"
    );
    // A filter change unfolds everything.
    n.handle_key(KeyEvent::new(KeyCode::Left, KeyModifiers::CONTROL));
    assert_eq!(n.row_count(), 6);
    n.handle_key(ctrl('t'));
    assert_eq!(n.filter(), TreeFilter::NoTools);
    assert_eq!(n.row_count(), 10);
}

#[test]
fn tree_keys_move_cycle_filters_and_choose() {
    let mut n = nav(TreeFilter::Default);
    n.handle_key(key(KeyCode::Home));
    assert_eq!(n.selected_id(), Some("u1"));
    n.handle_key(key(KeyCode::Down));
    n.handle_key(key(KeyCode::Down));
    assert_eq!(n.selected_id(), Some("u3"), "the leaf's branch comes first");
    n.handle_key(key(KeyCode::Up));
    assert_eq!(n.selected_id(), Some("a1"));
    // The page is the window of the last frame.
    let _ = shot(&mut n, 80, 7); // 4 list rows
    n.handle_key(key(KeyCode::PageDown));
    assert_eq!(n.selected_id(), Some("cp"));
    n.handle_key(key(KeyCode::PageUp));
    assert_eq!(n.selected_id(), Some("a1"));
    n.handle_key(key(KeyCode::End));
    assert_eq!(n.selected_id(), Some("a3"));
    n.handle_key(key(KeyCode::Down));
    assert_eq!(n.selected_id(), Some("a3"), "End stays at the end");

    // Ctrl+O cycles default → no-tools → user-only → labeled-only → all → default; the
    // selection stays on its node or its nearest shown ancestor.
    let mut seen = Vec::new();
    for _ in 0..5 {
        n.handle_key(ctrl('o'));
        seen.push(n.filter());
    }
    assert_eq!(
        seen,
        [
            TreeFilter::NoTools,
            TreeFilter::UserOnly,
            TreeFilter::LabeledOnly,
            TreeFilter::All,
            TreeFilter::Default
        ]
    );
    n.handle_key(KeyEvent::new(
        KeyCode::Char('o'),
        KeyModifiers::CONTROL | KeyModifiers::SHIFT,
    ));
    assert_eq!(n.filter(), TreeFilter::All);
    // Direct keys toggle: on, then back to the default.
    n.handle_key(ctrl('u'));
    assert_eq!(n.filter(), TreeFilter::UserOnly);
    n.handle_key(ctrl('u'));
    assert_eq!(n.filter(), TreeFilter::Default);
    assert_eq!(
        TreeFilter::from_name("labeled-only"),
        Some(TreeFilter::LabeledOnly)
    );
    assert_eq!(TreeFilter::from_name("bogus"), None);

    // Enter chooses; on the leaf it only says so.
    n.handle_key(key(KeyCode::Home));
    n.handle_key(key(KeyCode::Down));
    n.handle_key(key(KeyCode::Down));
    assert_eq!(
        n.handle_key(key(KeyCode::Enter)),
        Flow::Done(TreeAction::Navigate {
            target_id: "u3".into()
        })
    );
    while n.selected_id() != Some("a5") {
        n.handle_key(key(KeyCode::Down));
    }
    assert_eq!(n.handle_key(key(KeyCode::Enter)), Flow::Pending);
    assert!(shot(&mut n, 80, 16).contains("Already at this point"));
    assert_eq!(
        n.entry_preview("u2", 80).as_deref(),
        Some("user: Try plan A with SQLite")
    );
    assert_eq!(
        n.entry_preview("t1", 80).as_deref(),
        Some("[read: src/db.rs]")
    );
    assert_eq!(n.entry_preview("nope", 80), None);
    // Reopening elsewhere: on the entry, or its nearest shown ancestor (t1 is shown, a2 not).
    assert!(n.select("t1"));
    assert_eq!(n.selected_id(), Some("t1"));
    assert!(n.select("a2"));
    assert_eq!(n.selected_id(), Some("u2"));
    assert!(!n.select("nope"));
    assert_eq!(n.handle_key(key(KeyCode::Esc)), Flow::Cancel);
}

#[test]
fn tree_fits_a_narrow_terminal() {
    let mut n = nav(TreeFilter::Default);
    insta::assert_snapshot!(shot(&mut n, 60, 16));
}

/// DECISIONS §23.150: a leaf the filter hides (the restore record `/undo-restore` leaves, here
/// a checkpoint entry) puts `← leaf` on its nearest shown ancestor, and Enter there moves
/// nothing.
#[test]
fn a_hidden_leaf_is_marked_on_its_nearest_shown_ancestor() {
    let mut n = TreeNavigator::new(plans("ck"), TreeFilter::Default, Theme::monochrome());
    assert!(
        !shown(&n).contains(&"ck"),
        "custom entries are hidden by default"
    );
    let screen = shot(&mut n, 80, 16);
    let marked: Vec<&str> = screen.lines().filter(|l| l.contains("← leaf")).collect();
    assert_eq!(marked.len(), 1, "{screen}");
    assert!(
        marked[0].contains("Plan B: one JSON file per note."),
        "{screen}"
    );
    assert_eq!(n.selected_id(), Some("a4"));
    assert_eq!(n.handle_key(key(KeyCode::Enter)), Flow::Pending);
    // With every entry shown, the leaf itself carries the mark.
    let mut all = TreeNavigator::new(plans("ck"), TreeFilter::All, Theme::monochrome());
    let screen = shot(&mut all, 80, 20);
    let marked: Vec<&str> = screen.lines().filter(|l| l.contains("← leaf")).collect();
    assert_eq!(marked.len(), 1, "{screen}");
    assert!(marked[0].contains("checkpoint"), "{screen}");
}

#[test]
fn the_restore_choice_is_offered_where_a_checkpoint_is_above() {
    let tree = plans("a5");
    assert_eq!(nearest_checkpoint(&tree, "a5"), Some("ck"));
    assert_eq!(nearest_checkpoint(&tree, "ck"), Some("ck"));
    assert_eq!(nearest_checkpoint(&tree, "a3"), None);
    assert_eq!(nearest_checkpoint(&tree, "missing"), None);
}

fn prompt(has_checkpoint: bool) -> SummarizePrompt {
    SummarizePrompt::new(
        "user: Try plan A with SQLite",
        has_checkpoint,
        Theme::monochrome(),
    )
}

#[test]
fn summarize_prompt_frame_and_choices() {
    let mut p = prompt(false);
    insta::assert_snapshot!(frame(60, 9, |a, b| p.render(a, b)));
    assert_eq!(
        p.handle_key(key(KeyCode::Enter)),
        Flow::Done(NavigateChoice {
            summary: SummaryChoice::None,
            restore: RestoreMode::ConversationOnly
        })
    );
    let mut p = prompt(false);
    p.handle_key(key(KeyCode::Down));
    assert_eq!(
        p.handle_key(key(KeyCode::Enter)),
        Flow::Done(NavigateChoice {
            summary: SummaryChoice::Summarize,
            restore: RestoreMode::ConversationOnly
        })
    );
    let mut p = prompt(false);
    assert_eq!(p.handle_key(key(KeyCode::Esc)), Flow::Cancel);
}

#[test]
fn summarize_with_a_custom_multi_line_prompt() {
    let mut p = prompt(false);
    p.handle_key(key(KeyCode::End));
    p.handle_key(key(KeyCode::Down));
    p.handle_key(key(KeyCode::Down));
    p.handle_key(key(KeyCode::Down));
    assert_eq!(p.handle_key(key(KeyCode::Enter)), Flow::Pending);
    assert!(p.is_typing());
    // An empty prompt is refused with a note.
    assert_eq!(p.handle_key(key(KeyCode::Enter)), Flow::Pending);
    for k in chars("Focus on the schema") {
        p.handle_key(k);
    }
    p.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
    for k in chars("and the tests") {
        p.handle_key(k);
    }
    assert_eq!(p.input(), "Focus on the schema\nand the tests");
    insta::assert_snapshot!(frame(60, 12, |a, b| p.render(a, b)));
    // Esc goes back to the choices, keeping the text.
    assert_eq!(p.handle_key(key(KeyCode::Esc)), Flow::Pending);
    assert!(!p.is_typing());
    assert_eq!(p.handle_key(key(KeyCode::Char('3'))), Flow::Pending);
    assert_eq!(
        p.handle_key(key(KeyCode::Enter)),
        Flow::Done(NavigateChoice {
            summary: SummaryChoice::Custom("Focus on the schema\nand the tests".into()),
            restore: RestoreMode::ConversationOnly
        })
    );
}

#[test]
fn restore_choice_frame_and_modes() {
    let mut p = prompt(true);
    insta::assert_snapshot!(frame(70, 8, |a, b| p.render(a, b)));
    // Both → then the summary question, which remembers the mode.
    p.handle_key(key(KeyCode::Down));
    p.handle_key(key(KeyCode::Down));
    assert_eq!(p.handle_key(key(KeyCode::Enter)), Flow::Pending);
    insta::assert_snapshot!("restore_then_summary", frame(70, 9, |a, b| p.render(a, b)));
    p.handle_key(key(KeyCode::Down));
    assert_eq!(
        p.handle_key(key(KeyCode::Enter)),
        Flow::Done(NavigateChoice {
            summary: SummaryChoice::Summarize,
            restore: RestoreMode::Both
        })
    );
    // Code only: the conversation does not move, so nothing to summarize.
    let mut p = prompt(true);
    assert_eq!(
        p.handle_key(key(KeyCode::Char('2'))),
        Flow::Done(NavigateChoice {
            summary: SummaryChoice::None,
            restore: RestoreMode::CodeOnly
        })
    );
    // `/fork`: the restore question only.
    let mut p = SummarizePrompt::restore_only("user: Try plan A with SQLite", Theme::monochrome());
    p.handle_key(key(KeyCode::End));
    p.handle_key(key(KeyCode::Down));
    p.handle_key(key(KeyCode::Down));
    assert_eq!(
        p.handle_key(key(KeyCode::Enter)),
        Flow::Done(NavigateChoice {
            summary: SummaryChoice::None,
            restore: RestoreMode::Both
        })
    );
    // Esc on the summary question goes back to the restore question, then cancels.
    let mut p = prompt(true);
    p.handle_key(key(KeyCode::Enter));
    assert_eq!(p.handle_key(key(KeyCode::Esc)), Flow::Pending);
    assert_eq!(p.restore(), RestoreMode::ConversationOnly);
    assert_eq!(p.handle_key(key(KeyCode::Esc)), Flow::Cancel);
}

#[test]
fn summary_progress_frame_and_cancel() {
    let mut p = SummaryProgress::new(Theme::monochrome());
    p.push_text("## Goal\nA notes CLI.\n## Progress\n- Plan A: SQLite sto");
    p.push_text("rage works");
    p.tick(std::time::Duration::from_secs(3));
    assert!(p.text().ends_with("storage works"));
    insta::assert_snapshot!(frame(40, 5, |a, b| p.render(a, b)));
    assert_eq!(p.handle_key(key(KeyCode::Enter)), Flow::Pending);
    assert_eq!(p.handle_key(key(KeyCode::Esc)), Flow::Cancel);
}

/// A 2,000-deep main path where every entry also has a side child, plus a `parentId` cycle.
fn comb(depth: usize) -> SessionTree {
    let mut entries = Vec::new();
    let mut parent: Option<String> = None;
    for i in 0..depth {
        let id = format!("m{i:05}");
        entries.push(user(i as u32 * 2, &id, parent.as_deref(), "main"));
        entries.push(user(
            i as u32 * 2 + 1,
            &format!("s{i:05}"),
            Some(&id),
            "side",
        ));
        parent = Some(id);
    }
    entries.push(user(9_000, "x1", Some("x2"), "loop one"));
    entries.push(user(9_001, "x2", Some("x1"), "loop two"));
    let leaf = parent.unwrap();
    let active: Vec<SessionEntry> = entries
        .iter()
        .filter(|e| e.id.starts_with('m'))
        .cloned()
        .collect();
    SessionTree::build(entries, Some(&leaf), &active)
}

#[test]
fn a_deep_comb_stays_narrow_and_shows_every_entry_once() {
    let tree = comb(2_000);
    let total = tree.nodes.len();
    let mut n = TreeNavigator::new(tree, TreeFilter::Default, Theme::monochrome());
    assert_eq!(n.row_count(), total, "nothing hidden, nothing shown twice");
    let mut ids: Vec<&str> = n.shown_ids().collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), total);
    // Opens on the leaf, deep down: the gutter is bounded by the depth marker.
    assert_eq!(n.selected_id(), Some("m01999"));
    let text = shot(&mut n, 60, 8);
    assert!(text.contains("[+"), "{text}");
    assert!(text.contains("m") || text.contains("main"), "{text}");
    // The cycle is listed after the tree, marked.
    n.handle_key(key(KeyCode::End));
    assert!(matches!(n.selected_id(), Some("x1" | "x2")));
    assert!(shot(&mut n, 60, 8).contains("(unreachable)"));
    // A search that keeps only the side entries: each hangs from the root now.
    for k in chars("side") {
        n.handle_key(k);
    }
    assert_eq!(n.row_count(), 2_000);
}

/// The overlays only take data and return choices (ARCHITECTURE: the `tui` overlays).
#[test]
fn overlays_do_not_reach_into_the_session_or_the_harness() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tui");
    for file in [
        "tree/mod.rs",
        "tree/filter.rs",
        "tree/render.rs",
        "tree/search.rs",
        "summarize.rs",
        "list.rs",
        "picker/mod.rs",
        "picker/session.rs",
        "picker/model.rs",
    ] {
        let text = std::fs::read_to_string(src.join(file)).unwrap();
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        // The session handle, storage, the harness, async I/O, files or clocks.
        let banned = regex_lite::Regex::new(
            r"(::|<|&|\{|, )Session\b|SessionStorage|SessionRepository|harness|tokio|std::fs|Instant|SystemTime",
        )
        .unwrap();
        if let Some(m) = banned.find(&code) {
            panic!("{file} uses {}", m.as_str());
        }
    }
}

mod shape {
    use super::*;
    use proptest::prelude::*;

    /// `(parent choice, kind)` per entry: a parent among the earlier entries or none; every
    /// 17th entry may point forward, which makes `parentId` cycles.
    fn build(spec: &[(usize, u8)]) -> SessionTree {
        let n = spec.len();
        let entries: Vec<SessionEntry> = spec
            .iter()
            .enumerate()
            .map(|(i, &(p, kind))| {
                let parent = if i % 17 == 16 {
                    Some(format!("n{}", p % n))
                } else if i == 0 || p % (i + 1) == i {
                    None
                } else {
                    Some(format!("n{}", p % i))
                };
                let id = format!("n{i}");
                match kind % 3 {
                    0 => user(i as u32, &id, parent.as_deref(), "hello"),
                    1 => {
                        let mut e = said(i as u32, &id, "x", "answer");
                        e.parent_id = parent;
                        e
                    }
                    _ => entry(
                        i as u32,
                        &id,
                        parent.as_deref(),
                        "model_change",
                        json!({"provider": "p", "modelId": "m"}),
                    ),
                }
            })
            .collect();
        SessionTree::build(entries, None, &[])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn every_filter_shows_each_passing_entry_once(
            spec in proptest::collection::vec((0usize..1000, 0u8..3), 1..120)
        ) {
            let tree = build(&spec);
            let kinds: Vec<u8> = tree
                .nodes
                .iter()
                .map(|n| spec[n.id()[1..].parse::<usize>().unwrap()].1 % 3)
                .collect();
            for (filter, keep) in [
                (TreeFilter::All, [true, true, true]),
                (TreeFilter::Default, [true, true, false]),
                (TreeFilter::UserOnly, [true, false, false]),
            ] {
                let nav = TreeNavigator::new(tree.clone(), filter, Theme::monochrome());
                let mut ids: Vec<&str> = nav.shown_ids().collect();
                let expected = kinds.iter().filter(|&&k| keep[k as usize]).count();
                prop_assert_eq!(ids.len(), expected);
                ids.sort_unstable();
                ids.dedup();
                prop_assert_eq!(ids.len(), expected);
            }
        }
    }
}

#[test]
fn a_huge_pasted_message_previews_one_line_and_search_reads_its_head() {
    let text = format!("needle {} haystack-end", "lorem ipsum ".repeat(100_000));
    let entries = vec![user(0, "big", None, &text), said(1, "a", "big", "ok")];
    let active = entries.clone();
    let tree = SessionTree::build(entries, Some("a"), &active);
    let mut n = TreeNavigator::new(tree, TreeFilter::Default, Theme::monochrome());
    let shot = shot(&mut n, 60, 6);
    assert!(shot.contains("user: needle lorem ipsum"), "{shot}");
    for k in chars("needle") {
        n.handle_key(k);
    }
    assert_eq!(n.row_count(), 1);
    // Search reads the first 8 KiB of an entry (DECISIONS §23.64).
    n.handle_key(key(KeyCode::Esc));
    for k in chars("haystack-end") {
        n.handle_key(k);
    }
    assert_eq!(n.row_count(), 0);
}

#[test]
fn key_releases_are_ignored() {
    let mut n = nav(TreeFilter::Default);
    let before = n.selected_id().map(str::to_string);
    let mut up = key(KeyCode::Up);
    up.kind = crossterm::event::KeyEventKind::Release;
    assert_eq!(n.handle_key(up), Flow::Pending);
    let mut esc = key(KeyCode::Esc);
    esc.kind = crossterm::event::KeyEventKind::Release;
    assert_eq!(n.handle_key(esc), Flow::Pending);
    assert_eq!(n.selected_id().map(str::to_string), before);
    let mut p = prompt(false);
    assert_eq!(p.handle_key(esc), Flow::Pending);
}

/// Loads a v3 session file as the navigator gets it, with the leaf pi resolved.
fn load_tree(path: &std::path::Path, leaf: Option<&str>) -> SessionTree {
    let text = std::fs::read_to_string(path).unwrap();
    let entries: Vec<SessionEntry> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let map: serde_json::Map<String, Value> = serde_json::from_str(l).ok()?;
            (map.get("type") != Some(&json!("session"))).then_some(map)
        })
        .map(|m| SessionEntry::from_map(m).unwrap())
        .collect();
    let mut active = Vec::new();
    let mut cur = leaf.map(str::to_string);
    while let Some(id) = cur {
        let Some(e) = entries.iter().find(|e| e.id == id) else {
            break;
        };
        cur = e.parent_id.clone();
        active.push(e.clone());
        if active.len() > entries.len() {
            break;
        }
    }
    SessionTree::build(entries, leaf, &active)
}

/// pi's own `/tree` selector (run by `tests/pi_tree_filters.mjs`) and the navigator show the
/// same entries, in the same order, under every filter, on pi's fixture sessions and generated
/// trees; a search finds at least what pi's finds (ours reads more of each entry, §23.64).
#[test]
fn filters_show_what_pis_tree_selector_shows() {
    use std::process::Command;
    let pkg = std::env::var("PI_PKG")
        .ok()
        .filter(|p| std::path::Path::new(p).is_dir())
        .or_else(|| {
            let home = std::env::var("HOME").ok()?;
            let p =
                format!("{home}/.cache/arbor-pi-ref/node_modules/@earendil-works/pi-coding-agent");
            std::path::Path::new(&p).is_dir().then_some(p)
        });
    let node_ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let Some(pkg) = pkg.filter(|_| node_ok) else {
        eprintln!("SKIPPED filters_show_what_pis_tree_selector_shows: node or PI_PKG missing");
        return;
    };
    let mut files: Vec<std::path::PathBuf> = super::fixture_files("pi-sessions")
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("v3-"))
        .collect();
    files.extend(
        super::fixture_files("generated/sessions")
            .into_iter()
            .take(40),
    );
    let dir = tempfile::tempdir().unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pi_tree_filters.mjs");
    let query = "the";
    let out = Command::new("node")
        .env("PI_PKG", &pkg)
        .env("PI_TREE_QUERY", query)
        .env("PI_TREE_SESSION_DIR", dir.path())
        .arg(&script)
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let mut compared = 0;
    let mut ordered = 0;
    for line in stdout.lines() {
        let pi: Value = serde_json::from_str(line).unwrap();
        let file = std::path::PathBuf::from(pi["file"].as_str().unwrap());
        let leaf = pi["leafId"].as_str();
        let tree = load_tree(&file, leaf);
        // `leaf` control entries are not nodes of Arbor's tree (they move the position); pi
        // 1.6.0 does not know the type and lists them as blank rows.
        let text = std::fs::read_to_string(&file).unwrap();
        let control: std::collections::HashSet<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["type"] == "leaf")
            .map(|v| v["id"].as_str().unwrap().to_string())
            .collect();
        // Arbor also counts these as settings (hidden by default; DECISIONS §23.61); pi
        // shows them as empty rows.
        let arbor_settings: std::collections::HashSet<&str> = tree
            .nodes
            .iter()
            .filter(|n| {
                matches!(
                    n.row.kind,
                    arbor_agent::session::RowKind::ActiveToolsChange { .. }
                        | arbor_agent::session::RowKind::Other { .. }
                )
            })
            .map(arbor_agent::session::TreeNode::id)
            .collect();
        for filter in TreeFilter::CYCLE {
            let nav = TreeNavigator::new(tree.clone(), filter, Theme::monochrome());
            let ours: Vec<&str> = nav.shown_ids().collect();
            let theirs: Vec<&str> = pi[filter.name()]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .filter(|id| !control.contains(*id))
                .filter(|id| {
                    !matches!(filter, TreeFilter::Default | TreeFilter::NoTools)
                        || !arbor_settings.contains(id)
                })
                .collect();
            if control.is_empty() {
                assert_eq!(ours, theirs, "{} under {}", file.display(), filter.name());
                ordered += 1;
            } else {
                // Children of a hidden `leaf` entry hang from its parent in time order, so the
                // order can differ from pi's (which keeps the blank row as their parent);
                // the membership cannot.
                let mut a = ours.clone();
                let mut b = theirs.clone();
                a.sort_unstable();
                b.sort_unstable();
                assert_eq!(a, b, "{} under {}", file.display(), filter.name());
            }
            compared += 1;
        }
        let mut nav = TreeNavigator::new(tree, TreeFilter::All, Theme::monochrome());
        for k in chars(query) {
            nav.handle_key(k);
        }
        let ours: std::collections::HashSet<&str> = nav.shown_ids().collect();
        for id in pi["search"].as_array().unwrap() {
            let id = id.as_str().unwrap();
            if control.contains(id) {
                continue;
            }
            assert!(
                ours.contains(id),
                "{}: pi finds {id} for {query:?}",
                file.display()
            );
        }
    }
    assert!(compared >= 5 * 45, "compared {compared} views");
    assert!(ordered >= 5 * 6, "compared the order of {ordered} views");
    eprintln!("{compared} views compared with pi, {ordered} of them in order");
}
