//! The pure projection rules of DECISIONS §3, checked on hand-built entry lists.

use arbor_session::context::projection::{
    bounded_branch, build_session_context, build_session_context_owned, default_context_entries,
    derive_state, recovered_leaf, ContextOptions,
};
use arbor_session::context::{
    convert_to_llm, expected_json, ProjectionCache, BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX,
    COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX,
};
use arbor_session::entry::SessionEntry;
use arbor_session::message::AgentMessage;
use serde_json::{json, Value};

use super::context_support::{entries, msg};

const TS: &str = "2026-06-20T15:00:00.000Z";

fn m(id: &str, parent: Option<&str>, message: Value) -> String {
    json!({"type": "message", "id": id, "parentId": parent, "timestamp": TS, "message": message})
        .to_string()
}
fn u(id: &str, parent: Option<&str>, text: &str) -> String {
    m(
        id,
        parent,
        json!({"role": "user", "content": text, "timestamp": 1}),
    )
}
fn a(id: &str, parent: Option<&str>, text: &str) -> String {
    m(
        id,
        parent,
        json!({"role": "assistant", "content": [{"type": "text", "text": text}],
               "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
               "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
               "stopReason": "stop", "timestamp": 2}),
    )
}
fn sys(id: &str, parent: Option<&str>, text: &str) -> String {
    m(
        id,
        parent,
        json!({"role": "system", "content": text, "timestamp": 3}),
    )
}
fn other(id: &str, parent: Option<&str>, ty: &str, fields: Value) -> String {
    let mut v = json!({"type": ty, "id": id, "parentId": parent, "timestamp": TS});
    for (k, x) in fields.as_object().cloned().unwrap_or_default() {
        v[k] = x;
    }
    v.to_string()
}
fn log(lines: &[String]) -> Vec<SessionEntry> {
    entries(&lines.join("\n"))
}

/// The text of every model-visible message, for compact assertions.
fn texts(path: &[SessionEntry], options: &ContextOptions) -> Vec<String> {
    let ctx = build_session_context(path, options);
    convert_to_llm(&ctx.messages)
        .iter()
        .map(|m| {
            let v = serde_json::to_value(m).unwrap();
            let role = v["role"].as_str().unwrap().to_string();
            let body = match &v["content"] {
                Value::String(s) => s.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .map(|b| b["text"].as_str().unwrap_or("<block>").to_string())
                    .collect::<Vec<_>>()
                    .join("+"),
                other => other.to_string(),
            };
            format!("{role}:{body}")
        })
        .collect()
}

fn summary(s: &str) -> String {
    format!("user:{COMPACTION_SUMMARY_PREFIX}{s}{COMPACTION_SUMMARY_SUFFIX}")
}

#[test]
fn wrapper_constants_are_byte_exact() {
    assert_eq!(
        COMPACTION_SUMMARY_PREFIX,
        "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
    );
    assert_eq!(COMPACTION_SUMMARY_SUFFIX, "\n</summary>");
    assert_eq!(
        BRANCH_SUMMARY_PREFIX,
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
    );
    assert_eq!(BRANCH_SUMMARY_SUFFIX, "</summary>");
}

#[test]
fn no_compaction_projects_the_whole_ancestry() {
    let path = log(&[
        u("e1", None, "hi"),
        a("e2", Some("e1"), "hello"),
        u("e3", Some("e2"), "again"),
    ]);
    assert_eq!(
        texts(&path, &ContextOptions::default()),
        ["user:hi", "assistant:hello", "user:again"]
    );
    assert_eq!(bounded_branch(&path).len(), 3);
}

