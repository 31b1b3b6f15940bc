//! Repository behaviour beyond the shared suite: paged, filtered listings that read no
//! payloads, search, read-only handles, deletion under a writer, durability points, and
//! connection strings whose password never reaches a message.

use arbor_session::{CreateOptions, SessionRepository, SessionStorage};
use arbor_session_postgres::{ListQuery, PostgresRepository, Synchronous};

use super::{raw, repo, repo_with, session, user};

#[tokio::test]
async fn listings_are_paged_newest_first_per_cwd_and_searchable() {
    let url = crate::pg!();
    let (_schema, repo) = repo(&url).await;
    let mut ids = Vec::new();
    for i in 0..25 {
        let cwd = if i % 2 == 0 { "/even" } else { "/odd" };
        let s = repo.create(CreateOptions::new(cwd)).await.unwrap();
        s.append(user(&format!("prompt number {i} about Widgets")))
            .await
            .unwrap();
        ids.push(s.id().to_owned());
    }
    let all = repo.list().await.unwrap();
    let listed: Vec<&str> = all.sessions.iter().map(|s| s.id.as_str()).collect();
    let newest_first: Vec<&str> = ids.iter().rev().map(String::as_str).collect();
    assert_eq!(listed, newest_first);
    assert_eq!(all.sessions[0].entry_count, Some(1));
    assert_eq!(
        all.sessions[0].first_message.as_deref(),
        Some("prompt number 24 about Widgets")
    );

    let mut paged = Vec::new();
    let mut query = ListQuery {
        limit: Some(10),
        ..Default::default()
    };
    loop {
        let page = repo.list_page(&query).await.unwrap();
        assert!(page.result.sessions.len() <= 10);
        paged.extend(page.result.sessions.into_iter().map(|s| s.id));
        match page.next {
            Some(c) => query.after = Some(c),
            None => break,
        }
    }
    assert_eq!(paged, ids.iter().rev().cloned().collect::<Vec<_>>());

    let odd = repo.list_cwd("/odd").await.unwrap();
    assert_eq!(odd.sessions.len(), 12);
    assert!(odd.sessions.iter().all(|s| s.cwd == "/odd"));

    let found = repo.search("number 1").await.unwrap();
    assert_eq!(found.sessions.len(), 11, "1 and 10..=19");
    let found = repo.search("WIDGETS").await.unwrap();
    assert_eq!(found.sessions.len(), 25, "case-insensitive");
    assert!(
        repo.search("100%").await.unwrap().sessions.is_empty(),
        "% is literal"
    );
}

#[tokio::test]
async fn search_finds_names() {
    let url = crate::pg!();
    let (_schema, repo) = repo(&url).await;
    let s = session(&repo).await;
    s.append(super::name_draft("Refactor the parser"))
        .await
        .unwrap();
    let found = repo.search("parser").await.unwrap();
    assert_eq!(found.sessions.len(), 1);
    assert_eq!(
        found.sessions[0].name.as_deref(),
        Some("Refactor the parser")
    );
}

#[tokio::test]
async fn deleting_a_session_under_its_writer_fails_the_next_append_cleanly() {
    let url = crate::pg!();
    let (schema, repo) = repo(&url).await;
    let s = session(&repo).await;
    s.append(user("one")).await.unwrap();
    repo.delete(s.id()).await.unwrap();
    let err = s.append(user("two")).await.unwrap_err();
    assert_eq!(err.code(), "not_found", "{err}");
    let rows: i64 = raw(&schema)
        .await
        .query_one("SELECT COUNT(*) FROM entries", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(rows, 0, "entries go with their session");
}

/// Schema v3 has no foreign key to cascade (DECISIONS §24.50): `delete` removes the entries
/// itself, including one an append was committing while the delete ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_session_while_it_is_appended_to_leaves_no_entry_behind() {
    let url = crate::pg!();
    let (schema, repo) = repo(&url).await;
    let s = session(&repo).await;
    let other = session(&repo).await;
    other.append(user("stays")).await.unwrap();
    let writer = {
        let s = s.clone();
        tokio::spawn(async move {
            for stored in 0..100_000u32 {
                if let Err(e) = s.append(user("busy")).await {
                    return (stored, Some(e));
                }
            }
            (100_000, None)
        })
    };
    while s.entry_count().await.unwrap() < 20 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    repo.delete(s.id()).await.unwrap();
    let (stored, err) = writer.await.unwrap();
    assert!(stored >= 20, "{stored}");
    let err = err.expect("the append after the delete fails");
    assert_eq!(err.code(), "not_found", "{err}");
    let c = raw(&schema).await;
    let orphans: i64 = c
        .query_one(
            "SELECT COUNT(*) FROM entries e
             WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.sid = e.sid)",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(orphans, 0, "no entry outlives its session");
    let left: i64 = c
        .query_one("SELECT COUNT(*) FROM entries", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 1, "the other session keeps its entry");
    assert_eq!(other.entry_count().await.unwrap(), 1);
}

