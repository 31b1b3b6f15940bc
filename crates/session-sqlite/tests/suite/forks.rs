//! Forks per DECISIONS §5: whole tree, before a user message, at an entry; source untouched.

use arbor_session::{ForkOptions, SessionRepository, SessionStorage};

use super::*;

#[tokio::test]
async fn fork_whole_tree_copies_every_entry_verbatim() {
    let (dir, repo) = repo().await;
    let s = session(&repo).await;
    let u1 = s.append(user("one")).await.unwrap();
    let a1 = s.append(assistant(1, 2, 3, 4, 0.5)).await.unwrap();
    s.append(label(&u1.id, Some("start"))).await.unwrap();
    s.set_leaf(Some(&u1.id)).await.unwrap();
    s.append(user("two")).await.unwrap();
    s.append(name("src")).await.unwrap();
    let f = repo.fork(s.id(), ForkOptions::default()).await.unwrap();
    let header = f.header().await.unwrap();
    assert_eq!(header.parent_session.as_deref(), Some(s.id()));
    assert_eq!(header.cwd, "/work/project");
    assert_ne!(f.id(), s.id());
    let src = s.entries(None, None).await.unwrap().entries;
    let dst = f.entries(None, None).await.unwrap().entries;
    assert_eq!(src, dst, "same entries, same seqs");
    assert_eq!(f.leaf_id().await.unwrap(), s.leaf_id().await.unwrap());
    assert_eq!(f.session_name().await.unwrap().as_deref(), Some("src"));
    assert_eq!(f.get_label(&u1.id).await.unwrap().as_deref(), Some("start"));
    assert_eq!(f.stats().await.unwrap(), s.stats().await.unwrap());
    assert!(f.get_entry(&a1.id).await.unwrap().is_some());
    // Payload bytes are identical.
    let c = raw(&dir.path().join("sessions.db"));
    let distinct: i64 = c
        .query_row("SELECT COUNT(DISTINCT payload) FROM entries", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(distinct as usize, src.len());
}

#[tokio::test]
async fn fork_before_and_at_copy_the_path_only() {
    let (dir, repo) = repo().await;
    let s = session(&repo).await;
    let u1 = s.append(user("one")).await.unwrap();
    let a1 = s.append(assistant(1, 1, 0, 0, 0.0)).await.unwrap();
    let u2 = s.append(user("two")).await.unwrap();
    let a2 = s.append(assistant(1, 1, 0, 0, 0.0)).await.unwrap();
    s.set_leaf(Some(&a1.id)).await.unwrap();
    let side = s.append(user("side")).await.unwrap();

    let before = repo
        .fork(s.id(), ForkOptions::before(u2.id.clone()))
        .await
        .unwrap();
    assert_eq!(
        ids(&before.ancestry(None).await.unwrap()),
        vec![u1.id.as_str(), a1.id.as_str()]
    );
    assert_eq!(before.entry_count().await.unwrap(), 2);
    assert_eq!(
        before.leaf_id().await.unwrap().as_deref(),
        Some(a1.id.as_str())
    );

    let at = repo
        .fork(
            s.id(),
            ForkOptions::at(a2.id.clone())
                .with_cwd("/elsewhere")
                .with_id("fork-at"),
        )
        .await
        .unwrap();
    assert_eq!(
        ids(&at
            .entries(None, None)
            .await
            .unwrap()
            .entries
            .into_iter()
            .map(|(_, e)| e)
            .collect::<Vec<_>>()),
        vec![
            u1.id.as_str(),
            a1.id.as_str(),
            u2.id.as_str(),
            a2.id.as_str()
        ]
    );
    assert_eq!(at.header().await.unwrap().cwd, "/elsewhere");
    // Path forks copy the stored bytes too.
    let c = raw(&dir.path().join("sessions.db"));
    let identical: i64 = c
        .query_row(
            "SELECT COUNT(*) FROM entries f JOIN entries src
             ON src.sid = (SELECT sid FROM sessions WHERE id = ?1)
                AND f.sid <> src.sid AND f.id = src.id AND f.payload = src.payload",
            [s.id()],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        identical,
        2 + 4,
        "every copied row equals its source row byte for byte"
    );
    assert_eq!(at.id(), "fork-at");
    assert_eq!(at.stats().await.unwrap().message_count, 4);

    // Before the first user message: an empty session.
    let empty = repo
        .fork(s.id(), ForkOptions::before(u1.id.clone()))
        .await
        .unwrap();
    assert_eq!(empty.entry_count().await.unwrap(), 0);
    assert_eq!(empty.leaf_id().await.unwrap(), None);

    // The source is untouched.
    assert_eq!(
        s.leaf_id().await.unwrap().as_deref(),
        Some(side.id.as_str())
    );
    assert_eq!(s.entry_count().await.unwrap(), 6);
}

#[tokio::test]
async fn invalid_fork_targets() {
    let (_dir, repo) = repo().await;
    let s = session(&repo).await;
    s.append(user("one")).await.unwrap();
    let a = s.append(assistant(1, 1, 0, 0, 0.0)).await.unwrap();
    let sessions_before = repo.list().await.unwrap().sessions.len();
    let err = repo
        .fork(s.id(), ForkOptions::before(a.id.clone()))
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), "invalid_fork_target");
    assert!(err.to_string().contains("not a user message"), "{err}");
    let err = repo
        .fork(s.id(), ForkOptions::before("missing"))
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), "invalid_fork_target");
    let err = repo
        .fork("no-such-session", ForkOptions::default())
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), "not_found");
    assert_eq!(
        repo.list().await.unwrap().sessions.len(),
        sessions_before,
        "no half-made fork"
    );
}

#[tokio::test]
async fn a_whole_tree_fork_copies_even_a_corrupt_row_verbatim() {
    let (dir, repo) = repo().await;
    let s = session(&repo).await;
    let a = s.append(user("a")).await.unwrap();
    let b = s.append(user("b")).await.unwrap();
    raw(&dir.path().join("sessions.db"))
        .execute(
            "UPDATE entries SET payload = 'garbage' WHERE id = ?1",
            [&b.id],
        )
        .unwrap();
    let f = repo.fork(s.id(), ForkOptions::default()).await.unwrap();
    assert_eq!(f.entry_count().await.unwrap(), 2);
    assert_eq!(f.leaf_id().await.unwrap().as_deref(), Some(b.id.as_str()));
    assert_eq!(f.get_entry(&a.id).await.unwrap().unwrap(), a);
    let err = f.get_entry(&b.id).await.unwrap_err();
    assert_eq!(err.code(), "invalid_session");
    assert!(err.to_string().contains(f.id()), "names the fork: {err}");
    // A path fork through the corrupt row cannot build its copy and creates nothing.
    let before = repo.list().await.unwrap().sessions.len();
    let err = repo
        .fork(s.id(), ForkOptions::at(b.id.clone()))
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), "invalid_session");
    assert_eq!(repo.list().await.unwrap().sessions.len(), before);
}
