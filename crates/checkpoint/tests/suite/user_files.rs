//! What the user owns outside version control survives checkpoints and restores (DECISIONS
//! §27.40–§27.44): ignored files are never captured, restored or deleted (even when a restore
//! removes the `.gitignore` that ignored them), untracked files above the size limit are left
//! out and recorded, untracked files a restore removes are named and come back from its undo,
//! and every file comes back byte for byte with its mode.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use super::*;
use arbor_checkpoint::{ChangeStatus, CheckpointError, RestoreOptions, SkippedFile};

/// Every file under `root` (except `.git` and `skip`) with its bytes and permission bits.
fn files_and_modes(root: &Path, skip: &[&str]) -> Vec<(String, Vec<u8>, u32)> {
    files(root)
        .into_iter()
        .filter(|(p, _)| !skip.iter().any(|s| p.starts_with(s)))
        .map(|(p, bytes)| {
            let mode = std::fs::metadata(root.join(&p))
                .unwrap()
                .permissions()
                .mode()
                & 0o7777;
            (p, bytes, mode)
        })
        .collect()
}

fn chmod(root: &Path, rel: &str, mode: u32) {
    std::fs::set_permissions(root.join(rel), std::fs::Permissions::from_mode(mode)).unwrap();
}

fn mode_of(root: &Path, rel: &str) -> u32 {
    std::fs::metadata(root.join(rel))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

/// True when git's object store holds a blob with exactly `bytes`.
fn has_blob(root: &Path, bytes: &[u8]) -> bool {
    let tmp = root.join(".git/probe");
    std::fs::write(&tmp, bytes).unwrap();
    let oid = git(root, &["hash-object", tmp.to_str().unwrap()]);
    std::fs::remove_file(&tmp).unwrap();
    std::process::Command::new("git")
        .current_dir(root)
        .args(["cat-file", "-e", oid.trim()])
        .status()
        .unwrap()
        .success()
}

const SECRET: &[u8] = b"API_KEY=do-not-copy-me-4711\n";

/// The scenario of issue 25: `.gitignore` with `*.env` and a `local.env`; a restore to the
/// first message (which removes `.gitignore`), then undo, then undo again.
#[test]
fn undoing_a_restore_that_removed_gitignore_keeps_the_ignored_file() {
    let dir = repo(&[("README.md", b"first\n")]);
    let root = dir.path();
    let mut ws = open(root, "s1");
    let first = created(&mut ws, None);
    write(root, ".gitignore", b"*.env\n");
    write(root, "local.env", SECRET);
    chmod(root, "local.env", 0o600);
    write(root, "README.md", b"second\n");
    let second = created(&mut ws, Some(&first));
    let before_all = files_and_modes(root, &[]);

    // Restore "both" to the first message: the capture made first, then the switch.
    let current = created_or_unchanged(&mut ws, &second);
    let done = ws
        .restore(&first, &current, RestoreOptions::default())
        .unwrap();
    assert!(!root.join(".gitignore").exists());
    assert_eq!(
        read(root, "local.env").unwrap(),
        SECRET,
        "ignored: untouched"
    );
    let names: Vec<&str> = done.untracked.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        names,
        [".gitignore"],
        "the untracked file the restore removed"
    );

    // /undo-restore: its capture must not take the now un-ignored secret.
    let before_undo = created_or_unchanged(&mut ws, &first);
    assert!(
        !has_blob(root, SECRET),
        "local.env was copied into git objects"
    );
    ws.restore(&current, &before_undo, RestoreOptions::default())
        .unwrap();
    assert_eq!(
        files_and_modes(root, &[]),
        before_all,
        "byte for byte, modes too"
    );

    // /undo-restore again, and once more: nothing of the user's is lost on the way.
    let now = created_or_unchanged(&mut ws, &current);
    ws.restore(&before_undo, &now, RestoreOptions::default())
        .unwrap();
    assert_eq!(read(root, "local.env").unwrap(), SECRET);
    assert_eq!(mode_of(root, "local.env"), 0o600);
    let now = created_or_unchanged(&mut ws, &before_undo);
    ws.restore(&current, &now, RestoreOptions::default())
        .unwrap();
    assert_eq!(files_and_modes(root, &[]), before_all);
    assert!(
        !has_blob(root, SECRET),
        "local.env was copied into git objects"
    );
}

