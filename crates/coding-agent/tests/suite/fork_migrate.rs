//! `arbor session fork` and `arbor session migrate` on temp copies of the fixtures.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{fixture, ok, run_in};

const BRANCHED: &str = "v3-generated-branches-labels-branchsummary-compaction.pi-1.6.0.jsonl";

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn context_json(home: &Path, file: &Path, leaf: Option<&str>) -> Value {
    let mut args = vec!["session", "context", file.to_str().unwrap(), "--json"];
    if let Some(leaf) = leaf {
        args.extend(["--leaf", leaf]);
    }
    serde_json::from_str(&ok(run_in(home, &args)).stdout).unwrap()
}

/// Runs `fork` and returns the new session's (id, path) from its `id<TAB>path` line.
fn fork(home: &Path, args: &[&str]) -> (String, PathBuf) {
    let mut all = vec!["session", "fork"];
    all.extend_from_slice(args);
    let out = ok(run_in(home, &all));
    let line = out.stdout.trim_end_matches('\n');
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    let (id, path) = line.split_once('\t').expect("id<TAB>path");
    let path = PathBuf::from(path);
    assert!(path.is_file(), "{}", path.display());
    assert!(path.to_str().unwrap().ends_with(&format!("_{id}.jsonl")));
    (id.to_string(), path)
}

#[test]
fn fork_without_entry_copies_the_whole_tree_into_the_default_directory() {
    let home = tempfile::tempdir().unwrap();
    let source = fixture("pi-sessions", BRANCHED);
    let (id, path) = fork(home.path(), &[source.to_str().unwrap()]);
    // Default place: $ARBOR_HOME/sessions/--<source cwd>--/.
    assert_eq!(
        path.parent().unwrap(),
        home.path().join("sessions").join("--home-dev-proj--")
    );
    let src = lines(&source);
    let new = lines(&path);
    assert_eq!(new[0]["id"], id.as_str());
    assert_eq!(new[0]["version"], 3);
    assert_eq!(new[0]["cwd"], src[0]["cwd"]);
    assert_eq!(
        new[0]["parentSession"].as_str().unwrap(),
        std::path::absolute(&source).unwrap().to_str().unwrap()
    );
    assert_eq!(&new[1..], &src[1..], "entries are copied verbatim");
    assert_eq!(
        context_json(home.path(), &path, None),
        context_json(home.path(), &source, None)
    );
    // The new session is found by id prefix like any other.
    let tree = ok(run_in(home.path(), &["session", "tree", &id[..13]]));
    assert!(tree.stdout.contains("← leaf"));
}

#[test]
fn fork_before_a_user_message_keeps_its_ancestry_only() {
    let home = tempfile::tempdir().unwrap();
    let source = fixture("pi-sessions", BRANCHED);
    // 1b4464e1 = "Question on new branch", child of b4f4fe65.
    let (_, path) = fork(
        home.path(),
        &[source.to_str().unwrap(), "--entry", "1b4464e1"],
    );
    let got = context_json(home.path(), &path, None);
    let want = context_json(home.path(), &source, Some("b4f4fe65"));
    assert_eq!(got["llm"], want["llm"]);
    assert_eq!(got["leafId"], "b4f4fe65");
}

#[test]
fn fork_at_an_entry_or_at_the_leaf() {
    let home = tempfile::tempdir().unwrap();
    let source = fixture("pi-sessions", BRANCHED);
    // A --session-dir that does not exist yet is created for the new session.
    let dir = home.path().join("forks");
    let dir_arg = dir.to_str().unwrap();
    let (_, at_entry) = fork(
        home.path(),
        &[
            source.to_str().unwrap(),
            "--entry",
            "7481b322",
            "--at",
            "--session-dir",
            dir_arg,
        ],
    );
    assert_eq!(at_entry.parent().unwrap(), dir, "forks go to --session-dir");
    assert_eq!(
        context_json(home.path(), &at_entry, None),
        context_json(home.path(), &source, Some("7481b322"))
    );
    let (_, at_leaf) = fork(
        home.path(),
        &[source.to_str().unwrap(), "--at", "--session-dir", dir_arg],
    );
    assert_eq!(
        context_json(home.path(), &at_leaf, None)["llm"],
        context_json(home.path(), &source, None)["llm"]
    );
}

