//! Forward migration from a store written by an older build: the data stays, the new schema is
//! in place and the store works as a fresh one does.

use arbor_session::{SessionRepository, SessionStorage};
use arbor_session_postgres::schema::{migration_sql, CURRENT_VERSION};
use arbor_session_postgres::PostgresRepository;

use super::{admin, raw, user, Schema};

const HEADER: &str = r#"{"type":"session","version":3,"id":"v1-session","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/old"}"#;
const FIRST: &str = r#"{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hello from v1","timestamp":1},"futureField":{"kept":true}}"#;
const SECOND: &str = r#"{"type":"message","id":"aaaa0002","parentId":"aaaa0001","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"still here","timestamp":2}}"#;

/// A schema at version 1 holding one two-entry session, as the version-1 build wrote it.
async fn version_1_store(schema: &Schema) {
    old_store(schema, 1).await;
}

/// A schema at `version` (1 or 2) holding the two-entry session `v1-session`.
async fn old_store(schema: &Schema, version: i32) {
    admin(&schema.url)
        .await
        .unwrap()
        .batch_execute(&format!("CREATE SCHEMA {}", schema.name))
        .await
        .unwrap();
    let c = raw(schema).await;
    c.batch_execute(
        "CREATE TABLE schema_version (
             version    integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         )",
    )
    .await
    .unwrap();
    for v in 1..=version {
        c.batch_execute(migration_sql(v).unwrap()).await.unwrap();
        c.execute("INSERT INTO schema_version (version) VALUES ($1)", &[&v])
            .await
            .unwrap();
    }
    c.execute(
        "INSERT INTO sessions (id, cwd, created, header, leaf_id, entry_count, message_count,
                               first_message)
         VALUES ('v1-session', '/old', '2026-01-01T00:00:00.000Z', $1, 'aaaa0002', 2, 2,
                 'hello from v1')",
        &[&HEADER],
    )
    .await
    .unwrap();
    for (seq, id, parent, line) in [
        (1i64, "aaaa0001", None, FIRST),
        (2, "aaaa0002", Some("aaaa0001"), SECOND),
    ] {
        c.execute(
            "INSERT INTO entries (sid, seq, id, parent_id, type, role, timestamp, payload)
             SELECT sid, $1, $2, $3, 'message', 'user', '2026-01-01T00:00:00.000Z',
                    CAST($4::text AS json)
             FROM sessions WHERE id = 'v1-session'",
            &[&seq, &id, &parent, &line],
        )
        .await
        .unwrap();
    }
}