/// A capture that may find the state unchanged (the caller's "capture first").
fn created_or_unchanged(ws: &mut Workspace, previous: &Checkpoint) -> Checkpoint {
    match ws.capture(Some(previous)).unwrap() {
        Captured::Created { checkpoint, .. } | Captured::Unchanged(checkpoint) => checkpoint,
        other => panic!("expected a checkpoint, got {other:?}"),
    }
}

#[test]
fn untracked_files_a_restore_removes_are_named_first_and_come_back_with_their_modes() {
    let dir = repo(&[
        (".gitignore", b"*.env\n"),
        ("src/main.rs", b"fn main() {}\n"),
    ]);
    let root = dir.path();
    write(root, "local.env", SECRET);
    chmod(root, "local.env", 0o600);
    let mut ws = open(root, "s1");
    let first = created(&mut ws, None);
    write(root, "notes.txt", b"my notes\n");
    chmod(root, "notes.txt", 0o600);
    write(root, "build/out.bin", b"\x7fELF\x00\x01");
    chmod(root, "build/out.bin", 0o750);
    write(root, "src/main.rs", b"fn main() { edited(); }\n");
    let later = created(&mut ws, Some(&first));
    let later_files = files_and_modes(root, &[]);

    let at_risk = ws.untracked_at_risk(&first, &later).unwrap();
    let named: Vec<(ChangeStatus, &str)> = at_risk
        .iter()
        .map(|c| (c.status, c.path.as_str()))
        .collect();
    assert_eq!(
        named,
        [
            (ChangeStatus::Deleted, "build/out.bin"),
            (ChangeStatus::Deleted, "notes.txt")
        ],
        "tracked src/main.rs is not listed; ignored local.env is not at risk"
    );
    let done = ws
        .restore(&first, &later, RestoreOptions::default())
        .unwrap();
    assert_eq!(done.untracked, at_risk);
    assert_eq!(done.changed.len(), 3);
    assert!(!root.join("notes.txt").exists() && !root.join("build").exists());
    assert_eq!(read(root, "local.env").unwrap(), SECRET);

    // Undo, undo, undo: each state comes back byte for byte with every mode.
    let first_files = files_and_modes(root, &[]);
    let now = created_or_unchanged(&mut ws, &first);
    ws.restore(&later, &now, RestoreOptions::default()).unwrap();
    assert_eq!(files_and_modes(root, &[]), later_files);
    assert_eq!(mode_of(root, "notes.txt"), 0o600);
    assert_eq!(mode_of(root, "build/out.bin"), 0o750);
    let now = created_or_unchanged(&mut ws, &later);
    ws.restore(&first, &now, RestoreOptions::default()).unwrap();
    assert_eq!(files_and_modes(root, &[]), first_files);
    let now = created_or_unchanged(&mut ws, &first);
    ws.restore(&later, &now, RestoreOptions::default()).unwrap();
    assert_eq!(files_and_modes(root, &[]), later_files);
    assert!(!has_blob(root, SECRET));
}

