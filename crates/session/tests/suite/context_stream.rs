//! The streamed context JSON (DECISIONS §25.100–§25.102): `write_context_json` over a storage
//! gives the bytes `write_expected_json` gives over the whole projected ancestry, at every leaf
//! of every fixture, on the JSONL and memory backends and through the trait's default plan; and
//! it really streams (bytes go out before a broken entry later on the path is read).

use std::path::{Path, PathBuf};

use arbor_session::context::projection::{build_session_context, visit_context_list};
use arbor_session::context::{
    write_context_json, write_expected_json, ContextJsonWriter, ContextOptions, DerivedState,
};
use arbor_session::jsonl::{JsonlRepository, JsonlStorage};
use arbor_session::SessionError;
use arbor_session::{MemoryStorage, SessionEntry, SessionStorage};

use super::fixture_files;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

/// What the CLI printed before streaming: the whole ancestry projected, then written.
async fn whole(storage: &impl SessionStorage, leaf: Option<&str>) -> Vec<u8> {
    let ancestry = storage.ancestry(leaf).await.unwrap();
    let ctx = build_session_context(&ancestry, &ContextOptions::default());
    let mut out = Vec::new();
    write_expected_json(&mut out, &ctx, leaf).unwrap();
    out
}

async fn streamed(storage: &impl SessionStorage, leaf: Option<&str>) -> Vec<u8> {
    write_context_json(storage, leaf, Vec::new()).await.unwrap()
}

/// The trait's default plan (what SQLite and PostgreSQL run): the window read whole, then
/// handed over by `visit_context_list`.
async fn by_default_plan(storage: &impl SessionStorage, leaf: Option<&str>) -> Vec<u8> {
    let settings = storage.derived_settings(leaf).await.unwrap();
    let state = DerivedState::from_settings(settings);
    let window = storage.path_to_root_or_compaction(leaf).await.unwrap();
    let mut writer = ContextJsonWriter::start(Vec::new(), &state, leaf).unwrap();
    visit_context_list(window, &mut |e| {
        writer
            .entry(e)
            .map_err(|e| SessionError::io("test output", e))
    })
    .unwrap();
    writer.finish().unwrap()
}

/// Up to `max` leaves spread over the log (all of them for small files), plus the current one.
async fn leaves(storage: &impl SessionStorage, max: usize) -> Vec<Option<String>> {
    let page = storage.entries(None, None).await.unwrap();
    let ids: Vec<String> = page.entries.into_iter().map(|(_, e)| e.id).collect();
    let step = ids.len().div_ceil(max).max(1);
    let mut out: Vec<Option<String>> = ids.into_iter().step_by(step).map(Some).collect();
    out.push(storage.leaf_id().await.unwrap());
    out
}

/// The v3 fixture's entries in log order, in a memory session (`None` when the file is not v3
/// or its log cannot be appended verbatim).
async fn in_memory(path: &Path) -> Option<MemoryStorage> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: serde_json::Value = serde_json::from_str(lines.next()?).ok()?;
    if header.get("version").and_then(serde_json::Value::as_u64) != Some(3) {
        return None;
    }
    let storage = MemoryStorage::new("/fixture");
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let entry = SessionEntry::from_json(line).ok()?;
        storage.append_entry(entry).await.ok()?;
    }
    Some(storage)
}

fn all_fixtures() -> Vec<PathBuf> {
    let mut files = fixture_files("generated/sessions");
    files.extend(fixture_files("pi-sessions"));
    files
}

