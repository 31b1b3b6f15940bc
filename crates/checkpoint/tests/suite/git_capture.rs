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

#[test]
fn the_private_index_keeps_a_warm_untracked_cache() {
    // DECISIONS §27.50: after two captures, git finds the untracked files of an unchanged
    // worktree from the private index's untracked cache without opening a directory.
    let dir = repo(&[("src/a.rs", b"a\n"), ("docs/b.md", b"b\n")]);
    write(dir.path(), "src/new.rs", b"untracked\n");
    // Directories changed within the last second are racy for the cache (git re-reads them);
    // age them as on any working machine.
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(10);
    for d in ["", "src", "docs"] {
        std::fs::File::open(dir.path().join(d))
            .unwrap()
            .set_modified(past)
            .unwrap();
    }
    let mut ws = open(dir.path(), "s1");
    let first = created(&mut ws, None);
    // An unchanged capture now runs no git at all (§27.60); touching the directories (their
    // ctime moves) sends the next one down the `git status` path, which warms the cache.
    for d in ["", "src", "docs"] {
        std::fs::File::open(dir.path().join(d))
            .unwrap()
            .set_modified(past)
            .unwrap();
    }
    assert!(matches!(
        ws.capture(Some(&first)).unwrap(),
        Captured::Unchanged(_)
    ));
    let private = dir.path().join(".git/arbor/s1.index");
    let trace = dir.path().join(".git/trace.txt");
    let out = Command::new("git")
        .current_dir(dir.path())
        .env("GIT_INDEX_FILE", &private)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TRACE2_PERF", &trace)
        .args([
            "-c",
            "core.untrackedCache=true",
            "-c",
            "status.showUntrackedFiles=all",
            "status",
            "--porcelain=v2",
            // The mode arbor asks with (DECISIONS §27.41): the cache is kept per mode.
            "--untracked-files=all",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let trace = std::fs::read_to_string(&trace).unwrap();
    let opened: Vec<&str> = trace.lines().filter(|l| l.contains("..opendir:")).collect();
    assert_eq!(opened.len(), 1, "{trace}");
    assert!(opened[0].trim_end().ends_with("..opendir:0"), "{trace}");
}

#[test]
fn paths_that_look_like_pathspec_magic_are_captured_literally() {
    // Changed paths are handed to `git add` as literal pathspecs: `:x` would otherwise mean
    // `x` at the top, `*.txt` every text file and `:!a` everything but `a`.
    let dir = repo(&[("a.txt", b"a\n"), ("b.txt", b"b\n")]);
    let mut ws = open(dir.path(), "s1");
    let first = created(&mut ws, None);
    write(dir.path(), ":x", b"colon\n");
    write(dir.path(), "*.txt", b"star\n");
    write(dir.path(), ":!a.txt", b"bang\n");
    write(dir.path(), "new dir/with space.txt", b"space\n");
    // And an ordinary edit beside them.
    write(dir.path(), "b.txt", b"bb\n");
    let Captured::Created {
        checkpoint,
        changed,
    } = ws.capture(Some(&first)).unwrap()
    else {
        panic!("expected a checkpoint");
    };
    let listed = git(
        dir.path(),
        &["ls-tree", "-r", "-z", "--name-only", &checkpoint.tree],
    );
    let mut names: Vec<&str> = listed.split('\0').filter(|n| !n.is_empty()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        vec![
            "*.txt",
            ":!a.txt",
            ":x",
            "a.txt",
            "b.txt",
            "new dir/with space.txt"
        ]
    );
    assert_eq!(
        git(dir.path(), &["show", &format!("{}:b.txt", checkpoint.tree)]),
        "bb\n"
    );
    assert_eq!(changed.len(), 5, "{changed:?}");
}

#[test]
fn edits_deletions_and_new_directories_after_an_unchanged_capture_are_seen() {
    // The unchanged capture leaves the untracked cache warm; every kind of change after it
    // must still reach the next checkpoint.
    let dir = repo(&[
        ("src/a.rs", b"a\n"),
        ("src/b.rs", b"b\n"),
        ("c.txt", b"c\n"),
    ]);
    let mut ws = open(dir.path(), "s1");
    let first = created(&mut ws, None);
    assert!(matches!(
        ws.capture(Some(&first)).unwrap(),
        Captured::Unchanged(_)
    ));
    write(dir.path(), "src/a.rs", b"edited\n");
    std::fs::remove_file(dir.path().join("src/b.rs")).unwrap();
    write(dir.path(), "deep/er/new.rs", b"new\n");
    write(dir.path(), "src/sibling.rs", b"sibling\n");
    let second = created(&mut ws, Some(&first));
    let listed = git(dir.path(), &["ls-tree", "-r", "--name-only", &second.tree]);
    assert_eq!(listed, "c.txt\ndeep/er/new.rs\nsrc/a.rs\nsrc/sibling.rs\n");
    assert!(matches!(
        ws.capture(Some(&second)).unwrap(),
        Captured::Unchanged(_)
    ));
    // A new file in a directory the cache already knows.
    write(dir.path(), "deep/er/two.rs", b"two\n");
    let third = created(&mut ws, Some(&second));
    assert!(
        git(dir.path(), &["ls-tree", "-r", "--name-only", &third.tree])
            .contains("deep/er/two.rs\n")
    );
}

#[test]
fn a_changed_force_added_file_under_an_ignored_directory_is_captured() {
    // `git add -A` with a pathspec inside an ignored directory stages the tracked file but
    // exits 1; such paths go to `add -u` (DECISIONS §27.73). A new file beside it sends the
    // capture the `git status` way, so both of its `add`s run.
    let dir = repo(&[(".gitignore", b"target/\n"), ("a.txt", b"a\n")]);
    write(dir.path(), "target/keep.txt", b"keep\n");
    git(dir.path(), &["add", "-f", "target/keep.txt"]);
    git(dir.path(), &["commit", "-q", "-m", "keep"]);
    let mut ws = open(dir.path(), "s1");
    let first = created(&mut ws, None);
    write(dir.path(), "target/keep.txt", b"KEEP\n");
    write(dir.path(), "new.txt", b"new\n");
    let second = created(&mut ws, Some(&first));
    assert_eq!(
        git(
            dir.path(),
            &["show", &format!("{}:target/keep.txt", second.tree)]
        ),
        "KEEP\n"
    );
    assert_eq!(
        git(dir.path(), &["show", &format!("{}:new.txt", second.tree)]),
        "new\n"
    );
}
