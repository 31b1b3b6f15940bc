//! A real server restart (`pg_ctl restart -m fast`) while a writer is open and appending. The
//! test starts a cluster of its own with `.ci/postgres.sh` (the shared test server keeps
//! serving the other tests) and checks DECISIONS §24.6: no acknowledged entry is lost, nothing
//! is half-applied, appends fail with a clear error while the server is down, and the same
//! writer carries on (still holding the session) once it is back.

use std::time::Duration;

use arbor_session::{SessionRepository, SessionStorage};
use arbor_session_postgres::PostgresRepository;

use super::cluster::Cluster;
use super::{admin, custom, session, user, Schema};

async fn postmaster_start(url: &str) -> String {
    let c = admin(url).await.expect("admin connection");
    c.query_one("SELECT pg_postmaster_start_time()::text", &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_loses_no_acknowledged_entry_and_the_writer_carries_on() {
    // Needs PostgreSQL installed, which a set test URL vouches for.
    let _shared = crate::pg!();
    let cluster = Cluster::start();
    let schema = Schema::new(&cluster.url);
    let repo = PostgresRepository::connect_with(&cluster.url, schema.options())
        .await
        .expect("connect to the private cluster");
    let started = postmaster_start(&cluster.url).await;
    let s = session(&repo).await;
    let first = s.append(user("before the restart")).await.unwrap();
    s.save_point().await.unwrap();

    let writer = {
        let s = s.clone();
        tokio::spawn(async move {
            let mut results = Vec::new();
            for i in 0..400 {
                let r = s.append(custom("k", serde_json::json!({ "i": i }))).await;
                results.push(r.map(|e| e.id).map_err(|e| e.to_string()));
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            results
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let restarter = {
        let c = std::sync::Arc::new(cluster);
        let c2 = std::sync::Arc::clone(&c);
        tokio::task::spawn_blocking(move || c2.restart())
            .await
            .unwrap();
        c
    };
    let results = writer.await.unwrap();
    assert_ne!(
        postmaster_start(&restarter.url).await,
        started,
        "the server really restarted"
    );

    let errors: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    eprintln!(
        "restart: {} appends acknowledged, {} failed while the server was down; first error: {:?}",
        results.len() - errors.len(),
        errors.len(),
        errors.first()
    );
    for e in &errors {
        // A clear refusal naming the store (no password in this URL to hide), never a panic.
        assert!(
            e.contains("postgres://") || e.contains("PostgreSQL") || e.contains("connection"),
            "unclear error: {e}"
        );
    }
    // After the restart the same handle appends again and is still the only writer.
    let after = s.append(user("after the restart")).await.unwrap();
    assert!(repo.open(s.id()).await.is_err(), "the writer kept its lock");

    // Every acknowledged entry is stored; the log is one chain; the state row matches.
    let page = s.entries(None, None).await.unwrap();
    let stored: Vec<String> = page.entries.iter().map(|(_, e)| e.id.clone()).collect();
    for id in results.iter().flatten() {
        assert!(stored.contains(id), "acknowledged but lost: {id}");
    }
    let oks = results.iter().filter(|r| r.is_ok()).count();
    let unknown = errors.iter().filter(|e| e.contains("unknown")).count();
    // stored = first + acknowledged + after, plus at most the appends whose outcome was unknown.
    assert!(
        stored.len() >= oks + 2 && stored.len() - oks - 2 <= unknown,
        "{} stored, {oks} acknowledged, {unknown} unknown; errors: {errors:?}",
        stored.len()
    );
    assert_eq!(stored.first(), Some(&first.id));
    assert_eq!(stored.last(), Some(&after.id));
    for w in page.entries.windows(2) {
        assert_eq!(w[1].1.parent_id.as_deref(), Some(w[0].1.id.as_str()));
    }
    assert_eq!(s.entry_count().await.unwrap(), stored.len() as u64);
    assert_eq!(s.leaf_id().await.unwrap(), Some(after.id));
    assert!(oks > 0, "appends before and after the restart succeed");
    drop(s);
    drop(repo);
    drop(schema);
    drop(restarter);
}