#[test]
fn streamed_context_is_the_whole_projection_at_every_leaf() {
    rt().block_on(async {
        let (mut files, mut leaves_checked, mut memory_files) = (0, 0, 0);
        for path in all_fixtures() {
            let repo = JsonlRepository::flat(path.parent().unwrap());
            // Files pi refuses are refused at the open; they have no context to stream.
            let Ok(storage) = repo.open_read_only(path.to_str().unwrap()).await else {
                continue;
            };
            files += 1;
            let memory = in_memory(&path).await;
            memory_files += usize::from(memory.is_some());
            // Every leaf of the small files; a few of the 1,000-entry pi sessions (debug
            // builds parse slowly).
            let big = std::fs::metadata(&path).unwrap().len() > 500_000;
            for leaf in leaves(&storage, if big { 2 } else { 40 }).await {
                let leaf = leaf.as_deref();
                let want = whole(&storage, leaf).await;
                let name = path.file_name().unwrap().to_string_lossy();
                assert_eq!(
                    String::from_utf8_lossy(&streamed(&storage, leaf).await),
                    String::from_utf8_lossy(&want),
                    "{name} at {leaf:?}: JSONL streamed"
                );
                assert_eq!(
                    String::from_utf8_lossy(&by_default_plan(&storage, leaf).await),
                    String::from_utf8_lossy(&want),
                    "{name} at {leaf:?}: default plan"
                );
                if let Some(m) = &memory {
                    assert_eq!(
                        String::from_utf8_lossy(&streamed(m, leaf).await),
                        String::from_utf8_lossy(&want),
                        "{name} at {leaf:?}: memory streamed"
                    );
                }
                leaves_checked += 1;
            }
        }
        assert!(files >= 85, "fixtures opened: {files}");
        assert!(
            memory_files >= 75,
            "fixtures loaded in memory: {memory_files}"
        );
        assert!(leaves_checked > 1_500, "leaves checked: {leaves_checked}");
    });
}

const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-06-20T15:00:00.000Z","cwd":"/work/p"}"#;

fn user_line(id: &str, parent: Option<&str>, text: &str) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-06-20T15:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#
    )
}

fn write_session(dir: &Path, lines: &[String]) -> PathBuf {
    let path = dir.join("2026-06-20T15-00-00-000Z_s1.jsonl");
    let mut s = String::from(HEADER);
    s.push('\n');
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    std::fs::write(&path, s).unwrap();
    path
}

/// `lines` written after the header into a new folder and opened read-only (keep the folder).
async fn opened(lines: &[String]) -> (tempfile::TempDir, PathBuf, JsonlStorage) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_session(dir.path(), lines);
    let repo = JsonlRepository::flat(dir.path());
    let storage = repo.open_read_only(path.to_str().unwrap()).await.unwrap();
    (dir, path, storage)
}

