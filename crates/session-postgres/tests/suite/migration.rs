//! Forward migration from a store written by an older build: the data stays, the new schema is
//! in place and the store works as a fresh one does.

use arbor_agent::session::{SessionRepository, SessionStorage};
use arbor_session_postgres::schema::{migration_sql, CURRENT_VERSION};
use arbor_session_postgres::PostgresRepository;

use super::{admin, raw, user, Schema};

const HEADER: &str = r#"{"type":"session","version":3,"id":"v1-session","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/old"}"#;
const FIRST: &str = r#"{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hello from v1","timestamp":1},"futureField":{"kept":true}}"#;
const SECOND: &str = r#"{"type":"message","id":"aaaa0002","parentId":"aaaa0001","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"still here","timestamp":2}}"#;

/// A schema at version 1 holding one two-entry session, as the version-1 build wrote it.
async fn version_1_store(schema: &Schema) {
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
    c.batch_execute(migration_sql(1).unwrap()).await.unwrap();
    c.batch_execute("INSERT INTO schema_version (version) VALUES (1)")
        .await
        .unwrap();
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
        .create(arbor_agent::session::CreateOptions {
            cwd: "/old".into(),
            ..Default::default()
        })
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
