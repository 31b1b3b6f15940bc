//! The `/tree` navigator on a 100,000-entry session (issue 13: open under 200 ms, scroll
//! without lag). The session is built in memory: a 60,000-entry active path (user, assistant
//! with a tool call, tool result, assistant answer) with a side branch of 3 entries every 30
//! entries, so the tree has ~2,000 forks.
//!
//! `cargo bench -p arbor-coding-agent --bench tree_view -- --warm-up-time 1 --measurement-time 3`
//!
//! Measured: the real path from an open JSONL session (`open_session_tree_and_first_frame`:
//! `Session::tree` reading row summaries from the file, the navigator, one 160×50 frame; the
//! session is this generated one written to a temporary file, or `TREE_VIEW_FILE`, e.g. a
//! `gen-wide` file), building the `SessionTree` from parsed entries, opening the navigator on it
//! (classification + the first layout), drawing one frame, one Down key plus a frame, a
//! PageDown plus a frame at the far end, a filter switch (a full re-layout) and the first search
//! keystroke (reads the search texts from the tree's source).

#![allow(clippy::expect_used)]

use std::hint::black_box;

use arbor_agent::session::jsonl::JsonlRepository;
use arbor_agent::session::{Session, SessionEntry, SessionTree};
use arbor_coding_agent::tui::theme::Theme;
use arbor_coding_agent::tui::tree::{TreeFilter, TreeNavigator};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use serde_json::{json, Value};
use std::sync::Arc;

const ENTRIES: usize = 100_000;

fn entry(i: usize, parent: Option<&str>, message: Value) -> SessionEntry {
    let mut map = serde_json::Map::new();
    map.insert("type".into(), json!("message"));
    map.insert("id".into(), json!(format!("e{i:07}")));
    map.insert("parentId".into(), json!(parent));
    map.insert(
        "timestamp".into(),
        json!(arbor_agent::time::ms_to_iso(
            1_780_000_000_000 + i as i64 * 1000
        )),
    );
    map.insert("message".into(), message);
    SessionEntry::from_map(map).expect("a valid entry")
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text, "timestamp": 1})
}

fn assistant(content: Value, stop: &str) -> Value {
    json!({"role": "assistant", "content": content, "api": "anthropic-messages",
        "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": stop, "timestamp": 1})
}

