//! Every kind of planted text is found, tied to the right session, entry and branch state,
//! and exact phrases rank first.

use arbor_search::{BranchFilter, Query};
use serde_json::json;

use super::support::{ids, SessionFile, Sessions};

/// A session with an abandoned branch: a1 → a2 → u3 (Redis, abandoned) → a4, and from a2 the
/// active branch u5 (memcached) → a6 → b7 → label/name entries.
fn planted(s: &Sessions) {
    let mut f = s.session("019a0000-0000-7000-8000-00000000000a");
    f.user("a1", "the login page hangs after thirty seconds")
        .assistant("a2", "Looking at the session code.", &[("read", json!({"path": "src/auth/session_store.rs"}))])
        .user("u3", "try the Redis cache for sessions")
        .assistant("a4", "Added a Redis layer for caching.", &[])
        .user_from("u5", "a2", "use memcached instead")
        .assistant("a6", "Switched to memcached.", &[("edit", json!({"path": "src/cache/memcached_pool.rs", "oldText": "x", "newText": "y"}))])
        .tool_result("t7", "edit", "Successfully replaced text in the pool file")
        .bash("b8", "cargo test --package quokka_widgets", "test result: ok")
        .entry("l9", None, json!({"type": "label", "targetId": "u3", "label": "flamingo experiment"}))
        .entry("n10", None, json!({"type": "session_info", "name": "Cache rework"}))
        .entry("c11", None, json!({"type": "compaction", "summary": "Goal: fix the login timeout with a wombat strategy", "firstKeptEntryId": "a6", "tokensBefore": 1000}))
        .entry("s12", Some("u3"), json!({"type": "branch_summary", "fromId": "a4", "summary": "Tried the pelican approach and left it"}));
    // The summary sits on the abandoned branch; move the leaf back to the active one.
    f.leaf("x13", "c11");
}

#[test]
fn every_planted_phrase_is_found_with_its_entry_and_branch_state() {
    let s = Sessions::new();
    planted(&s);
    let cases = [
        ("thirty seconds", "a1", "active"),
        ("session_store", "a2", "active"),
        ("Redis cache", "u3", "abandoned"),
        ("Redis layer", "a4", "abandoned"),
        ("memcached instead", "u5", "active"),
        ("memcached_pool.rs", "a6", "active"),
        ("Successfully replaced", "t7", "active"),
        ("quokka_widgets", "b8", "active"),
        ("flamingo experiment", "u3", "abandoned"),
        ("Cache rework", "n10", "active"),
        ("wombat strategy", "c11", "active"),
        ("pelican approach", "s12", "abandoned"),
    ];
    for (text, entry, branch) in cases {
        let out = s.search(text);
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        let first = out
            .hits
            .first()
            .unwrap_or_else(|| panic!("no hit for {text:?}"));
        assert_eq!(
            (first.entry_id.as_str(), first.branch.as_str()),
            (entry, branch),
            "{text:?}: {:?}",
            ids(&out.hits)
        );
        assert_eq!(first.session_id, "019a0000-0000-7000-8000-00000000000a");
        assert!(first.exact, "{text:?}");
        assert_eq!(first.session_name.as_deref(), Some("Cache rework"));
    }
    let label = s.search("flamingo");
    assert_eq!(label.hits[0].matched_entry_id, "l9");
    assert_eq!(label.hits[0].kind, "label");
}

#[test]
fn branch_filter_keeps_only_the_asked_state() {
    let s = Sessions::new();
    planted(&s);
    let query = |branch| Query {
        text: "memcached OR Redis".into(),
        branch,
        ..Query::default()
    };
    // Words are ANDed; this query asks for all three words and finds nothing.
    assert!(s.query(query(BranchFilter::Any)).hits.is_empty());
    let cache = |branch| Query {
        text: "cache".into(),
        branch,
        ..Query::default()
    };
    let active = ids(&s.query(cache(BranchFilter::Active)).hits);
    let abandoned = ids(&s.query(cache(BranchFilter::Abandoned)).hits);
    assert!(
        active.iter().all(|(_, b)| *b == "active") && !active.is_empty(),
        "{active:?}"
    );
    assert!(abandoned.iter().any(|(id, _)| id == "u3"), "{abandoned:?}");
    assert!(
        abandoned.iter().all(|(_, b)| *b == "abandoned"),
        "{abandoned:?}"
    );
}

#[test]
fn an_exact_phrase_ranks_before_scattered_words() {
    let s = Sessions::new();
    let mut f = s.session("019a0000-0000-7000-8000-00000000000b");
    // The scattered entry repeats both words, which BM25 alone would rank higher.
    f.user("scattered", "timeout timeout timeout, and the login form; login again after a timeout")
        .assistant("exact", "I fixed the login timeout in the middleware, together with a long explanation of everything else that changed in the request handling code paths", &[]);
    let out = s.search("login timeout");
    assert_eq!(
        ids(&out.hits),
        [
            ("exact".to_owned(), "active"),
            ("scattered".to_owned(), "active")
        ]
    );
    assert!(out.hits[0].exact && !out.hits[1].exact);
    assert!(
        out.hits[0].snippet.contains("login timeout"),
        "{}",
        out.hits[0].snippet
    );
}

