//! The shared storage conformance suite (`arbor_session::conformance`) against
//! PostgreSQL, each case in a fresh schema, on a multi-thread and a current-thread runtime.

use arbor_session::conformance::{run_all, Fixture};
use arbor_session_postgres::PostgresRepository;

use super::Schema;

fn factory(
    url: String,
) -> impl Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Fixture<PostgresRepository>>>>
{
    move || {
        let url = url.clone();
        Box::pin(async move {
            let schema = Schema::new(&url);
            let repo = PostgresRepository::connect_with(&url, schema.options())
                .await
                .expect("connect");
            Fixture::new(repo, schema)
        })
    }
}

async fn run(url: String) {
    let outcomes = run_all(factory(url)).await;
    let failed: Vec<String> = outcomes
        .iter()
        .filter_map(|o| {
            o.result
                .as_ref()
                .err()
                .map(|e| format!("{}::{}: {e}", o.group, o.name))
        })
        .collect();
    assert!(!outcomes.is_empty());
    assert!(failed.is_empty(), "failed cases:\n{}", failed.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_case_passes_on_a_multi_thread_runtime() {
    let url = crate::pg!();
    run(url).await;
}

#[tokio::test]
async fn every_case_passes_on_a_current_thread_runtime() {
    let url = crate::pg!();
    run(url).await;
}