#[test]
fn a_broken_entry_late_on_the_path_fails_after_earlier_messages_were_written() {
    rt().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let mut lines = vec![user_line("e0", None, "first")];
        for i in 1..50 {
            lines.push(user_line(&format!("e{i}"), Some(&format!("e{}", i - 1)), "more"));
        }
        // Line 52 of the file (header + 50 good lines before it): JSON broken after the
        // envelope, so the open accepts it and the read fails.
        lines.push(r#"{"type":"message","id":"bad","parentId":"e49","timestamp":"2026-06-20T15:00:01.000Z","message":{"role":"user","content":[oops]}}"#.to_owned());
        let path = write_session(dir.path(), &lines);
        let repo = JsonlRepository::flat(dir.path());
        let storage = repo.open_read_only(path.to_str().unwrap()).await.unwrap();
        let mut out = Vec::new();
        let err = write_context_json(&storage, None, &mut out)
            .await
            .expect_err("the leaf's payload is broken");
        let text = err.to_string();
        assert!(
            text.contains(":52:") && text.contains("entry bad"),
            "names the file line and entry: {text}"
        );
        assert_eq!(err.code(), "invalid_session");
        // Streamed: the first 50 messages were out before the broken line was parsed.
        let written = String::from_utf8(out).unwrap();
        assert!(
            written.starts_with(r#"{"ok":true,"leafId":"bad""#),
            "{written}"
        );
        assert_eq!(written.matches(r#""role":"user""#).count(), 50, "{written}");
        // The same session at the entry before is complete.
        let ok = write_context_json(&storage, Some("e49"), Vec::new())
            .await
            .unwrap();
        assert_eq!(ok, whole(&storage, Some("e49")).await);
    });
}

#[test]
fn an_edit_handed_over_after_its_target_is_refused_not_ignored() {
    // The writer relies on the visiting order (edits first); an edit arriving late cannot be
    // applied to what is already written, so it is an error rather than a silent difference.
    let lines = [
        user_line("u1", None, "hello"),
        r#"{"type":"context_edit","id":"x1","parentId":"u1","timestamp":"2026-06-20T15:00:02.000Z","targetId":"u1","replacement":null}"#.to_owned(),
    ];
    let entries: Vec<SessionEntry> = lines
        .iter()
        .map(|l| SessionEntry::from_json(l).unwrap())
        .collect();
    let mut writer =
        ContextJsonWriter::start(Vec::new(), &DerivedState::default(), Some("x1")).unwrap();
    writer.entry(entries[0].clone()).unwrap();
    let err = writer.entry(entries[1].clone()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("x1"), "{err}");
    // In the promised order the edit removes the message.
    let mut writer =
        ContextJsonWriter::start(Vec::new(), &DerivedState::default(), Some("x1")).unwrap();
    writer.entry(entries[1].clone()).unwrap();
    writer.entry(entries[0].clone()).unwrap();
    let out = String::from_utf8(writer.finish().unwrap()).unwrap();
    assert!(out.ends_with("\"llm\":[]}\n"), "{out}");
}

#[test]
fn the_kept_range_drops_system_messages_keeps_older_compactions_silent_and_takes_edits() {
    // u0 a0 | kept: u1 s1(system) c0(older compaction) a1 | c1(newest, keeps from u1) u2 x(edit u1)
    let ts = "2026-06-20T15:00:02.000Z";
    let lines = [
        user_line("u0", None, "zero"),
        format!(
            r#"{{"type":"message","id":"a0","parentId":"u0","timestamp":"{ts}","message":{{"role":"assistant","content":[{{"type":"text","text":"ok"}}],"api":"anthropic-messages","provider":"anthropic","model":"m0","usage":{{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":2}}}}"#
        ),
        user_line("u1", Some("a0"), "one"),
        format!(
            r#"{{"type":"message","id":"s1","parentId":"u1","timestamp":"{ts}","message":{{"role":"system","content":"be brief","timestamp":3}}}}"#
        ),
        format!(
            r#"{{"type":"compaction","id":"c0","parentId":"s1","timestamp":"{ts}","summary":"older","firstKeptEntryId":"u0","tokensBefore":5}}"#
        ),
        format!(
            r#"{{"type":"message","id":"a1","parentId":"c0","timestamp":"{ts}","message":{{"role":"assistant","content":[{{"type":"text","text":"fine"}}],"api":"anthropic-messages","provider":"anthropic","model":"m1","usage":{{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":4}}}}"#
        ),
        format!(
            r#"{{"type":"compaction","id":"c1","parentId":"a1","timestamp":"{ts}","summary":"newest","firstKeptEntryId":"u1","tokensBefore":9}}"#
        ),
        user_line("u2", Some("c1"), "two"),
        format!(
            r#"{{"type":"context_edit","id":"x","parentId":"u2","timestamp":"{ts}","targetId":"u1","replacement":{{"content":"edited"}}}}"#
        ),
    ];
    rt().block_on(async {
        let (_dir, path, storage) = opened(&lines).await;
        let memory = in_memory(&path).await.expect("v3 log in order");
        let leaf = Some("x");
        let want = whole(&storage, leaf).await;
        let text = String::from_utf8(want.clone()).unwrap();
        // The reference itself: summary of c1, u1 edited, a1, u2; no system message, no "older".
        assert!(text.contains("newest") && !text.contains("older"), "{text}");
        assert!(
            text.contains("edited") && !text.contains("\"one\""),
            "{text}"
        );
        assert!(
            !text.contains("be brief") && !text.contains("\"zero\""),
            "{text}"
        );
        assert_eq!(streamed(&storage, leaf).await, want, "JSONL");
        assert_eq!(streamed(&memory, leaf).await, want, "memory");
        assert_eq!(by_default_plan(&storage, leaf).await, want, "default plan");
    });
}

/// A list long enough to be rendered on several threads (DECISIONS §25.120): 6,000 entries, a
/// compaction at 3,000 keeping from 500 (a kept range over several chunks, with system
/// messages to drop and an older compaction to keep silent), edits of a kept and of a later
/// entry. Every backend writes what the whole projection writes; a broken entry late in the
/// list fails after exactly the messages before it were written.
#[test]
fn a_long_context_rendered_on_several_threads_is_the_whole_projection() {
    let ts = "2026-06-20T15:00:02.000Z";
    let mut lines = vec![user_line("e0", None, "start")];
    for i in 1..6000 {
        let id = format!("e{i}");
        let parent = format!("e{}", i - 1);
        lines.push(match i {
            3000 => format!(
                r#"{{"type":"compaction","id":"{id}","parentId":"{parent}","timestamp":"{ts}","summary":"newest","firstKeptEntryId":"e500","tokensBefore":9}}"#
            ),
            1500 => format!(
                r#"{{"type":"compaction","id":"{id}","parentId":"{parent}","timestamp":"{ts}","summary":"older","firstKeptEntryId":"e0","tokensBefore":5}}"#
            ),
            4500 => format!(
                r#"{{"type":"context_edit","id":"{id}","parentId":"{parent}","timestamp":"{ts}","targetId":"e777","replacement":{{"content":"edited kept"}}}}"#
            ),
            5500 => format!(
                r#"{{"type":"context_edit","id":"{id}","parentId":"{parent}","timestamp":"{ts}","targetId":"e4000","replacement":{{"content":"edited later"}}}}"#
            ),
            i if i % 97 == 0 => format!(
                r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"{ts}","message":{{"role":"system","content":"system {i}","timestamp":3}}}}"#
            ),
            _ => user_line(&id, Some(&parent), &format!("text {i}")),
        });
    }
    rt().block_on(async {
        let (_dir, path, storage) = opened(&lines).await;
        let memory = in_memory(&path).await.expect("v3 log in order");
        let leaf = Some("e5999");
        let want = whole(&storage, leaf).await;
        let text = String::from_utf8(want.clone()).unwrap();
        assert!(
            text.contains("newest") && !text.contains("\"older\""),
            "summaries"
        );
        assert!(text.contains("edited kept") && text.contains("edited later"));
        assert!(!text.contains("\"text 777\"") && !text.contains("\"text 400\""));
        assert!(!text.contains("\"system 582\"") && text.contains("\"system 3104\""));
        let got = streamed(&storage, leaf).await;
        if got != want {
            let at = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(0);
            panic!(
                "JSONL differs at byte {at}: {:?} against {:?}",
                String::from_utf8_lossy(&got[at.saturating_sub(150)..(at + 150).min(got.len())]),
                String::from_utf8_lossy(&want[at.saturating_sub(150)..(at + 150).min(want.len())])
            );
        }
        assert_eq!(streamed(&memory, leaf).await, want, "memory");
        assert_eq!(by_default_plan(&storage, leaf).await, want, "default plan");

        // Break e5800's payload (the open reads only its envelope).
        let broken = lines[5800].replace(r#""content":"text 5800""#, r#""content":[oops]"#);
        assert_ne!(broken, lines[5800]);
        let mut lines = lines.clone();
        lines[5800] = broken;
        let (_broken_dir, _, storage) = opened(&lines).await;
        let mut out = Vec::new();
        let err = write_context_json(&storage, None, &mut out)
            .await
            .expect_err("e5800 is broken");
        assert!(err.to_string().contains("e5800"), "{err}");
        // Exactly the messages of the context at e5799 (its head names another leaf), without
        // its closing `]}` and newline.
        let before = whole(&storage, Some("e5799")).await;
        let messages = |b: &[u8]| {
            let text = String::from_utf8_lossy(b).into_owned();
            let at = text.find("\"llm\":[").map_or(0, |p| p + 7);
            text[at..].to_owned()
        };
        let (got, want) = (messages(&out), messages(&before[..before.len() - 3]));
        assert!(got.len() > 200_000, "{} bytes of messages", got.len());
        assert!(
            got == want,
            "{} bytes against {}: {:?} / {:?}",
            got.len(),
            want.len(),
            &got[got.len() - 60..],
            &want[want.len() - 60..]
        );
    });
}
