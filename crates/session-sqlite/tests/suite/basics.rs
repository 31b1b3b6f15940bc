//! Repository and storage behaviour on well-formed input.

use arbor_session::{CreateOptions, EntryKind, SessionRepository, SessionStorage};
use arbor_session_sqlite::{SqliteOptions, SqliteRepository, Synchronous};

use super::*;

#[tokio::test]
async fn create_open_list_delete() {
    let (_dir, repo) = repo().await;
    let a = repo
        .create(
            CreateOptions::new("/a")
                .with_id("alpha")
                .with_metadata(serde_json::json!({"k": 1})),
        )
        .await
        .unwrap();
    a.append(user("hello there")).await.unwrap();
    let b = session(&repo).await;
    assert_eq!(a.id(), "alpha");
    assert_eq!(b.id().len(), 36, "generated ids are UUIDv7: {}", b.id());

    let listed = repo.list().await.unwrap();
    assert!(listed.skipped.is_empty());
    assert_eq!(
        listed
            .sessions
            .iter()
            .map(|s| s.id.as_str())
            .collect::<Vec<_>>(),
        vec![b.id(), "alpha"],
        "newest first"
    );
    let info = &listed.sessions[1];
    assert_eq!(info.cwd, "/a");
    assert_eq!(info.entry_count, Some(1));
    assert_eq!(info.first_message.as_deref(), Some("hello there"));
    assert_eq!(info.location, a.location());

    let header = repo.open("alpha").await.unwrap().header().await.unwrap();
    assert_eq!(header.metadata, Some(serde_json::json!({"k": 1})));
    assert_eq!(header.version, Some(3));
    let by_location = repo.open(&a.location()).await.unwrap();
    assert_eq!(by_location.entry_count().await.unwrap(), 1);

    let missing = repo.open("nope").await.err().unwrap();
    assert_eq!(missing.code(), "not_found", "{missing}");

    repo.delete("alpha").await.unwrap();
    repo.delete("alpha").await.unwrap();
    assert_eq!(repo.open("alpha").await.err().unwrap().code(), "not_found");
    assert_eq!(repo.list().await.unwrap().sessions.len(), 1);
    // The open handle notices: its session is gone.
    assert_eq!(a.leaf_id().await.unwrap_err().code(), "not_found");
}

#[tokio::test]
async fn caller_ids_are_validated_and_unique() {
    let (_dir, repo) = repo().await;
    for bad in ["../escape", "", "-x", "a b"] {
        let err = repo
            .create(CreateOptions::default().with_id(bad))
            .await
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("invalid session id"),
            "{bad}: {err}"
        );
    }
    repo.create(CreateOptions::default().with_id("same"))
        .await
        .unwrap();
    let dup = repo
        .create(CreateOptions::default().with_id("same"))
        .await
        .err()
        .unwrap();
    assert!(dup.to_string().contains("already exists"), "{dup}");
    assert_eq!(repo.list().await.unwrap().sessions.len(), 1);
}

#[tokio::test]
async fn appends_chain_on_the_leaf_and_leaf_entries_move_it() {
    let (_dir, repo) = repo().await;
    let s = session(&repo).await;
    assert_eq!(s.leaf_id().await.unwrap(), None);
    let a = s.append(user("a")).await.unwrap();
    let b = s.append(user("b")).await.unwrap();
    assert_eq!(a.parent_id, None);
    assert_eq!(b.parent_id.as_deref(), Some(a.id.as_str()));
    assert_eq!(a.id.len(), 8);
    assert!(
        a.timestamp.ends_with('Z') && a.timestamp.len() == 24,
        "{}",
        a.timestamp
    );

    let leaf = s.set_leaf(Some(&a.id)).await.unwrap();
    assert!(
        matches!(&leaf.kind, EntryKind::Leaf(l) if l.target_id.as_deref() == Some(a.id.as_str()))
    );
    assert_eq!(
        leaf.parent_id.as_deref(),
        Some(b.id.as_str()),
        "parent = old leaf"
    );
    assert_eq!(s.leaf_id().await.unwrap().as_deref(), Some(a.id.as_str()));
    let c = s.append(user("c")).await.unwrap();
    assert_eq!(
        c.parent_id.as_deref(),
        Some(a.id.as_str()),
        "a sibling of b"
    );
    assert_eq!(
        ids(&s.children(Some(&a.id)).await.unwrap()),
        vec![b.id.as_str(), c.id.as_str()]
    );

    s.set_leaf(None).await.unwrap();
    assert_eq!(s.leaf_id().await.unwrap(), None);
    let root2 = s.append(user("new root")).await.unwrap();
    assert_eq!(root2.parent_id, None);

    let before = s.entry_count().await.unwrap();
    let err = s.set_leaf(Some("missing")).await.unwrap_err();
    assert_eq!(err.code(), "not_found", "{err}");
    assert_eq!(s.entry_count().await.unwrap(), before);
    assert_eq!(
        s.leaf_id().await.unwrap().as_deref(),
        Some(root2.id.as_str())
    );
}

