//! Forward migration from a version-1 database written by an earlier build.

use arbor_session::{SessionRepository, SessionStorage};
use arbor_session_sqlite::{schema, SqliteRepository};

use super::*;

/// The version-1 schema exactly as the first build created it (frozen here on purpose: a
/// shipped migration must never change).
const V1_SCHEMA: &str = "
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
INSERT INTO schema_version VALUES (1, '2026-06-01T00:00:00.000Z');
CREATE TABLE sessions (
    sid INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL,
    cwd TEXT NOT NULL, parent_session TEXT, header TEXT NOT NULL
);
CREATE INDEX sessions_created ON sessions(created_at);
CREATE TABLE entries (
    key INTEGER PRIMARY KEY, sid INTEGER NOT NULL, id TEXT NOT NULL, parent_id TEXT,
    type TEXT NOT NULL, target_id TEXT, payload TEXT NOT NULL
);
CREATE UNIQUE INDEX entries_id ON entries(sid, id);
CREATE INDEX entries_parent ON entries(parent_id);
CREATE INDEX entries_type ON entries(type);
CREATE INDEX entries_target ON entries(target_id) WHERE target_id IS NOT NULL;
CREATE TABLE session_state (
    sid INTEGER PRIMARY KEY, leaf_id TEXT, name TEXT, entry_count INTEGER NOT NULL,
    updated_at TEXT NOT NULL
);
PRAGMA journal_mode=WAL;
";

const LINES: [&str; 4] = [
    r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-06-01T10:00:00.000Z","message":{"role":"user","content":"fix the bug","timestamp":1}}"#,
    r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-06-01T10:00:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"api":"anthropic-messages","provider":"anthropic","model":"m","usage":{"input":10,"output":5,"cacheRead":3,"cacheWrite":2,"totalTokens":20,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.5}},"stopReason":"stop","timestamp":2}}"#,
    r#"{"type":"compaction","id":"c1","parentId":"a1","timestamp":"2026-06-01T10:00:02.000Z","summary":"s","firstKeptEntryId":"a1","tokensBefore":30}"#,
    r#"{"type":"session_info","id":"n1","parentId":"c1","timestamp":"2026-06-01T10:00:03.000Z","name":"old"}"#,
];

fn write_v1(path: &std::path::Path) {
    let c = raw(path);
    c.execute_batch(V1_SCHEMA).unwrap();
    c.execute(
        "INSERT INTO sessions VALUES (1, 'old-session', '2026-06-01T10:00:00.000Z', '/p', NULL, ?1)",
        [r#"{"type":"session","version":3,"id":"old-session","timestamp":"2026-06-01T10:00:00.000Z","cwd":"/p"}"#],
    )
    .unwrap();
    for (i, line) in LINES.iter().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        c.execute(
            "INSERT INTO entries VALUES (?1, 1, ?2, ?3, ?4, NULL, ?5)",
            rusqlite::params![
                (1i64 << 32) | (i as i64 + 1),
                v["id"].as_str(),
                v["parentId"].as_str(),
                v["type"].as_str(),
                line
            ],
        )
        .unwrap();
    }
    c.execute(
        "INSERT INTO session_state VALUES (1, 'n1', 'old', 4, '2026-06-01T10:00:03.000Z')",
        [],
    )
    .unwrap();
}

#[tokio::test]
async fn a_v1_database_is_migrated_forward_with_backfilled_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    write_v1(&path);

    let repo = SqliteRepository::open(&path).await.unwrap();
    let versions: Vec<i64> = raw(&path)
        .prepare("SELECT version FROM schema_version ORDER BY version")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(versions, vec![1, i64::from(schema::CURRENT_VERSION)]);

    let s = repo.open("old-session").await.unwrap();
    let st = s.stats().await.unwrap();
    assert_eq!(st.message_count, 2);
    assert_eq!(
        (st.cached_tokens, st.uncached_tokens, st.total_tokens),
        (3, 12, 20)
    );
    assert!((st.cost_total - 0.5).abs() < 1e-9);
    assert_eq!(s.session_name().await.unwrap().as_deref(), Some("old"));
    assert_eq!(s.leaf_id().await.unwrap().as_deref(), Some("n1"));
    let listed = repo.list().await.unwrap().sessions;
    assert_eq!(listed[0].first_message.as_deref(), Some("fix the bug"));
    let latest: Option<String> = raw(&path)
        .query_row("SELECT latest_compaction_id FROM session_state", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(latest.as_deref(), Some("c1"));

    // Old entries read back unchanged and the session keeps growing.
    let e = s.get_entry("a1").await.unwrap().unwrap();
    assert_eq!(e.to_json(), LINES[1]);
    let next = s.append(user("more")).await.unwrap();
    assert_eq!(next.parent_id.as_deref(), Some("n1"));
    assert_eq!(s.stats().await.unwrap().message_count, 3);

    // Opening again is a no-op migration.
    drop(repo);
    SqliteRepository::open(&path).await.unwrap();
    let n: i64 = raw(&path)
        .query_row("SELECT COUNT(*) FROM schema_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 2);
}

#[tokio::test]
async fn a_failing_migration_leaves_the_v1_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    write_v1(&path);
    raw(&path)
        .execute(
            "UPDATE entries SET payload = 'not json' WHERE id = 'a1'",
            [],
        )
        .unwrap();
    let err = SqliteRepository::open(&path).await.err().unwrap();
    let msg = err.to_string();
    assert!(
        msg.contains("migration to version 2") && msg.contains("a1") && msg.contains("old-session"),
        "{msg}"
    );
    let max: i64 = raw(&path)
        .query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(max, 1, "rolled back");
    let cols: i64 = raw(&path)
        .query_row(
            "SELECT COUNT(*) FROM pragma_table_info('session_state')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(cols, 5, "no v2 columns were added");
}
