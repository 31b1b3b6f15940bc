//! Restoring in a git work tree: byte-equal files, the index, HEAD only when asked, refusals.

use super::*;
use arbor_checkpoint::{CheckpointError, RestoreOptions};

#[test]
fn restore_moves_files_back_and_forth_byte_for_byte() {
    let dir = repo(&[
        ("src/a.rs", b"A0\n"),
        ("src/b.rs", b"B0\n"),
        ("bin.dat", b"\x00\x01"),
    ]);
    let root = dir.path();
    let mut ws = open(root, "s1");
    let start = created(&mut ws, None);
    let start_files = files(root);
    write(root, "src/a.rs", b"A1\n");
    std::fs::remove_file(root.join("src/b.rs")).unwrap();
    write(root, "src/new/c.rs", b"C1\n");
    write(root, "bin.dat", b"\xff\xfe\x00");
    let edited = created(&mut ws, Some(&start));
    let edited_files = files(root);

    let now = created(&mut ws, None); // what a caller captures first (same state as `edited`)
    assert!(now.same_state(&edited));
    let done = ws.restore(&start, &now, RestoreOptions::default()).unwrap();
    assert_eq!(files(root), start_files);
    assert!(
        !root.join("src/new").exists(),
        "emptied directories are removed"
    );
    let summary: Vec<String> = done
        .changed
        .iter()
        .map(|c| format!("{} {}", c.status.letter(), c.path))
        .collect();
    assert_eq!(
        summary,
        ["M bin.dat", "M src/a.rs", "A src/b.rs", "D src/new/c.rs"]
    );

    let now = created(&mut ws, Some(&edited));
    ws.restore(&edited, &now, RestoreOptions::default())
        .unwrap();
    assert_eq!(files(root), edited_files);
    // After all that the user's view of the repository is consistent.
    assert_eq!(
        git(root, &["status", "--porcelain", "--untracked-files=all"]),
        " M bin.dat\n M src/a.rs\n D src/b.rs\n?? src/new/c.rs\n"
    );
}

#[test]
fn ignored_files_survive_a_restore_and_are_not_overwritten() {
    let dir = repo(&[(".gitignore", b"*.log\n"), ("a.txt", b"a\n")]);
    let root = dir.path();
    let mut ws = open(root, "s1");
    let start = created(&mut ws, None);
    write(root, "keep.log", b"my notes\n");
    write(root, "a.txt", b"changed\n");
    let now = created(&mut ws, Some(&start));
    ws.restore(&start, &now, RestoreOptions::default()).unwrap();
    assert_eq!(read(root, "keep.log").unwrap(), b"my notes\n");
    assert_eq!(read(root, "a.txt").unwrap(), b"a\n");
}

#[test]
fn user_changes_outside_the_agent_are_captured_and_restorable() {
    let dir = repo(&[("a.txt", b"a\n")]);
    let root = dir.path();
    let mut ws = open(root, "s1");
    let agent = created(&mut ws, None);
    // The user edits by hand and stages part of it.
    write(root, "a.txt", b"by hand\n");
    write(root, "notes.md", b"todo\n");
    git(root, &["add", "notes.md"]);
    let users = created(&mut ws, Some(&agent)); // the capture a restore makes first
    let users_status = git(root, &["status", "--porcelain"]);
    ws.restore(&agent, &users, RestoreOptions::default())
        .unwrap();
    assert_eq!(read(root, "a.txt").unwrap(), b"a\n");
    assert!(read(root, "notes.md").is_none());
    assert_eq!(git(root, &["status", "--porcelain"]), "");
    // Undo the restore: the hand edits and the staged file are back.
    let now = created(&mut ws, Some(&users));
    ws.restore(&users, &now, RestoreOptions::default()).unwrap();
    assert_eq!(read(root, "a.txt").unwrap(), b"by hand\n");
    assert_eq!(git(root, &["status", "--porcelain"]), users_status);
    assert_eq!(users_status, " M a.txt\nA  notes.md\n");
}

#[test]
fn without_the_index_option_only_the_worktree_moves() {
    let dir = repo(&[("a.txt", b"a\n")]);
    let root = dir.path();
    let mut ws = open(root, "s1");
    let start = created(&mut ws, None);
    write(root, "b.txt", b"b\n");
    git(root, &["add", "b.txt"]);
    let now = created(&mut ws, Some(&start));
    let before = user_state(root);
    let opts = RestoreOptions {
        index: false,
        head: false,
    };
    let done = ws.restore(&start, &now, opts).unwrap();
    assert!(!done.index_restored);
    assert_eq!(user_state(root), before);
    assert!(read(root, "b.txt").is_none());
}