#[tokio::test]
async fn state_survives_reopening_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let (id, a_id) = {
        let repo = SqliteRepository::open(&path).await.unwrap();
        let s = session(&repo).await;
        let a = s.append(user("a")).await.unwrap();
        s.append(user("b")).await.unwrap();
        s.append(name("kept")).await.unwrap();
        s.set_leaf(Some(&a.id)).await.unwrap();
        (s.id().to_owned(), a.id)
    };
    let repo = SqliteRepository::open(&path).await.unwrap();
    let s = repo.open(&id).await.unwrap();
    assert_eq!(s.leaf_id().await.unwrap().as_deref(), Some(a_id.as_str()));
    assert_eq!(s.entry_count().await.unwrap(), 4);
    assert_eq!(s.session_name().await.unwrap().as_deref(), Some("kept"));
}

#[tokio::test]
async fn labels_and_names() {
    let (_dir, repo) = repo().await;
    let s = session(&repo).await;
    let a = s.append(user("a")).await.unwrap();
    assert_eq!(s.get_label(&a.id).await.unwrap(), None);
    s.append(label(&a.id, Some("  checkpoint  ")))
        .await
        .unwrap();
    assert_eq!(
        s.get_label(&a.id).await.unwrap().as_deref(),
        Some("checkpoint")
    );
    s.append(label(&a.id, Some("   "))).await.unwrap();
    assert_eq!(s.get_label(&a.id).await.unwrap(), None, "blank clears");
    s.append(label(&a.id, Some("again"))).await.unwrap();
    s.append(label(&a.id, None)).await.unwrap();
    assert_eq!(s.get_label(&a.id).await.unwrap(), None, "absent clears");
    let err = s.append(label("missing", Some("x"))).await.unwrap_err();
    assert_eq!(err.code(), "not_found", "{err}");

    assert_eq!(s.session_name().await.unwrap(), None);
    s.append(name("  My session \n")).await.unwrap();
    assert_eq!(
        s.session_name().await.unwrap().as_deref(),
        Some("My session")
    );
    s.append(name("")).await.unwrap();
    assert_eq!(s.session_name().await.unwrap(), None);
}

#[tokio::test]
async fn stats_are_materialized() {
    let (_dir, repo) = repo().await;
    let s = session(&repo).await;
    s.append(user("q")).await.unwrap();
    s.append(assistant(10, 5, 3, 2, 0.5)).await.unwrap();
    s.append(custom("note", serde_json::json!(1)))
        .await
        .unwrap();
    s.append(assistant(1, 1, 0, 0, 0.25)).await.unwrap();
    let st = s.stats().await.unwrap();
    assert_eq!(st.message_count, 3);
    assert_eq!(st.cached_tokens, 3);
    assert_eq!(st.uncached_tokens, 13);
    assert_eq!(st.total_tokens, 22);
    assert!((st.cost_total - 0.75).abs() < 1e-9, "{}", st.cost_total);
}

