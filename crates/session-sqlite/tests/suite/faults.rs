//! Bad input and injected failures: each gets a precise error and loses nothing that was
//! appended before it.

use std::time::{Duration, Instant};

use arbor_session::{SessionRepository, SessionStorage};
use arbor_session_sqlite::{SqliteOptions, SqliteRepository};

use super::*;

fn db_path(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("sessions.db")
}

#[tokio::test]
async fn a_failed_insert_changes_nothing_and_later_appends_work() {
    let (dir, repo) = repo().await;
    let s = session(&repo).await;
    let a = s.append(user("a")).await.unwrap();
    let before = (
        s.leaf_id().await.unwrap(),
        s.entry_count().await.unwrap(),
        s.stats().await.unwrap(),
    );
    raw(&db_path(&dir))
        .execute_batch(
            "CREATE TRIGGER fail_custom BEFORE INSERT ON entries WHEN NEW.type = 'custom'
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
        )
        .unwrap();
    let err = s
        .append(custom("x", serde_json::json!(1)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "storage");
    assert!(err.to_string().contains("injected failure"), "{err}");
    let after = (
        s.leaf_id().await.unwrap(),
        s.entry_count().await.unwrap(),
        s.stats().await.unwrap(),
    );
    assert_eq!(before, after);
    // Not blocked: other appends go on, chained on the unchanged leaf.
    let b = s.append(user("b")).await.unwrap();
    assert_eq!(b.parent_id.as_deref(), Some(a.id.as_str()));
    raw(&db_path(&dir))
        .execute_batch("DROP TRIGGER fail_custom")
        .unwrap();
    s.append(custom("x", serde_json::json!(2))).await.unwrap();
    assert_eq!(s.entry_count().await.unwrap(), 3);
}

#[tokio::test]
async fn a_failed_state_update_rolls_back_the_entry_row() {
    let (dir, repo) = repo().await;
    let s = session(&repo).await;
    s.append(user("a")).await.unwrap();
    raw(&db_path(&dir))
        .execute_batch(
            "CREATE TRIGGER fail_state BEFORE UPDATE ON session_state
             BEGIN SELECT RAISE(ABORT, 'state write failed'); END;",
        )
        .unwrap();
    let err = s.append(user("b")).await.unwrap_err();
    assert!(err.to_string().contains("state write failed"), "{err}");
    raw(&db_path(&dir))
        .execute_batch("DROP TRIGGER fail_state")
        .unwrap();
    let rows: i64 = raw(&db_path(&dir))
        .query_row("SELECT COUNT(*) FROM entries", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        rows, 1,
        "the entry row of the failed append was rolled back"
    );
    assert_eq!(s.entry_count().await.unwrap(), 1);
    assert_eq!(s.entries(None, None).await.unwrap().entries.len(), 1);
}

#[tokio::test]
async fn duplicate_ids_are_rejected_without_state_change() {
    let (_dir, repo) = repo().await;
    let s = session(&repo).await;
    let a = s.append(user("a")).await.unwrap();
    let b = s.append(user("b")).await.unwrap();
    let mut dup = user("again");
    dup.id = Some(a.id.clone());
    let err = s.append(dup).await.unwrap_err();
    assert_eq!(err.code(), "invalid_entry");
    assert!(err.to_string().contains(&a.id), "{err}");
    let err = s.append_entry(a.clone()).await.unwrap_err();
    assert_eq!(err.code(), "invalid_entry");
    assert_eq!(s.entry_count().await.unwrap(), 2);
    assert_eq!(s.leaf_id().await.unwrap().as_deref(), Some(b.id.as_str()));
}

#[tokio::test]
async fn append_entry_requires_an_existing_parent() {
    let (_dir, repo) = repo().await;
    let s = session(&repo).await;
    let a = s.append(user("a")).await.unwrap();
    let mut orphan = a.clone();
    orphan.id = "orphan01".into();
    orphan.parent_id = Some("nowhere".into());
    let err = s.append_entry(orphan).await.unwrap_err();
    assert_eq!(err.code(), "invalid_entry");
    assert!(err.to_string().contains("nowhere"), "{err}");
    assert_eq!(s.entry_count().await.unwrap(), 1);
}

#[tokio::test]
async fn a_corrupt_payload_row_is_named_when_read() {
    let (dir, repo) = repo().await;
    let s = session(&repo).await;
    let a = s.append(user("a")).await.unwrap();
    let b = s.append(user("b")).await.unwrap();
    raw(&db_path(&dir))
        .execute(
            "UPDATE entries SET payload = '{\"type\":\"message\",' WHERE id = ?1",
            [&b.id],
        )
        .unwrap();
    let err = s.get_entry(&b.id).await.unwrap_err();
    assert_eq!(err.code(), "invalid_session");
    let msg = err.to_string();
    assert!(
        msg.contains(&b.id) && msg.contains("seq 2") && msg.contains(s.id()),
        "{msg}"
    );
    assert_eq!(
        s.ancestry(None).await.unwrap_err().code(),
        "invalid_session"
    );
    // Entries before the corrupt one still read; nothing else was lost.
    assert_eq!(s.get_entry(&a.id).await.unwrap().unwrap(), a);
    let page = s.entries(None, Some(1)).await.unwrap();
    assert_eq!(page.entries[0].1, a);

    // A payload that parses but belongs to another id is just as corrupt.
    raw(&db_path(&dir))
        .execute(
            "UPDATE entries SET payload = ?1 WHERE id = ?2",
            [&a.to_json(), &b.id],
        )
        .unwrap();
    let err = s.get_entry(&b.id).await.unwrap_err();
    assert!(err.to_string().contains("holds a payload for id"), "{err}");
}

#[tokio::test]
async fn a_dangling_parent_is_reported_by_path_walks() {
    let (dir, repo) = repo().await;
    let s = session(&repo).await;
    s.append(user("a")).await.unwrap();
    let b = s.append(user("b")).await.unwrap();
    let c = s.append(user("c")).await.unwrap();
    // Delete b behind the storage's back: c's parent now names nothing.
    raw(&db_path(&dir))
        .execute("DELETE FROM entries WHERE id = ?1", [&b.id])
        .unwrap();
    let err = s.ancestry(None).await.unwrap_err();
    assert_eq!(err.code(), "invalid_session");
    assert!(
        err.to_string().contains(&c.id) && err.to_string().contains(&b.id),
        "{err}"
    );
    assert_eq!(
        s.path_to_root_or_compaction(None).await.unwrap_err().code(),
        "invalid_session"
    );
}

#[tokio::test]
async fn a_parent_cycle_is_an_error_not_a_hang() {
    let (dir, repo) = repo().await;
    let s = session(&repo).await;
    let a = s.append(user("a")).await.unwrap();
    s.append(user("b")).await.unwrap();
    let c = s.append(user("c")).await.unwrap();
    // a -> c -> b -> a
    raw(&db_path(&dir))
        .execute(
            "UPDATE entries SET parent_id = ?1 WHERE id = ?2",
            [&c.id, &a.id],
        )
        .unwrap();
    let t = Instant::now();
    let err = s.ancestry(None).await.unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(err.code(), "invalid_session");
    assert!(err.to_string().contains("cycle"), "{err}");
    let err = s.path_to_root_or_compaction(None).await.unwrap_err();
    assert!(err.to_string().contains("cycle"), "{err}");
}

#[tokio::test]
async fn a_leaf_pointing_nowhere_is_reported() {
    let (dir, repo) = repo().await;
    let s = session(&repo).await;
    s.append(user("a")).await.unwrap();
    raw(&db_path(&dir))
        .execute("UPDATE session_state SET leaf_id = 'ghost'", [])
        .unwrap();
    let err = s.leaf_id().await.unwrap_err();
    assert_eq!(err.code(), "invalid_session");
    assert!(err.to_string().contains("ghost"), "{err}");
    assert!(s
        .ancestry(None)
        .await
        .unwrap_err()
        .to_string()
        .contains("ghost"));
}

#[tokio::test]
async fn a_database_locked_by_another_writer_fails_clearly_then_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let repo = SqliteRepository::open_with(
        &path,
        SqliteOptions {
            busy_timeout: Duration::from_millis(100),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let s = session(&repo).await;
    let a = s.append(user("a")).await.unwrap();

    let other = raw(&path);
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let err = s.append(user("b")).await.unwrap_err();
    assert_eq!(err.code(), "storage");
    let msg = err.to_string();
    assert!(
        msg.contains("locked by another writer") && msg.contains("sessions.db"),
        "{msg}"
    );
    // Readers are not blocked by the other writer.
    assert_eq!(s.leaf_id().await.unwrap().as_deref(), Some(a.id.as_str()));
    other.execute_batch("ROLLBACK").unwrap();

    let b = s.append(user("b")).await.unwrap();
    assert_eq!(b.parent_id.as_deref(), Some(a.id.as_str()));
    assert_eq!(s.entry_count().await.unwrap(), 2);
}

#[tokio::test]
async fn files_that_are_not_session_databases_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, vec![b'x'; 8192]).unwrap();
    let err = SqliteRepository::open(&garbage).await.err().unwrap();
    assert_eq!(err.code(), "storage");
    assert!(
        err.to_string().contains("not a SQLite database")
            || err.to_string().contains("not a database"),
        "{err}"
    );

    let foreign = dir.path().join("foreign.db");
    raw(&foreign)
        .execute_batch("CREATE TABLE sessions (id TEXT)")
        .unwrap();
    let err = SqliteRepository::open(&foreign).await.err().unwrap();
    assert!(
        err.to_string().contains("not an Arbor session database"),
        "{err}"
    );

    let newer = dir.path().join("newer.db");
    drop(SqliteRepository::open(&newer).await.unwrap());
    raw(&newer)
        .execute("INSERT INTO schema_version VALUES (99, 'future')", [])
        .unwrap();
    let err = SqliteRepository::open(&newer).await.err().unwrap();
    assert!(err.to_string().contains("schema version 99"), "{err}");

    let missing_dir = dir.path().join("no/such/dir/s.db");
    let err = SqliteRepository::open(&missing_dir).await.err().unwrap();
    assert!(
        err.to_string().contains("cannot open session database"),
        "{err}"
    );
}

