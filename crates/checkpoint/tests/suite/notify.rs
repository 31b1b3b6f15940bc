//! Change notification in front of the stat check (DECISIONS §27.70–§27.72): with a warm
//! watch an unchanged capture makes no `lstat` of the index paths and starts no git process,
//! and every change still reaches the checkpoint, through a reported file, a fallback to the
//! stat check, or the safety net.

use super::stat_watch::{
    created_or_same, settle, show, store, tree_files, unchanged_without_git, warm,
};
use super::*;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_checkpoint::{GitStore, WatchStats};

fn store_mut(ws: &mut Workspace) -> &mut GitStore {
    match ws {
        Workspace::Git(g) => g,
        Workspace::Snapshot(_) => panic!("expected a git store"),
    }
}

fn stats(ws: &Workspace) -> WatchStats {
    store(ws).watch_stats()
}

/// A warm watch with notification armed.
fn notified(files: &[(&str, &[u8])]) -> (tempfile::TempDir, Workspace, Checkpoint) {
    let (dir, ws, first) = warm(files);
    assert!(store(&ws).notifying(), "no notification after warming up");
    (dir, ws, first)
}

/// Captures and expects notification alone to have decided: no full stat pass.
fn capture_notified(ws: &mut Workspace, previous: &Checkpoint) -> Captured {
    let before = stats(ws);
    let captured = ws.capture(Some(previous)).unwrap();
    let after = stats(ws);
    assert_eq!(after.notified, before.notified + 1, "{after:?}");
    assert_eq!(after.stat_passes, before.stat_passes, "{after:?}");
    captured
}

fn new_checkpoint(captured: Captured) -> Checkpoint {
    match captured {
        Captured::Created { checkpoint, .. } => checkpoint,
        other => panic!("expected a new checkpoint, got {other:?}"),
    }
}

#[test]
fn an_unchanged_capture_makes_no_lstat_and_starts_no_git() {
    let (_dir, mut ws, first) = notified(&[("a.txt", b"a\n"), ("src/b.rs", b"b\n")]);
    for _ in 0..3 {
        let (procs, lstats) = (store(&ws).git_processes(), stats(&ws).index_lstats);
        let captured = capture_notified(&mut ws, &first);
        assert!(matches!(captured, Captured::Unchanged(_)));
        assert_eq!(store(&ws).git_processes(), procs, "git ran");
        assert_eq!(stats(&ws).index_lstats, lstats, "index paths were lstat'ed");
    }
}

#[test]
fn an_edit_right_after_a_capture_is_seen() {
    let (dir, mut ws, first) = notified(&[("a.txt", b"zero\n"), ("src/b.rs", b"b\n")]);
    // Same size, same clock tick as the capture before: only the event tells.
    write(dir.path(), "a.txt", b"one!\n");
    let procs = store(&ws).git_processes();
    let lstats = stats(&ws).index_lstats;
    let second = new_checkpoint(capture_notified(&mut ws, &first));
    assert_eq!(show(dir.path(), &second.tree, "a.txt"), "one!\n");
    // `add` of the one path, `write-tree`, `commit-tree`, `update-ref`; one lstat.
    assert_eq!(store(&ws).git_processes(), procs + 4);
    assert_eq!(stats(&ws).index_lstats, lstats + 1);
    write(dir.path(), "a.txt", b"two!\n");
    let third = new_checkpoint(capture_notified(&mut ws, &second));
    assert_eq!(show(dir.path(), &third.tree, "a.txt"), "two!\n");
    write(dir.path(), "src/b.rs", b"B\n");
    let fourth = new_checkpoint(capture_notified(&mut ws, &third));
    assert_eq!(show(dir.path(), &fourth.tree, "src/b.rs"), "B\n");
}

#[test]
fn a_new_file_in_a_new_directory_is_seen_and_the_watch_rebuilt() {
    let (dir, mut ws, first) = notified(&[("a.txt", b"a\n"), ("src/b.rs", b"b\n")]);
    write(dir.path(), "src/deep/new/c.rs", b"c\n");
    let before = stats(&ws);
    let second = created(&mut ws, Some(&first));
    assert_eq!(stats(&ws).directory_events, before.directory_events + 1);
    assert!(tree_files(dir.path(), &second.tree).contains(" src/deep/new/c.rs\n"));
    // The rebuilt watch covers the new directories too.
    let second = unchanged_without_git(&mut ws, &second);
    assert!(store(&ws).notifying());
    write(dir.path(), "src/deep/new/c.rs", b"C\n");
    let third = new_checkpoint(capture_notified(&mut ws, &second));
    assert_eq!(show(dir.path(), &third.tree, "src/deep/new/c.rs"), "C\n");
}

#[test]
fn a_deleted_file_is_seen() {
    let (dir, mut ws, first) = notified(&[("a.txt", b"a\n"), ("src/b.rs", b"b\n")]);
    std::fs::remove_file(dir.path().join("src/b.rs")).unwrap();
    let before = stats(&ws);
    let second = created(&mut ws, Some(&first));
    assert_eq!(stats(&ws).directory_events, before.directory_events + 1);
    assert_eq!(tree_files(dir.path(), &second.tree), "100644 a.txt\n");
}