#[tokio::test]
async fn cursor_pages_and_type_queries() {
    let (_dir, repo) = repo().await;
    let s = session(&repo).await;
    let mut made = Vec::new();
    for i in 0..5 {
        let d = if i % 2 == 0 {
            user("u")
        } else {
            custom("n", serde_json::json!(i))
        };
        made.push(s.append(d).await.unwrap().id);
    }
    let p1 = s.entries(None, Some(2)).await.unwrap();
    assert_eq!(
        p1.entries.iter().map(|(q, _)| *q).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert_eq!(p1.next_after_seq, Some(2));
    let p2 = s.entries(p1.next_after_seq, Some(2)).await.unwrap();
    assert_eq!(
        p2.entries.iter().map(|(q, _)| *q).collect::<Vec<_>>(),
        vec![3, 4]
    );
    let p3 = s.entries(p2.next_after_seq, Some(2)).await.unwrap();
    assert_eq!(p3.entries[0].0, 5);
    assert_eq!(p3.entries.len(), 1);
    assert_eq!(p3.entries[0].1.id, made[4]);
    assert_eq!(p3.next_after_seq, None);
    let all = s.entries(None, None).await.unwrap();
    assert_eq!(all.entries.len(), 5);
    assert_eq!(all.next_after_seq, None);
    assert!(s
        .entries(Some(5), Some(10))
        .await
        .unwrap()
        .entries
        .is_empty());
    assert!(s.entries(Some(99), None).await.unwrap().entries.is_empty());
    assert_eq!(
        s.entries(None, Some(0)).await.unwrap_err().code(),
        "invalid_entry"
    );

    let customs = s.find_entries("custom").await.unwrap();
    assert_eq!(ids(&customs), vec![made[1].as_str(), made[3].as_str()]);
    assert!(s.find_entries("nothing").await.unwrap().is_empty());
    assert_eq!(
        ids(&s.children(None).await.unwrap()),
        vec![made[0].as_str()]
    );
    assert_eq!(s.get_entry(&made[2]).await.unwrap().unwrap().id, made[2]);
    assert!(s.get_entry("missing").await.unwrap().is_none());
}

#[tokio::test]
async fn path_stops_at_the_newest_compaction_boundary() {
    let (_dir, repo) = repo().await;
    let s = session(&repo).await;
    let a = s.append(user("a")).await.unwrap();
    let b = s.append(user("b")).await.unwrap();
    let c1 = s.append(compaction(Some(&a.id), false)).await.unwrap();
    let c = s.append(user("c")).await.unwrap();
    let d = s.append(user("d")).await.unwrap();
    // The newest compaction keeps from `c`; the older one (keeping from `a`) does not matter.
    let c2 = s.append(compaction(Some(&c.id), false)).await.unwrap();
    let e = s.append(user("e")).await.unwrap();
    let path = s.path_to_root_or_compaction(None).await.unwrap();
    assert_eq!(
        ids(&path),
        vec![c.id.as_str(), d.id.as_str(), c2.id.as_str(), e.id.as_str()]
    );
    // From an earlier point the older compaction is the newest one met.
    let path = s.path_to_root_or_compaction(Some(&c.id)).await.unwrap();
    assert_eq!(
        ids(&path),
        vec![a.id.as_str(), b.id.as_str(), c1.id.as_str(), c.id.as_str()]
    );
    let full = s.ancestry(None).await.unwrap();
    assert_eq!(full.len(), 7);
    assert_eq!(full[0].id, a.id);

    // A retained tail makes the compaction itself the start.
    let c3 = s.append(compaction(None, true)).await.unwrap();
    let f = s.append(user("f")).await.unwrap();
    let path = s.path_to_root_or_compaction(None).await.unwrap();
    assert_eq!(ids(&path), vec![c3.id.as_str(), f.id.as_str()]);

    let err = s
        .path_to_root_or_compaction(Some("missing"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "not_found");
    s.set_leaf(None).await.unwrap();
    assert!(s.ancestry(None).await.unwrap().is_empty());
}

#[tokio::test]
async fn create_entry_id_is_fresh_and_given_ids_are_kept() {
    let (_dir, repo) = repo().await;
    let s = session(&repo).await;
    let id = s.create_entry_id().await.unwrap();
    assert_eq!(id.len(), 8);
    let mut d = user("x");
    d.id = Some(id.clone());
    d.timestamp = Some("2026-06-20T15:00:00.000Z".into());
    let e = s.append(d).await.unwrap();
    assert_eq!(e.id, id);
    assert_eq!(e.timestamp, "2026-06-20T15:00:00.000Z");
    assert_ne!(s.create_entry_id().await.unwrap(), id);
}

#[tokio::test]
async fn save_points_under_both_sync_policies() {
    for sync in [Synchronous::Normal, Synchronous::Full] {
        let (dir, repo) = repo_with(SqliteOptions {
            synchronous: sync,
            ..Default::default()
        })
        .await;
        let s = session(&repo).await;
        s.append(user("a")).await.unwrap();
        s.save_point().await.unwrap();
        // A fresh connection sees the entry (from the WAL, which the save point fsynced).
        let n: i64 = raw(&dir.path().join("sessions.db"))
            .query_row("SELECT COUNT(*) FROM entries", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1, "{sync:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_on_a_multi_thread_runtime() {
    let (_dir, repo) = repo().await;
    let s = session(&repo).await;
    for i in 0..20 {
        s.append(custom("n", serde_json::json!(i))).await.unwrap();
    }
    assert_eq!(s.ancestry(None).await.unwrap().len(), 20);
}

#[tokio::test]
async fn a_stale_handle_never_reaches_a_later_session() {
    let (_dir, repo) = repo().await;
    let old = session(&repo).await;
    old.append(user("old")).await.unwrap();
    repo.delete(old.id()).await.unwrap();
    // The newest session was deleted; the next one must not inherit its internal number.
    let new = session(&repo).await;
    new.append(user("new")).await.unwrap();
    assert_eq!(old.entry_count().await.unwrap_err().code(), "not_found");
    assert_eq!(
        old.append(user("lost?")).await.unwrap_err().code(),
        "not_found"
    );
    assert_eq!(new.entry_count().await.unwrap(), 1);
}