#[tokio::test]
async fn a_session_with_an_unusable_header_is_skipped_by_list_and_refused_by_open() {
    let (dir, repo) = repo().await;
    let good = session(&repo).await;
    let bad = session(&repo).await;
    raw(&db_path(&dir))
        .execute(
            "UPDATE sessions SET header = '{\"type\":\"nope\"}' WHERE id = ?1",
            [bad.id()],
        )
        .unwrap();
    let listed = repo.list().await.unwrap();
    assert_eq!(listed.sessions.len(), 1);
    assert_eq!(listed.sessions[0].id, good.id());
    assert_eq!(listed.skipped.len(), 1);
    assert_eq!(listed.skipped[0].0, bad.location());
    assert!(
        listed.skipped[0].1.contains("header"),
        "{:?}",
        listed.skipped
    );
    let err = repo.open(bad.id()).await.err().unwrap();
    assert_eq!(err.code(), "invalid_session");
    assert!(err.to_string().contains(bad.id()), "{err}");
}

#[tokio::test]
async fn a_database_deleted_or_replaced_while_open_refuses_writes() {
    let (dir, repo) = repo().await;
    let s = session(&repo).await;
    let a = s.append(user("a")).await.unwrap();
    s.save_point().await.unwrap();
    std::fs::remove_file(db_path(&dir)).unwrap();
    let err = s.append(user("b")).await.unwrap_err();
    assert_eq!(err.code(), "storage");
    assert!(err.to_string().contains("was deleted while open"), "{err}");
    assert!(s.save_point().await.is_err());
    assert!(repo.create(Default::default()).await.is_err());
    // Reads still see what the open file holds; nothing appended before is lost from view.
    assert_eq!(s.leaf_id().await.unwrap().as_deref(), Some(a.id.as_str()));

    // A different file at the same path is not ours either.
    std::fs::write(db_path(&dir), b"").unwrap();
    let err = s.append(user("c")).await.unwrap_err();
    assert!(
        err.to_string().contains("replaced by another file"),
        "{err}"
    );
}

#[tokio::test]
async fn a_state_row_out_of_step_with_the_entries_is_reported() {
    let (dir, repo) = repo().await;
    let s = session(&repo).await;
    s.append(user("a")).await.unwrap();
    s.append(user("b")).await.unwrap();
    raw(&db_path(&dir))
        .execute("UPDATE session_state SET entry_count = 1", [])
        .unwrap();
    let err = s.append(user("c")).await.unwrap_err();
    assert_eq!(err.code(), "invalid_session");
    assert!(
        err.to_string().contains("log position 2 is already taken"),
        "{err}"
    );
    assert_eq!(
        s.entries(None, None).await.unwrap().entries.len(),
        2,
        "no entry is hidden"
    );
}