#[test]
fn since_and_cwd_filter_and_limit_cuts() {
    let s = Sessions::new();
    let mut f = s.session("019a0000-0000-7000-8000-00000000000c");
    for n in 0..5 {
        f.user(&format!("e{n}"), "the armadillo build");
    }
    let since = s.query(Query {
        text: "armadillo".into(),
        since: Some("2026-06-20T15:04".into()),
        ..Query::default()
    });
    assert_eq!(since.hits.len(), 2, "{:?}", ids(&since.hits));
    let elsewhere = s.query(Query {
        text: "armadillo".into(),
        cwd: Some("/somewhere/else".into()),
        ..Query::default()
    });
    assert!(elsewhere.hits.is_empty());
    let limited = s.query(Query {
        text: "armadillo".into(),
        limit: Some(3),
        ..Query::default()
    });
    assert_eq!(limited.hits.len(), 3);
    let bad = arbor_search::SearchIndex::search_files(
        &s.index_path(),
        &s.files(),
        &Query {
            text: "armadillo".into(),
            since: Some("last week".into()),
            ..Query::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        bad.to_string(),
        "search: --since last week: expected a date as YYYY-MM-DD (or an ISO date-time)"
    );
}

#[test]
fn long_tool_output_is_searchable_by_its_head_and_tail() {
    let s = Sessions::new();
    let mut f = s.session("019a0000-0000-7000-8000-00000000000d");
    // About 21 KB: the middle word is past the indexed head and before the indexed tail.
    let filler = "filler ".repeat(1500);
    let output = format!("headword_ant {filler} middleword_bee {filler} tailword_cat");
    f.tool_result("t1", "read", &output)
        .bash("b1", "make all", &output);
    for word in ["headword_ant", "tailword_cat"] {
        let found = s.search(word);
        let mut got = ids(&found.hits);
        got.sort();
        assert_eq!(
            got,
            [("b1".to_owned(), "active"), ("t1".to_owned(), "active")],
            "{word}"
        );
        assert!(
            found.hits.iter().all(|h| h.snippet.contains(word)),
            "{word}: {:?}",
            found.hits
        );
    }
    assert!(s.search("middleword_bee").hits.is_empty());
    // The command itself is never cut.
    assert_eq!(ids(&s.search("make all").hits)[0].0, "b1");
}

#[test]
fn common_words_rank_within_the_newest_window_and_filters_reach_past_it() {
    let s = Sessions::new();
    let mut old = SessionFile::create(s.dir.path(), "019a0000-0000-7000-8000-0000000000e1", "/old");
    for n in 0..30 {
        old.user(&format!("old{n}"), "the yak note");
    }
    let mut new = SessionFile::create(s.dir.path(), "019a0000-0000-7000-8000-0000000000e2", "/new");
    let total = usize::try_from(arbor_search::RANK_WINDOW).unwrap() + 100;
    let lines: String = (0..total)
        .map(|n| {
            let parent = if n == 0 {
                "null".to_owned()
            } else {
                format!("\"new{}\"", n - 1)
            };
            format!(
                "{{\"type\":\"message\",\"id\":\"new{n}\",\"parentId\":{parent},\"timestamp\":\"2026-06-21T10:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"the yak note\",\"timestamp\":1}}}}\n"
            )
        })
        .collect();
    new.raw(&lines);
    let top = s.query(Query {
        text: "yak note".into(),
        limit: Some(20),
        ..Query::default()
    });
    assert_eq!(top.hits.len(), 20);
    let newest_window = total - usize::try_from(arbor_search::RANK_WINDOW).unwrap();
    for hit in &top.hits {
        let n: usize = hit.entry_id.trim_start_matches("new").parse().unwrap();
        assert!(
            n >= newest_window,
            "{} is older than the window",
            hit.entry_id
        );
        assert!(hit.exact);
    }
    // Filtered to the old session: none in the window passes, so older entries are read.
    let filtered = s.query(Query {
        text: "yak note".into(),
        cwd: Some("/old".into()),
        limit: Some(20),
        ..Query::default()
    });
    assert_eq!(filtered.hits.len(), 20);
    assert!(filtered.hits.iter().all(|h| h.entry_id.starts_with("old")));
    // Every hit, for --all.
    let all = s.query(Query {
        text: "yak".into(),
        ..Query::default()
    });
    assert_eq!(all.hits.len(), total + 30);
}
