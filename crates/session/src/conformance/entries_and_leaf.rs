//! Conformance cases: Appends, explicit ids, the leaf and `set_leaf`.

use super::support::*;
use super::*;

pub async fn append_assigns_parent_and_moves_leaf<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, None::<String>);
    let a = s
        .append(EntryDraft::new(user("one")))
        .await
        .ctx("append a")?;
    ensure_eq!(a.parent_id, None::<String>);
    ensure!(
        crate::time::iso_to_ms(&a.timestamp).is_some(),
        "timestamp {} is not ISO-8601 with ms",
        a.timestamp
    );
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(a.id.clone()));
    let b = s
        .append(EntryDraft::new(assistant("two")))
        .await
        .ctx("append b")?;
    ensure_eq!(b.parent_id, Some(a.id.clone()));
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(b.id.clone()));
    ensure_eq!(s.get_entry(&b.id).await.ctx("get")?, Some(b.clone()));
    Ok(())
}

pub async fn append_keeps_given_id_and_timestamp<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let e = s
        .append(EntryDraft {
            kind: user("x"),
            id: Some("given-1".into()),
            timestamp: Some("2026-06-20T15:00:00.000Z".into()),
        })
        .await
        .ctx("append")?;
    ensure_eq!(e.id, "given-1");
    ensure_eq!(e.timestamp, "2026-06-20T15:00:00.000Z");
    let got = s.get_entry("given-1").await.ctx("get")?;
    ensure_eq!(got, Some(e));
    Ok(())
}

pub async fn generated_ids_are_short_hex_and_unused<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let mut seen = std::collections::HashSet::new();
    for i in 0..20 {
        let id = append(&s, custom("n", json!(i))).await?;
        ensure!(
            id.len() == 8 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
            "generated id {id:?} is not 8 lowercase hex"
        );
        ensure!(seen.insert(id.clone()), "id {id} generated twice");
    }
    let fresh = s.create_entry_id().await.ctx("create_entry_id")?;
    ensure!(!seen.contains(&fresh), "create_entry_id returned a used id");
    ensure_eq!(s.get_entry(&fresh).await.ctx("get")?, None::<SessionEntry>);
    Ok(())
}

pub async fn set_leaf_appends_leaf_entry_and_branches<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    let b = append(&s, assistant("b")).await?;
    let leaf = s.set_leaf(Some(&a)).await.ctx("set_leaf")?;
    ensure_eq!(leaf.entry_type(), "leaf");
    ensure_eq!(leaf.parent_id, Some(b.clone()));
    ensure_eq!(leaf.kind.target_id(), Some(a.as_str()));
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(a.clone()));
    let c = s.append(EntryDraft::new(user("c"))).await.ctx("append c")?;
    ensure_eq!(c.parent_id, Some(a.clone()));
    let kids = s.children(Some(&a)).await.ctx("children")?;
    let kid_ids: Vec<_> = kids.iter().map(|e| e.id.clone()).collect();
    ensure_eq!(kid_ids, vec![b.clone(), c.id.clone()]);
    ensure_eq!(s.entry_count().await.ctx("count")?, 4);
    Ok(())
}

pub async fn set_leaf_null_starts_a_new_root<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    let leaf = s.set_leaf(None).await.ctx("set_leaf(None)")?;
    ensure_eq!(leaf.parent_id, Some(a.clone()));
    ensure_eq!(leaf.kind.target_id(), None);
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, None::<String>);
    ensure_eq!(
        s.path_to_root_or_compaction(None).await.ctx("path")?.len(),
        0
    );
    let b = s.append(EntryDraft::new(user("b"))).await.ctx("append")?;
    ensure_eq!(b.parent_id, None::<String>);
    let roots = ids(s.children(None).await.ctx("roots")?);
    ensure_eq!(roots, vec![a, b.id]);
    Ok(())
}

pub async fn set_leaf_unknown_target_changes_nothing<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    expect_code(
        s.set_leaf(Some("missing")).await,
        "not_found",
        "set_leaf(missing)",
    )?;
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(a.clone()));
    ensure_eq!(s.entry_count().await.ctx("count")?, 1);
    let b = s.append(EntryDraft::new(user("b"))).await.ctx("append")?;
    ensure_eq!(b.parent_id, Some(a));
    Ok(())
}

pub async fn leaf_entries_stay_off_paths<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    let _b = append(&s, assistant("b")).await?;
    let leaf = s.set_leaf(Some(&a)).await.ctx("set_leaf")?;
    let c = append(&s, user("c")).await?;
    let path = ids(s.ancestry(None).await.ctx("ancestry")?);
    ensure_eq!(path, vec![a.clone(), c.clone()]);
    ensure!(!path.contains(&leaf.id), "leaf entry on the path");
    let leaves = s.find_entries("leaf").await.ctx("find leaf")?;
    ensure_eq!(leaves, vec![leaf]);
    Ok(())
}