#[test]
fn renames_within_and_across_directories_are_seen() {
    let (dir, mut ws, first) = notified(&[("a.txt", b"a\n"), ("src/b.rs", b"b\n")]);
    std::fs::rename(dir.path().join("a.txt"), dir.path().join("c.txt")).unwrap();
    let before = stats(&ws);
    let second = created(&mut ws, Some(&first));
    assert_eq!(stats(&ws).directory_events, before.directory_events + 1);
    assert_eq!(
        tree_files(dir.path(), &second.tree),
        "100644 c.txt\n100644 src/b.rs\n"
    );
    let second = unchanged_without_git(&mut ws, &second);
    assert!(store(&ws).notifying());
    std::fs::rename(dir.path().join("src/b.rs"), dir.path().join("b.rs")).unwrap();
    let third = created(&mut ws, Some(&second));
    assert_eq!(
        tree_files(dir.path(), &third.tree),
        "100644 b.rs\n100644 c.txt\n"
    );
    // A whole directory moved.
    let third = unchanged_without_git(&mut ws, &third);
    write(dir.path(), "lib/x.rs", b"x\n");
    let fourth = created(&mut ws, Some(&third));
    let fourth = unchanged_without_git(&mut ws, &fourth);
    std::fs::rename(dir.path().join("lib"), dir.path().join("lib2")).unwrap();
    let fifth = created(&mut ws, Some(&fourth));
    assert!(tree_files(dir.path(), &fifth.tree).contains(" lib2/x.rs\n"));
    assert!(!tree_files(dir.path(), &fifth.tree).contains(" lib/x.rs\n"));
}

#[test]
fn an_edit_while_git_runs_is_seen_by_the_next_capture() {
    let (dir, mut ws, first) = notified(&[("a.txt", b"zero\n"), ("b.txt", b"b\n")]);
    // The first edit is old by the time git runs (its stat record will be trusted), so only
    // the event queued during the run can tell the next capture about the second one.
    write(dir.path(), "a.txt", b"one!\n");
    settle();
    let armed = Arc::new(AtomicBool::new(true));
    let (root, flag) = (dir.path().to_path_buf(), Arc::clone(&armed));
    store_mut(&mut ws).set_after_git_hook(Some(Box::new(move || {
        if flag.swap(false, Ordering::SeqCst) {
            std::fs::write(root.join("a.txt"), b"two!\n").unwrap();
        }
    })));
    let second = new_checkpoint(capture_notified(&mut ws, &first));
    assert!(!armed.load(Ordering::SeqCst), "the hook did not run");
    assert_eq!(show(dir.path(), &second.tree, "a.txt"), "one!\n");
    settle();
    let third = new_checkpoint(capture_notified(&mut ws, &second));
    assert_eq!(show(dir.path(), &third.tree, "a.txt"), "two!\n");

    // The same during a `git status` capture (a new file sends it there): the watch built
    // by the next capture must not trust the file.
    let third = unchanged_without_git(&mut ws, &third);
    write(dir.path(), "new.txt", b"new\n");
    settle();
    armed.store(true, Ordering::SeqCst);
    let (root, flag) = (dir.path().to_path_buf(), Arc::clone(&armed));
    store_mut(&mut ws).set_after_git_hook(Some(Box::new(move || {
        if flag.swap(false, Ordering::SeqCst) {
            std::fs::write(root.join("b.txt"), b"B\n").unwrap();
        }
    })));
    let fourth = created(&mut ws, Some(&third));
    assert!(!armed.load(Ordering::SeqCst), "the hook did not run");
    assert_eq!(show(dir.path(), &fourth.tree, "b.txt"), "b\n");
    settle();
    let fifth = created(&mut ws, Some(&fourth));
    assert_eq!(show(dir.path(), &fifth.tree, "b.txt"), "B\n");
}

