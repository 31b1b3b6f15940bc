//! `arbor session tree` on adversarial shapes: deep combs, parentId cycles (DECISIONS §25.1).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{ok, run, Run};

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-06-20T15:00:00.000Z","cwd":"/w"}"#;

fn user(id: &str, parent: Option<&str>, secs: u32, text: &str) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-06-20T{:02}:{:02}:{:02}.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#,
        15 + secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn write(dir: &Path, lines: &[String]) -> PathBuf {
    let path = dir.join("2026-06-20T15-00-00-000Z_s1.jsonl");
    let mut text = format!("{HEADER}\n");
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// A main path of `depth` entries where every entry also has one side child.
fn comb(depth: usize) -> Vec<String> {
    let mut lines = Vec::with_capacity(depth * 2);
    let mut parent: Option<String> = None;
    for i in 0..depth {
        let id = format!("m{i:07}");
        lines.push(user(&id, parent.as_deref(), (i * 2) as u32, "main"));
        lines.push(user(
            &format!("s{i:07}"),
            Some(&id),
            (i * 2 + 1) as u32,
            "side",
        ));
        parent = Some(id);
    }
    lines
}

#[test]
fn a_deep_comb_prints_bounded_lines() {
    let dir = tempfile::tempdir().unwrap();
    let depth = 20_000;
    let path = write(dir.path(), &comb(depth));
    let out = ok(run(&["session", "tree", path.to_str().unwrap()]));
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), depth * 2);
    let widest = lines.iter().map(|l| l.chars().count()).max().unwrap();
    // Before: each fork indented three more columns (60,000-column lines, 2 GB of output at
    // this depth). Now the gutter is bounded and deeper levels show a depth marker.
    assert!(widest < 120, "widest line has {widest} columns");
    assert!(
        out.stdout.len() < depth * 2 * 120,
        "{} bytes",
        out.stdout.len()
    );
    assert!(lines.iter().any(|l| l.contains("[+")), "depth marker shown");
    assert!(lines.last().unwrap().contains("← leaf"));
}

#[test]
fn the_head_of_a_comb_is_drawn_as_branches() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), &comb(3));
    insta::assert_snapshot!(ok(run(&["session", "tree", path.to_str().unwrap()])).stdout);
}

#[test]
fn a_parent_cycle_is_reported_in_the_view_and_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    // a <- b is the real tree; c and d name each other, e hangs below d.
    let path = write(
        dir.path(),
        &[
            user("aaaaaaaa", None, 1, "root"),
            user("cccccccc", Some("dddddddd"), 2, "in a cycle"),
            user("dddddddd", Some("cccccccc"), 3, "also in it"),
            user("eeeeeeee", Some("dddddddd"), 4, "below the cycle"),
            user("bbbbbbbb", Some("aaaaaaaa"), 5, "leaf"),
        ],
    );
    let out: Run = run(&["session", "tree", path.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for id in ["aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd", "eeeeeeee"] {
        assert!(out.stdout.contains(id), "{id} missing:\n{}", out.stdout);
    }
    assert!(
        out.stderr.contains("3 entries of") && out.stderr.contains("parentId cycle"),
        "{}",
        out.stderr
    );
    insta::assert_snapshot!(out.stdout);
}

#[test]
fn tree_output_is_written_as_it_is_laid_out() {
    // A reader that closes early (`| head`) must not make the command fail.
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), &comb(2_000));
    let mut child = super::arbor(dir.path())
        .args(["session", "tree", path.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    {
        use std::io::BufRead as _;
        let stdout = child.stdout.take().unwrap();
        std::io::BufReader::new(stdout)
            .read_line(&mut first)
            .unwrap();
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let mut expected = String::new();
    let _ = write!(expected, "m0000000");
    assert!(first.contains(&expected), "{first}");
}
