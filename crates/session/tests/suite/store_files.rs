//! JSONL file hygiene (DECISIONS §25.3–§25.5): crash-safe backups, modes kept and private by
//! default, symlinks rewritten through, stale temporaries removed.

use arbor_session::jsonl::JsonlRepository;
use arbor_session::AgentMessage;
use arbor_session::{CreateOptions, EntryDraft, EntryKind, SessionRepository, SessionStorage};
use serde_json::json;
use std::path::{Path, PathBuf};

use super::testdata_dir;

const V1: &str = "v1-large-session.pi-mono.jsonl";

fn user(text: &str) -> EntryDraft {
    let m: AgentMessage =
        serde_json::from_value(json!({"role": "user", "content": text, "timestamp": 1})).unwrap();
    EntryDraft::new(EntryKind::message(m))
}

fn v1_copy(dir: &Path) -> PathBuf {
    let dst = dir.join(V1);
    std::fs::copy(testdata_dir().join("pi-sessions").join(V1), &dst).unwrap();
    dst
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[cfg(unix)]
fn chmod(path: &Path, m: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(m)).unwrap();
}

#[tokio::test]
async fn a_truncated_backup_is_made_again_before_the_original_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = v1_copy(dir.path());
    let original = std::fs::read(&path).unwrap();
    // A writer killed mid-copy left the first bytes of the backup.
    let backup = dir.path().join(format!("{V1}.v1.bak"));
    std::fs::write(&backup, &original[..original.len() / 3]).unwrap();
    let repo = JsonlRepository::flat(dir.path());
    let s = repo.open(p(&path)).await.unwrap();
    s.append(user("after")).await.unwrap();
    assert_eq!(s.report().await.backup.as_deref(), Some(backup.as_path()));
    assert_eq!(
        std::fs::read(&backup).unwrap(),
        original,
        "the full original is kept"
    );
}

#[tokio::test]
async fn the_public_migrate_call_rewrites_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let path = v1_copy(dir.path());
    let original = std::fs::read(&path).unwrap();
    let repo = JsonlRepository::flat(dir.path());
    let done = repo.migrate(p(&path)).await.unwrap();
    assert_eq!(done.from_version, 1);
    let backup = done.backup.unwrap();
    assert_eq!(std::fs::read(&backup).unwrap(), original);
    let again = repo.migrate(p(&path)).await.unwrap();
    assert_eq!((again.from_version, again.backup), (3, None));
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[cfg(unix)]
#[tokio::test]
async fn a_rewrite_keeps_the_mode_of_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let path = v1_copy(dir.path());
    chmod(&path, 0o600);
    let repo = JsonlRepository::flat(dir.path());
    let s = repo.open(p(&path)).await.unwrap();
    s.append(user("after")).await.unwrap();
    assert_eq!(mode(&path), 0o600, "rewrite must not widen a private file");
    assert_eq!(mode(&s.report().await.backup.unwrap()), 0o600);
    drop(s);
    // A torn tail's sidecar too.
    let mut text = std::fs::read(&path).unwrap();
    text.extend_from_slice(b"{\"type\":\"mess");
    std::fs::write(&path, text).unwrap();
    let s = repo.open(p(&path)).await.unwrap();
    let sidecar = s.report().await.torn_tail.unwrap().sidecar.unwrap();
    assert_eq!(mode(&sidecar), 0o600);
}

#[cfg(unix)]
#[tokio::test]
async fn a_rewrite_through_a_symlink_replaces_the_target_not_the_link() {
    let real_dir = tempfile::tempdir().unwrap();
    let link_dir = tempfile::tempdir().unwrap();
    let target = v1_copy(real_dir.path());
    let link = link_dir.path().join(V1);
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let repo = JsonlRepository::flat(link_dir.path());
    let s = repo.open(p(&link)).await.unwrap();
    let added = s.append(user("after")).await.unwrap();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link stays a link"
    );
    let text = std::fs::read_to_string(&target).unwrap();
    assert!(text.contains(&added.id), "the target holds the new entry");
    let backup = s.report().await.backup.unwrap();
    assert_eq!(backup.parent(), target.canonicalize().unwrap().parent());
    // Later appends still land in the target.
    let more = s.append(user("more")).await.unwrap();
    assert!(std::fs::read_to_string(&target).unwrap().contains(&more.id));
}

#[cfg(unix)]
#[tokio::test]
async fn new_sessions_are_private_whatever_was_there() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join(".arbor/sessions");
    let repo = JsonlRepository::new(&root);
    let s = repo.create(CreateOptions::new("/w")).await.unwrap();
    s.append(user("secret output")).await.unwrap();
    let file = PathBuf::from(s.location());
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().unwrap()), 0o700, "per-cwd folder");
    assert_eq!(mode(&root), 0o700, "sessions/");
    assert_eq!(mode(&home.path().join(".arbor")), 0o700, "~/.arbor");
    // A fork (written through a temporary) is private too.
    let forked = repo.fork(&s.location(), Default::default()).await.unwrap();
    assert_eq!(mode(Path::new(&forked.location())), 0o600);
}

#[tokio::test]
async fn stale_temporaries_are_removed_on_the_next_open_and_held_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let repo = JsonlRepository::flat(dir.path());
    let s = repo.create(CreateOptions::new("/w")).await.unwrap();
    let loc = s.location();
    drop(s);
    let stale = PathBuf::from(format!("{loc}.tmp-4242-1781967600000"));
    let held = PathBuf::from(format!("{loc}.tmp-4243-1781967600001"));
    let unrelated = dir.path().join("notes.tmp");
    for f in [&stale, &held, &unrelated] {
        std::fs::write(f, "partial").unwrap();
    }
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    for f in [&stale, &held] {
        std::fs::File::options()
            .write(true)
            .open(f)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let holder = std::fs::File::open(&held).unwrap();
    holder.try_lock().unwrap();
    let _s = repo.open(&loc).await.unwrap();
    assert!(!stale.exists(), "a temporary nobody holds is removed");
    assert!(held.exists(), "a locked temporary belongs to a live writer");
    assert!(unrelated.exists());
}
