//! Failures: one line on stderr, nothing on stdout, a meaningful exit code.

use std::path::Path;

use super::{fixture, run, run_in, Run};

fn assert_one_line_error(out: &Run, code: i32, needle: &str) {
    assert_eq!(out.code, code, "exit code; stderr: {}", out.stderr);
    assert!(
        out.stdout.is_empty(),
        "stdout must stay empty: {}",
        out.stdout
    );
    assert_eq!(
        out.stderr.lines().count(),
        1,
        "one stderr line: {}",
        out.stderr
    );
    assert!(out.stderr.starts_with("arbor: "), "{}", out.stderr);
    assert!(
        out.stderr.contains(needle),
        "expected {needle:?} in: {}",
        out.stderr
    );
}

#[test]
fn a_missing_file_is_not_found() {
    for cmd in ["context", "tree", "fork"] {
        let out = run(&["session", cmd, "./nope/missing.jsonl"]);
        assert_one_line_error(&out, 1, "session file not found: ./nope/missing.jsonl");
    }
    let out = run(&["session", "migrate", "missing.jsonl"]);
    assert_one_line_error(&out, 1, "session file not found: missing.jsonl");
}

#[test]
fn an_unknown_id_names_where_it_looked() {
    let home = tempfile::tempdir().unwrap();
    let out = run_in(home.path(), &["session", "context", "0123abcd"]);
    assert_one_line_error(&out, 1, "no session matching '0123abcd' in");
    assert!(out
        .stderr
        .contains(&home.path().join("sessions").display().to_string()));
}

fn write_session(dir: &Path, id: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join(format!("2026-01-01T00-00-00-000Z_{id}.jsonl")),
        format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}}\n\
             {{\"type\":\"message\",\"id\":\"aaaa0001\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"hi from {id}\",\"timestamp\":1767225601000}}}}\n"
        ),
    )
    .unwrap();
}

#[test]
fn ids_and_unique_prefixes_resolve_and_ambiguous_prefixes_list_candidates() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("sessions").join("--p--");
    write_session(&project, "0190aaaa-1111");
    write_session(&project, "0190aaaa-2222");
    write_session(&home.path().join("sessions").join("--q--"), "0190bbbb-3333");

    let by_prefix = run_in(home.path(), &["session", "context", "0190b"]);
    assert_eq!(by_prefix.code, 0, "{}", by_prefix.stderr);
    assert!(by_prefix.stdout.contains("hi from 0190bbbb-3333"));

    let by_id = run_in(home.path(), &["session", "context", "0190aaaa-2222"]);
    assert_eq!(by_id.code, 0, "{}", by_id.stderr);
    assert!(by_id.stdout.contains("hi from 0190aaaa-2222"));

    let out = run_in(home.path(), &["session", "tree", "0190a"]);
    assert_one_line_error(
        &out,
        1,
        "session id prefix '0190a' is ambiguous; it matches 2:",
    );
    assert!(out.stderr.contains("0190aaaa-1111") && out.stderr.contains("0190aaaa-2222"));
}