fn session() -> (Vec<SessionEntry>, String, Vec<SessionEntry>) {
    let mut entries = Vec::with_capacity(ENTRIES);
    let mut parent: Option<String> = None;
    let mut active = Vec::new();
    while entries.len() < ENTRIES {
        let i = entries.len();
        let msg = match i % 4 {
            0 => user(&format!(
                "step {i}: change the parser so that it accepts the new syntax"
            )),
            1 => assistant(
                json!([{"type": "toolCall", "id": format!("c{i}"), "name": "read",
                    "arguments": {"path": format!("src/file{i}.rs")}}]),
                "toolUse",
            ),
            2 => {
                json!({"role": "toolResult", "toolCallId": format!("c{}", i - 1), "toolName": "read",
                "content": [{"type": "text", "text": "fn parse() { /* ... */ }\n".repeat(4)}],
                "isError": false, "timestamp": 1})
            }
            _ => assistant(
                json!([{"type": "text", "text": format!("Done with step {i}; the tests pass.")}]),
                "stop",
            ),
        };
        let e = entry(i, parent.as_deref(), msg);
        parent = Some(e.id.clone());
        active.push(e.clone());
        entries.push(e);
        // A side branch (a retry that was abandoned) every 30 entries.
        if i % 30 == 29 && entries.len() + 3 <= ENTRIES {
            let mut side_parent = parent.clone();
            for k in 0..3 {
                let j = entries.len();
                let msg = if k % 2 == 0 {
                    user("try it another way instead")
                } else {
                    assistant(json!([{"type": "text", "text": "another way"}]), "stop")
                };
                let e = entry(j, side_parent.as_deref(), msg);
                side_parent = Some(e.id.clone());
                entries.push(e);
            }
        }
    }
    let leaf = parent.unwrap_or_default();
    (entries, leaf, active)
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// Writes `entries` as a session file; returns the directory guard and the path.
fn write_session(entries: &[SessionEntry]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("2026-06-20T15-00-00-000Z_bench.jsonl");
    let mut text = String::from(
        r#"{"type":"session","version":3,"id":"bench","timestamp":"2026-06-20T15:00:00.000Z","cwd":"/work/p"}"#,
    );
    text.push('\n');
    for e in entries {
        text.push_str(&serde_json::to_string(e).expect("serialize"));
        text.push('\n');
    }
    std::fs::write(&path, text).expect("write");
    let path = path.to_str().expect("utf-8 path").to_owned();
    (dir, path)
}

fn bench(c: &mut Criterion) {
    let area = Rect::new(0, 0, 160, 50);
    let theme = Theme::colored();
    let file = std::env::var("TREE_VIEW_FILE").ok();
    // With a file given, only the session cases run (no in-memory session is generated).
    let generated = file.is_none().then(session);
    {
        let (_dir, path) = match (&file, &generated) {
            (Some(path), _) => (None, path.clone()),
            (None, Some((entries, _, _))) => {
                let (dir, path) = write_session(entries);
                (Some(dir), path)
            }
            (None, None) => return,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let session = rt.block_on(async {
            let dir = std::path::Path::new(&path).parent().expect("a directory");
            let storage = JsonlRepository::flat(dir)
                .open_read_only(&path)
                .await
                .expect("open");
            let session = Session::new(Arc::new(storage));
            // The app's session has its projection cache warm; so does this one.
            session.tree().await.expect("tree");
            session
        });
        let mut g = c.benchmark_group("tree_view_session");
        g.sample_size(10);
        g.bench_function("open_session_tree_and_first_frame", |b| {
            b.iter(|| {
                let tree = rt.block_on(session.tree()).expect("tree");
                let mut nav = TreeNavigator::new(tree, TreeFilter::Default, theme);
                let mut buf = Buffer::empty(area);
                nav.render(area, &mut buf);
                black_box(buf)
            });
        });
        // What `Session::tree` did before row summaries: parse every entry, then build.
        g.bench_function("parse_entries_then_build_and_first_frame", |b| {
            b.iter(|| {
                let entries = rt.block_on(session.entries()).expect("entries");
                let leaf = rt.block_on(session.leaf_id()).expect("leaf");
                let active = rt
                    .block_on(session.branch_since_compaction(None))
                    .expect("branch");
                let tree = SessionTree::build(entries, leaf.as_deref(), &active);
                let mut nav = TreeNavigator::new(tree, TreeFilter::Default, theme);
                let mut buf = Buffer::empty(area);
                nav.render(area, &mut buf);
                black_box(buf)
            });
        });
        g.finish();
    }
    let Some((entries, leaf, active)) = generated else {
        return;
    };
    let tree = SessionTree::build(entries.clone(), Some(&leaf), &active);

    let mut g = c.benchmark_group("tree_view_100k");
    g.sample_size(10);
    g.bench_function("session_tree_build", |b| {
        b.iter_batched(
            || entries.clone(),
            |e| black_box(SessionTree::build(e, Some(&leaf), &active)),
            BatchSize::LargeInput,
        );
    });
    g.bench_function("open", |b| {
        b.iter_batched(
            || tree.clone(),
            |t| black_box(TreeNavigator::new(t, TreeFilter::Default, theme)),
            BatchSize::LargeInput,
        );
    });
    g.bench_function("open_and_first_frame", |b| {
        b.iter_batched(
            || (tree.clone(), Buffer::empty(area)),
            |(t, mut buf)| {
                let mut nav = TreeNavigator::new(t, TreeFilter::Default, theme);
                nav.render(area, &mut buf);
                black_box(buf)
            },
            BatchSize::LargeInput,
        );
    });

    let mut nav = TreeNavigator::new(tree.clone(), TreeFilter::Default, theme);
    let mut buf = Buffer::empty(area);
    nav.render(area, &mut buf);
    g.bench_function("frame", |b| {
        b.iter(|| {
            nav.render(area, &mut buf);
            black_box(&buf);
        });
    });
    g.bench_function("key_up_and_frame", |b| {
        b.iter(|| {
            nav.handle_key(key(KeyCode::Up));
            nav.render(area, &mut buf);
            black_box(&buf);
        });
    });
    g.bench_function("page_down_and_frame", |b| {
        b.iter(|| {
            nav.handle_key(key(KeyCode::PageDown));
            nav.render(area, &mut buf);
            black_box(&buf);
        });
    });
    g.bench_function("filter_switch_and_frame", |b| {
        b.iter(|| {
            nav.handle_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
            nav.render(area, &mut buf);
            black_box(&buf);
        });
    });
    g.bench_function("first_search_key_and_frame", |b| {
        b.iter_batched(
            || TreeNavigator::new(tree.clone(), TreeFilter::Default, theme),
            |mut nav| {
                nav.handle_key(key(KeyCode::Char('s')));
                nav.render(area, &mut buf);
                black_box(nav)
            },
            BatchSize::LargeInput,
        );
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
