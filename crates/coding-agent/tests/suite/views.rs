//! Snapshots of the human-readable views: transcript, tree and listing.

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use super::{arbor, fixture, ok, run, Run};

const BRANCHED: &str = "v3-generated-branches-labels-branchsummary-compaction.pi-1.6.0.jsonl";
const COMPACTED: &str = "v3-generated-compaction-manual-and-threshold.pi-1.6.0.jsonl";

fn view(args: &[&str]) -> String {
    let out = ok(run(args));
    assert!(out.stderr.is_empty(), "unexpected stderr: {}", out.stderr);
    out.stdout
}

/// Fixture paths differ per checkout; snapshots show them as `<fixtures>/...`.
fn normalize(text: &str) -> String {
    let root = super::shared_dir().join("fixtures");
    text.replace(root.to_str().unwrap(), "<fixtures>")
}

#[test]
fn transcript_of_a_branched_session_with_summaries() {
    let file = fixture("pi-sessions", BRANCHED);
    insta::assert_snapshot!(normalize(&view(&[
        "session",
        "context",
        file.to_str().unwrap()
    ])));
}

#[test]
fn transcript_of_a_compacted_session_with_tools() {
    let file = fixture("pi-sessions", COMPACTED);
    insta::assert_snapshot!(normalize(&view(&[
        "session",
        "context",
        file.to_str().unwrap()
    ])));
}

#[test]
fn transcript_at_an_earlier_leaf_on_another_branch() {
    let file = fixture("pi-sessions", BRANCHED);
    // The tool-call branch's last assistant reply, off the active path.
    insta::assert_snapshot!(normalize(&view(&[
        "session",
        "context",
        file.to_str().unwrap(),
        "--leaf",
        "7481b322",
    ])));
}

#[test]
fn full_transcript_does_not_shorten() {
    let file = fixture("pi-sessions", BRANCHED);
    let short = view(&["session", "context", file.to_str().unwrap()]);
    let full = view(&["session", "context", file.to_str().unwrap(), "--full"]);
    assert!(full.len() > short.len());
    assert!(full.contains("[section preamble]"), "{full}");
}

#[test]
fn tree_of_a_branched_session() {
    let file = fixture("pi-sessions", BRANCHED);
    insta::assert_snapshot!(view(&["session", "tree", file.to_str().unwrap()]));
}

#[test]
fn tree_of_a_generated_session_with_leaf_moves() {
    let file = fixture("generated/sessions", "s0003.jsonl");
    insta::assert_snapshot!(view(&["session", "tree", file.to_str().unwrap()]));
}

/// Copies fixtures into `<home>/sessions/--<cwd>--/<ts>_<id>.jsonl`, as Arbor would store them.
/// Listings sort by file modification time, so each copy gets a fixed one: an hour apart, the
/// last given newest.
fn populate(home: &Path, names: &[(&str, &str)]) {
    for (i, (sub, name)) in names.iter().enumerate() {
        let src = fixture(sub, name);
        let text = std::fs::read_to_string(&src).unwrap();
        let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let cwd = header["cwd"].as_str().unwrap();
        let folder = format!(
            "--{}--",
            cwd.trim_start_matches('/').replace(['/', '\\', ':'], "-")
        );
        let ts = header["timestamp"]
            .as_str()
            .unwrap()
            .replace([':', '.'], "-");
        let dir = home.join("sessions").join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{ts}_{}.jsonl", header["id"].as_str().unwrap()));
        std::fs::write(&path, text).unwrap();
        let mtime = UNIX_EPOCH + Duration::from_secs(1_780_000_000 + 3600 * i as u64);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
    }
}

#[test]
fn list_all_shows_every_project_newest_first() {
    let home = tempfile::tempdir().unwrap();
    populate(
        home.path(),
        &[
            ("pi-sessions", BRANCHED),
            ("pi-sessions", COMPACTED),
            ("generated/sessions", "s0001.jsonl"),
            ("generated/sessions", "s0002.jsonl"),
        ],
    );
    let out: Run = arbor(home.path())
        .args(["session", "list", "--all"])
        .output()
        .unwrap()
        .into();
    let out = ok(out);
    insta::assert_snapshot!(out.stdout);
}

#[test]
fn list_defaults_to_the_current_directory() {
    let home = tempfile::tempdir().unwrap();
    populate(
        home.path(),
        &[
            ("pi-sessions", BRANCHED),
            ("generated/sessions", "s0001.jsonl"),
        ],
    );
    let branched = std::fs::read_to_string(fixture("pi-sessions", BRANCHED)).unwrap();
    let header: serde_json::Value = serde_json::from_str(branched.lines().next().unwrap()).unwrap();
    let cwd = header["cwd"].as_str().unwrap();
    // The listing keys on the cwd string; the directory itself need not exist for lookup, but
    // the process needs a real cwd, so create it under the temp dir and point at it via a
    // session copy whose header cwd is that directory.
    let real_cwd = home.path().join("proj");
    std::fs::create_dir_all(&real_cwd).unwrap();
    let real_cwd = real_cwd.canonicalize().unwrap();
    let rewritten = branched.replacen(
        &format!("\"cwd\":\"{cwd}\""),
        &format!("\"cwd\":\"{}\"", real_cwd.display()),
        1,
    );
    let copy = home.path().join("copy.jsonl");
    std::fs::write(&copy, rewritten).unwrap();
    populate_file(home.path(), &copy);

    let out: Run = arbor(home.path())
        .current_dir(&real_cwd)
        .args(["session", "list"])
        .output()
        .unwrap()
        .into();
    let out = ok(out);
    let rows: Vec<&str> = out.stdout.lines().skip(1).collect();
    assert_eq!(
        rows.len(),
        1,
        "only the session of this directory:\n{}",
        out.stdout
    );
    assert!(rows[0].contains(header["id"].as_str().unwrap()));
    assert!(rows[0].contains("[rpc lab session]"), "{}", rows[0]);
}

fn populate_file(home: &Path, src: &Path) {
    let text = std::fs::read_to_string(src).unwrap();
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let cwd = header["cwd"].as_str().unwrap();
    let folder = format!(
        "--{}--",
        cwd.trim_start_matches('/').replace(['/', '\\', ':'], "-")
    );
    let dir = home.join("sessions").join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!(
            "2026-01-01T00-00-00-000Z_{}.jsonl",
            header["id"].as_str().unwrap()
        )),
        text,
    )
    .unwrap();
}

#[test]
fn list_reads_a_pi_style_flat_directory() {
    let dir = tempfile::tempdir().unwrap();
    for name in [BRANCHED, COMPACTED] {
        std::fs::copy(fixture("pi-sessions", name), dir.path().join(name)).unwrap();
    }
    let home = tempfile::tempdir().unwrap();
    let flat = dir.path().to_str().unwrap();
    // Like pi: without --all only sessions whose header cwd is the current directory show.
    let mine = super::run_in(home.path(), &["session", "list", "--session-dir", flat]);
    assert_eq!(mine.code, 0, "{}", mine.stderr);
    assert!(mine.stdout.is_empty(), "{}", mine.stdout);
    assert!(mine.stderr.contains("--all"), "{}", mine.stderr);
    let all = ok(super::run_in(
        home.path(),
        &["session", "list", "--all", "--session-dir", flat],
    ));
    assert_eq!(all.stdout.lines().count(), 3, "{}", all.stdout);
    assert!(all.stdout.contains("[rpc lab session]"), "{}", all.stdout);
}
