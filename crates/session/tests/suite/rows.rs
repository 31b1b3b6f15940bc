//! Row summaries (DECISIONS §25.80–§25.82): the JSONL and default sources agree, and a tree
//! keeps its source for the longer texts search reads. That a stored line's summary equals the
//! parsed entry's is proven in `reader_equivalence::row`.

use arbor_session::jsonl::JsonlRepository;
use arbor_session::rows::{MessageRow, RowCaps, RowKind, RowSummary};
use arbor_session::{
    EntryRows, RowSource, Session, SessionEntry, SessionRepository, SessionStorage,
};
use std::sync::Arc;

use super::reader_equivalence::v3_lines;

const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-06-20T15:00:00.000Z","cwd":"/work/p"}"#;

fn session_file(lines: &[String]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("2026-06-20T15-00-00-000Z_s1.jsonl");
    let mut text = format!("{HEADER}\n");
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(&path, text).expect("write");
    let path = path.to_str().expect("utf-8 path").to_owned();
    (dir, path)
}

fn user(id: &str, parent: Option<&str>, text: &str) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-06-20T15:00:01.000Z","message":{{"role":"user","content":[{{"type":"text","text":"{text}"}}],"timestamp":1}}}}"#
    )
}

#[tokio::test]
async fn jsonl_summaries_equal_summaries_of_the_parsed_entries() {
    // Every v3 fixture line in one file, chained so the file is a valid session.
    let mut lines = Vec::new();
    for (i, line) in v3_lines().iter().enumerate() {
        let Ok(mut entry) = SessionEntry::from_json(line) else {
            continue;
        };
        if matches!(entry.entry_type(), "leaf" | "label" | "context_edit") {
            continue; // their targets belong to other files
        }
        entry.id = format!("x{i}");
        entry.parent_id = (i > 0)
            .then(|| format!("x{}", i - 1))
            .filter(|_| !lines.is_empty());
        lines.push(serde_json::to_string(&entry).expect("serialize"));
    }
    let (_dir, path) = session_file(&lines);
    let repo = JsonlRepository::flat(std::path::Path::new(&path).parent().expect("dir"));
    let storage = repo.open_read_only(&path).await.expect("open");
    let entries = storage.entries(None, None).await.expect("entries").entries;
    let parsed = EntryRows(entries.into_iter().map(|(_, e)| e).collect());
    for caps in [RowCaps::TREE, RowCaps::SEARCH] {
        let want = parsed.summaries(caps).expect("summaries");
        let from_source = arbor_session::row_source(&storage)
            .await
            .expect("source")
            .summaries(caps)
            .expect("summaries");
        assert_eq!(from_source, want);
        let mut visited = Vec::new();
        arbor_session::visit_row_summaries(&storage, caps, &|r| r, &mut |r| visited.push(r))
            .await
            .expect("visit");
        assert_eq!(visited, want);
    }
}

#[tokio::test]
async fn a_payload_error_in_a_shown_field_names_the_file_and_line() {
    let broken = r#"{"type":"message","id":"b","parentId":"a","timestamp":"2026-06-20T15:00:01.000Z","message":{"role":"user","content":42}}"#;
    let (_dir, path) = session_file(&[user("a", None, "hi"), broken.to_owned()]);
    let repo = JsonlRepository::flat(std::path::Path::new(&path).parent().expect("dir"));
    let storage = repo.open_read_only(&path).await.expect("open");
    let err = arbor_session::visit_row_summaries(&storage, RowCaps::TREE, &|r| r, &mut |_| {})
        .await
        .expect_err("content 42 cannot be shown");
    let text = err.to_string();
    assert!(text.contains(&format!("{path}:3:")), "{text}");
    let err = arbor_session::row_source(&storage)
        .await
        .expect("source")
        .summaries(RowCaps::TREE)
        .expect_err("the source reads the same line");
    assert!(err.to_string().contains(&format!("{path}:3:")), "{err}");
}

