//! Faults: connections dropped mid-session (what a server restart does to every client), a
//! statement timeout, a refused write, and stores this build must not touch.

use std::sync::Arc;
use std::time::Duration;

use arbor_session::{SessionRepository, SessionStorage};
use arbor_session_postgres::PostgresRepository;

use super::{admin, custom, raw, repo, repo_with, session, user, Schema};

/// Terminates every server connection of this test's repository (they carry the schema name as
/// `application_name`), as a server restart would.
async fn drop_connections(schema: &Schema) -> u64 {
    let c = admin(&schema.url).await.unwrap();
    let rows = c
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE application_name = $1 AND pid <> pg_backend_pid()",
            &[&schema.name],
        )
        .await
        .unwrap();
    rows.len() as u64
}

#[tokio::test]
async fn the_next_append_after_lost_connections_reconnects_and_succeeds() {
    let url = crate::pg!();
    let (schema, repo) = repo(&url).await;
    let s = session(&repo).await;
    let a = s.append(user("before")).await.unwrap();
    assert!(drop_connections(&schema).await >= 1);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let b = s.append(user("after")).await.unwrap();
    assert_eq!(b.parent_id.as_deref(), Some(a.id.as_str()));
    assert_eq!(s.entry_count().await.unwrap(), 2);
    assert_eq!(s.leaf_id().await.unwrap(), Some(b.id));
    // Still the writer: nobody else can open it.
    assert!(repo.open(s.id()).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_in_flight_when_connections_drop_are_stored_or_reported_never_half() {
    let url = crate::pg!();
    let (schema, repo) = repo(&url).await;
    let s = session(&repo).await;
    let writer = {
        let s = s.clone();
        tokio::spawn(async move {
            let mut results = Vec::new();
            for i in 0..300 {
                let r = s.append(custom("k", serde_json::json!({ "i": i }))).await;
                results.push(r.map(|e| e.id).map_err(|e| e.to_string()));
            }
            results
        })
    };
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(40)).await;
        drop_connections(&schema).await;
    }
    let results = writer.await.unwrap();
    let stored: Vec<String> = {
        let c = raw(&schema).await;
        c.query("SELECT id FROM entries ORDER BY seq", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    for id in results.iter().flatten() {
        assert!(stored.contains(id), "reported stored but missing: {id}");
    }
    let oks = results.iter().filter(|r| r.is_ok()).count();
    // An append reported failed is not stored, unless its error said the outcome is unknown.
    let unknown = results
        .iter()
        .filter(|r| matches!(r, Err(e) if e.contains("unknown")))
        .count();
    assert!(
        stored.len() >= oks && stored.len() - oks <= unknown,
        "{} stored, {oks} reported stored, {unknown} unknown: {:?}",
        stored.len(),
        results.iter().filter(|r| r.is_err()).collect::<Vec<_>>()
    );
    assert!(
        oks >= 250,
        "most appends should survive reconnects: {oks}/300"
    );
    // Never half-applied: the state row matches the rows, the log is one chain.
    let page = s.entries(None, None).await.unwrap();
    assert_eq!(page.entries.len(), stored.len());
    assert_eq!(s.entry_count().await.unwrap(), stored.len() as u64);
    for w in page.entries.windows(2) {
        assert_eq!(w[1].1.parent_id.as_deref(), Some(w[0].1.id.as_str()));
    }
    assert_eq!(s.leaf_id().await.unwrap(), stored.last().cloned());
}

#[tokio::test]
async fn a_statement_timeout_refuses_the_append_and_changes_nothing() {
    let url = crate::pg!();
    let (schema, repo) = repo_with(&url, |o| {
        o.statement_timeout = Some(Duration::from_millis(300));
    })
    .await;
    let s = session(&repo).await;
    let a = s.append(user("fast")).await.unwrap();
    raw(&schema)
        .await
        .batch_execute(
            "CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.type = 'custom' THEN PERFORM pg_sleep(2); END IF;
                 RETURN NEW;
             END $$;
             CREATE TRIGGER slow BEFORE INSERT ON entries FOR EACH ROW EXECUTE FUNCTION slow();",
        )
        .await
        .unwrap();
    let err = s
        .append(custom("k", serde_json::json!({})))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("statement timeout"), "{err}");
    assert_eq!(s.entry_count().await.unwrap(), 1);
    assert_eq!(s.leaf_id().await.unwrap(), Some(a.id.clone()));
    let b = s.append(user("still works")).await.unwrap();
    assert_eq!(b.parent_id, Some(a.id));
}

#[tokio::test]
async fn a_refused_write_changes_nothing_and_later_appends_work() {
    let url = crate::pg!();
    let (schema, repo) = repo(&url).await;
    let s = session(&repo).await;
    let a = s.append(user("one")).await.unwrap();
    let c = raw(&schema).await;
    c.batch_execute(
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION 'could not extend file: No space left on device (simulated)'; END $$;
         CREATE TRIGGER refuse BEFORE INSERT ON entries FOR EACH ROW EXECUTE FUNCTION refuse();",
    )
    .await
    .unwrap();
    let err = s.append(user("two")).await.unwrap_err();
    assert_eq!(err.code(), "storage");
    assert!(err.to_string().contains("No space left"), "{err}");
    assert_eq!(s.entry_count().await.unwrap(), 1);
    assert_eq!(s.leaf_id().await.unwrap(), Some(a.id.clone()));
    let stats_rows: i64 = c
        .query_one("SELECT COUNT(*) FROM entries", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(stats_rows, 1);
    c.batch_execute("DROP TRIGGER refuse ON entries")
        .await
        .unwrap();
    let b = s.append(user("two")).await.unwrap();
    assert_eq!(b.parent_id, Some(a.id));
}

#[tokio::test]
async fn a_schema_newer_than_this_build_is_refused() {
    let url = crate::pg!();
    let (schema, repo) = repo(&url).await;
    drop(repo);
    raw(&schema)
        .await
        .batch_execute("INSERT INTO schema_version (version) VALUES (99)")
        .await
        .unwrap();
    let err = PostgresRepository::connect_with(&url, schema.options())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("schema version 99"), "{text}");
    assert!(text.contains("newer than this build supports"), "{text}");
}

#[tokio::test]
async fn a_schema_of_other_tables_is_refused() {
    let url = crate::pg!();
    let schema = Schema::new(&url);
    admin(&url)
        .await
        .unwrap()
        .batch_execute(&format!(
            "CREATE SCHEMA {0}; CREATE TABLE {0}.invoices (id int)",
            schema.name
        ))
        .await
        .unwrap();
    let err = PostgresRepository::connect_with(&url, schema.options())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("not an Arbor session store"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_migrating_at_once_migrate_once() {
    let url = crate::pg!();
    let schema = Arc::new(Schema::new(&url));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (url, o) = (url.clone(), schema.options());
        tasks.push(tokio::spawn(async move {
            PostgresRepository::connect_with(&url, o).await.map(|_| ())
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let versions: i64 = raw(&schema)
        .await
        .query_one("SELECT COUNT(*) FROM schema_version", &[])
        .await
        .unwrap()
        .get(0);
    // One row per migration, each applied once.
    assert_eq!(
        versions,
        i64::from(arbor_session_postgres::schema::CURRENT_VERSION)
    );
}
