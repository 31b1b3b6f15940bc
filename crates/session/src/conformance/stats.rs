//! Conformance cases: Message counts, token totals and cost.

use super::support::*;
use super::*;

pub async fn stats_count_messages_and_assistant_usage<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let st = s.stats().await.ctx("stats")?;
    ensure_eq!(st, super::super::storage::SessionStats::default());
    append(&s, user("a")).await?;
    append(&s, assistant_with("b", usage(10, 5, 3, 2, 0.5))).await?;
    append(&s, custom("not-a-message", json!(1))).await?;
    append(&s, assistant_with("c", usage(1, 1, 1, 1, 0.25))).await?;
    expect_stats(&s, [3, 4, 14, 24], 0.75).await
}

pub async fn stats_include_summaries_and_usage_entries<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    append(
        &s,
        kind(
            "compaction",
            json!({"summary": "s", "firstKeptEntryId": a, "tokensBefore": 1,
                "usage": usage(100, 10, 0, 0, 1.0)}),
        ),
    )
    .await?;
    append(
        &s,
        kind(
            "branch_summary",
            json!({"fromId": "root", "summary": "s", "usage": usage(0, 5, 20, 0, 0.5)}),
        ),
    )
    .await?;
    append(
        &s,
        kind(
            "usage",
            json!({"kind": "cache_warm", "provider": "p", "model": "m",
                "usage": usage(0, 0, 0, 7, 0.25)}),
        ),
    )
    .await?;
    expect_stats(&s, [1, 20, 107, 142], 1.75).await
}

pub async fn stats_skip_incomplete_usage<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    append(&s, user("a")).await?;
    // A user message's usage never counts; an assistant usage without cost.total is skipped.
    append(
        &s,
        msg(json!({"role": "user", "content": "x", "timestamp": 1,
            "usage": usage(50, 50, 50, 50, 1.0)})),
    )
    .await?;
    append(&s, custom("u", json!({"usage": usage(9, 9, 9, 9, 9.0)}))).await?;
    let st = s.stats().await.ctx("stats")?;
    ensure_eq!(st.message_count, 2);
    ensure_eq!(st.total_tokens, 0);
    ensure_eq!(st.cost_total, 0.0);
    Ok(())
}

pub async fn stats_survive_reopen<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    append(&s, user("a")).await?;
    append(&s, assistant_with("b", usage(10, 5, 3, 2, 0.5))).await?;
    let before = s.stats().await.ctx("stats")?;
    let loc = s.location();
    drop(s);
    let s = r.open(&loc).await.ctx("reopen")?;
    ensure_eq!(s.stats().await.ctx("stats")?, before);
    Ok(())
}
