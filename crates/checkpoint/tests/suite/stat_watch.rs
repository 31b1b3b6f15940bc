//! The in-process stat check before git (DECISIONS §27.60): an unchanged worktree costs no
//! git process, and no change made outside the agent slips past it.

use super::*;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use arbor_checkpoint::GitStore;

pub(super) fn store(ws: &Workspace) -> &GitStore {
    match ws {
        Workspace::Git(g) => g,
        Workspace::Snapshot(_) => panic!("expected a git store"),
    }
}

/// Lets the file system's clock move past everything written so far: a stat recorded for a
/// path changed in the same clock tick as the capture is not trusted (it is re-checked).
pub(super) fn settle() {
    std::thread::sleep(Duration::from_millis(60));
}

/// A repository and a store whose watch is warm: the next unchanged capture runs no git.
pub(super) fn warm(files: &[(&str, &[u8])]) -> (tempfile::TempDir, Workspace, Checkpoint) {
    let dir = repo(files);
    settle();
    let mut ws = open(dir.path(), "s1");
    let first = created(&mut ws, None);
    let now = unchanged_without_git(&mut ws, &first);
    (dir, ws, now)
}

/// Captures, expects nothing new, and expects no git process to have run for it.
pub(super) fn unchanged_without_git(ws: &mut Workspace, previous: &Checkpoint) -> Checkpoint {
    // A path changed in the same clock tick as the last capture is not trusted yet: one more
    // capture asks git (a `git status` whose stamp is newer), the next builds the watch.
    settle();
    for _ in 0..2 {
        let _ = ws.capture(Some(previous)).unwrap();
    }
    let before = store(ws).git_processes();
    let c = match ws.capture(Some(previous)).unwrap() {
        Captured::Unchanged(c) => c,
        other => panic!("expected no change, got {other:?}"),
    };
    assert_eq!(
        store(ws).git_processes(),
        before,
        "git ran for an unchanged worktree"
    );
    c
}

pub(super) fn tree_files(root: &Path, tree: &str) -> String {
    git(root, &["ls-tree", "-r", tree])
        .lines()
        .map(|l| {
            let (meta, path) = l.split_once('\t').unwrap();
            let mode = meta.split(' ').next().unwrap();
            format!("{mode} {path}\n")
        })
        .collect()
}

pub(super) fn show(root: &Path, tree: &str, path: &str) -> String {
    git(root, &["show", &format!("{tree}:{path}")])
}

#[test]
fn an_unchanged_worktree_costs_no_git_process() {
    let (_dir, mut ws, first) = warm(&[("a.txt", b"a\n"), ("src/b.rs", b"b\n")]);
    for _ in 0..3 {
        let before = store(&ws).git_processes();
        assert!(matches!(
            ws.capture(Some(&first)).unwrap(),
            Captured::Unchanged(_)
        ));
        assert_eq!(store(&ws).git_processes(), before);
    }
}

#[test]
fn an_edit_keeping_size_and_mtime_is_seen() {
    let (dir, mut ws, first) = warm(&[("a.txt", b"aaaa\n"), ("b.txt", b"b\n")]);
    let path = dir.path().join("a.txt");
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    write(dir.path(), "a.txt", b"bbbb\n");
    // Same size, and the modification time put back as it was: only ctime tells.
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
    let second = created(&mut ws, Some(&first));
    assert_eq!(show(dir.path(), &second.tree, "a.txt"), "bbbb\n");
    // The edited file is trusted again once its tick has passed.
    let again = unchanged_without_git(&mut ws, &second);
    assert_eq!(again, second);
}

#[test]
fn an_edit_right_after_a_capture_is_seen() {
    // The capture sees "one"; the file changes again within the same clock tick, same size.
    let (dir, mut ws, first) = warm(&[("a.txt", b"zero\n")]);
    write(dir.path(), "a.txt", b"one!\n");
    let second = created(&mut ws, Some(&first));
    write(dir.path(), "a.txt", b"two!\n");
    let third = created(&mut ws, Some(&second));
    assert_eq!(show(dir.path(), &third.tree, "a.txt"), "two!\n");
}