/// The kernel's per-instance queue length (`IN_Q_OVERFLOW` past it).
fn max_queued_events() -> Option<usize> {
    std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[test]
fn a_queue_overflow_falls_back_to_the_stat_check() {
    let Some(limit) = max_queued_events().filter(|n| *n <= 1_000_000) else {
        eprintln!("skipped: max_queued_events unknown or too large to fill");
        return;
    };
    let (dir, mut ws, first) = notified(&[("a.txt", b"a\n"), ("b.txt", b"b\n"), ("c.txt", b"c\n")]);
    // Alternating chmods: each one an event, no two in a row alike (the kernel merges those).
    let (a, b) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
    for i in 0..limit / 2 + 16 {
        let mode = if i % 2 == 0 { 0o664 } else { 0o644 };
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(mode)).unwrap();
        std::fs::set_permissions(&b, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(&b, std::fs::Permissions::from_mode(0o644)).unwrap();
    // Its event is lost with the overflow (and no event before names it): the stat check
    // must find it.
    write(dir.path(), "c.txt", b"C\n");
    let before = stats(&ws);
    let second = created(&mut ws, Some(&first));
    let after = stats(&ws);
    assert_eq!(after.overflows, before.overflows + 1, "{after:?}");
    assert_eq!(after.stat_passes, before.stat_passes + 1, "{after:?}");
    assert_eq!(show(dir.path(), &second.tree, "c.txt"), "C\n");
    // Armed again before that stat pass: the next captures are notified again.
    assert!(store(&ws).notifying());
    settle();
    let _ = created_or_same(&mut ws, &second);
    let captured = capture_notified(&mut ws, &second);
    assert!(matches!(captured, Captured::Unchanged(_)));
}

#[test]
fn the_safety_net_sees_a_write_no_event_reports() {
    // A write through a hard link in an unwatched (ignored) directory raises no event on the
    // watched one: the known limit the periodic stat pass is for (DECISIONS §27.72).
    let (dir, mut ws, first) = notified(&[(".gitignore", b"target/\n"), ("a.txt", b"aaaa\n")]);
    std::fs::create_dir(dir.path().join("target")).unwrap();
    std::fs::hard_link(dir.path().join("a.txt"), dir.path().join("target/alias")).unwrap();
    // The link changes a.txt's ctime: let the watch settle on it.
    let first = created_or_same(&mut ws, &first);
    let first = unchanged_without_git(&mut ws, &first);
    assert!(store(&ws).notifying());
    std::fs::write(dir.path().join("target/alias"), b"bbbb\n").unwrap();
    let missed = capture_notified(&mut ws, &first);
    assert!(
        matches!(missed, Captured::Unchanged(_)),
        "the kernel reported the write: update DECISIONS §27.72"
    );
    store_mut(&mut ws).set_stat_pass_interval(Duration::ZERO);
    let before = stats(&ws);
    let second = created(&mut ws, Some(&first));
    assert_eq!(stats(&ws).safety_passes, before.safety_passes + 1);
    assert_eq!(show(dir.path(), &second.tree, "a.txt"), "bbbb\n");
}

#[test]
fn a_force_added_file_under_an_ignored_directory_is_still_checked() {
    // No watched directory holds it, so it is lstat'ed on every capture.
    let dir = repo(&[(".gitignore", b"target/\n"), ("a.txt", b"a\n")]);
    write(dir.path(), "target/keep.txt", b"keep\n");
    git(dir.path(), &["add", "-f", "target/keep.txt"]);
    git(dir.path(), &["commit", "-q", "-m", "keep"]);
    settle();
    let mut ws = open(dir.path(), "s1");
    let first = created(&mut ws, None);
    let first = unchanged_without_git(&mut ws, &first);
    assert!(store(&ws).notifying());
    write(dir.path(), "target/keep.txt", b"KEEP\n");
    let second = new_checkpoint(capture_notified(&mut ws, &first));
    assert_eq!(show(dir.path(), &second.tree, "target/keep.txt"), "KEEP\n");
}

#[test]
fn a_restore_drops_the_notification_and_the_next_watch_arms_a_new_one() {
    let (dir, mut ws, first) = notified(&[("a.txt", b"a\n"), ("src/b.rs", b"b\n")]);
    write(dir.path(), "a.txt", b"second\n");
    let second = created(&mut ws, Some(&first));
    ws.restore(&first, &second, arbor_checkpoint::RestoreOptions::default())
        .unwrap();
    assert!(!store(&ws).notifying());
    let back = created_or_same(&mut ws, &second);
    let back = unchanged_without_git(&mut ws, &back);
    assert!(store(&ws).notifying());
    write(dir.path(), "src/b.rs", b"B\n");
    let third = new_checkpoint(capture_notified(&mut ws, &back));
    assert_eq!(show(dir.path(), &third.tree, "src/b.rs"), "B\n");
}

#[test]
fn too_many_directories_keep_the_stat_check() {
    // Past 8,192 directories (or a quarter of `max_user_watches`) a store takes no watch at
    // all: the user's other watchers share that budget. Every capture is then a stat pass.
    let dir = repo(&[("a.txt", b"a\n")]);
    for i in 0..8_200 {
        std::fs::create_dir(dir.path().join(format!("d{i:04}"))).unwrap();
    }
    write(dir.path(), "d8199/deep.txt", b"deep\n");
    settle();
    let mut ws = open(dir.path(), "s1");
    let first = created(&mut ws, None);
    let first = unchanged_without_git(&mut ws, &first);
    assert!(!store(&ws).notifying());
    assert!(stats(&ws).arm_failures >= 1, "{:?}", stats(&ws));
    let before = stats(&ws);
    write(dir.path(), "d8199/deep.txt", b"DEEP\n");
    let second = created(&mut ws, Some(&first));
    assert_eq!(show(dir.path(), &second.tree, "d8199/deep.txt"), "DEEP\n");
    let after = stats(&ws);
    assert_eq!(after.notified, before.notified);
    assert_eq!(after.stat_passes, before.stat_passes + 1);
}