pub async fn duplicate_id_rejected_without_state_change<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    s.append(with_id(user("a"), "shared")).await.ctx("append")?;
    let b = append(&s, assistant("b")).await?;
    expect_code(
        s.append(with_id(user("again"), "shared")).await,
        "invalid_entry",
        "duplicate append",
    )?;
    let copy = SessionEntry::new("shared", None, "2026-06-20T15:00:00.000Z", user("c"));
    expect_code(
        s.append_entry(copy).await,
        "invalid_entry",
        "duplicate append_entry",
    )?;
    ensure_eq!(s.entry_count().await.ctx("count")?, 2);
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(b));
    let first = s.get_entry("shared").await.ctx("get")?;
    ensure!(
        first.is_some_and(|e| e.parent_id.is_none()),
        "the original entry changed"
    );
    Ok(())
}

pub async fn failed_append_does_not_block_later_appends<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    for _ in 0..3 {
        expect_code(
            s.append(with_id(user("dup"), &a)).await,
            "invalid_entry",
            "duplicate",
        )?;
        expect_code(
            s.append(EntryDraft::new(label("nope", Some("x")))).await,
            "not_found",
            "label on missing",
        )?;
    }
    let b = s
        .append(EntryDraft::new(assistant("b")))
        .await
        .ctx("append after failures")?;
    ensure_eq!(b.parent_id, Some(a));
    ensure_eq!(s.entry_count().await.ctx("count")?, 2);
    Ok(())
}

pub async fn concurrent_appends_serialize<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let root = append(&s, user("root")).await?;
    let futs = (0..32).map(|i| s.append(EntryDraft::new(custom("c", json!(i)))));
    let results = futures::future::join_all(futs).await;
    for r in &results {
        if let Err(e) = r {
            return Err(format!("concurrent append failed: {e}").into());
        }
    }
    let log = all_entries(&s).await?;
    ensure_eq!(log.len(), 33);
    let mut prev = root;
    for e in &log[1..] {
        ensure_eq!(e.parent_id.as_deref(), Some(prev.as_str()));
        prev = e.id.clone();
    }
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(prev));
    let kids = s.children(Some(&log[0].id)).await.ctx("children")?;
    ensure_eq!(kids.len(), 1);
    Ok(())
}

pub async fn append_entry_keeps_envelope_verbatim<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = SessionEntry::new("aaaa0001", None, "2020-01-01T00:00:00.000Z", user("a"));
    let b = SessionEntry::new(
        "aaaa0002",
        Some("aaaa0001".into()),
        "2020-01-01T00:00:01.000Z",
        assistant("b"),
    );
    s.append_entry(a.clone()).await.ctx("append_entry a")?;
    s.append_entry(b.clone()).await.ctx("append_entry b")?;
    ensure_eq!(all_entries(&s).await?, vec![a, b]);
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some("aaaa0002".to_owned()));
    Ok(())
}

pub async fn append_entry_unknown_parent_rejected<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    let orphan = SessionEntry::new(
        "orphan01",
        Some("missing".into()),
        "2020-01-01T00:00:00.000Z",
        user("x"),
    );
    expect_code(
        s.append_entry(orphan).await,
        "invalid_entry",
        "orphan append_entry",
    )?;
    ensure_eq!(s.entry_count().await.ctx("count")?, 1);
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(a));
    ensure_eq!(
        s.get_entry("orphan01").await.ctx("get")?,
        None::<SessionEntry>
    );
    Ok(())
}

pub async fn append_entry_moves_leaf_by_recovery_rule<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = SessionEntry::new("e1", None, "2020-01-01T00:00:00.000Z", user("a"));
    let b = SessionEntry::new(
        "e2",
        Some("e1".into()),
        "2020-01-01T00:00:00.000Z",
        user("b"),
    );
    let jump = SessionEntry::new(
        "e3",
        Some("e2".into()),
        "2020-01-01T00:00:00.000Z",
        EntryKind::Leaf(LeafEntry {
            target_id: Some("e1".into()),
            extra: Default::default(),
        }),
    );
    for e in [a, b, jump] {
        s.append_entry(e).await.ctx("append_entry")?;
    }
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some("e1".to_owned()));
    let c = s.append(EntryDraft::new(user("c"))).await.ctx("append")?;
    ensure_eq!(c.parent_id, Some("e1".to_owned()));
    Ok(())
}

pub async fn get_entry_missing_is_none<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    ensure_eq!(s.get_entry("nope").await.ctx("get")?, None::<SessionEntry>);
    append(&s, user("a")).await?;
    ensure_eq!(s.get_entry("nope").await.ctx("get")?, None::<SessionEntry>);
    Ok(())
}

pub async fn entry_count_counts_every_entry<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    ensure_eq!(s.entry_count().await.ctx("count")?, 0);
    let a = append(&s, user("a")).await?;
    append(&s, label(&a, Some("x"))).await?;
    s.set_leaf(Some(&a)).await.ctx("set_leaf")?;
    append(&s, name("n")).await?;
    ensure_eq!(s.entry_count().await.ctx("count")?, 4);
    Ok(())
}

pub async fn save_point_keeps_state<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    s.save_point().await.ctx("save_point on empty")?;
    let a = append(&s, user("a")).await?;
    s.save_point().await.ctx("save_point")?;
    s.save_point().await.ctx("second save_point")?;
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(a));
    ensure_eq!(s.entry_count().await.ctx("count")?, 1);
    Ok(())
}
