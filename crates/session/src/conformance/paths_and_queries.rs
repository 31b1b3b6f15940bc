//! Conformance cases: Paths from a leaf, compaction cuts, paging, queries, derived settings.

use super::support::*;
use super::*;

pub async fn ancestry_follows_the_active_branch<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    let b = append(&s, assistant("b")).await?;
    let c = append(&s, user("c")).await?;
    s.set_leaf(Some(&b)).await.ctx("set_leaf")?;
    let d = append(&s, user("d")).await?;
    ensure_eq!(
        ids(s.ancestry(None).await.ctx("ancestry")?),
        vec![a.clone(), b.clone(), d.clone()]
    );
    ensure_eq!(
        ids(s.ancestry(Some(&c)).await.ctx("ancestry c")?),
        vec![a, b, c]
    );
    Ok(())
}

pub async fn path_stops_at_first_kept_entry<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    let b = append(&s, assistant("b")).await?;
    let c = append(&s, user("c")).await?;
    let k = append(&s, compaction(Some(&b), false)).await?;
    let d = append(&s, user("d")).await?;
    ensure_eq!(
        ids(s.path_to_root_or_compaction(None).await.ctx("path")?),
        vec![b.clone(), c.clone(), k.clone(), d.clone()]
    );
    ensure_eq!(
        ids(s.ancestry(None).await.ctx("ancestry")?),
        vec![a, b, c, k, d]
    );
    Ok(())
}

pub async fn path_starts_at_compaction_with_retained_tail<R: SessionRepository>(
    r: &R,
) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    append(&s, assistant("b")).await?;
    let k = append(&s, compaction(Some(&a), true)).await?;
    let d = append(&s, user("d")).await?;
    ensure_eq!(
        ids(s.path_to_root_or_compaction(None).await.ctx("path")?),
        vec![k.clone(), d]
    );
    ensure_eq!(
        ids(s
            .path_to_root_or_compaction(Some(&k))
            .await
            .ctx("path at k")?),
        vec![k]
    );
    Ok(())
}

pub async fn path_ignores_older_compactions<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    let b = append(&s, assistant("b")).await?;
    let old = append(&s, compaction(Some(&b), true)).await?;
    let c = append(&s, user("c")).await?;
    // The newest compaction keeps from `a`, reaching past the older one.
    let new = append(&s, compaction(Some(&a), false)).await?;
    let d = append(&s, user("d")).await?;
    ensure_eq!(
        ids(s.path_to_root_or_compaction(None).await.ctx("path")?),
        vec![a, b, old, c, new, d]
    );
    Ok(())
}

pub async fn path_from_explicit_leaf_and_unknown_leaf<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    let b = append(&s, assistant("b")).await?;
    append(&s, user("c")).await?;
    ensure_eq!(
        ids(s.path_to_root_or_compaction(Some(&b)).await.ctx("path")?),
        vec![a, b]
    );
    expect_code(
        s.path_to_root_or_compaction(Some("missing")).await,
        "not_found",
        "path from missing",
    )?;
    expect_code(
        s.ancestry(Some("missing")).await,
        "not_found",
        "ancestry missing",
    )?;
    Ok(())
}

pub async fn path_of_empty_session_is_empty<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    ensure_eq!(
        s.path_to_root_or_compaction(None).await.ctx("path")?.len(),
        0
    );
    ensure_eq!(s.ancestry(None).await.ctx("ancestry")?.len(), 0);
    ensure_eq!(all_entries(&s).await?.len(), 0);
    ensure_eq!(s.children(None).await.ctx("children")?.len(), 0);
    Ok(())
}

pub async fn entries_page_with_cursor<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let mut want = Vec::new();
    for i in 0..5 {
        want.push(append(&s, custom("n", json!(i))).await?);
    }
    let p1 = s.entries(None, Some(2)).await.ctx("page 1")?;
    let seqs: Vec<u64> = p1.entries.iter().map(|(q, _)| *q).collect();
    ensure_eq!(seqs, vec![1, 2]);
    ensure_eq!(p1.next_after_seq, Some(2));
    let p2 = s.entries(p1.next_after_seq, Some(2)).await.ctx("page 2")?;
    ensure_eq!(
        p2.entries.iter().map(|(q, _)| *q).collect::<Vec<_>>(),
        vec![3, 4]
    );
    let p3 = s.entries(p2.next_after_seq, Some(2)).await.ctx("page 3")?;
    ensure_eq!(p3.entries.len(), 1);
    ensure_eq!(p3.entries[0].1.id, want[4].clone());
    ensure_eq!(p3.next_after_seq, None);
    let past = s.entries(Some(99), None).await.ctx("past end")?;
    ensure_eq!(past.entries.len(), 0);
    ensure_eq!(past.next_after_seq, None);
    let all = s.entries(None, None).await.ctx("all")?;
    let got: Vec<String> = all.entries.into_iter().map(|(_, e)| e.id).collect();
    ensure_eq!(got, want);
    Ok(())
}

