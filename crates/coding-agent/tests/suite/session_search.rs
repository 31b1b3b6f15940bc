//! `arbor session search`: ranked hits over every session and branch, warnings on stderr.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{ok, run_in};

/// Writes a session file of `entries` (each `(id, parent, fields)`) under `home`'s sessions
/// root, in the folder of `cwd`.
pub(super) fn session(
    home: &Path,
    cwd: &str,
    id: &str,
    entries: &[(&str, Option<&str>, Value)],
) -> PathBuf {
    let dir = home
        .join("sessions")
        .join(arbor_agent::session::jsonl::layout::encode_cwd(cwd));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("2026-06-20T15-00-00-000Z_{id}.jsonl"));
    let mut text = json!({"type": "session", "version": 3, "id": id,
        "timestamp": "2026-06-20T15:00:00.000Z", "cwd": cwd})
    .to_string();
    text.push('\n');
    for (n, (entry, parent, fields)) in entries.iter().enumerate() {
        let mut fields = fields.clone();
        let obj = fields.as_object_mut().unwrap();
        obj.insert("id".into(), json!(entry));
        obj.insert("parentId".into(), json!(parent));
        obj.insert(
            "timestamp".into(),
            json!(format!("2026-06-2{}T15:{n:02}:00.000Z", n.min(9))),
        );
        text.push_str(&fields.to_string());
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

pub(super) fn user(text: &str) -> Value {
    json!({"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}})
}

fn home_with_sessions() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let here = home.path().to_string_lossy().into_owned();
    session(
        home.path(),
        "/work/project",
        "019a000a-0000-7000-8000-00000000000a",
        &[
            ("a1", None, user("the login page hangs")),
            ("u2", Some("a1"), user("try the Redis cache for sessions")),
            (
                "u3",
                Some("a1"),
                user("use memcached as the cache instead of Redis"),
            ),
            (
                "n4",
                Some("u3"),
                json!({"type": "session_info", "name": "Cache rework"}),
            ),
        ],
    );
    session(
        home.path(),
        &here,
        "019a000b-0000-7000-8000-00000000000b",
        &[("b1", None, user("a Redis cache note made here"))],
    );
    home
}

#[test]
fn hits_print_ranked_with_date_branch_session_entry_and_snippet() {
    let home = home_with_sessions();
    let out = ok(run_in(home.path(), &["session", "search", "redis cache"]));
    insta::assert_snapshot!(out.stdout, @r"
    2026-06-21 15:01  abandoned  019a000a (Cache rework)  entry u2  user
        try the Redis cache for sessions
    2026-06-20 15:00  active     019a000b  entry b1  user
        a Redis cache note made here
    2026-06-22 15:02  active     019a000a (Cache rework)  entry u3  user (words)
        use memcached as the cache instead of Redis
    ");
    assert!(home.path().join("sessions/search-index.sqlite").is_file());
}

#[test]
fn flags_filter_by_branch_date_and_directory() {
    let home = home_with_sessions();
    let ids = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["session", "search", "--json"];
        all.extend_from_slice(args);
        let out = ok(run_in(home.path(), &all));
        let hits: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
        hits.iter()
            .map(|h| {
                format!(
                    "{} {}",
                    h["entryId"].as_str().unwrap(),
                    h["branch"].as_str().unwrap()
                )
            })
            .collect()
    };
    assert_eq!(ids(&["redis", "--branch", "abandoned"]), ["u2 abandoned"]);
    assert_eq!(ids(&["redis", "--since", "2026-06-22"]), ["u3 active"]);
    assert_eq!(ids(&["redis", "--cwd"]), ["b1 active"]);
    assert_eq!(ids(&["cache rework"]), ["n4 active"]);
    let bad = run_in(
        home.path(),
        &["session", "search", "redis", "--branch", "dead"],
    );
    assert_eq!(bad.code, 2);
    assert_eq!(
        bad.stderr,
        "arbor: --branch dead: expected active, abandoned or any\n"
    );
    let since = run_in(
        home.path(),
        &["session", "search", "redis", "--since", "June"],
    );
    assert_eq!(since.code, 1);
    assert_eq!(
        since.stderr,
        "arbor: search: --since June: expected a date as YYYY-MM-DD (or an ISO date-time)\n"
    );
}

#[test]
fn a_broken_file_is_a_warning_and_the_rest_is_searched() {
    let home = home_with_sessions();
    let broken = session(
        home.path(),
        "/work/project",
        "019a0000-0000-7000-8000-00000000000c",
        &[],
    );
    std::fs::write(&broken, "{\"type\":\"session\",\"version\":3,\"id\":\"x\",\"timestamp\":\"t\",\"cwd\":\"/w\"}\nnot json\n").unwrap();
    let out = run_in(home.path(), &["session", "search", "memcached"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.lines().count(), 2);
    assert!(
        out.stderr
            .starts_with(&format!("arbor: warning: {}: line 2: ", broken.display())),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.ends_with("; skipped by search\n"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn rpc_search_answers_hits_and_warnings() {
    let server = arbor_test_support::MockServer::start().await.unwrap();
    let lab = super::agent_e2e::lab(&server);
    session(
        &lab.home,
        "/work/elsewhere",
        "019a0000-0000-7000-8000-0000000000d1",
        &[
            ("r1", None, user("plan the cache")),
            ("r2", Some("r1"), user("the flamingo cache idea")),
            ("r3", Some("r1"), user("the plain cache")),
        ],
    );
    let mut rpc = super::rpc_replay::Rpc::start(&lab, &[]);
    rpc.write(r#"{"type":"search","id":"s1","query":"flamingo","branch":"abandoned"}"#)
        .await;
    let v = rpc.next().await;
    assert_eq!(v["id"], "s1", "{v}");
    assert_eq!(v["success"], true, "{v}");
    let hits = v["data"]["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{v}");
    assert_eq!(hits[0]["entryId"], "r2");
    assert_eq!(hits[0]["branch"], "abandoned");
    assert_eq!(hits[0]["snippet"], "the flamingo cache idea");
    assert_eq!(v["data"]["warnings"], json!([]));
    rpc.write(r#"{"type":"search","id":"s2"}"#).await;
    let missing = rpc.next().await;
    assert_eq!(missing["success"], false, "{missing}");
    assert_eq!(missing["error"], "Missing required field: query");
    rpc.finish().await;
}
