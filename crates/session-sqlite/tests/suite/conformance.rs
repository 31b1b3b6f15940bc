//! The shared storage conformance suite (`arbor_session::conformance`) against SQLite:
//! one named test per case (current-thread runtime, so calls go through `spawn_blocking`), plus
//! the whole suite once on a multi-thread runtime (calls run in place under `block_in_place`).

use arbor_session::conformance::{run_all, Fixture};
use arbor_session_sqlite::SqliteRepository;

async fn fixture() -> Fixture<SqliteRepository> {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = SqliteRepository::open(dir.path().join("sessions.db"))
        .await
        .expect("open sqlite repository");
    Fixture::new(repo, dir)
}

/// The same database file, opened by another process.
async fn reopen(location: String) -> arbor_session::Result<SqliteRepository> {
    let db = location
        .rsplit_once('#')
        .map_or(location.as_str(), |(db, _)| db);
    SqliteRepository::open(db).await
}

mod cases {
    arbor_session::session_conformance_tests!(super::fixture, second_process: super::reopen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_case_passes_on_a_multi_thread_runtime() {
    let failed: Vec<String> = run_all(fixture)
        .await
        .into_iter()
        .filter_map(|o| {
            o.result
                .err()
                .map(|e| format!("{}::{}: {e}", o.group, o.name))
        })
        .collect();
    assert!(failed.is_empty(), "failed cases:\n{}", failed.join("\n"));
}
