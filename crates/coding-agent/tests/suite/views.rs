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
    let root = super::testdata_dir();
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

/// A hand-written session exercising every transcript element: thinking, tool calls, a long
/// tool result, an image, bash executions (one excluded from context), a custom message,
/// settings changes and a label.
fn handmade_session(dir: &Path) -> std::path::PathBuf {
    let long_output: Vec<String> = (1..=30).map(|i| format!("line {i}")).collect();
    let lines = [
        serde_json::json!({"type":"session","version":3,"id":"hand-made-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work/demo"}),
        serde_json::json!({"type":"model_change","id":"e0000001","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","provider":"anthropic","modelId":"claude-sonnet-4-5"}),
        serde_json::json!({"type":"thinking_level_change","id":"e0000002","parentId":"e0000001","timestamp":"2026-01-01T00:00:02.000Z","thinkingLevel":"high"}),
        serde_json::json!({"type":"active_tools_change","id":"e0000003","parentId":"e0000002","timestamp":"2026-01-01T00:00:03.000Z","activeToolNames":["read","bash"]}),
        serde_json::json!({"type":"message","id":"e0000004","parentId":"e0000003","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"user","content":[{"type":"text","text":"What is in this picture, and list the files?"},{"type":"image","data":"aGVsbG8gd29ybGQgaGVsbG8gd29ybGQ=","mimeType":"image/png"}],"timestamp":1767225604000_i64}}),
        serde_json::json!({"type":"message","id":"e0000005","parentId":"e0000004","timestamp":"2026-01-01T00:00:05.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"The user wants two things.\nFirst the picture, then the listing.","thinkingSignature":"sig"},{"type":"text","text":"A greeting. Listing now."},{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"ls -la"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1767225605000_i64}}),
        serde_json::json!({"type":"message","id":"e0000006","parentId":"e0000005","timestamp":"2026-01-01T00:00:06.000Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"bash","content":[{"type":"text","text":long_output.join("\n")}],"isError":false,"timestamp":1767225606000_i64}}),
        serde_json::json!({"type":"message","id":"e0000007","parentId":"e0000006","timestamp":"2026-01-01T00:00:07.000Z","message":{"role":"bashExecution","command":"git status","output":"clean","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1767225607000_i64}}),
        serde_json::json!({"type":"message","id":"e0000008","parentId":"e0000007","timestamp":"2026-01-01T00:00:08.000Z","message":{"role":"bashExecution","command":"cat secrets.env","output":"TOKEN=x","exitCode":0,"cancelled":false,"truncated":false,"excludeFromContext":true,"timestamp":1767225608000_i64}}),
        serde_json::json!({"type":"custom_message","id":"e0000009","parentId":"e0000008","timestamp":"2026-01-01T00:00:09.000Z","customType":"reminder","content":"Keep answers short.","display":true}),
        serde_json::json!({"type":"label","id":"e000000a","parentId":"e0000009","timestamp":"2026-01-01T00:00:10.000Z","targetId":"e0000005","label":"listing"}),
        serde_json::json!({"type":"message","id":"e000000b","parentId":"e000000a","timestamp":"2026-01-01T00:00:11.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Done."}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1767225611000_i64}}),
    ];
    let path = dir.join("handmade.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn transcript_shortens_bulky_parts_and_labels_every_role() {
    let dir = tempfile::tempdir().unwrap();
    let path = handmade_session(dir.path());
    let text = view(&["session", "context", path.to_str().unwrap()]);
    insta::assert_snapshot!(text.replace(dir.path().to_str().unwrap(), "<tmp>"));
    let full = view(&["session", "context", path.to_str().unwrap(), "--full"]);
    assert!(full.contains("line 30\n"), "{full}");
    assert!(full.contains("First the picture, then the listing."));
    assert!(
        !full.contains("TOKEN=x"),
        "excluded bash output never shows"
    );
}

#[test]
fn tree_of_a_linear_session_stays_flush_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = handmade_session(dir.path());
    insta::assert_snapshot!(view(&["session", "tree", path.to_str().unwrap()]));
}

#[test]
fn a_pi_sessions_root_works_as_session_dir() {
    // pi keeps ~/.pi/agent/sessions/--<cwd>--/<ts>_<id>.jsonl: the same layout as Arbor's.
    let root = tempfile::tempdir().unwrap();
    populate(
        root.path(),
        &[("pi-sessions", BRANCHED), ("pi-sessions", COMPACTED)],
    );
    let pi_root = root.path().join("sessions");
    let home = tempfile::tempdir().unwrap();
    let dir = pi_root.to_str().unwrap();
    let all = ok(super::run_in(
        home.path(),
        &["session", "list", "--all", "--session-dir", dir],
    ));
    assert_eq!(all.stdout.lines().count(), 3, "{}", all.stdout);
    let ctx = ok(super::run_in(
        home.path(),
        &["session", "context", "01a22c74-db", "--session-dir", dir],
    ));
    assert!(
        ctx.stdout.contains("Echo: After compaction"),
        "{}",
        ctx.stdout
    );
}

#[test]
fn list_counts_entries_of_large_files_too() {
    const LARGE: &str = "v3-migrated-from-v1-large-session.pi-1.6.0.jsonl";
    let src = fixture("pi-sessions", LARGE);
    assert!(std::fs::metadata(&src).unwrap().len() > 64 * 1024);
    let text = std::fs::read_to_string(&src).unwrap();
    let entries = text.lines().filter(|l| !l.trim().is_empty()).count() - 1;
    let home = tempfile::tempdir().unwrap();
    populate(home.path(), &[("pi-sessions", LARGE)]);
    let out = ok(super::run_in(home.path(), &["session", "list", "--all"]));
    let row = out.stdout.lines().nth(1).unwrap();
    let columns: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(columns[3], entries.to_string(), "{row}");
}
