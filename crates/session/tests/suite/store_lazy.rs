//! JSONL lazy payloads (DECISIONS §25.20–§25.24): the open indexes envelopes only; payloads are
//! parsed when an entry is read, and a broken payload off the read path costs nothing.

use arbor_session::jsonl::JsonlRepository;
use arbor_session::AgentMessage;
use arbor_session::{EntryDraft, EntryKind, MemoryRepository, SessionRepository, SessionStorage};
use std::path::{Path, PathBuf};

const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-06-20T15:00:00.000Z","cwd":"/work/p"}"#;

/// A user message line in pi's key order.
fn user_line(id: &str, parent: Option<&str>, text: &str) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-06-20T15:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#
    )
}

/// An assistant message line with a complete usage (input, output, cacheRead, cacheWrite, cost).
fn assistant_line(id: &str, parent: &str, input: u32, cost: f64) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-06-20T15:00:02.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"ok"}}],"api":"anthropic-messages","provider":"anthropic","model":"m1","usage":{{"input":{input},"output":5,"cacheRead":2,"cacheWrite":1,"totalTokens":0,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":{cost}}}}},"stopReason":"stop","timestamp":2}}}}"#
    )
}

/// A user message whose payload is not JSON after its `role`.
fn broken_line(id: &str, parent: &str) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-06-20T15:00:01.000Z","message":{{"role":"user","content":[oops, not json}}}}"#
    )
}

fn with_lines(parts: &[String]) -> (tempfile::TempDir, JsonlRepository, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("2026-06-20T15-00-00-000Z_s1.jsonl");
    let mut s = String::new();
    for p in parts {
        s.push_str(p);
        s.push('\n');
    }
    std::fs::write(&path, s).expect("write");
    let repo = JsonlRepository::flat(dir.path());
    (dir, repo, path)
}

fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

fn ids(entries: &[arbor_session::SessionEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.id.as_str()).collect()
}

#[tokio::test]
async fn open_does_not_parse_payloads_off_the_read_path() {
    // b (line 3) is a side branch whose payload is broken; the active path is a -> c.
    let content = [
        HEADER.to_owned(),
        user_line("a", None, "one"),
        broken_line("b", "a"),
        user_line("c", Some("a"), "three"),
    ];
    let (_d, repo, path) = with_lines(&content);
    let before = std::fs::read(&path).expect("read");
    for writable in [false, true] {
        let s = if writable {
            repo.open(p(&path)).await
        } else {
            repo.open_read_only(p(&path)).await
        }
        .expect("the open indexes envelopes only");
        assert_eq!(s.entry_count().await.expect("count"), 3);
        assert_eq!(s.leaf_id().await.expect("leaf").as_deref(), Some("c"));
        let path_entries = s.path_to_root_or_compaction(None).await.expect("path");
        assert_eq!(ids(&path_entries), ["a", "c"]);
        // Stats read only lines that can carry usage: b is a user message.
        assert_eq!(s.stats().await.expect("stats").message_count, 3);
        // Reading b reports the file and the line.
        let e = s.get_entry("b").await.expect_err("b's payload is broken");
        assert_eq!(e.code(), "invalid_session");
        let msg = e.to_string();
        assert!(msg.contains(p(&path)) && msg.contains(":3:"), "{msg}");
        // So does any read that includes it; nothing else is lost.
        let e = s
            .entries(None, None)
            .await
            .expect_err("the full log includes b");
        assert!(e.to_string().contains(":3:"), "{e}");
        assert_eq!(
            ids(&s.ancestry(Some("c")).await.expect("ancestry")),
            ["a", "c"]
        );
    }
    // The writable open appended nothing and repaired nothing.
    assert_eq!(std::fs::read(&path).expect("read"), before);
}

#[tokio::test]
async fn appends_work_on_a_session_with_a_broken_side_payload() {
    let content = [
        HEADER.to_owned(),
        user_line("a", None, "one"),
        broken_line("b", "a"),
        user_line("c", Some("a"), "three"),
    ];
    let (_d, repo, path) = with_lines(&content);
    let s = repo.open(p(&path)).await.expect("open");
    let m: AgentMessage = serde_json::from_value(
        serde_json::json!({"role": "user", "content": "four", "timestamp": 1}),
    )
    .expect("message");
    let d = s
        .append(EntryDraft::new(EntryKind::message(m)))
        .await
        .expect("append");
    drop(s);
    let s = repo.open_read_only(p(&path)).await.expect("reopen");
    let path_entries = s.path_to_root_or_compaction(None).await.expect("path");
    assert_eq!(ids(&path_entries), ["a", "c", d.id.as_str()]);
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(
        text.contains(&broken_line("b", "a")),
        "b kept byte for byte"
    );
}