#[test]
fn an_untracked_file_above_the_limit_is_skipped_recorded_and_never_deleted() {
    let dir = repo(&[("a.txt", b"a\n")]);
    let root = dir.path();
    let mut ws = open(root, "s1");
    let first = created(&mut ws, None);
    // 3 GB, sparse: reading it would take seconds, hashing it far longer.
    let big = std::fs::File::create(root.join("big.bin")).unwrap();
    big.set_len(3 << 30).unwrap();
    drop(big);
    write(root, "small.txt", b"small\n");
    let started = Instant::now();
    let with_big = created(&mut ws, Some(&first));
    let took = started.elapsed();
    eprintln!("capture with a 3 GB sparse untracked file: {took:?}");
    assert!(took < Duration::from_secs(3), "capture took {took:?}");
    assert_eq!(
        with_big.skipped,
        [SkippedFile {
            path: "big.bin".into(),
            size: 3 << 30
        }]
    );
    let tree = git(root, &["ls-tree", "-r", "--name-only", &with_big.tree]);
    assert_eq!(tree, "a.txt\nsmall.txt\n");
    // The skip is in the checkpoint's own record too.
    let message = git(root, &["cat-file", "commit", &with_big.id]);
    assert!(
        message.contains("skipped: big.bin (3221225472 bytes)"),
        "{message}"
    );
    // Unchanged while nothing changes.
    assert!(matches!(
        ws.capture(Some(&with_big)).unwrap(),
        Captured::Unchanged(_)
    ));

    // A restore to a state without it does not delete it.
    let started = Instant::now();
    let now = created_or_unchanged(&mut ws, &with_big);
    ws.restore(&first, &now, RestoreOptions::default()).unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(
        std::fs::metadata(root.join("big.bin")).unwrap().len(),
        3 << 30
    );
    assert!(!root.join("small.txt").exists());
}

#[test]
fn an_untracked_file_that_grows_past_the_limit_leaves_the_checkpoints() {
    let dir = repo(&[("a.txt", b"a\n")]);
    let root = dir.path();
    let settings = CheckpointSettings {
        max_untracked_file_bytes: 1000,
        ..CheckpointSettings::default()
    };
    let home = root.join(".arbor-home-unused");
    let mut ws = Workspace::open(root, "s1", &settings, &home).unwrap();
    write(root, "log.txt", b"short\n");
    let small = created(&mut ws, None);
    assert!(small.skipped.is_empty());
    std::fs::OpenOptions::new()
        .append(true)
        .open(root.join("log.txt"))
        .unwrap()
        .set_len(5000)
        .unwrap();
    let grown = created(&mut ws, Some(&small));
    assert_eq!(grown.skipped.len(), 1, "{grown:?}");
    assert_eq!(grown.skipped[0].path, "log.txt");
    let tree = git(root, &["ls-tree", "-r", "--name-only", &grown.tree]);
    assert_eq!(tree, "a.txt\n");
    // A restore back to the small version refuses rather than overwrite the large file.
    let err = ws
        .restore(&small, &grown, RestoreOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("log.txt"), "{err}");
    assert_eq!(std::fs::metadata(root.join("log.txt")).unwrap().len(), 5000);
    // A tracked file has no limit.
    write(root, "tracked.bin", &[7u8; 3000]);
    git(root, &["add", "tracked.bin"]);
    let tracked = created(&mut ws, Some(&grown));
    let tree = git(root, &["ls-tree", "-r", "--name-only", &tracked.tree]);
    assert_eq!(tree, "a.txt\ntracked.bin\n");
}

// ---- outside git ------------------------------------------------------------------------

fn plain(settings: &CheckpointSettings) -> (tempfile::TempDir, tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::open(dir.path(), "s1", settings, home.path()).unwrap();
    (dir, home, ws)
}