#[test]
fn head_moves_only_when_asked_and_never_moves_a_branch() {
    let dir = repo(&[("a.txt", b"a\n")]);
    let root = dir.path();
    let mut ws = open(root, "s1");
    let start = created(&mut ws, None);
    let first_commit = start.head.clone().unwrap();
    write(root, "a.txt", b"committed by the agent\n");
    git(root, &["commit", "-qam", "agent commit"]);
    let main_after = git(root, &["rev-parse", "main"]);
    let now = created(&mut ws, Some(&start));
    let done = ws.restore(&start, &now, RestoreOptions::default()).unwrap();
    assert!(done.head_differs && !done.head_moved);
    assert_eq!(
        git(root, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/main"
    );
    assert_eq!(read(root, "a.txt").unwrap(), b"a\n");

    let now = created(&mut ws, None);
    let opts = RestoreOptions {
        index: true,
        head: true,
    };
    let done = ws.restore(&start, &now, opts).unwrap();
    assert!(done.head_moved && !done.head_differs);
    assert_eq!(git(root, &["rev-parse", "HEAD"]).trim(), first_commit);
    assert_eq!(
        git(root, &["rev-parse", "main"]),
        main_after,
        "the branch stays"
    );
    assert_eq!(git(root, &["status", "--porcelain"]), "");
}

#[test]
fn a_rebase_in_progress_is_refused_before_anything_changes() {
    let dir = repo(&[("a.txt", b"base\n")]);
    let root = dir.path();
    let mut ws = open(root, "s1");
    let start = created(&mut ws, None);
    git(root, &["checkout", "-q", "-b", "topic"]);
    write(root, "a.txt", b"topic\n");
    git(root, &["commit", "-qam", "topic"]);
    git(root, &["checkout", "-q", "main"]);
    write(root, "a.txt", b"main\n");
    git(root, &["commit", "-qam", "main"]);
    git(root, &["checkout", "-q", "topic"]);
    let status = std::process::Command::new("git")
        .current_dir(root)
        .env("GIT_EDITOR", "true")
        .args([
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@e",
            "rebase",
            "main",
        ])
        .output()
        .unwrap();
    assert!(!status.status.success(), "the rebase stops on a conflict");
    let worktree = files(root);
    let now = created(&mut ws, Some(&start)); // capturing mid-rebase still works
    assert_eq!(now.index, None, "unmerged index has no tree");
    let err = ws
        .restore(&start, &now, RestoreOptions::default())
        .unwrap_err();
    assert!(matches!(err, CheckpointError::Busy { .. }), "{err}");
    assert!(err.to_string().contains("middle of a rebase"), "{err}");
    assert!(err.is_refusal());
    assert_eq!(files(root), worktree);
}

#[test]
fn a_checkpoint_whose_objects_are_gone_is_refused() {
    let dir = repo(&[("a.txt", b"a\n")]);
    let root = dir.path();
    let mut ws = open(root, "s1");
    let start = created(&mut ws, None);
    write(root, "a.txt", b"b\n");
    let now = created(&mut ws, Some(&start));
    let fake = arbor_checkpoint::Checkpoint {
        id: "1111111111111111111111111111111111111111".into(),
        ..start.clone()
    };
    let err = ws
        .restore(&fake, &now, RestoreOptions::default())
        .unwrap_err();
    assert!(matches!(err, CheckpointError::Gone { .. }), "{err}");
    assert!(err.to_string().contains("1111111111"), "{err}");
    assert_eq!(read(root, "a.txt").unwrap(), b"b\n");
}

#[test]
fn diff_between_checkpoints_is_a_unified_diff() {
    let dir = repo(&[("a.txt", b"one\ntwo\n"), ("b.bin", b"\x00x")]);
    let root = dir.path();
    let mut ws = open(root, "s1");
    let start = created(&mut ws, None);
    write(root, "a.txt", b"one\nTWO\n");
    write(root, "b.bin", b"\x00y");
    let next = created(&mut ws, Some(&start));
    let diff = ws.diff(&start, &next).unwrap();
    assert!(
        diff.contains("--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"),
        "{diff}"
    );
    assert!(
        diff.contains("Binary files a/b.bin and b/b.bin differ"),
        "{diff}"
    );
}