#[tokio::test]
async fn a_session_tree_keeps_short_rows_and_reads_search_texts_again() {
    let long = "word ".repeat(600);
    let (_dir, path) = session_file(&[user("a", None, &long), user("b", Some("a"), "short")]);
    let repo = JsonlRepository::flat(std::path::Path::new(&path).parent().expect("dir"));
    let storage = repo.open(&path).await.expect("open");
    let session = Session::new(Arc::new(storage));
    let tree = session.tree().await.expect("tree");
    let text_of = |row: &RowSummary| match &row.kind {
        RowKind::Message(MessageRow::User { text }) => text.as_str().chars().count(),
        other => panic!("not a user row: {other:?}"),
    };
    assert_eq!(text_of(&tree.nodes[0].row), RowCaps::TREE.text);
    // Appends after the tree was made do not shift what it reads.
    session
        .append_message(arbor_session::AgentMessage::Llm(
            arbor_ai::types::Message::User(arbor_ai::types::UserMessage {
                content: arbor_ai::types::Content::Text("later".into()),
                timestamp: arbor_ai::Kept::absent(),
                extra: Default::default(),
            }),
        ))
        .await
        .expect("append");
    let search = tree
        .summaries(RowCaps::SEARCH)
        .expect("readable")
        .expect("a source");
    assert_eq!(search.len(), 2);
    assert_eq!(text_of(&search[0]), long.trim_end().len());
    assert_eq!(text_of(&search[1]), "short".len());
}

/// Enough lines for several read workers (DECISIONS §25.112): rows come back in log order,
/// equal to a line-by-line read, and the first broken line in log order is the error.
#[tokio::test]
async fn rows_of_a_large_session_keep_log_order_and_the_first_error() {
    const N: usize = 40_000;
    let mut lines: Vec<String> = (0..N)
        .map(|i| {
            let parent = (i > 0).then(|| format!("e{}", i - 1));
            user(&format!("e{i}"), parent.as_deref(), &format!("row {i}"))
        })
        .collect();
    let want: Vec<RowSummary> = lines
        .iter()
        .map(|l| RowSummary::from_line(l, RowCaps::TREE).expect("summary"))
        .collect();
    let (_dir, path) = session_file(&lines);
    let repo = JsonlRepository::flat(std::path::Path::new(&path).parent().expect("dir"));
    let storage = repo.open_read_only(&path).await.expect("open");
    let mut visited = Vec::new();
    arbor_session::visit_row_summaries(&storage, RowCaps::TREE, &|r| r, &mut |r| visited.push(r))
        .await
        .expect("visit");
    assert!(visited == want, "rows differ from a line-by-line read");
    let from_source = arbor_session::row_source(&storage)
        .await
        .expect("source")
        .summaries(RowCaps::TREE)
        .expect("summaries");
    assert!(
        from_source == want,
        "source rows differ from a line-by-line read"
    );
    drop(storage);

    // Two broken payloads, the later one in an earlier-finishing position of its chunk.
    for at in [33_000usize, 25_000] {
        lines[at] = lines[at].replace(r#""content":["#, r#""content":42,"x":["#);
    }
    let (_dir2, path) = session_file(&lines);
    let repo = JsonlRepository::flat(std::path::Path::new(&path).parent().expect("dir"));
    let storage = repo.open_read_only(&path).await.expect("open");
    let mut visited = 0usize;
    let err =
        arbor_session::visit_row_summaries(&storage, RowCaps::TREE, &|r| r, &mut |_| visited += 1)
            .await
            .expect_err("broken line");
    // Entry 25,000 is file line 25,002 (the header is line 1).
    assert!(err.to_string().contains(&format!("{path}:25002:")), "{err}");
    assert!(visited <= 25_000, "{visited} rows visited past the error");
    let err = arbor_session::row_source(&storage)
        .await
        .expect("source")
        .summaries(RowCaps::TREE)
        .expect_err("broken line");
    assert!(err.to_string().contains(&format!("{path}:25002:")), "{err}");
}
