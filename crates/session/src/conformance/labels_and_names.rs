//! Conformance cases: Labels and session names.

use super::support::*;
use super::*;

pub async fn labels_set_clear_and_trim<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    ensure_eq!(s.get_label(&a).await.ctx("label")?, None::<String>);
    append(&s, label(&a, Some("  keep  "))).await?;
    ensure_eq!(s.get_label(&a).await.ctx("label")?, Some("keep".to_owned()));
    append(&s, label(&a, None)).await?;
    ensure_eq!(s.get_label(&a).await.ctx("label")?, None::<String>);
    append(&s, label(&a, Some("again"))).await?;
    append(&s, label(&a, Some("   "))).await?;
    ensure_eq!(s.get_label(&a).await.ctx("label")?, None::<String>);
    Ok(())
}

pub async fn latest_label_wins<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    let b = append(&s, assistant("b")).await?;
    append(&s, label(&a, Some("first"))).await?;
    append(&s, label(&b, Some("other"))).await?;
    append(&s, label(&a, Some("second"))).await?;
    ensure_eq!(
        s.get_label(&a).await.ctx("label")?,
        Some("second".to_owned())
    );
    ensure_eq!(
        s.get_label(&b).await.ctx("label")?,
        Some("other".to_owned())
    );
    ensure_eq!(s.get_label("missing").await.ctx("label")?, None::<String>);
    Ok(())
}

pub async fn label_on_unknown_target_is_not_found<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    expect_code(
        s.append(EntryDraft::new(label("missing", Some("x")))).await,
        "not_found",
        "label missing target",
    )?;
    ensure_eq!(s.entry_count().await.ctx("count")?, 1);
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(a));
    Ok(())
}

pub async fn session_name_normalizes_newlines<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    ensure_eq!(s.session_name().await.ctx("name")?, None::<String>);
    let e = s
        .append(EntryDraft::new(name("  first\r\n\nsecond\nthird  ")))
        .await
        .ctx("append")?;
    let stored = match &e.kind {
        EntryKind::SessionInfo(i) => i.name.get().cloned(),
        _ => None,
    };
    ensure_eq!(stored, Some("first second third".to_owned()));
    ensure_eq!(
        s.session_name().await.ctx("name")?,
        Some("first second third".to_owned())
    );
    Ok(())
}

pub async fn session_name_latest_wins_and_clears<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    append(&s, name("First")).await?;
    append(&s, name("Second")).await?;
    ensure_eq!(
        s.session_name().await.ctx("name")?,
        Some("Second".to_owned())
    );
    append(&s, name("\n")).await?;
    ensure_eq!(s.session_name().await.ctx("name")?, None::<String>);
    Ok(())
}

pub async fn labels_and_names_survive_reopen<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    append(&s, label(&a, Some("bookmark"))).await?;
    append(&s, name("Named")).await?;
    let loc = s.location();
    drop(s);
    let s = r.open(&loc).await.ctx("reopen")?;
    ensure_eq!(
        s.get_label(&a).await.ctx("label")?,
        Some("bookmark".to_owned())
    );
    ensure_eq!(
        s.session_name().await.ctx("name")?,
        Some("Named".to_owned())
    );
    Ok(())
}
