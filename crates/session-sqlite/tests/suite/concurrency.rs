//! Appends from many tasks (and from two connections) serialize: never an accidental sibling.

use std::collections::HashSet;
use std::sync::Arc;

use arbor_session::{SessionRepository, SessionStorage};
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
    // A second repository is a second connection, like another process: it may not write the
    // session the first one holds (DECISIONS §25.8), but its own sessions share the file.
    let repo2 = SqliteRepository::open(dir.path().join("sessions.db"))
        .await
        .unwrap();
    let refused = repo2
        .open(first.id())
        .await
        .expect_err("second writer refused");
    assert!(
        refused
            .to_string()
            .contains("session is open for writing by another process"),
        "{refused}"
    );
    let second = session(&repo2).await;
    let (a, b) = (Arc::new(first), Arc::new(second));
    tokio::join!(hammer(Arc::clone(&a), 4, 25), hammer(Arc::clone(&b), 4, 25));
    assert_single_chain(&a, 100).await;
    assert_single_chain(&b, 100).await;
    // The same repository shares its writer lock among handles.
    let again = repo.open(a.id()).await.unwrap();
    assert_eq!(again.leaf_id().await.unwrap(), a.leaf_id().await.unwrap());
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

/// An append waiting ~300 ms for another connection's write lock must leave the runtime free:
/// a ticker task on the same runtime keeps running meanwhile.
async fn waiting_append_does_not_stall_the_runtime() {
    let (dir, repo) = repo().await;
    let s = session(&repo).await;
    s.append(user("a")).await.unwrap();
    let path = dir.path().join("sessions.db");
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let holder = std::thread::spawn(move || {
        let c = raw(&path);
        c.execute_batch("BEGIN IMMEDIATE").unwrap();
        locked_tx.send(()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        c.execute_batch("ROLLBACK").unwrap();
    });
    locked_rx.recv().unwrap();
    let ticks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let ticker = {
        let ticks = Arc::clone(&ticks);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        })
    };
    let started = std::time::Instant::now();
    s.append(user("b")).await.unwrap();
    let waited = started.elapsed();
    let n = ticks.load(std::sync::atomic::Ordering::Relaxed);
    ticker.abort();
    holder.join().unwrap();
    assert!(
        waited >= std::time::Duration::from_millis(200),
        "the append did wait: {waited:?}"
    );
    assert!(
        n >= 5,
        "only {n} ticks during a {waited:?} wait: the runtime was stalled"
    );
}

#[tokio::test]
async fn a_waiting_append_leaves_a_current_thread_runtime_free() {
    waiting_append_does_not_stall_the_runtime().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_waiting_append_leaves_a_multi_thread_runtime_free() {
    // Spawned, so the append runs on the runtime's only worker (the test body itself runs on
    // the main thread): the ticker can only run if the blocking call hands the worker off.
    tokio::spawn(waiting_append_does_not_stall_the_runtime())
        .await
        .unwrap();
}
