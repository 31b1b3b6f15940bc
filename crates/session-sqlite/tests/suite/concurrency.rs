//! Appends from many tasks (and from two connections) serialize: never an accidental sibling.

use std::collections::HashSet;
use std::sync::Arc;

use arbor_agent::session::{SessionRepository, SessionStorage};
use arbor_session_sqlite::{SqliteRepository, SqliteStorage};

use super::*;

/// Every entry has a distinct parent and the chain from the leaf covers all of them.
async fn assert_single_chain(s: &SqliteStorage, expected: usize) {
    let all = s.entries(None, None).await.unwrap().entries;
    assert_eq!(all.len(), expected);
    let parents: HashSet<Option<String>> = all.iter().map(|(_, e)| e.parent_id.clone()).collect();
    assert_eq!(
        parents.len(),
        expected,
        "two entries share a parent: accidental siblings"
    );
    assert_eq!(s.ancestry(None).await.unwrap().len(), expected);
}

async fn hammer(s: Arc<SqliteStorage>, tasks: usize, per_task: usize) {
    let mut handles = Vec::new();
    for t in 0..tasks {
        let s = Arc::clone(&s);
        handles.push(tokio::spawn(async move {
            for i in 0..per_task {
                s.append(custom("c", serde_json::json!([t, i])))
                    .await
                    .unwrap();
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_tasks_on_a_multi_thread_runtime() {
    let (_dir, repo) = repo().await;
    let s = Arc::new(session(&repo).await);
    hammer(Arc::clone(&s), 16, 25).await;
    assert_single_chain(&s, 400).await;
}

#[tokio::test]
async fn concurrent_tasks_on_a_current_thread_runtime() {
    let (_dir, repo) = repo().await;
    let s = Arc::new(session(&repo).await);
    hammer(Arc::clone(&s), 8, 25).await;
    assert_single_chain(&s, 200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_connections_to_one_file_serialize_through_sqlite() {
    let (dir, repo) = repo().await;
    let first = session(&repo).await;
    // A second repository is a second connection, like another process.
    let repo2 = SqliteRepository::open(dir.path().join("sessions.db"))
        .await
        .unwrap();
    let second = repo2.open(first.id()).await.unwrap();
    let (a, b) = (Arc::new(first), Arc::new(second));
    tokio::join!(hammer(Arc::clone(&a), 4, 25), hammer(Arc::clone(&b), 4, 25));
    assert_single_chain(&a, 200).await;
    assert_eq!(b.leaf_id().await.unwrap(), a.leaf_id().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_in_one_file_do_not_interfere() {
    let (_dir, repo) = repo().await;
    let a = Arc::new(session(&repo).await);
    let b = Arc::new(session(&repo).await);
    tokio::join!(hammer(Arc::clone(&a), 4, 20), hammer(Arc::clone(&b), 4, 30));
    assert_single_chain(&a, 80).await;
    assert_single_chain(&b, 120).await;
    assert_eq!(a.find_entries("custom").await.unwrap().len(), 80);
    assert_eq!(b.children(None).await.unwrap().len(), 1);
}