#[test]
fn compaction_keeps_first_kept_range_and_drops_superseded_system_messages() {
    let path = log(&[
        sys("s1", None, "prompt v1"),
        u("e1", Some("s1"), "old"),
        sys("s2", Some("e1"), "prompt v2"),
        u("e2", Some("s2"), "kept"),
        other(
            "c1",
            Some("e2"),
            "compaction",
            json!({"summary": "S", "firstKeptEntryId": "e1", "tokensBefore": 10}),
        ),
        sys("s3", Some("c1"), "prompt v3"),
        u("e3", Some("s3"), "after"),
    ]);
    assert_eq!(
        texts(&path, &ContextOptions::default()),
        [
            summary("S"),
            "user:old".into(),
            "user:kept".into(),
            "system:prompt v3".into(),
            "user:after".into()
        ]
    );
    // getBranch() starts at firstKept.
    let ids: Vec<&str> = bounded_branch(&path)
        .iter()
        .map(|e| e.id.as_str())
        .collect();
    assert_eq!(ids, ["e1", "s2", "e2", "c1", "s3", "e3"]);
}

#[test]
fn compaction_system_message_comes_first_and_retained_tail_follows_summary() {
    let path = log(&[
        u("e1", None, "old"),
        other(
            "c1",
            Some("e1"),
            "compaction",
            json!({
                "summary": "S", "firstKeptEntryId": "e1", "tokensBefore": 10,
                "systemMessage": {"role": "system", "content": "snapshot", "timestamp": 5},
                "retainedTail": [{"role": "user", "content": "tail", "timestamp": 6}]
            }),
        ),
        u("e2", Some("c1"), "after"),
    ]);
    // retainedTail wins over firstKept: nothing before the compaction is read.
    assert_eq!(
        texts(&path, &ContextOptions::default()),
        [
            "system:snapshot".to_string(),
            summary("S"),
            "user:tail".into(),
            "user:after".into()
        ]
    );
    let ids: Vec<&str> = bounded_branch(&path)
        .iter()
        .map(|e| e.id.as_str())
        .collect();
    assert_eq!(ids, ["c1", "e2"]);
}

#[test]
fn only_the_newest_compaction_projects_and_older_ones_do_not_move_the_boundary() {
    let path = log(&[
        u("e1", None, "one"),
        other(
            "c1",
            Some("e1"),
            "compaction",
            json!({"summary": "S1", "firstKeptEntryId": "e1", "tokensBefore": 10}),
        ),
        u("e2", Some("c1"), "two"),
        other(
            "c2",
            Some("e2"),
            "compaction",
            json!({"summary": "S2", "firstKeptEntryId": "e1", "tokensBefore": 20}),
        ),
        u("e3", Some("c2"), "three"),
    ]);
    // c1 sits inside c2's kept range but contributes nothing.
    assert_eq!(
        texts(&path, &ContextOptions::default()),
        [
            summary("S2"),
            "user:one".into(),
            "user:two".into(),
            "user:three".into()
        ]
    );
    let ids: Vec<&str> = bounded_branch(&path)
        .iter()
        .map(|e| e.id.as_str())
        .collect();
    assert_eq!(ids, ["e1", "c1", "e2", "c2", "e3"]);
}

#[test]
fn first_kept_off_the_path_keeps_nothing_before_the_compaction() {
    let path = log(&[
        u("e1", None, "one"),
        other(
            "c1",
            Some("e1"),
            "compaction",
            json!({"summary": "S", "firstKeptEntryId": "zzzz", "tokensBefore": 1}),
        ),
        u("e2", Some("c1"), "two"),
    ]);
    assert_eq!(
        texts(&path, &ContextOptions::default()),
        [summary("S"), "user:two".into()]
    );
    let ctx_ids: Vec<&str> = default_context_entries(&path)
        .iter()
        .map(|e| e.id.as_str())
        .collect();
    assert_eq!(ctx_ids, ["c1", "e2"]);
}