#[test]
fn the_snapshot_store_keeps_modes_and_is_private() {
    let (dir, home, mut ws) = plain(&CheckpointSettings::default());
    let root = dir.path();
    write(root, ".env", SECRET);
    chmod(root, ".env", 0o600);
    write(root, "run.sh", b"#!/bin/sh\n");
    chmod(root, "run.sh", 0o700);
    let first = created(&mut ws, None);
    let first_files = files_and_modes(root, &[]);
    let store = home.path().join("checkpoints");
    assert_eq!(mode_of(&store, ""), 0o700);
    for entry in walk(&store) {
        let mode = std::fs::metadata(&entry).unwrap().permissions().mode() & 0o777;
        let want = if entry.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode, want, "{}", entry.display());
    }

    std::fs::remove_file(root.join(".env")).unwrap();
    write(root, "run.sh", b"#!/bin/sh\necho edited\n");
    chmod(root, "run.sh", 0o755);
    let second = created(&mut ws, Some(&first));
    let second_files = files_and_modes(root, &[]);
    // restore → undo → undo
    ws.restore(&first, &second, RestoreOptions::default())
        .unwrap();
    assert_eq!(files_and_modes(root, &[]), first_files);
    assert_eq!(mode_of(root, ".env"), 0o600);
    let now = created_or_unchanged(&mut ws, &first);
    ws.restore(&second, &now, RestoreOptions::default())
        .unwrap();
    assert_eq!(files_and_modes(root, &[]), second_files);
    let now = created_or_unchanged(&mut ws, &second);
    ws.restore(&first, &now, RestoreOptions::default()).unwrap();
    assert_eq!(files_and_modes(root, &[]), first_files);
    // A mode change alone is a change.
    chmod(root, ".env", 0o640);
    let chmodded = created(&mut ws, Some(&first));
    assert!(!chmodded.same_state(&first));
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

#[test]
fn outside_git_large_files_are_skipped_and_unignored_files_stay_out() {
    let (dir, home, mut ws) = plain(&CheckpointSettings::default());
    let root = dir.path();
    write(root, "a.txt", b"a\n");
    let first = created(&mut ws, None);
    write(root, ".gitignore", b"*.env\n");
    write(root, "local.env", SECRET);
    let big = std::fs::File::create(root.join("big.bin")).unwrap();
    big.set_len(3 << 30).unwrap();
    drop(big);
    let started = Instant::now();
    let second = created(&mut ws, Some(&first));
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(second.skipped.len(), 1);
    assert_eq!(second.skipped[0].path, "big.bin");
    let before_all = files_and_modes(root, &["big.bin"]);

    // Restore to the first state (removes .gitignore), then undo.
    let done = ws
        .restore(&first, &second, RestoreOptions::default())
        .unwrap();
    let removed: Vec<&str> = done.untracked.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(removed, [".gitignore"]);
    assert_eq!(read(root, "local.env").unwrap(), SECRET);
    assert!(
        root.join("big.bin").exists(),
        "never captured, never deleted"
    );
    let now = created_or_unchanged(&mut ws, &first);
    ws.restore(&second, &now, RestoreOptions::default())
        .unwrap();
    assert_eq!(files_and_modes(root, &["big.bin"]), before_all);
    // No copy of the secret went into the store.
    let copied = walk(&home.path().join("checkpoints"))
        .into_iter()
        .filter(|p| p.is_file())
        .any(|p| std::fs::read(&p).unwrap() == SECRET);
    assert!(!copied, "local.env was copied into the snapshot store");
}

#[test]
fn outside_git_a_restore_refuses_to_overwrite_a_file_it_did_not_capture() {
    let (dir, _home, mut ws) = plain(&CheckpointSettings::default());
    let root = dir.path();
    write(root, "a.env", b"captured version\n");
    let first = created(&mut ws, None);
    write(root, ".gitignore", b"*.env\n");
    write(root, "a.env", b"the user's own, ignored now\n");
    let second = created(&mut ws, Some(&first));
    let err = ws
        .restore(&first, &second, RestoreOptions::default())
        .unwrap_err();
    assert!(matches!(err, CheckpointError::Uncaptured { .. }), "{err}");
    assert!(err.to_string().contains("a.env"), "{err}");
    assert_eq!(
        read(root, "a.env").unwrap(),
        b"the user's own, ignored now\n"
    );
    assert!(root.join(".gitignore").exists(), "nothing changed");
}