pub async fn find_entries_by_type_in_log_order<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, custom("x", json!(1))).await?;
    append(&s, user("u")).await?;
    let b = append(&s, custom("y", json!(2))).await?;
    s.set_leaf(Some(&a)).await.ctx("set_leaf")?;
    let c = append(&s, custom("z", json!(3))).await?;
    let found = ids(s.find_entries("custom").await.ctx("find")?);
    ensure_eq!(found, vec![a, b, c]);
    ensure_eq!(s.find_entries("nothing").await.ctx("find none")?.len(), 0);
    Ok(())
}

pub async fn children_list_branches_in_log_order<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    let b = append(&s, assistant("b")).await?;
    s.set_leaf(Some(&a)).await.ctx("set_leaf")?;
    let c = append(&s, assistant("c")).await?;
    s.set_leaf(Some(&a)).await.ctx("set_leaf 2")?;
    let d = append(&s, assistant("d")).await?;
    ensure_eq!(
        ids(s.children(Some(&a)).await.ctx("children")?),
        vec![b.clone(), c, d]
    );
    ensure_eq!(s.children(Some(&b)).await.ctx("children b")?.len(), 1);
    ensure_eq!(ids(s.children(None).await.ctx("roots")?), vec![a]);
    expect_code(
        s.children(Some("missing")).await,
        "not_found",
        "children missing",
    )?;
    Ok(())
}

pub async fn context_edit_targets_are_checked<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    let m = append(
        &s,
        kind("model_change", json!({"provider": "p", "modelId": "m"})),
    )
    .await?;
    let b = append(&s, assistant("b")).await?;
    let edit =
        |t: &str, rep: Value| kind("context_edit", json!({"targetId": t, "replacement": rep}));
    expect_code(
        s.append(EntryDraft::new(edit(&m, Value::Null))).await,
        "invalid_entry",
        "edit of model_change",
    )?;
    expect_code(
        s.append(EntryDraft::new(edit("missing", Value::Null)))
            .await,
        "not_found",
        "edit of missing",
    )?;
    expect_code(
        s.append(EntryDraft::new(edit(&a, json!("bare string"))))
            .await,
        "invalid_entry",
        "replacement without content",
    )?;
    s.append(EntryDraft::new(edit(&b, json!({"content": "short"}))))
        .await
        .ctx("valid edit")?;
    s.set_leaf(Some(&a)).await.ctx("set_leaf")?;
    expect_code(
        s.append(EntryDraft::new(edit(&b, Value::Null))).await,
        "invalid_entry",
        "edit off the active branch",
    )?;
    s.append(EntryDraft::new(edit(&a, Value::Null)))
        .await
        .ctx("null edit on branch")?;
    Ok(())
}

pub async fn derived_settings_replay_the_full_ancestry<R: SessionRepository>(r: &R) -> CaseResult {
    use super::super::storage::DerivedSettings;
    let s = r.create(create_opts()).await.ctx("create")?;
    ensure_eq!(
        s.derived_settings(None).await.ctx("empty")?,
        DerivedSettings::default()
    );
    append(
        &s,
        kind(
            "model_change",
            json!({"provider": "openai", "modelId": "gpt-5"}),
        ),
    )
    .await?;
    append(
        &s,
        kind("thinking_level_change", json!({"thinkingLevel": "high"})),
    )
    .await?;
    append(
        &s,
        kind("active_tools_change", json!({"activeToolNames": ["read"]})),
    )
    .await?;
    let u = append(&s, user("a")).await?;
    let a = append(&s, assistant("b")).await?;
    // A compaction must not make the replay forget earlier settings.
    append(&s, compaction(Some(&a), true)).await?;
    let tip = append(&s, user("c")).await?;
    let want = DerivedSettings {
        model: Some(("anthropic".into(), "claude-sonnet-4-5".into())),
        thinking_level: Some("high".into()),
        active_tool_names: Some(vec!["read".into()]),
    };
    ensure_eq!(s.derived_settings(None).await.ctx("derived")?, want);
    // A branch from `u` sees the model_change, not the later assistant message.
    s.set_leaf(Some(&u)).await.ctx("set_leaf")?;
    append(
        &s,
        kind("active_tools_change", json!({"activeToolNames": null})),
    )
    .await?;
    append(
        &s,
        kind("thinking_level_change", json!({"thinkingLevel": "low"})),
    )
    .await?;
    let got = s.derived_settings(None).await.ctx("derived branch")?;
    ensure_eq!(
        got,
        DerivedSettings {
            model: Some(("openai".into(), "gpt-5".into())),
            thinking_level: Some("low".into()),
            active_tool_names: None,
        }
    );
    for leaf in [None, Some(tip.as_str()), Some(u.as_str())] {
        let replay = DerivedSettings::from_entries(&s.ancestry(leaf).await.ctx("ancestry")?);
        ensure_eq!(s.derived_settings(leaf).await.ctx("derived")?, replay);
    }
    expect_code(
        s.derived_settings(Some("missing")).await,
        "not_found",
        "missing leaf",
    )?;
    Ok(())
}