#[test]
fn session_dir_scopes_the_lookup() {
    let home = tempfile::tempdir().unwrap();
    let flat = home.path().join("elsewhere");
    write_session(&flat, "cafe0001");
    let dir = flat.to_str().unwrap();
    let out = run_in(
        home.path(),
        &["session", "context", "cafe", "--session-dir", dir],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = run_in(home.path(), &["session", "context", "cafe"]);
    assert_one_line_error(&out, 1, "no session matching 'cafe'");
    let out = run_in(
        home.path(),
        &["session", "list", "--session-dir", "/no/such/dir"],
    );
    assert_one_line_error(&out, 1, "session directory not found: /no/such/dir");
}

#[test]
fn shared_flags_before_the_word_session_still_run_the_session_command() {
    let home = tempfile::tempdir().unwrap();
    let flat = home.path().join("elsewhere");
    write_session(&flat, "cafe0001");
    let dir = flat.to_str().unwrap();
    let after = run_in(
        home.path(),
        &["session", "list", "--all", "--session-dir", dir],
    );
    assert_eq!(after.code, 0, "{}", after.stderr);
    assert!(after.stdout.contains("cafe0001"), "{}", after.stdout);
    for args in [
        vec!["--session-dir", dir, "session", "list", "--all"],
        vec![&*format!("--session-dir={dir}"), "session", "list", "--all"],
    ] {
        let before = run_in(home.path(), &args);
        assert_eq!(
            (before.code, &before.stdout, &before.stderr),
            (0, &after.stdout, &after.stderr),
            "{args:?}"
        );
    }
    let context = run_in(
        home.path(),
        &["--session-dir", dir, "session", "context", "cafe"],
    );
    assert_eq!(context.code, 0, "{}", context.stderr);
    // An agent flag before `session` keeps the agent's reading: the words are its messages.
    let agent = run_in(
        home.path(),
        &["-p", "--session-dir", dir, "session", "list"],
    );
    assert_ne!(agent.code, 0);
    assert!(
        agent.stderr.contains("No model available"),
        "{}",
        agent.stderr
    );
}

#[test]
fn a_bad_line_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.jsonl");
    std::fs::write(
        &path,
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n\
         {\"type\":\"message\",\"id\":\"aaaa0001\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}\n\
         {\"type\":\"message\",\"id\":\n\
         {\"type\":\"message\",\"id\":\"aaaa0002\",\"parentId\":\"aaaa0001\",\"timestamp\":\"2026-01-01T00:00:02.000Z\",\"message\":{\"role\":\"user\",\"content\":\"again\",\"timestamp\":2}}\n",
    )
    .unwrap();
    let file = path.to_str().unwrap();
    let where_ = format!("{file}:3");
    for cmd in ["context", "tree"] {
        let out = run(&["session", cmd, file]);
        assert_one_line_error(&out, 2, &where_);
    }
    let out = run(&["session", "context", file, "--json"]);
    assert_eq!(out.code, 2);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert!(v["error"].as_str().unwrap().contains(&where_), "{v}");
    assert!(out.stderr.contains(&where_));
}

#[test]
fn an_unknown_leaf_is_not_found() {
    let file = fixture("generated/sessions", "s0000.jsonl");
    let out = run(&[
        "session",
        "context",
        file.to_str().unwrap(),
        "--leaf",
        "ffffffff",
    ]);
    assert_one_line_error(&out, 1, "no entry 'ffffffff'");
    let out = run(&[
        "session",
        "context",
        file.to_str().unwrap(),
        "--leaf",
        "ffffffff",
        "--json",
    ]);
    assert_one_line_error(&out, 1, "no entry 'ffffffff'");
}

#[test]
fn a_torn_last_line_is_reported_but_the_session_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("torn.jsonl");
    let good = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n\
         {\"type\":\"message\",\"id\":\"aaaa0001\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}\n";
    std::fs::write(
        &path,
        format!("{good}{{\"type\":\"message\",\"id\":\"aaaa00"),
    )
    .unwrap();
    let out = run(&["session", "context", path.to_str().unwrap(), "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["leafId"], "aaaa0001");
    assert!(out.stderr.contains("incomplete line"), "{}", out.stderr);
    // Read-only: the file is untouched.
    assert!(std::fs::read_to_string(&path).unwrap().ends_with("aaaa00"));
}

#[test]
fn an_empty_session_projects_to_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.jsonl");
    std::fs::write(
        &path,
        "{\"type\":\"session\",\"version\":3,\"id\":\"e\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n",
    )
    .unwrap();
    let file = path.to_str().unwrap();
    let out = run(&["session", "context", file, "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"ok":true,"leafId":null,"model":null,"thinkingLevel":"off","activeToolNames":null,"llm":[]})
    );
    let tree = run(&["session", "tree", file]);
    assert_eq!(tree.code, 0);
    assert!(tree.stdout.is_empty());
    assert!(tree.stderr.contains("has no entries"), "{}", tree.stderr);
    let empty = dir.path().join("zero.jsonl");
    std::fs::write(&empty, "").unwrap();
    let out = run(&["session", "context", empty.to_str().unwrap()]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("missing session header"),
        "{}",
        out.stderr
    );
}