#[tokio::test]
async fn stats_are_computed_on_first_use_and_kept_current_by_appends() {
    let content = [
        HEADER.to_owned(),
        user_line("a", None, "one"),
        assistant_line("b", "a", 10, 0.5),
    ];
    let (_d, repo, path) = with_lines(&content);
    let s = repo.open(p(&path)).await.expect("open");
    let first = s.stats().await.expect("stats");
    assert_eq!(first.message_count, 2);
    assert_eq!(first.total_tokens, 18);
    assert_eq!(first.cached_tokens, 2);
    assert_eq!(first.uncached_tokens, 11);
    // An append after the figure exists folds into it.
    let line = assistant_line("c", "b", 100, 0.25);
    let entry = arbor_session::SessionEntry::from_json(&line).expect("entry");
    s.append_entry(entry).await.expect("append");
    let after = s.stats().await.expect("stats");
    drop(s);
    // Arbor writes the envelope keys and then `role` first, as pi does: the skim's fast path.
    let text = std::fs::read_to_string(&path).expect("read");
    let last = text.lines().last().expect("a line");
    assert!(
        last.starts_with(r#"{"type":"message","id":"c","parentId":"b","timestamp":"#)
            && last.contains(r#"","message":{"role":"assistant","#),
        "{last}"
    );
    let fresh = repo
        .open_read_only(p(&path))
        .await
        .expect("reopen")
        .stats()
        .await
        .expect("stats");
    assert_eq!(after, fresh);
    assert_eq!(fresh.message_count, 3);
    assert_eq!(fresh.total_tokens, 18 + 108);
    assert!((fresh.cost_total - 0.75).abs() < 1e-9);
}

#[tokio::test]
async fn stats_report_a_broken_usage_line_at_first_use() {
    // An assistant message cut off after its role: the open indexes it, stats must read it.
    let broken = r#"{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"assistant","usage":{"input":}}"#;
    let content = [
        HEADER.to_owned(),
        user_line("a", None, "one"),
        broken.to_owned(),
    ];
    let (_d, repo, path) = with_lines(&content);
    let s = repo.open_read_only(p(&path)).await.expect("open");
    let e = s.stats().await.expect_err("b's usage is unreadable");
    assert!(e.to_string().contains(":3:"), "{e}");
}

#[tokio::test]
async fn path_tail_reads_only_the_tail() {
    // The root's payload is broken: the whole path cannot be read, its tail can.
    let content = [
        HEADER.to_owned(),
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":[x]}}"#.to_owned(),
        user_line("b", Some("a"), "two"),
        user_line("side", Some("a"), "side"),
        user_line("c", Some("b"), "three"),
        user_line("d", Some("c"), "four"),
        r#"{"type":"leaf","id":"l1","parentId":"side","timestamp":"t","targetId":"d"}"#.to_owned(),
    ];
    let (_d, repo, path) = with_lines(&content);
    let s = repo.open_read_only(p(&path)).await.expect("open");
    assert!(s.ancestry(None).await.is_err(), "the root is unreadable");
    assert_eq!(ids(&s.path_tail(None, 2).await.expect("tail")), ["c", "d"]);
    assert_eq!(
        ids(&s.path_tail(None, 3).await.expect("tail")),
        ["b", "c", "d"]
    );
    assert_eq!(ids(&s.path_tail(Some("b"), 1).await.expect("tail")), ["b"]);
    assert!(s.path_tail(None, 0).await.expect("tail").is_empty());
    let e = s
        .path_tail(Some("nope"), 3)
        .await
        .expect_err("unknown leaf");
    assert_eq!(e.code(), "not_found");
    let e = s.path_tail(None, 10).await.expect_err("reaches the root");
    assert!(e.to_string().contains(":2:"), "{e}");
}

#[tokio::test]
async fn memory_path_tail_matches_the_end_of_the_ancestry() {
    let repo = MemoryRepository::new();
    let s = repo.create(Default::default()).await.expect("create");
    for i in 0..5 {
        let m: AgentMessage = serde_json::from_value(
            serde_json::json!({"role": "user", "content": format!("m{i}"), "timestamp": 1}),
        )
        .expect("message");
        s.append(EntryDraft::new(EntryKind::message(m)))
            .await
            .expect("append");
    }
    let all = s.ancestry(None).await.expect("ancestry");
    for n in [0, 1, 3, 5, 9] {
        let tail = s.path_tail(None, n).await.expect("tail");
        assert_eq!(tail, all[all.len().saturating_sub(n)..], "n = {n}");
    }
}

#[tokio::test]
async fn a_resumed_context_reads_nothing_above_the_compaction_boundary() {
    // The root's payload is broken and lies above the newest compaction's boundary (it keeps
    // from b): the resumed context never parses it (DECISIONS §22.50), the full ancestry does.
    let content = [
        HEADER.to_owned(),
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-06-20T15:00:01.000Z","message":{"role":"user","content":[x]}}"#.to_owned(),
        r#"{"type":"thinking_level_change","id":"t","parentId":"a","timestamp":"2026-06-20T15:00:01.000Z","thinkingLevel":"high"}"#.to_owned(),
        assistant_line("m", "t", 10, 0.0),
        user_line("b", Some("m"), "two"),
        r#"{"type":"compaction","id":"c","parentId":"b","timestamp":"2026-06-20T15:00:03.000Z","summary":"sum","firstKeptEntryId":"b","tokensBefore":9}"#.to_owned(),
        user_line("d", Some("c"), "four"),
    ];
    let (_d, repo, path) = with_lines(&content);
    let storage = std::sync::Arc::new(repo.open_read_only(p(&path)).await.expect("open"));
    assert!(
        storage.ancestry(None).await.is_err(),
        "the root is unreadable"
    );
    let session = arbor_session::Session::new(storage);
    let ctx = session
        .build_context(&Default::default())
        .await
        .expect("the context starts below the broken root");
    let roles: Vec<String> = ctx
        .messages
        .iter()
        .map(|m| serde_json::to_value(m).expect("json")["role"].to_string())
        .collect();
    assert_eq!(
        roles,
        [r#""compactionSummary""#, r#""user""#, r#""user""#],
        "summary, b, d"
    );
    // Settings set above the window still count (§3.2).
    assert_eq!(ctx.thinking_level, "high");
    let model = ctx.model.expect("model from m");
    assert_eq!(
        (model.provider.as_str(), model.model_id.as_str()),
        ("anthropic", "m1")
    );
    // What does need the part above the window reads it from storage.
    assert!(session.ancestry(None).await.is_err());
}
