//! Capturing in a git work tree: what is in a checkpoint, what is not, and what is never touched.

use super::*;
use arbor_checkpoint::{ChangeStatus, StoreKind};

#[test]
fn an_unchanged_worktree_is_not_captured_twice() {
    let dir = repo(&[("a.txt", b"one\n")]);
    let mut ws = open(dir.path(), "s1");
    assert_eq!(ws.kind(), StoreKind::Git);
    let first = created(&mut ws, None);
    assert_eq!(
        first.head.as_deref(),
        Some(git(dir.path(), &["rev-parse", "HEAD"]).trim())
    );
    match ws.capture(Some(&first)).unwrap() {
        Captured::Unchanged(c) => assert_eq!(c, first),
        other => panic!("{other:?}"),
    }
    // One ref for the one checkpoint.
    let refs = git(dir.path(), &["for-each-ref", "refs/arbor/"]);
    assert_eq!(refs.lines().count(), 1, "{refs}");
    assert!(refs.contains(&format!("refs/arbor/checkpoints/s1/{}", first.id)));
}

#[test]
fn untracked_files_are_captured_and_ignored_ones_are_not() {
    let dir = repo(&[
        (".gitignore", b"*.log\ntarget/\n"),
        ("src/lib.rs", b"fn a() {}\n"),
    ]);
    let mut ws = open(dir.path(), "s1");
    let base = created(&mut ws, None);
    write(dir.path(), "src/new.rs", b"fn new() {}\n");
    write(dir.path(), "debug.log", b"noise\n");
    write(dir.path(), "target/out.bin", b"\x00\x01");
    let Captured::Created {
        checkpoint,
        changed,
    } = ws.capture(Some(&base)).unwrap()
    else {
        panic!("expected a checkpoint");
    };
    assert_eq!(
        changed,
        vec![arbor_checkpoint::Change {
            status: ChangeStatus::Added,
            path: "src/new.rs".into()
        }]
    );
    let listed = git(
        dir.path(),
        &["ls-tree", "-r", "--name-only", &checkpoint.tree],
    );
    assert_eq!(listed, ".gitignore\nsrc/lib.rs\nsrc/new.rs\n");
}

#[test]
fn capturing_touches_no_branch_index_stash_or_head_reflog() {
    let dir = repo(&[("a.txt", b"one\n"), ("b.txt", b"two\n")]);
    // The user has a stash, a staged change and an unstaged one.
    write(dir.path(), "a.txt", b"stashed\n");
    git(dir.path(), &["stash", "-q"]);
    write(dir.path(), "b.txt", b"staged\n");
    git(dir.path(), &["add", "b.txt"]);
    write(dir.path(), "a.txt", b"unstaged\n");
    write(dir.path(), "c.txt", b"untracked\n");
    let before = user_state(dir.path());
    let mut ws = open(dir.path(), "s1");
    let first = created(&mut ws, None);
    write(dir.path(), "a.txt", b"agent edit\n");
    let second = created(&mut ws, Some(&first));
    ws.capture(Some(&second)).unwrap();
    assert_eq!(user_state(dir.path()), before);
    // …and the checkpoint knows the staged state apart from the worktree.
    let index = first.index.clone().unwrap();
    assert_eq!(
        git(dir.path(), &["show", &format!("{index}:b.txt")]),
        "staged\n"
    );
    assert_eq!(
        git(dir.path(), &["show", &format!("{index}:a.txt")]),
        "one\n"
    );
    assert_eq!(
        git(dir.path(), &["show", &format!("{}:a.txt", first.tree)]),
        "unstaged\n"
    );
    assert_eq!(
        git(dir.path(), &["show", &format!("{}:c.txt", first.tree)]),
        "untracked\n"
    );
    // The index tree stays reachable from the checkpoint commit (gc keeps it).
    let parents = git(dir.path(), &["rev-list", "--parents", "-n", "1", &first.id]);
    assert_eq!(parents.split_whitespace().count(), 3, "{parents}");
}

#[test]
fn deleted_and_binary_files_are_recorded() {
    let png: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\xff";
    let dir = repo(&[("keep.txt", b"k\n"), ("gone.txt", b"g\n"), ("img.png", png)]);
    let mut ws = open(dir.path(), "s1");
    let base = created(&mut ws, None);
    std::fs::remove_file(dir.path().join("gone.txt")).unwrap();
    write(dir.path(), "img.png", b"\x00\x01\x02\xff\xfe");
    let Captured::Created {
        changed,
        checkpoint,
    } = ws.capture(Some(&base)).unwrap()
    else {
        panic!()
    };
    let summary: Vec<String> = changed
        .iter()
        .map(|c| format!("{} {}", c.status.letter(), c.path))
        .collect();
    assert_eq!(summary, ["D gone.txt", "M img.png"]);
    let blob = std::process::Command::new("git")
        .current_dir(dir.path())
        .args(["cat-file", "blob", &format!("{}:img.png", checkpoint.tree)])
        .output()
        .unwrap()
        .stdout;
    assert_eq!(blob, b"\x00\x01\x02\xff\xfe");
}

#[test]
fn an_unborn_branch_and_a_subdirectory_cwd_work() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]);
    write(dir.path(), "sub/x.txt", b"x\n");
    write(dir.path(), "top.txt", b"t\n");
    let mut ws = open(&dir.path().join("sub"), "s1");
    assert_eq!(ws.root(), dir.path().canonicalize().unwrap());
    let Captured::Created {
        checkpoint,
        changed,
    } = ws.capture(None).unwrap()
    else {
        panic!()
    };
    assert_eq!(checkpoint.head, None);
    assert_eq!(changed.len(), 2, "{changed:?}");
    // Nothing was staged in the user's (absent) index.
    assert_eq!(
        git(dir.path(), &["status", "--porcelain"]),
        "?? sub/\n?? top.txt\n"
    );
}

#[test]
fn a_racy_edit_within_the_same_second_is_seen() {
    // Same size, same second: only git's racy-clean check (kept by copying the user's index
    // with its mtime) tells the files apart.
    let dir = repo(&[("a.txt", b"aaaa\n")]);
    let mut ws = open(dir.path(), "s1");
    let first = created(&mut ws, None);
    write(dir.path(), "a.txt", b"bbbb\n");
    let second = created(&mut ws, Some(&first));
    write(dir.path(), "a.txt", b"cccc\n");
    let third = created(&mut ws, Some(&second));
    assert_eq!(
        git(dir.path(), &["show", &format!("{}:a.txt", third.tree)]),
        "cccc\n"
    );
}

#[test]
fn session_ids_that_cannot_name_refs_are_refused() {
    let dir = repo(&[("a", b"a")]);
    let home = dir.path().join("h");
    for bad in ["", "../x", "a b", "x.lock", ".hidden"] {
        let err =
            Workspace::open(dir.path(), bad, &CheckpointSettings::default(), &home).unwrap_err();
        assert!(err.to_string().contains("cannot name checkpoints"), "{err}");
    }
}
