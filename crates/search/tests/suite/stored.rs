//! Sessions in a database store are indexed too, incrementally by sequence number: the
//! memory store always, a real PostgreSQL server when `ARBOR_TEST_POSTGRES_URL` is set
//! (skipped with a visible line otherwise, failing when `ARBOR_TEST_POSTGRES_REQUIRE` is).

use std::future::Future;

use arbor_ai::types::{Content, Message, UserMessage};
use arbor_search::{fill_stored_snippets, BranchState, Query, RefreshReport, SearchIndex, Stores};
use arbor_session::{
    CreateOptions, EntryDraft, EntryKind, MemoryRepository, SessionRepository, SessionStorage,
};
use arbor_session_postgres::scratch::ScratchSchema;
use arbor_session_postgres::PostgresRepository;

fn user(text: &str) -> EntryDraft {
    EntryDraft::new(EntryKind::message(Message::User(UserMessage {
        content: Content::text(text),
        timestamp: 1.into(),
        extra: Default::default(),
    })))
}

/// `(entry id, branch state)` of each hit, sorted.
fn states(hits: &[arbor_search::Hit]) -> Vec<(String, BranchState)> {
    let mut v: Vec<_> = hits
        .iter()
        .map(|h| (h.entry_id.clone(), h.branch))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

async fn refresh_in<R, S, F, Fut>(
    index: &mut SearchIndex,
    repo: &R,
    store: &str,
    open: F,
) -> RefreshReport
where
    R: SessionRepository,
    S: SessionStorage,
    F: Fn(String) -> Fut,
    Fut: Future<Output = arbor_session::Result<S>>,
{
    let listing = repo.list().await.unwrap();
    index.refresh_store(store, &listing, open).await.unwrap()
}

/// The same story on any store: index, search with snippets, branch and append, delete.
async fn walrus_story<R, S, F, Fut>(repo: &R, store: &str, open: F)
where
    R: SessionRepository,
    S: SessionStorage,
    F: Fn(String) -> Fut + Copy,
    Fut: Future<Output = arbor_session::Result<S>>,
{
    let dir = tempfile::tempdir().unwrap();
    let mut index = SearchIndex::open(&dir.path().join("search-index.sqlite")).unwrap();
    let a = repo.create(CreateOptions::new("/work/zoo")).await.unwrap();
    let u1 = a
        .append(user("the walrus migration plan"))
        .await
        .unwrap()
        .id;
    let u2 = a.append(user("walrus second attempt")).await.unwrap().id;
    let b = repo.create(CreateOptions::new("/work/zoo")).await.unwrap();
    b.append(user("something unrelated")).await.unwrap();

    let first: RefreshReport = refresh_in(&mut index, repo, store, open).await;
    assert_eq!((first.indexed, first.appended, first.unchanged), (2, 0, 0));
    assert!(first.warnings.is_empty(), "{:?}", first.warnings);
    // A refresh of the session files (none here) leaves the store's sessions alone.
    index.refresh(&[]).unwrap();

    let query = |text: &str| Query {
        text: text.into(),
        ..Query::default()
    };
    let mut hits = index.search(&query("walrus migration")).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].entry_id, u1);
    assert!(hits[0].exact);
    assert_eq!(hits[0].store.as_deref(), Some(store));
    assert_eq!(hits[0].session_id, a.header().await.unwrap().id);
    assert_eq!(hits[0].path, a.location());
    assert_eq!(hits[0].cwd, "/work/zoo");
    assert!(
        hits[0].snippet.is_empty(),
        "filled from the store, not here"
    );
    fill_stored_snippets(&mut hits, "walrus migration", open).await;
    assert_eq!(hits[0].snippet, "the walrus migration plan");
    // The store scope (DECISIONS §34.20): this store's rows appear when it is named, not when
    // another store or the session files alone are asked for.
    let scoped = |stores: Stores| Query {
        stores,
        ..query("walrus migration")
    };
    let only = index.search(&scoped(Stores::Only(store.into()))).unwrap();
    assert_eq!(only.len(), 1, "{only:?}");
    let other = Stores::Only(format!("{store} (another)"));
    assert!(index.search(&scoped(other)).unwrap().is_empty());
    assert!(index.search(&scoped(Stores::FilesOnly)).unwrap().is_empty());

    // Branch back to u1 and continue there: u2 is abandoned, the new entry active.
    a.set_leaf(Some(&u1)).await.unwrap();
    let u3 = a.append(user("walrus third attempt")).await.unwrap().id;
    let second = refresh_in(&mut index, repo, store, open).await;
    assert_eq!(
        (second.indexed, second.appended, second.unchanged),
        (0, 1, 1)
    );
    let mut expected = vec![
        (u1.clone(), BranchState::Active),
        (u2.clone(), BranchState::Abandoned),
        (u3.clone(), BranchState::Active),
    ];
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(states(&index.search(&query("walrus")).unwrap()), expected);

    // Nothing changed: nothing is read.
    let third = refresh_in(&mut index, repo, store, open).await;
    assert_eq!((third.indexed, third.appended, third.unchanged), (0, 0, 2));

    // A deleted session drops out.
    repo.delete(&a.header().await.unwrap().id).await.unwrap();
    let fourth = refresh_in(&mut index, repo, store, open).await;
    assert_eq!(fourth.removed, 1);
    assert!(index.search(&query("walrus")).unwrap().is_empty());
}

#[tokio::test]
async fn sessions_of_a_memory_store_are_indexed_incrementally() {
    let repo = MemoryRepository::new();
    let r = &repo;
    walrus_story(&repo, "memory", move |id: String| async move {
        r.open(&id).await
    })
    .await;
}

#[tokio::test]
async fn sessions_of_a_postgres_store_are_indexed_incrementally() {
    let url = match std::env::var("ARBOR_TEST_POSTGRES_URL") {
        Ok(u) if !u.is_empty() => u,
        _ => {
            assert!(
                std::env::var_os("ARBOR_TEST_POSTGRES_REQUIRE").is_none(),
                "ARBOR_TEST_POSTGRES_URL is not set but ARBOR_TEST_POSTGRES_REQUIRE is"
            );
            eprintln!("SKIPPED postgres search test: ARBOR_TEST_POSTGRES_URL is not set");
            return;
        }
    };
    let schema = ScratchSchema::new(&url);
    let repo = PostgresRepository::connect_with(&url, schema.options())
        .await
        .unwrap();
    let r = &repo;
    walrus_story(&repo, "postgres://test", move |id: String| async move {
        r.open_read_only(&id).await
    })
    .await;
}