#[test]
fn derived_state_replays_the_full_ancestry_across_compactions() {
    let path = log(&[
        other(
            "t1",
            None,
            "thinking_level_change",
            json!({"thinkingLevel": "high"}),
        ),
        other(
            "m1",
            Some("t1"),
            "model_change",
            json!({"provider": "openai", "modelId": "gpt-5"}),
        ),
        other(
            "k1",
            Some("m1"),
            "active_tools_change",
            json!({"activeToolNames": ["read", "bash"]}),
        ),
        u("e1", Some("k1"), "one"),
        other(
            "c1",
            Some("e1"),
            "compaction",
            json!({"summary": "S", "firstKeptEntryId": "e1", "tokensBefore": 1, "retainedTail": []}),
        ),
        u("e2", Some("c1"), "two"),
    ]);
    let state = derive_state(&path);
    assert_eq!(state.thinking_level, "high");
    assert_eq!(state.model.as_ref().unwrap().model_id, "gpt-5");
    assert_eq!(
        state.active_tool_names,
        Some(vec!["read".into(), "bash".into()])
    );
    // A later assistant message moves the model.
    let mut path = path;
    path.extend(log(&[a("a1", Some("e2"), "hi")]));
    assert_eq!(derive_state(&path).model.unwrap().provider, "anthropic");
    // Defaults.
    let empty: Vec<SessionEntry> = Vec::new();
    let d = derive_state(&empty);
    assert_eq!(
        (d.model, d.thinking_level.as_str(), d.active_tool_names),
        (None, "off", None)
    );
}

#[test]
fn context_edits_latest_wins_null_removes_string_becomes_block() {
    let path = log(&[
        u("e1", None, "question"),
        a("e2", Some("e1"), "answer"),
        other(
            "x1",
            Some("e2"),
            "context_edit",
            json!({"targetId": "e1", "replacement": {"content": "first edit"}}),
        ),
        other(
            "x2",
            Some("x1"),
            "context_edit",
            json!({"targetId": "e1", "replacement": {"content": "second edit"}}),
        ),
        other(
            "x3",
            Some("x2"),
            "context_edit",
            json!({"targetId": "e2", "replacement": {"content": "short answer"}}),
        ),
    ]);
    let ctx = build_session_context(&path, &ContextOptions::default());
    let llm = serde_json::to_value(convert_to_llm(&ctx.messages)).unwrap();
    assert_eq!(llm[0]["content"], json!("second edit"));
    assert_eq!(
        llm[1]["content"],
        json!([{"type": "text", "text": "short answer"}])
    );
    assert_eq!(llm[1]["provider"], json!("anthropic"), "metadata kept");

    let mut removed = path;
    removed.extend(log(&[other(
        "x4",
        Some("x3"),
        "context_edit",
        json!({"targetId": "e1", "replacement": null}),
    )]));
    assert_eq!(
        texts(&removed, &ContextOptions::default()),
        ["assistant:short answer"]
    );
}

#[test]
fn context_edits_outside_the_compaction_window_do_not_apply() {
    let path = log(&[
        u("e1", None, "one"),
        other(
            "x1",
            Some("e1"),
            "context_edit",
            json!({"targetId": "e1", "replacement": null}),
        ),
        u("e2", Some("x1"), "two"),
        other(
            "c1",
            Some("e2"),
            "compaction",
            json!({"summary": "S", "firstKeptEntryId": "e2", "tokensBefore": 1}),
        ),
        other(
            "x2",
            Some("c1"),
            "context_edit",
            json!({"targetId": "e2", "replacement": {"content": "two'"}}),
        ),
    ]);
    assert_eq!(
        texts(&path, &ContextOptions::default()),
        [summary("S"), "user:two'".into()]
    );
}

