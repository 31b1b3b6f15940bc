//! Conformance cases: What survives closing and reopening a session.

use super::support::*;
use super::*;

pub async fn leaf_recovered_after_reopen<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    append(&s, assistant("b")).await?;
    s.set_leaf(Some(&a)).await.ctx("set_leaf")?;
    let loc = s.location();
    let before = all_entries(&s).await?;
    drop(s);
    let s = r.open(&loc).await.ctx("reopen")?;
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(a.clone()));
    ensure_eq!(all_entries(&s).await?, before);
    let c = s.append(EntryDraft::new(user("c"))).await.ctx("append")?;
    ensure_eq!(c.parent_id, Some(a.clone()));
    drop(s);
    let s = r.open(&loc).await.ctx("reopen 2")?;
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(c.id));
    Ok(())
}

pub async fn null_leaf_recovered_after_reopen<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    append(&s, user("a")).await?;
    s.set_leaf(None).await.ctx("set_leaf(None)")?;
    let loc = s.location();
    drop(s);
    let s = r.open(&loc).await.ctx("reopen")?;
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, None::<String>);
    let b = s.append(EntryDraft::new(user("b"))).await.ctx("append")?;
    ensure_eq!(b.parent_id, None::<String>);
    Ok(())
}

pub async fn every_known_kind_round_trips<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("hello")).await?;
    let kinds = vec![
        assistant_with("hi", usage(10, 5, 3, 2, 0.5)),
        msg(
            json!({"role": "toolResult", "toolCallId": "t1", "toolName": "read",
            "content": [{"type": "text", "text": "file"}], "details": {"lines": 3},
            "isError": false, "timestamp": 2}),
        ),
        msg(
            json!({"role": "bashExecution", "command": "ls", "output": "a\n", "exitCode": 0,
            "cancelled": false, "truncated": false, "timestamp": 3}),
        ),
        msg(
            json!({"role": "custom", "customType": "note", "content": "c", "display": true,
            "timestamp": 4}),
        ),
        msg(json!({"role": "system", "content": "", "sections": {"base": "x"}, "timestamp": 5})),
        kind("thinking_level_change", json!({"thinkingLevel": "high"})),
        kind(
            "model_change",
            json!({"provider": "openai", "modelId": "gpt-5"}),
        ),
        kind(
            "active_tools_change",
            json!({"activeToolNames": ["read", "bash"]}),
        ),
        kind(
            "compaction",
            json!({"summary": "s", "firstKeptEntryId": a, "tokensBefore": 100,
                "details": {"readFiles": ["a"], "modifiedFiles": []},
                "usage": usage(1, 1, 0, 0, 0.25), "fromHook": false}),
        ),
        kind(
            "branch_summary",
            json!({"fromId": "root", "summary": "s", "details": {"x": 1}}),
        ),
        custom("state", json!({"nested": {"value": 1}})),
        kind(
            "custom_message",
            json!({"customType": "m", "content": [{"type": "text", "text": "t"}],
                "display": false, "details": {"d": true}}),
        ),
        label(&a, Some("mark")),
        name("Session name"),
        kind(
            "context_edit",
            json!({"targetId": a, "replacement": {"content": "edited"}}),
        ),
        kind(
            "usage",
            json!({"kind": "cache_warm", "provider": "anthropic", "model": "m",
                "usage": usage(1, 0, 0, 0, 0.01), "note": "warm"}),
        ),
    ];
    for k in kinds {
        if let EntryKind::Other { entry_type, .. } = &k {
            return Err(format!("test builder failed: {entry_type}").into());
        }
        append(&s, k).await?;
    }
    let before = all_entries(&s).await?;
    let loc = s.location();
    drop(s);
    let s = r.open(&loc).await.ctx("reopen")?;
    let after = all_entries(&s).await?;
    ensure_eq!(after.len(), before.len());
    for (x, y) in before.iter().zip(after.iter()) {
        ensure_eq!(x, y);
    }
    Ok(())
}

pub async fn unknown_entry_types_round_trip<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    append(&s, user("a")).await?;
    let mut fields = Map::new();
    fields.insert("payload".into(), json!({"deep": [1, 2.5, "x", null]}));
    fields.insert("flag".into(), json!(true));
    let future = EntryKind::Other {
        entry_type: "from_the_future".into(),
        fields,
    };
    let e = s
        .append(EntryDraft::new(future.clone()))
        .await
        .ctx("append")?;
    ensure_eq!(e.kind, future);
    ensure_eq!(s.leaf_id().await.ctx("leaf")?, Some(e.id.clone()));
    let found = s.find_entries("from_the_future").await.ctx("find")?;
    ensure_eq!(found, vec![e.clone()]);
    let loc = s.location();
    drop(s);
    let s = r.open(&loc).await.ctx("reopen")?;
    ensure_eq!(s.get_entry(&e.id).await.ctx("get")?, Some(e));
    Ok(())
}

pub async fn unknown_fields_survive_reopen<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let k = msg(json!({
        "role": "assistant", "content": [{"type": "text", "text": "x", "futureBlockField": 1}],
        "api": "openai-responses", "provider": "openai", "model": "gpt-5",
        "usage": usage(1, 1, 0, 0, 0.0), "stopReason": "stop", "timestamp": 1,
        "responseId": "resp_1", "durationMs": 1234, "diagnostics": {"retries": [1, 2]}
    }));
    let e = s.append(EntryDraft::new(k)).await.ctx("append")?;
    let line = serde_json::to_value(&e).map_err(|x| x.to_string())?;
    ensure_eq!(line["message"]["responseId"], json!("resp_1"));
    ensure_eq!(line["message"]["diagnostics"]["retries"], json!([1, 2]));
    ensure_eq!(line["message"]["content"][0]["futureBlockField"], json!(1));
    let loc = s.location();
    drop(s);
    let s = r.open(&loc).await.ctx("reopen")?;
    let back = s.get_entry(&e.id).await.ctx("get")?;
    let back = serde_json::to_value(&back).map_err(|x| x.to_string())?;
    ensure_eq!(back, line);
    Ok(())
}

pub async fn open_by_id_and_by_location<R: SessionRepository>(r: &R) -> CaseResult {
    let s = r.create(create_opts()).await.ctx("create")?;
    let a = append(&s, user("a")).await?;
    let id = s.header().await.ctx("header")?.id;
    let loc = s.location();
    drop(s);
    let by_id = r.open(&id).await.ctx("open by id")?;
    ensure_eq!(by_id.leaf_id().await.ctx("leaf")?, Some(a.clone()));
    ensure_eq!(by_id.location(), loc.clone());
    drop(by_id);
    let by_loc = r.open(&loc).await.ctx("open by location")?;
    ensure_eq!(by_loc.header().await.ctx("header")?.id, id);
    Ok(())
}
