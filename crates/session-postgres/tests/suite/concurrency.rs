//! One writer per session, enforced by the server: a second writer (same process, another
//! repository, another process) is refused with the JSONL store's wording; readers never block;
//! a dropped or killed writer's lock is free again without manual SQL.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use arbor_session::{SessionRepository, SessionStorage};
use arbor_session_postgres::PostgresRepository;

use super::{custom, repo, session, user};

const LOCKED: &str = "session is open for writing by another process";

#[tokio::test]
async fn a_second_writer_is_refused_and_readers_are_not() {
    let url = crate::pg!();
    let (schema, repo) = repo(&url).await;
    let s = session(&repo).await;
    let a = s.append(user("hello")).await.unwrap();

    let err = repo.open(s.id()).await.unwrap_err();
    assert!(err.to_string().contains(LOCKED), "{err}");
    assert!(err.to_string().contains(s.id()), "names the session: {err}");

    // Another repository (its own pool): what a second machine sees.
    let other = PostgresRepository::connect_with(&url, schema.options())
        .await
        .unwrap();
    let err = other.open(&s.location()).await.unwrap_err();
    assert!(err.to_string().contains(LOCKED), "{err}");

    // Readers need no lock and see the writer's appends as they commit.
    let reader = other.open_read_only(s.id()).await.unwrap();
    assert_eq!(reader.leaf_id().await.unwrap(), Some(a.id.clone()));
    let b = s.append(user("again")).await.unwrap();
    assert_eq!(reader.leaf_id().await.unwrap(), Some(b.id.clone()));
    let refused = reader.append(user("nope")).await.unwrap_err();
    assert!(refused.to_string().contains("read-only"), "{refused}");

    // Dropping the writer frees the lock.
    drop(s);
    let again = other.open(reader.id()).await.unwrap();
    assert_eq!(again.entry_count().await.unwrap(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_from_many_tasks_serialize_into_one_chain() {
    let url = crate::pg!();
    let (_schema, repo) = repo(&url).await;
    let s = session(&repo).await;
    let mut tasks = Vec::new();
    for t in 0..8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..25 {
                s.append(custom("k", serde_json::json!({"t": t, "i": i})))
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let page = s.entries(None, None).await.unwrap();
    assert_eq!(page.entries.len(), 200);
    for w in page.entries.windows(2) {
        assert_eq!(w[1].1.parent_id.as_deref(), Some(w[0].1.id.as_str()));
    }
    assert_eq!(
        s.children(None).await.unwrap().len(),
        1,
        "one root, no siblings"
    );
}

/// Child half of `a_killed_writer_process_releases_its_lock` (run only by it, `--ignored`):
/// holds a writer until killed.
#[tokio::test]
#[ignore = "the child process of a_killed_writer_process_releases_its_lock"]
async fn child_writer() {
    let spec = std::env::var("ARBOR_PG_CHILD_WRITER").expect("started by the parent test");
    let (url, schema, id) = {
        let mut it = spec.splitn(3, '\n');
        (
            it.next().unwrap().to_owned(),
            it.next().unwrap().to_owned(),
            it.next().unwrap().to_owned(),
        )
    };
    let repo = PostgresRepository::connect_with(
        &url,
        arbor_session_postgres::PostgresOptions {
            schema,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let s = repo.open(&id).await.unwrap();
    s.append(user("from the child")).await.unwrap();
    println!("CHILD-READY");
    tokio::time::sleep(std::time::Duration::from_secs(120)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_writer_process_releases_its_lock() {
    let url = crate::pg!();
    let (schema, repo) = repo(&url).await;
    let id = session(&repo).await.id().to_owned();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "suite::concurrency::child_writer",
            "--ignored",
            "--nocapture",
        ])
        .env(
            "ARBOR_PG_CHILD_WRITER",
            format!("{url}\n{}\n{id}", schema.name),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    // Read off the runtime: its workers must stay free to close the dropped handle's connection.
    let ready = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .any(|l| l.map(|l| l.contains("CHILD-READY")).unwrap_or(false))
    })
    .await
    .unwrap();
    assert!(ready, "the child writer never got ready");

    let err = repo.open(&id).await.unwrap_err();
    assert!(err.to_string().contains(LOCKED), "{err}");

    child.kill().unwrap();
    child.wait().unwrap();
    // The server frees the lock as the dead process's connection closes.
    let s = repo.open(&id).await.unwrap();
    assert_eq!(s.entry_count().await.unwrap(), 1);
    s.append(user("after the crash")).await.unwrap();
    assert_eq!(s.entry_count().await.unwrap(), 2);
}