#[test]
fn branch_summaries_custom_messages_and_bash_executions_convert_to_user_text() {
    let path = log(&[
        other(
            "b1",
            None,
            "branch_summary",
            json!({"fromId": "zz", "summary": "explored"}),
        ),
        other(
            "b2",
            Some("b1"),
            "branch_summary",
            json!({"fromId": "zz", "summary": ""}),
        ),
        other(
            "n1",
            Some("b2"),
            "custom_message",
            json!({"customType": "note", "content": "remember", "display": false}),
        ),
        m(
            "x1",
            Some("n1"),
            json!({"role": "bashExecution", "command": "ls", "output": "a\n", "exitCode": 2, "cancelled": false, "truncated": true, "fullOutputPath": "/tmp/o", "timestamp": 9}),
        ),
        m(
            "x2",
            Some("x1"),
            json!({"role": "bashExecution", "command": "rm", "output": "", "cancelled": true, "truncated": false, "excludeFromContext": true, "timestamp": 9}),
        ),
        m(
            "x3",
            Some("x2"),
            json!({"role": "bashExecution", "command": "true", "output": "", "exitCode": 0, "cancelled": false, "truncated": false, "timestamp": 9}),
        ),
    ]);
    assert_eq!(
        texts(&path, &ContextOptions::default()),
        [
            format!("user:{BRANCH_SUMMARY_PREFIX}explored{BRANCH_SUMMARY_SUFFIX}"),
            "user:remember".into(),
            "user:Ran `ls`\n```\na\n\n```\n\nCommand exited with code 2\n\n[Output truncated. Full output: /tmp/o]".into(),
            "user:Ran `true`\n(no output)".into(),
        ]
    );
}

#[test]
fn transforms_run_in_order_and_projectors_are_chosen_by_custom_type() {
    let path = log(&[
        u("e1", None, "one"),
        other(
            "p1",
            Some("e1"),
            "custom",
            json!({"customType": "pin", "data": {"text": "pinned"}}),
        ),
        other(
            "p2",
            Some("p1"),
            "custom",
            json!({"customType": "unregistered", "data": {}}),
        ),
        u("e2", Some("p2"), "two"),
    ]);
    assert_eq!(
        texts(&path, &ContextOptions::default()),
        ["user:one", "user:two"]
    );
    let options = ContextOptions::default()
        .with_projector("pin", |e: &SessionEntry| {
            let v = serde_json::to_value(e).unwrap();
            vec![msg(
                json!({"role": "user", "content": v["data"]["text"], "timestamp": 7}),
            )]
        })
        // drops the first entry, then reverses: order matters
        .with_transform(|mut es: Vec<SessionEntry>| {
            es.remove(0);
            es
        })
        .with_transform(|mut es: Vec<SessionEntry>| {
            es.reverse();
            es
        });
    assert_eq!(texts(&path, &options), ["user:two", "user:pinned"]);
    assert_eq!(
        build_session_context_owned(path.clone(), &options),
        build_session_context(&path, &options)
    );
}

#[test]
fn leaf_recovery_follows_leaf_entries_in_log_order() {
    let log1 = log(&[
        u("e1", None, "1"),
        u("e2", Some("e1"), "2"),
        other("l1", Some("e2"), "leaf", json!({"targetId": "e1"})),
    ]);
    assert_eq!(recovered_leaf(&log1).as_deref(), Some("e1"));
    let log2 = log(&[
        u("e1", None, "1"),
        other("l1", Some("e1"), "leaf", json!({"targetId": null})),
    ]);
    assert_eq!(recovered_leaf(&log2), None);
}