#[test]
fn fork_before_a_non_user_entry_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let source = fixture("pi-sessions", BRANCHED);
    let out = run_in(
        home.path(),
        &[
            "session",
            "fork",
            source.to_str().unwrap(),
            "--entry",
            "82831fd7",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stdout.is_empty());
    assert_eq!(out.stderr.lines().count(), 1);
    assert!(out.stderr.contains("82831fd7"), "{}", out.stderr);
    assert!(
        !home.path().join("sessions").exists() || {
            let dirs: Vec<_> = std::fs::read_dir(home.path().join("sessions"))
                .unwrap()
                .collect();
            dirs.iter().all(|d| {
                std::fs::read_dir(d.as_ref().unwrap().path())
                    .unwrap()
                    .count()
                    == 0
            })
        }
    );
}

#[test]
fn migrate_rewrites_v1_as_v3_and_keeps_a_backup() {
    let home = tempfile::tempdir().unwrap();
    let original = fixture("pi-sessions", "v1-before-compaction.pi-mono.jsonl");
    let copy = home.path().join("old.jsonl");
    std::fs::copy(&original, &copy).unwrap();
    let before = context_json(home.path(), &copy, None);

    let out = ok(run_in(
        home.path(),
        &["session", "migrate", copy.to_str().unwrap()],
    ));
    let backup = home.path().join("old.jsonl.v1.bak");
    assert_eq!(
        out.stdout,
        format!(
            "migrated {} from v1 to v3 (original kept as {})\n",
            copy.display(),
            backup.display()
        )
    );
    assert_eq!(
        std::fs::read(&backup).unwrap(),
        std::fs::read(&original).unwrap(),
        "the backup is the untouched original"
    );
    let migrated = lines(&copy);
    assert_eq!(migrated[0]["version"], 3);
    assert!(migrated[1..].iter().all(|e| e["id"].is_string()));
    let after = context_json(home.path(), &copy, None);
    assert_eq!(after["llm"], before["llm"], "migration keeps the context");
    assert_eq!(after["model"], before["model"]);

    // A v3 file is left alone.
    let again = ok(run_in(
        home.path(),
        &["session", "migrate", copy.to_str().unwrap()],
    ));
    assert_eq!(
        again.stdout,
        format!("{} is already v3; nothing to do\n", copy.display())
    );
}

#[test]
fn migrate_refuses_a_broken_file_without_touching_it() {
    let home = tempfile::tempdir().unwrap();
    let original = fixture(
        "pi-sessions",
        "v2-synthetic-hookMessage-and-malformed-line.handmade.jsonl",
    );
    let copy = home.path().join("bad.jsonl");
    std::fs::copy(&original, &copy).unwrap();
    let out = run_in(home.path(), &["session", "migrate", copy.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!("{}:4", copy.display())),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(&original).unwrap()
    );
    assert!(!home.path().join("bad.jsonl.v2.bak").exists());
}

#[test]
fn migrate_refuses_a_session_open_for_writing() {
    let home = tempfile::tempdir().unwrap();
    let copy = home.path().join("busy.jsonl");
    std::fs::copy(
        fixture("pi-sessions", "v1-before-compaction.pi-mono.jsonl"),
        &copy,
    )
    .unwrap();
    let before = std::fs::read(&copy).unwrap();
    // Another writer holds the advisory lock, as an open Arbor session does.
    let writer = std::fs::File::open(&copy).unwrap();
    writer.lock().unwrap();
    let out = run_in(home.path(), &["session", "migrate", copy.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("open for writing by another process"),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read(&copy).unwrap(), before);
    assert!(!home.path().join("busy.jsonl.v1.bak").exists());
    drop(writer);
}