#[tokio::test]
async fn a_version_1_store_is_migrated_and_keeps_its_sessions() {
    let url = crate::pg!();
    let schema = Schema::new(&url);
    version_1_store(&schema).await;

    let repo = PostgresRepository::connect_with(&url, schema.options())
        .await
        .expect("migrates");
    let c = raw(&schema).await;
    let version: i32 = c
        .query_one("SELECT MAX(version) FROM schema_version", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(version, CURRENT_VERSION);
    let indexes: Vec<String> = c
        .query(
            "SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'sessions'
             ORDER BY indexname",
            &[&schema.name],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        indexes,
        ["sessions_cwd", "sessions_id_key", "sessions_pkey"],
        "version 2 replaces the updated_at indexes"
    );
    assert_eq!(
        entry_indexes(&c, &schema).await,
        V3_ENTRY_INDEXES,
        "version 3 narrows the entry indexes"
    );

    // The old session reads as before, unknown fields included.
    let listed = repo.list().await.unwrap();
    assert_eq!(listed.sessions.len(), 1);
    assert_eq!(listed.sessions[0].entry_count, Some(2));
    assert_eq!(
        listed.sessions[0].first_message.as_deref(),
        Some("hello from v1")
    );
    let s = repo.open("v1-session").await.unwrap();
    let path = s.ancestry(None).await.unwrap();
    let ids: Vec<&str> = path.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["aaaa0001", "aaaa0002"]);
    assert!(
        path[0].to_json().contains(r#""futureField":{"kept":true}"#),
        "{}",
        path[0].to_json()
    );

    // And it takes appends and lists newest first like a new one.
    let other = repo
        .create(arbor_session::CreateOptions::new("/old"))
        .await
        .unwrap();
    other.append(user("newer")).await.unwrap();
    let third = s.append(user("after the migration")).await.unwrap();
    assert_eq!(third.parent_id.as_deref(), Some("aaaa0002"));
    assert_eq!(s.entry_count().await.unwrap(), 3);
    let order: Vec<String> = repo
        .list_cwd("/old")
        .await
        .unwrap()
        .sessions
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(order, ["v1-session".to_owned(), other.id().to_owned()]);
}

const V3_ENTRY_INDEXES: [&str; 5] = [
    "entries_parent",
    "entries_pkey",
    "entries_sid_id_key",
    "entries_target",
    "entries_type_not_message",
];

async fn entry_indexes(c: &tokio_postgres::Client, schema: &Schema) -> Vec<String> {
    c.query(
        "SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'entries'
         ORDER BY indexname",
        &[&schema.name],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

#[tokio::test]
async fn a_version_2_store_is_migrated_and_every_read_path_still_works() {
    let url = crate::pg!();
    let schema = Schema::new(&url);
    old_store(&schema, 2).await;
    let c = raw(&schema).await;
    assert_eq!(
        entry_indexes(&c, &schema).await,
        [
            "entries_parent",
            "entries_pkey",
            "entries_sid_id_key",
            "entries_target",
            "entries_type"
        ]
    );

    let repo = PostgresRepository::connect_with(&url, schema.options())
        .await
        .expect("migrates");
    let version: i32 = c
        .query_one("SELECT MAX(version) FROM schema_version", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(version, CURRENT_VERSION);
    assert_eq!(entry_indexes(&c, &schema).await, V3_ENTRY_INDEXES);
    let foreign_keys: i64 = c
        .query_one(
            "SELECT COUNT(*) FROM pg_constraint
             WHERE contype = 'f' AND conrelid = 'entries'::regclass",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        foreign_keys, 0,
        "version 3 drops the entries -> sessions key"
    );

    // The old rows answer every query the dropped indexes served, next to new appends.
    let s = repo.open("v1-session").await.unwrap();
    let branch = s
        .append_entry(
            arbor_session::SessionEntry::from_json(
                r#"{"type":"message","id":"aaaa0003","parentId":"aaaa0001","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"user","content":"a sibling","timestamp":3}}"#,
            )
            .unwrap(),
        )
        .await;
    branch.unwrap();
    let marker = s
        .append(super::custom("marker", serde_json::json!({"n": 1})))
        .await
        .unwrap();
    let ids = |v: Vec<arbor_session::SessionEntry>| -> Vec<String> {
        v.into_iter().map(|e| e.id).collect()
    };
    assert_eq!(
        ids(s.children(Some("aaaa0001")).await.unwrap()),
        ["aaaa0002", "aaaa0003"]
    );
    assert_eq!(ids(s.children(None).await.unwrap()), ["aaaa0001"]);
    assert_eq!(ids(s.find_entries("custom").await.unwrap()), [marker.id]);
    assert_eq!(
        ids(s.find_entries("message").await.unwrap()),
        ["aaaa0001", "aaaa0002", "aaaa0003"]
    );
    s.append(super::label_draft("aaaa0002", "kept"))
        .await
        .unwrap();
    assert_eq!(
        s.get_label("aaaa0002").await.unwrap().as_deref(),
        Some("kept")
    );

    // Without the cascade, deleting still removes the entries.
    drop(s);
    repo.delete("v1-session").await.unwrap();
    let left: i64 = c
        .query_one("SELECT COUNT(*) FROM entries", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 0);
}

/// The type lookup repeats the partial index's predicate, so the prepared statement's generic
/// plan (what a long-lived connection ends up using) can still use the index (fails if the
/// predicate is dropped from `FIND_BY_TYPE_SQL`).
#[tokio::test]
async fn a_generic_plan_of_the_type_lookup_uses_the_partial_index() {
    let url = crate::pg!();
    let (schema, repo) = super::repo(&url).await;
    let s = super::session(&repo).await;
    for i in 0..50 {
        s.append(user(&format!("m{i}"))).await.unwrap();
    }
    s.append(super::custom("marker", serde_json::json!({})))
        .await
        .unwrap();
    let c = raw(&schema).await;
    c.batch_execute(
        "ANALYZE entries;
         SET plan_cache_mode = force_generic_plan;
         SET enable_seqscan = off;",
    )
    .await
    .unwrap();
    c.batch_execute(&format!(
        "PREPARE find(integer, text) AS {}",
        arbor_session_postgres::schema::FIND_BY_TYPE_SQL
    ))
    .await
    .unwrap();
    let plan: Vec<String> = c
        .query("EXPLAIN EXECUTE find(1, 'custom')", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let plan = plan.join("\n");
    assert!(plan.contains("entries_type_not_message"), "{plan}");
}
