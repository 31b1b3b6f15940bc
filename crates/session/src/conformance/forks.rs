//! Conformance cases: Forking a session before, at or without an entry.

use super::support::*;
use super::*;

/// root(user) → a1(assistant) → u2(user) → a2(assistant); leaf moved back to a1; u3 branch.
async fn forkable<R: SessionRepository>(r: &R) -> Result<(R::Storage, Vec<String>), CaseFailure> {
    let s = r.create(create_opts()).await.ctx("create")?;
    let u1 = append(&s, user("u1")).await?;
    let a1 = append(&s, assistant("a1")).await?;
    let u2 = append(&s, user("u2")).await?;
    let a2 = append(&s, assistant("a2")).await?;
    append(&s, label(&a1, Some("mark"))).await?;
    s.set_leaf(Some(&a1)).await.ctx("set_leaf")?;
    let u3 = append(&s, user("u3")).await?;
    Ok((s, vec![u1, a1, u2, a2, u3]))
}

fn parent_ok(parent: &Option<String>, location: &str, id: &str) -> bool {
    parent.as_deref() == Some(location) || parent.as_deref() == Some(id)
}

pub async fn fork_without_entry_copies_whole_tree<R: SessionRepository>(r: &R) -> CaseResult {
    let (s, _) = forkable(r).await?;
    let src_entries = all_entries(&s).await?;
    let src_leaf = s.leaf_id().await.ctx("leaf")?;
    let src_header = s.header().await.ctx("header")?;
    let f = r
        .fork(&s.location(), ForkOptions::default())
        .await
        .ctx("fork")?;
    ensure_eq!(all_entries(&f).await?, src_entries.clone());
    ensure_eq!(f.leaf_id().await.ctx("leaf")?, src_leaf);
    let h = f.header().await.ctx("header")?;
    ensure!(h.id != src_header.id, "fork reused the source id");
    ensure!(
        parent_ok(&h.parent_session, &s.location(), &src_header.id),
        "parentSession {:?} names neither {} nor {}",
        h.parent_session,
        s.location(),
        src_header.id
    );
    ensure_eq!(h.cwd, src_header.cwd);
    ensure_eq!(all_entries(&s).await?, src_entries);
    ensure_eq!(
        f.get_label(&src_entries[1].id).await.ctx("label")?,
        Some("mark".to_owned())
    );
    Ok(())
}

pub async fn fork_before_user_copies_path_to_parent<R: SessionRepository>(r: &R) -> CaseResult {
    let (s, e) = forkable(r).await?;
    let before = all_entries(&s).await?;
    let f = r
        .fork(
            &s.location(),
            ForkOptions {
                entry_id: Some(e[2].clone()),
                ..ForkOptions::default()
            },
        )
        .await
        .ctx("fork before u2")?;
    let got = ids(all_entries(&f).await?);
    ensure_eq!(got, vec![e[0].clone(), e[1].clone()]);
    ensure_eq!(f.leaf_id().await.ctx("leaf")?, Some(e[1].clone()));
    let copied = f.get_entry(&e[1]).await.ctx("get")?;
    let original = s.get_entry(&e[1]).await.ctx("get src")?;
    ensure_eq!(copied, original);
    ensure_eq!(all_entries(&s).await?, before);
    Ok(())
}

pub async fn fork_before_non_user_is_invalid_target<R: SessionRepository>(r: &R) -> CaseResult {
    let (s, e) = forkable(r).await?;
    let loc = s.location();
    let res = r
        .fork(
            &loc,
            ForkOptions {
                entry_id: Some(e[1].clone()),
                position: ForkPosition::Before,
                ..ForkOptions::default()
            },
        )
        .await;
    expect_code(
        res.map(|_| ()),
        "invalid_fork_target",
        "fork before assistant",
    )?;
    let n = r.list().await.ctx("list")?.sessions.len();
    ensure_eq!(n, 1);
    Ok(())
}

pub async fn fork_at_copies_path_including_target<R: SessionRepository>(r: &R) -> CaseResult {
    let (s, e) = forkable(r).await?;
    let f = r
        .fork(
            &s.location(),
            ForkOptions {
                entry_id: Some(e[3].clone()),
                position: ForkPosition::At,
                ..ForkOptions::default()
            },
        )
        .await
        .ctx("fork at a2")?;
    let got = ids(all_entries(&f).await?);
    ensure_eq!(got, e[0..4].to_vec());
    ensure_eq!(f.leaf_id().await.ctx("leaf")?, Some(e[3].clone()));
    ensure_eq!(s.leaf_id().await.ctx("source leaf")?, Some(e[4].clone()));
    Ok(())
}

pub async fn fork_missing_target_is_invalid_target<R: SessionRepository>(r: &R) -> CaseResult {
    let (s, _) = forkable(r).await?;
    for position in [ForkPosition::Before, ForkPosition::At] {
        let res = r
            .fork(
                &s.location(),
                ForkOptions {
                    entry_id: Some("missing".into()),
                    position,
                    ..ForkOptions::default()
                },
            )
            .await;
        expect_code(res.map(|_| ()), "invalid_fork_target", "fork missing")?;
    }
    expect_code(
        r.fork("no-such-session", ForkOptions::default())
            .await
            .map(|_| ()),
        "not_found",
        "fork of a missing session",
    )?;
    Ok(())
}

pub async fn fork_before_first_message_is_empty<R: SessionRepository>(r: &R) -> CaseResult {
    let (s, e) = forkable(r).await?;
    let f = r
        .fork(
            &s.location(),
            ForkOptions {
                entry_id: Some(e[0].clone()),
                ..ForkOptions::default()
            },
        )
        .await
        .ctx("fork before root")?;
    ensure_eq!(f.entry_count().await.ctx("count")?, 0);
    ensure_eq!(f.leaf_id().await.ctx("leaf")?, None::<String>);
    Ok(())
}

pub async fn fork_with_caller_id_and_cwd<R: SessionRepository>(r: &R) -> CaseResult {
    let (s, e) = forkable(r).await?;
    let f = r
        .fork(
            &s.location(),
            ForkOptions {
                entry_id: Some(e[4].clone()),
                position: ForkPosition::At,
                cwd: Some("/srv/elsewhere".into()),
                id: Some("fork-1".into()),
            },
        )
        .await
        .ctx("fork")?;
    let h = f.header().await.ctx("header")?;
    ensure_eq!(h.id, "fork-1");
    ensure_eq!(h.cwd, "/srv/elsewhere");
    drop(f);
    let f = r.open("fork-1").await.ctx("open fork by id")?;
    let got = ids(all_entries(&f).await?);
    ensure_eq!(got, vec![e[0].clone(), e[1].clone(), e[4].clone()]);
    Ok(())
}

pub async fn forked_session_accepts_appends<R: SessionRepository>(r: &R) -> CaseResult {
    let (s, e) = forkable(r).await?;
    let src_count = s.entry_count().await.ctx("count")?;
    let f = r
        .fork(
            &s.location(),
            ForkOptions {
                entry_id: Some(e[2].clone()),
                ..ForkOptions::default()
            },
        )
        .await
        .ctx("fork")?;
    let n = f
        .append(EntryDraft::new(user("edited u2")))
        .await
        .ctx("append")?;
    ensure_eq!(n.parent_id, Some(e[1].clone()));
    let loc = f.location();
    drop(f);
    let f = r.open(&loc).await.ctx("reopen fork")?;
    ensure_eq!(f.leaf_id().await.ctx("leaf")?, Some(n.id));
    ensure_eq!(s.entry_count().await.ctx("source count")?, src_count);
    Ok(())
}
