//! The snapshot store for directories outside git.

use super::*;
use arbor_checkpoint::{CheckpointError, RestoreOptions, StoreKind};

fn plain_dir() -> (tempfile::TempDir, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    (dir, home)
}

fn open_plain(dir: &Path, home: &Path, settings: &CheckpointSettings) -> Workspace {
    Workspace::open(dir, "s1", settings, home).unwrap()
}

#[test]
fn a_plain_directory_round_trips_through_the_snapshot_store() {
    let (dir, home) = plain_dir();
    let root = dir.path();
    write(root, "a.txt", b"a\n");
    write(root, "deep/b.bin", b"\x00\xff\x10");
    write(root, ".gitignore", b"*.tmp\n");
    write(root, "scratch.tmp", b"ignored\n");
    let mut ws = open_plain(root, home.path(), &CheckpointSettings::default());
    assert_eq!(ws.kind(), StoreKind::Snapshot);
    let start = created(&mut ws, None);
    assert!(matches!(
        ws.capture(Some(&start)).unwrap(),
        Captured::Unchanged(_)
    ));
    let start_files = files(root);

    write(root, "a.txt", b"edited\n");
    std::fs::remove_file(root.join("deep/b.bin")).unwrap();
    write(root, "c/new.txt", b"new\n");
    let Captured::Created {
        checkpoint: edited,
        changed,
    } = ws.capture(Some(&start)).unwrap()
    else {
        panic!()
    };
    let summary: Vec<String> = changed
        .iter()
        .map(|c| format!("{} {}", c.status.letter(), c.path))
        .collect();
    assert_eq!(summary, ["M a.txt", "A c/new.txt", "D deep/b.bin"]);
    let edited_files = files(root);

    let now = created(&mut ws, None);
    ws.restore(&start, &now, RestoreOptions::default()).unwrap();
    assert_eq!(files(root), start_files);
    assert!(!root.join("c").exists());
    assert_eq!(read(root, "scratch.tmp").unwrap(), b"ignored\n");

    let now = created(&mut ws, None);
    ws.restore(&edited, &now, RestoreOptions::default())
        .unwrap();
    assert_eq!(files(root), edited_files);

    let diff = ws.diff(&start, &edited).unwrap();
    assert!(
        diff.contains("--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+edited\n"),
        "{diff}"
    );
    assert!(
        diff.contains("Binary files a/deep/b.bin and /dev/null differ"),
        "{diff}"
    );
    assert!(diff.contains("+++ b/c/new.txt"), "{diff}");
    // Nothing landed in the directory itself.
    assert!(home.path().join("checkpoints/refs/s1").is_dir());
}

#[test]
fn directories_above_the_limits_are_skipped_with_a_notice() {
    let (dir, home) = plain_dir();
    for i in 0..5 {
        write(dir.path(), &format!("f{i}.txt"), b"0123456789");
    }
    let small = CheckpointSettings {
        max_snapshot_bytes: 30,
        ..Default::default()
    };
    let mut ws = open_plain(dir.path(), home.path(), &small);
    let Captured::Skipped { notice } = ws.capture(None).unwrap() else {
        panic!()
    };
    assert!(
        notice.contains("maxSnapshotBytes") && notice.contains("30 bytes"),
        "{notice}"
    );
    let few = CheckpointSettings {
        max_snapshot_files: 3,
        ..Default::default()
    };
    let mut ws = open_plain(dir.path(), home.path(), &few);
    let Captured::Skipped { notice } = ws.capture(None).unwrap() else {
        panic!()
    };
    assert!(notice.contains("3 files"), "{notice}");
    assert!(
        !home.path().join("checkpoints/manifests").exists(),
        "nothing stored"
    );
}

#[test]
fn a_missing_snapshot_object_is_refused() {
    let (dir, home) = plain_dir();
    write(dir.path(), "a.txt", b"a\n");
    let mut ws = open_plain(dir.path(), home.path(), &CheckpointSettings::default());
    let start = created(&mut ws, None);
    write(dir.path(), "a.txt", b"b\n");
    let now = created(&mut ws, Some(&start));
    std::fs::remove_dir_all(home.path().join("checkpoints/objects")).unwrap();
    let err = ws
        .restore(&start, &now, RestoreOptions::default())
        .unwrap_err();
    assert!(matches!(err, CheckpointError::Gone { .. }), "{err}");
    assert!(err.to_string().contains("content of a.txt"), "{err}");
    assert_eq!(read(dir.path(), "a.txt").unwrap(), b"b\n");
}

#[test]
fn a_git_checkpoint_is_refused_by_the_snapshot_store() {
    let (dir, home) = plain_dir();
    let ws = open_plain(dir.path(), home.path(), &CheckpointSettings::default());
    let foreign = arbor_checkpoint::Checkpoint {
        store: StoreKind::Git,
        id: "abc".into(),
        tree: "def".into(),
        head: None,
        index: None,
        skipped: Vec::new(),
    };
    let err = ws.check_restorable(&foreign).unwrap_err();
    assert!(err.to_string().contains("belongs to a git store"), "{err}");
}

#[test]
fn settings_come_from_settings_json_with_named_errors() {
    let s = CheckpointSettings::from_settings(&serde_json::json!({
        "checkpoints": {"enabled": false, "maxPerSession": 5, "maxSnapshotBytes": 1024}
    }))
    .unwrap();
    assert!(!s.enabled);
    assert_eq!((s.max_per_session, s.max_snapshot_bytes), (5, 1024));
    assert_eq!(s.max_age_days, 30);
    assert_eq!(
        CheckpointSettings::from_settings(&serde_json::json!({})).unwrap(),
        Default::default()
    );
    let err = CheckpointSettings::from_settings(&serde_json::json!({
        "checkpoints": {"maxPerSession": "many"}
    }))
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("settings.json checkpoints.maxPerSession:"),
        "{err}"
    );
}
