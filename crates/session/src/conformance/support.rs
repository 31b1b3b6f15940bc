//! Builders and checks the cases share.

use super::*;

pub(super) const CWD: &str = "/work/conformance";

pub(super) fn create_opts() -> CreateOptions {
    CreateOptions {
        cwd: CWD.into(),
        ..CreateOptions::default()
    }
}

pub(super) fn msg(v: Value) -> EntryKind {
    match serde_json::from_value::<AgentMessage>(v) {
        Ok(m) => EntryKind::message(m),
        Err(e) => EntryKind::Other {
            entry_type: format!("broken-test-message: {e}"),
            fields: Map::new(),
        },
    }
}

pub(super) fn user(text: &str) -> EntryKind {
    msg(json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}))
}

pub(super) fn usage(
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    cost: f64,
) -> Value {
    json!({
        "input": input, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write,
        "totalTokens": input + output + cache_read + cache_write,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}
    })
}

pub(super) fn assistant_with(text: &str, usage: Value) -> EntryKind {
    msg(json!({
        "role": "assistant", "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
        "usage": usage, "stopReason": "stop", "timestamp": 1
    }))
}

pub(super) fn assistant(text: &str) -> EntryKind {
    assistant_with(text, usage(0, 0, 0, 0, 0.0))
}

pub(super) fn kind(entry_type: &str, fields: Value) -> EntryKind {
    let map = match fields {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    match EntryKind::from_fields(entry_type, map) {
        Ok(k) => k,
        Err(e) => EntryKind::Other {
            entry_type: format!("broken-test-kind: {e}"),
            fields: Map::new(),
        },
    }
}

pub(super) fn custom(custom_type: &str, data: Value) -> EntryKind {
    kind("custom", json!({"customType": custom_type, "data": data}))
}

pub(super) fn label(target: &str, text: Option<&str>) -> EntryKind {
    EntryKind::Label(LabelEntry {
        target_id: target.into(),
        label: text.map(str::to_owned).into(),
        extra: Default::default(),
    })
}

pub(super) fn name(text: &str) -> EntryKind {
    EntryKind::SessionInfo(SessionInfoEntry {
        name: Nullable::Value(text.into()),
        extra: Default::default(),
    })
}

pub(super) fn compaction(first_kept: Option<&str>, retained_tail: bool) -> EntryKind {
    let mut fields = json!({"summary": "summary", "tokensBefore": 10});
    if let Some(k) = first_kept {
        fields["firstKeptEntryId"] = json!(k);
    }
    if retained_tail {
        fields["retainedTail"] = json!([]);
    }
    kind("compaction", fields)
}

pub(super) fn with_id(kind: EntryKind, id: &str) -> EntryDraft {
    EntryDraft {
        kind,
        id: Some(id.into()),
        timestamp: None,
    }
}

pub(super) trait CaseContext<T> {
    fn ctx(self, what: &str) -> Result<T, CaseFailure>;
}

impl<T> CaseContext<T> for Result<T, SessionError> {
    fn ctx(self, what: &str) -> Result<T, CaseFailure> {
        self.map_err(|e| CaseFailure(format!("{what}: unexpected error [{}] {e}", e.code())))
    }
}

pub(super) fn expect_code<T: std::fmt::Debug>(
    r: Result<T, SessionError>,
    code: &str,
    what: &str,
) -> CaseResult {
    match r {
        Ok(v) => Err(format!("{what}: expected a {code} error, got Ok({v:?})").into()),
        Err(e) if e.code() == code => Ok(()),
        Err(e) => Err(format!("{what}: expected {code}, got [{}] {e}", e.code()).into()),
    }
}

/// Checks `[message_count, cached_tokens, uncached_tokens, total_tokens]` and the cost.
pub(super) async fn expect_stats<S: SessionStorage>(
    s: &S,
    counts: [u64; 4],
    cost: f64,
) -> CaseResult {
    let st = s.stats().await.ctx("stats")?;
    let got = [
        st.message_count,
        st.cached_tokens,
        st.uncached_tokens,
        st.total_tokens,
    ];
    if got != counts || (st.cost_total - cost).abs() >= 1e-9 {
        return Err(format!(
            "stats [messages, cached, uncached, total] = {got:?}, cost {}; expected {counts:?}, cost {cost}",
            st.cost_total
        )
        .into());
    }
    Ok(())
}

pub(super) fn ids(path: Vec<SessionEntry>) -> Vec<String> {
    path.into_iter().map(|e| e.id).collect()
}

pub(super) async fn all_entries<S: SessionStorage>(
    s: &S,
) -> Result<Vec<SessionEntry>, CaseFailure> {
    let page = s.entries(None, None).await.ctx("entries")?;
    Ok(page.entries.into_iter().map(|(_, e)| e).collect())
}

pub(super) async fn append<S: SessionStorage>(
    s: &S,
    kind: EntryKind,
) -> Result<String, CaseFailure> {
    Ok(s.append(EntryDraft::new(kind)).await.ctx("append")?.id)
}