#[test]
fn incremental_cache_matches_full_projection_at_every_step() {
    let all = log(&[
        sys("s1", None, "p1"),
        u("e1", Some("s1"), "one"),
        a("e2", Some("e1"), "two"),
        other(
            "x1",
            Some("e2"),
            "context_edit",
            json!({"targetId": "e1", "replacement": {"content": "one'"}}),
        ),
        other(
            "c1",
            Some("x1"),
            "compaction",
            json!({"summary": "S", "firstKeptEntryId": "e1", "tokensBefore": 1}),
        ),
        u("e3", Some("c1"), "three"),
        other(
            "x2",
            Some("e3"),
            "context_edit",
            json!({"targetId": "e2", "replacement": null}),
        ),
        other(
            "c2",
            Some("x2"),
            "compaction",
            json!({"summary": "S2", "firstKeptEntryId": "e3", "tokensBefore": 1, "retainedTail": [{"role": "user", "content": "t", "timestamp": 1}]}),
        ),
        u("e4", Some("c2"), "four"),
    ]);
    let opts = ContextOptions::default();
    let mut cache = ProjectionCache::new(Vec::new(), Default::default());
    for (i, e) in all.iter().enumerate() {
        cache.push(e.clone()).unwrap();
        let full = build_session_context(&all[..=i], &opts);
        assert_eq!(cache.context(), full, "after pushing {}", e.id);
        assert_eq!(build_session_context_owned(all[..=i].to_vec(), &opts), full);
    }
    // back to e2, then forward again
    assert!(cache.retreat_to(Some("e2")));
    assert_eq!(cache.context(), build_session_context(&all[..3], &opts));
    assert!(!cache.retreat_to(Some("nope")));
    // a non-child is handed back, and so is a leaf control entry
    assert!(cache.push(all[5].clone()).is_err());
    let leaf = log(&[other("l1", Some("e2"), "leaf", json!({"targetId": "e1"}))]);
    assert!(cache.push(leaf[0].clone()).is_err());
    assert_eq!(cache.leaf_id(), Some("e2"));
}

#[test]
fn expected_json_has_the_reference_shape() {
    let path = log(&[u("e1", None, "hi"), a("e2", Some("e1"), "yo")]);
    let ctx = build_session_context(&path, &ContextOptions::default());
    let v = expected_json(&ctx, Some("e2"));
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "ok",
            "leafId",
            "model",
            "thinkingLevel",
            "activeToolNames",
            "llm"
        ]
    );
    assert_eq!(
        v["model"],
        json!({"provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    );
    assert_eq!(
        v["llm"][0],
        json!({"role": "user", "content": "hi", "timestamp": 1})
    );
    let _: &AgentMessage = &ctx.messages[0];
}

/// Edge cases checked against pi's own projection code (hand-made files run through
/// crates/test-support/pi/context.mjs; see docs/ARCHITECTURE.md, "Testing").
#[test]
fn edge_cases_agree_with_pi() {
    // null contents: user/assistant/toolResult → [], system → "", custom_message → []
    let path = log(&[
        m(
            "e1",
            None,
            json!({"role": "user", "content": null, "timestamp": 1}),
        ),
        m(
            "e2",
            Some("e1"),
            json!({"role": "system", "content": null, "timestamp": 3}),
        ),
        other(
            "n1",
            Some("e2"),
            "custom_message",
            json!({"customType": "c", "display": true}),
        ),
    ]);
    let ctx = build_session_context(&path, &ContextOptions::default());
    let llm = serde_json::to_value(convert_to_llm(&ctx.messages)).unwrap();
    assert_eq!(llm[0]["content"], json!([]));
    assert_eq!(llm[1]["content"], json!(""));
    assert_eq!(llm[2]["content"], json!([]));

    // An edit removing a compaction removes its system snapshot and summary too; a
    // replacing edit leaves both alone (neither is a user/assistant/toolResult/custom message).
    let base = |replacement: Value| {
        log(&[
            u("e1", None, "x"),
            other(
                "c1",
                Some("e1"),
                "compaction",
                json!({"summary": "S", "firstKeptEntryId": "e1", "tokensBefore": 1,
                "systemMessage": {"role": "system", "content": "sys", "timestamp": 3}}),
            ),
            other(
                "x1",
                Some("c1"),
                "context_edit",
                json!({"targetId": "c1", "replacement": replacement}),
            ),
            u("e2", Some("x1"), "y"),
        ])
    };
    assert_eq!(
        texts(&base(Value::Null), &ContextOptions::default()),
        ["user:x", "user:y"]
    );
    assert_eq!(
        texts(&base(json!({"content": "R"})), &ContextOptions::default()),
        [
            "system:sys".to_string(),
            summary("S"),
            "user:x".into(),
            "user:y".into()
        ]
    );
}