#[tokio::test]
async fn save_points_work_under_both_policies() {
    let url = crate::pg!();
    for sync in [Synchronous::Normal, Synchronous::Full] {
        let (_schema, repo) = repo_with(&url, |o| o.synchronous = sync).await;
        let s = session(&repo).await;
        s.append(user("x")).await.unwrap();
        s.save_point().await.unwrap();
        s.append(user("y")).await.unwrap();
        s.save_point().await.unwrap();
        assert_eq!(s.entry_count().await.unwrap(), 2);
    }
}

#[tokio::test]
async fn the_password_never_appears_in_errors_or_debug_output() {
    // Nothing listens on port 1: the connection is refused at once.
    let url = "postgres://alice:hunter2-secret@127.0.0.1:1/agents?connect_timeout=2";
    let err = PostgresRepository::connect(url).await.unwrap_err();
    let text = format!("{err} {err:?}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(
        text.contains("postgres://alice@127.0.0.1:1/agents"),
        "{text}"
    );

    let url = crate::pg!();
    let (_schema, repo) = repo(&url).await;
    let s = session(&repo).await;
    assert!(!format!("{repo:?} {s:?}").contains("password"));
}

/// The envelope index a handle keeps (DECISIONS §24.21) follows other handles' appends: a
/// reader that walked the path once sees the writer's later entries, a branch made by moving the
/// leaf back, and the derived settings of the new path.
#[tokio::test]
async fn a_reader_that_walked_once_follows_later_appends_and_branches() {
    use arbor_session::{EntryDraft, EntryKind, ThinkingLevelChangeEntry};
    let url = crate::pg!();
    let (_schema, repo) = repo(&url).await;
    let w = session(&repo).await;
    let a = w.append(user("a")).await.unwrap();
    let b = w.append(user("b")).await.unwrap();
    let r = repo.open_read_only(w.id()).await.unwrap();
    let ids =
        |path: Vec<arbor_session::SessionEntry>| path.into_iter().map(|e| e.id).collect::<Vec<_>>();
    assert_eq!(
        ids(r.ancestry(None).await.unwrap()),
        [a.id.clone(), b.id.clone()]
    );
    assert_eq!(r.derived_settings(None).await.unwrap().thinking_level, None);

    // Branch: back to `a`, then a thinking-level change and a message on the new branch.
    w.set_leaf(Some(&a.id)).await.unwrap();
    let t = w
        .append(EntryDraft::new(EntryKind::ThinkingLevelChange(
            ThinkingLevelChangeEntry {
                thinking_level: "high".into(),
                extra: Default::default(),
            },
        )))
        .await
        .unwrap();
    let c = w.append(user("c")).await.unwrap();
    assert_eq!(
        ids(r.ancestry(None).await.unwrap()),
        [a.id.clone(), t.id.clone(), c.id.clone()]
    );
    assert_eq!(
        ids(r.ancestry(Some(&b.id)).await.unwrap()),
        [a.id.clone(), b.id.clone()]
    );
    assert_eq!(
        r.derived_settings(None)
            .await
            .unwrap()
            .thinking_level
            .as_deref(),
        Some("high")
    );
    assert_eq!(
        r.derived_settings(Some(&b.id))
            .await
            .unwrap()
            .thinking_level,
        None
    );
    // An id nobody wrote is still `not_found`, not a stale answer.
    let err = r.ancestry(Some("nope0000")).await.unwrap_err();
    assert!(
        err.to_string().contains("Entry not found: nope0000"),
        "{err}"
    );
}