#[test]
fn new_files_in_old_and_new_directories_are_seen() {
    let (dir, mut ws, first) = warm(&[("a.txt", b"a\n"), ("src/b.rs", b"b\n")]);
    write(dir.path(), "src/c.rs", b"c\n");
    let second = created(&mut ws, Some(&first));
    assert!(tree_files(dir.path(), &second.tree).contains(" src/c.rs\n"));
    let second = unchanged_without_git(&mut ws, &second);
    write(dir.path(), "deep/new/d.rs", b"d\n");
    let third = created(&mut ws, Some(&second));
    assert!(tree_files(dir.path(), &third.tree).contains(" deep/new/d.rs\n"));
    let third = unchanged_without_git(&mut ws, &third);
    // A file in the directory the last capture found new.
    write(dir.path(), "deep/new/e.rs", b"e\n");
    let fourth = created(&mut ws, Some(&third));
    assert!(tree_files(dir.path(), &fourth.tree).contains(" deep/new/e.rs\n"));
}

#[test]
fn deletions_and_mode_changes_are_seen() {
    let (dir, mut ws, first) = warm(&[("a.sh", b"echo\n"), ("src/b.rs", b"b\n")]);
    std::fs::set_permissions(
        dir.path().join("a.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let second = created(&mut ws, Some(&first));
    assert_eq!(
        tree_files(dir.path(), &second.tree),
        "100755 a.sh\n100644 src/b.rs\n"
    );
    let second = unchanged_without_git(&mut ws, &second);
    std::fs::remove_file(dir.path().join("src/b.rs")).unwrap();
    let third = created(&mut ws, Some(&second));
    assert_eq!(tree_files(dir.path(), &third.tree), "100755 a.sh\n");
}

#[test]
fn new_files_beside_ignored_ones_and_in_empty_directories_are_seen() {
    // `build/` holds only ignored files and `empty/` nothing: git captures neither, but a new
    // file in either is captured, so both directories must be watched.
    let (dir, mut ws, first) = warm(&[(".gitignore", b"*.o\ntarget/\n"), ("a.txt", b"a\n")]);
    write(dir.path(), "build/x.o", b"obj");
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    write(dir.path(), "target/out.bin", b"bin");
    let second = created_or_same(&mut ws, &first);
    assert_eq!(second.tree, first.tree);
    let second = unchanged_without_git(&mut ws, &second);
    write(dir.path(), "build/notes.md", b"notes\n");
    let third = created(&mut ws, Some(&second));
    assert!(tree_files(dir.path(), &third.tree).contains(" build/notes.md\n"));
    let third = unchanged_without_git(&mut ws, &third);
    write(dir.path(), "empty/first.txt", b"first\n");
    let fourth = created(&mut ws, Some(&third));
    assert!(tree_files(dir.path(), &fourth.tree).contains(" empty/first.txt\n"));
    let fourth = unchanged_without_git(&mut ws, &fourth);
    // Inside an ignored directory nothing is captured, and the watch does not look there.
    write(dir.path(), "target/more.bin", b"more");
    let before = store(&ws).git_processes();
    assert!(matches!(
        ws.capture(Some(&fourth)).unwrap(),
        Captured::Unchanged(_)
    ));
    assert_eq!(store(&ws).git_processes(), before);
}

/// Captures after changes that may or may not change the tree.
pub(super) fn created_or_same(ws: &mut Workspace, previous: &Checkpoint) -> Checkpoint {
    match ws.capture(Some(previous)).unwrap() {
        Captured::Created { checkpoint, .. } | Captured::Unchanged(checkpoint) => checkpoint,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_changed_ignore_rule_is_seen() {
    // Un-ignoring changes no directory and (for `info/exclude`) no captured file: only the
    // watch of the files that decide ignoring can tell.
    let (dir, mut ws, first) = warm(&[(".gitignore", b"target/\n"), ("a.txt", b"a\n")]);
    write(dir.path(), "target/kept.txt", b"kept\n");
    write(dir.path(), "cache/c.txt", b"cache\n");
    write(dir.path(), ".git/info/exclude", b"cache/\n");
    let first = created_or_same(&mut ws, &first);
    assert_eq!(
        tree_files(dir.path(), &first.tree),
        "100644 .gitignore\n100644 a.txt\n"
    );
    let first = unchanged_without_git(&mut ws, &first);
    // The tracked `.gitignore` no longer ignores `target/`.
    write(dir.path(), ".gitignore", b"*.log\n");
    let second = created(&mut ws, Some(&first));
    assert!(tree_files(dir.path(), &second.tree).contains(" target/kept.txt\n"));
    let second = unchanged_without_git(&mut ws, &second);
    // `info/exclude` no longer ignores `cache/`.
    write(dir.path(), ".git/info/exclude", b"# nothing\n");
    let third = created(&mut ws, Some(&second));
    assert!(tree_files(dir.path(), &third.tree).contains(" cache/c.txt\n"));
    let third = unchanged_without_git(&mut ws, &third);
    // A new, untracked `.gitignore` in a subdirectory is captured itself.
    write(dir.path(), "sub/x.tmp", b"x\n");
    let fourth = created(&mut ws, Some(&third));
    let fourth = unchanged_without_git(&mut ws, &fourth);
    write(dir.path(), "sub/.gitignore", b"*.tmp\n");
    let fifth = created(&mut ws, Some(&fourth));
    assert!(tree_files(dir.path(), &fifth.tree).contains(" sub/.gitignore\n"));
}

#[test]
fn edits_after_a_restore_are_seen() {
    let (dir, mut ws, first) = warm(&[("a.txt", b"a\n"), ("src/b.rs", b"b\n")]);
    write(dir.path(), "a.txt", b"second\n");
    write(dir.path(), "src/c.rs", b"c\n");
    let second = created(&mut ws, Some(&first));
    let second = unchanged_without_git(&mut ws, &second);
    ws.restore(&first, &second, arbor_checkpoint::RestoreOptions::default())
        .unwrap();
    assert_eq!(read(dir.path(), "a.txt").unwrap(), b"a\n");
    let back = created_or_same(&mut ws, &second);
    assert_eq!(back.tree, first.tree);
    let back = unchanged_without_git(&mut ws, &back);
    write(dir.path(), "src/b.rs", b"B\n");
    let third = created(&mut ws, Some(&back));
    assert_eq!(show(dir.path(), &third.tree, "src/b.rs"), "B\n");
}

#[test]
fn a_nested_repository_turns_the_watch_off() {
    // A nested repository's HEAD can move without any directory of ours changing: every
    // capture asks git.
    let (dir, mut ws, first) = warm(&[("a.txt", b"a\n")]);
    let inner = dir.path().join("inner");
    std::fs::create_dir(&inner).unwrap();
    git(&inner, &["init", "-q"]);
    git(&inner, &["commit", "-q", "--allow-empty", "-m", "inner"]);
    let second = created_or_same(&mut ws, &first);
    settle();
    let _ = ws.capture(Some(&second)).unwrap();
    let before = store(&ws).git_processes();
    let _ = ws.capture(Some(&second)).unwrap();
    assert!(store(&ws).git_processes() > before);
}

#[test]
fn directories_named_like_pathspec_magic_are_classified_literally() {
    // `:x` would be read as magic and `*` as a glob if asked about carelessly.
    let (dir, mut ws, first) = warm(&[(".gitignore", b":x/\n"), ("a.txt", b"a\n")]);
    write(dir.path(), ":x/a", b"ignored\n");
    write(dir.path(), "*/b", b"kept\n");
    let second = created(&mut ws, Some(&first));
    assert_eq!(
        tree_files(dir.path(), &second.tree),
        "100644 */b\n100644 .gitignore\n100644 a.txt\n"
    );
    let second = unchanged_without_git(&mut ws, &second);
    write(dir.path(), "*/c", b"kept too\n");
    let third = created(&mut ws, Some(&second));
    assert!(tree_files(dir.path(), &third.tree).contains(" */c\n"));
    let third = unchanged_without_git(&mut ws, &third);
    // The ignored directory is not watched: a new file there costs nothing.
    write(dir.path(), ":x/d", b"ignored too\n");
    let before = store(&ws).git_processes();
    assert!(matches!(
        ws.capture(Some(&third)).unwrap(),
        Captured::Unchanged(_)
    ));
    assert_eq!(store(&ws).git_processes(), before);
}

#[test]
fn an_index_in_version_4_is_read() {
    // The private index starts as a copy of the user's, in the user's format; version 4
    // compresses each path against the one before.
    let dir = repo(&[
        ("src/deep/one.rs", b"1\n"),
        ("src/deep/two.rs", b"2\n"),
        ("src/other.rs", b"3\n"),
        ("z.txt", b"z\n"),
    ]);
    git(dir.path(), &["update-index", "--index-version", "4"]);
    settle();
    let mut ws = open(dir.path(), "s1");
    let first = created(&mut ws, None);
    let first = unchanged_without_git(&mut ws, &first);
    write(dir.path(), "src/deep/two.rs", b"9\n");
    let second = created(&mut ws, Some(&first));
    assert_eq!(show(dir.path(), &second.tree, "src/deep/two.rs"), "9\n");
    let second = unchanged_without_git(&mut ws, &second);
    write(dir.path(), "z.txt", b"y\n");
    let third = created(&mut ws, Some(&second));
    assert_eq!(show(dir.path(), &third.tree, "z.txt"), "y\n");
}

#[test]
fn a_split_index_turns_the_watch_off() {
    // Most entries of a split index live in a shared file the check does not read: every
    // capture asks git.
    let dir = repo(&[("a.txt", b"a\n"), ("b.txt", b"b\n")]);
    git(dir.path(), &["update-index", "--split-index"]);
    write(dir.path(), "a.txt", b"A\n");
    git(dir.path(), &["add", "a.txt"]);
    settle();
    let mut ws = open(dir.path(), "s1");
    let first = created(&mut ws, None);
    settle();
    let _ = ws.capture(Some(&first)).unwrap();
    let before = store(&ws).git_processes();
    assert!(matches!(
        ws.capture(Some(&first)).unwrap(),
        Captured::Unchanged(_)
    ));
    assert!(store(&ws).git_processes() > before);
    write(dir.path(), "b.txt", b"B\n");
    let second = created(&mut ws, Some(&first));
    assert_eq!(show(dir.path(), &second.tree, "b.txt"), "B\n");
}

#[test]
fn one_edited_file_is_reported_as_diff_tree_would() {
    // The `git add` path names the change itself instead of running `diff-tree`.
    let (dir, mut ws, first) = warm(&[("a.txt", b"a\n"), ("b.sh", b"b\n")]);
    write(dir.path(), "a.txt", b"edited\n");
    let Captured::Created {
        checkpoint,
        changed,
    } = ws.capture(Some(&first)).unwrap()
    else {
        panic!("expected a checkpoint");
    };
    let expected = vec![arbor_checkpoint::Change {
        status: arbor_checkpoint::ChangeStatus::Modified,
        path: "a.txt".into(),
    }];
    assert_eq!(changed, expected);
    let diff = store(&ws)
        .tree_changes(&first.tree, &checkpoint.tree)
        .unwrap();
    assert_eq!(diff, expected);
    let second = unchanged_without_git(&mut ws, &checkpoint);
    std::fs::set_permissions(
        dir.path().join("b.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let Captured::Created {
        checkpoint,
        changed,
    } = ws.capture(Some(&second)).unwrap()
    else {
        panic!("expected a checkpoint");
    };
    assert_eq!(
        changed,
        store(&ws)
            .tree_changes(&second.tree, &checkpoint.tree)
            .unwrap()
    );
    assert_eq!(changed[0].path, "b.sh");
}

#[test]
fn a_large_worktree_is_checked_on_several_threads_without_missing_an_edit() {
    // Above 2,000 index paths the `lstat`s are split over threads; an edit in any part of
    // the list, the last included, must still be seen.
    let names: Vec<String> = (0..2_100)
        .map(|i| format!("d{}/f{i:04}.txt", i / 700))
        .collect();
    let owned: Vec<(String, Vec<u8>)> = names
        .iter()
        .map(|n| (n.clone(), b"same\n".to_vec()))
        .collect();
    let files: Vec<(&str, &[u8])> = owned
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let (dir, mut ws, mut last) = warm(&files);
    for name in [&names[0], &names[1_050], &names[2_099]] {
        write(dir.path(), name, b"diff\n");
        let next = created(&mut ws, Some(&last));
        assert_eq!(show(dir.path(), &next.tree, name), "diff\n");
        last = unchanged_without_git(&mut ws, &next);
    }
}
