//! Conformance cases: Creating, listing, opening and deleting sessions.

use super::support::*;
use super::*;

pub async fn create_list_and_open<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("hello")).await?;
    let h = s.header().await.ctx("header")?;
    ensure_eq!(h.version, Some(3));
    ensure_eq!(h.cwd, CWD);
    ensure!(!h.id.is_empty(), "empty session id");
    let loc = s.location();
    drop(s);
    let list = r.list().await.ctx("list")?;
    ensure_eq!(list.sessions.len(), 1);
    ensure_eq!(list.sessions[0].id, h.id.clone());
    ensure_eq!(list.sessions[0].location, loc.clone());
    ensure_eq!(list.sessions[0].cwd, CWD);
    ensure_eq!(list.sessions[0].created, h.timestamp.clone());
    ensure!(list.skipped.is_empty(), "skipped: {:?}", list.skipped);
    let s = r.open(&list.sessions[0].location).await.ctx("open")?;
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(a));
    ensure_eq!(s.header().await.ctx("header")?, h);
    Ok(())
}

pub async fn create_with_caller_id<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r
        .create(CreateOptions {
            id: Some("my-session.1".into()),
            ..create_opts()
        })
        .await
        .ctx("create")?;
    ensure_eq!(s.header().await.ctx("header")?.id, "my-session.1");
    drop(s);
    let s = r.open("my-session.1").await.ctx("open by id")?;
    ensure_eq!(s.header().await.ctx("header")?.id, "my-session.1");
    Ok(())
}

pub async fn create_rejects_invalid_or_duplicate_id<R: SessionRepository>(r: &R) -> CaseResult {
    for bad in ["", "-x", "a/b", "../escape", "x."] {
        let res = r
            .create(CreateOptions {
                id: Some(bad.into()),
                ..create_opts()
            })
            .await;
        ensure!(res.is_err(), "id {bad:?} was accepted");
    }
    let s = r
        .create(CreateOptions {
            id: Some("taken".into()),
            ..create_opts()
        })
        .await
        .ctx("create")?;
    append(&s, user("a")).await?;
    drop(s);
    let again = r
        .create(CreateOptions {
            id: Some("taken".into()),
            ..create_opts()
        })
        .await;
    ensure!(
        again.is_err(),
        "a second session with id `taken` was created"
    );
    let s = r.open("taken").await.ctx("open")?;
    ensure_eq!(s.entry_count().await.ctx("count")?, 1);
    Ok(())
}

pub async fn header_keeps_cwd_parent_and_metadata<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r
        .create(CreateOptions {
            id: None,
            cwd: "/srv/other".into(),
            parent_session: Some("/x/parent.jsonl".into()),
            metadata: Some(json!({"tag": "t", "n": 1})),
        })
        .await
        .ctx("create")?;
    let loc = s.location();
    drop(s);
    let s = r.open(&loc).await.ctx("open")?;
    let h = s.header().await.ctx("header")?;
    ensure_eq!(h.cwd, "/srv/other");
    ensure_eq!(h.parent_session, Some("/x/parent.jsonl".to_owned()));
    ensure_eq!(h.metadata, Some(json!({"tag": "t", "n": 1})));
    ensure!(
        crate::time::iso_to_ms(&h.timestamp).is_some(),
        "bad header timestamp {}",
        h.timestamp
    );
    Ok(())
}

pub async fn open_missing_is_not_found<R: SessionRepository>(r: &R) -> CaseResult {
    expect_code(
        r.open("no-such-session").await.map(|_| ()),
        "not_found",
        "open id",
    )?;
    let s = r.create(create_opts()).await.ctx("create")?;
    let loc = s.location();
    drop(s);
    r.delete(&loc).await.ctx("delete")?;
    expect_code(r.open(&loc).await.map(|_| ()), "not_found", "open deleted")?;
    Ok(())
}

pub async fn list_is_newest_first<R: SessionRepository>(r: &R) -> CaseResult {
    let mut made = Vec::new();
    for i in 0..3 {
        let s = r.create(create_opts()).await.ctx("create")?;
        append(&s, user(&format!("m{i}"))).await?;
        made.push(s.header().await.ctx("header")?.id);
        drop(s);
        tokio::time::sleep(std::time::Duration::from_millis(15)).await;
    }
    // Touch the oldest: it becomes the newest.
    let s = r.open(&made[0]).await.ctx("open")?;
    append(&s, assistant("later")).await?;
    drop(s);
    let list = r.list().await.ctx("list")?;
    let order: Vec<String> = list.sessions.iter().map(|i| i.id.clone()).collect();
    ensure_eq!(
        order,
        vec![made[0].clone(), made[2].clone(), made[1].clone()]
    );
    for w in list.sessions.windows(2) {
        ensure!(
            w[0].modified_ms >= w[1].modified_ms,
            "list not sorted by modified_ms"
        );
    }
    Ok(())
}

pub async fn list_shows_name_and_first_message<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    append(
        &s,
        kind("model_change", json!({"provider": "p", "modelId": "m"})),
    )
    .await?;
    append(
        &s,
        msg(
            json!({"role": "user", "content": [{"type": "text", "text": "first"},
            {"type": "text", "text": "prompt"}], "timestamp": 1}),
        ),
    )
    .await?;
    append(&s, assistant("reply")).await?;
    append(&s, user("second prompt")).await?;
    append(&s, name("My work")).await?;
    drop(s);
    let list = r.list().await.ctx("list")?;
    ensure_eq!(list.sessions.len(), 1);
    let info = &list.sessions[0];
    ensure_eq!(info.name, Some("My work".to_owned()));
    ensure_eq!(info.first_message, Some("first prompt".to_owned()));
    if let Some(n) = info.entry_count {
        ensure_eq!(n, 5);
    }
    Ok(())
}

pub async fn delete_is_idempotent<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    append(&s, user("a")).await?;
    let id = s.header().await.ctx("header")?.id;
    let keep = r.create(create_opts()).await.ctx("create other")?;
    let keep_id = keep.header().await.ctx("header")?.id;
    drop(s);
    drop(keep);
    r.delete(&id).await.ctx("delete")?;
    expect_code(r.open(&id).await.map(|_| ()), "not_found", "open deleted")?;
    r.delete(&id).await.ctx("delete again")?;
    r.delete("never-existed").await.ctx("delete unknown")?;
    let list = r.list().await.ctx("list")?;
    let ids: Vec<String> = list.sessions.into_iter().map(|i| i.id).collect();
    ensure_eq!(ids, vec![keep_id]);
    Ok(())
}
