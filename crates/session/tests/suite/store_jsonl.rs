//! JSONL backend: bad input, faults and repairs (DECISIONS §4), pi fixtures, migration, layout.

use arbor_session::jsonl::{FileWriter, JsonlRepository, SessionWriter, SyncPolicy, WriterFactory};
use arbor_session::{AgentMessage, SessionError};
use arbor_session::{
    CreateOptions, EntryDraft, EntryKind, ForkOptions, SessionRepository, SessionStorage,
};
use serde_json::{json, Value};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;

use super::{fixture_files, testdata_dir};

const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-06-20T15:00:00.000Z","cwd":"/work/p"}"#;

fn entry(id: &str, parent: Option<&str>, text: &str) -> String {
    json!({
        "type": "message", "id": id, "parentId": parent,
        "timestamp": "2026-06-20T15:00:01.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1}
    })
    .to_string()
}

fn user(text: &str) -> EntryKind {
    let m: AgentMessage =
        serde_json::from_value(json!({"role": "user", "content": text, "timestamp": 1}))
            .expect("message");
    EntryKind::message(m)
}

/// A flat repository in a temp dir holding one file `s.jsonl` with `content`.
fn with_file(content: &[u8]) -> (tempfile::TempDir, JsonlRepository, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("2026-06-20T15-00-00-000Z_s1.jsonl");
    std::fs::write(&path, content).expect("write");
    let repo = JsonlRepository::flat(dir.path());
    (dir, repo, path)
}

fn lines(parts: &[String]) -> Vec<u8> {
    let mut s = String::new();
    for p in parts {
        s.push_str(p);
        s.push('\n');
    }
    s.into_bytes()
}

fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

async fn open_err(repo: &JsonlRepository, path: &Path) -> SessionError {
    match repo.open(p(path)).await {
        Ok(_) => panic!("open of {} succeeded", path.display()),
        Err(e) => e,
    }
}

// ---- bad input --------------------------------------------------------------------------------

#[tokio::test]
async fn malformed_json_mid_file_names_file_and_line() {
    let content = lines(&[
        HEADER.into(),
        entry("a", None, "one"),
        "{\"type\":\"message\",\"id\":\"b\", oops".into(),
        entry("c", Some("a"), "three"),
    ]);
    let (_d, repo, path) = with_file(&content);
    let e = open_err(&repo, &path).await;
    assert_eq!(e.code(), "invalid_session");
    let msg = e.to_string();
    assert!(msg.contains(p(&path)) && msg.contains(":3:"), "{msg}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        content,
        "file must stay untouched"
    );
    let e = repo
        .open_read_only(p(&path))
        .await
        .expect_err("read-only refuses too");
    assert!(e.to_string().contains(":3:"), "{e}");
}

#[tokio::test]
async fn envelope_fields_are_checked() {
    for (bad, needle) in [
        (
            json!({"type":"message","parentId":null,"timestamp":"t"}),
            "id",
        ),
        (
            json!({"type":"message","id":"","parentId":null,"timestamp":"t"}),
            "empty",
        ),
        (
            json!({"type":"message","id":"x","timestamp":"t"}),
            "parentId",
        ),
        (
            json!({"type":"message","id":"x","parentId":5,"timestamp":"t"}),
            "invalid type",
        ),
        (
            json!({"type":"message","id":"x","parentId":null}),
            "timestamp",
        ),
        (json!({"id":"x","parentId":null,"timestamp":"t"}), "type"),
        (
            json!({"type":"leaf","id":"x","parentId":null,"timestamp":"t"}),
            "targetId",
        ),
        (json!(["not", "an", "object"]), "not a JSON object"),
    ] {
        let (_d, repo, path) = with_file(&lines(&[HEADER.into(), bad.to_string()]));
        let e = open_err(&repo, &path).await;
        let msg = e.to_string();
        assert_eq!(e.code(), "invalid_session", "{msg}");
        assert!(msg.contains(":2:") || msg.contains("line 2"), "{msg}");
        assert!(msg.contains(needle), "{bad}: {msg}");
    }
}

#[tokio::test]
async fn missing_header_is_refused() {
    let (_d, repo, path) = with_file(&lines(&[entry("a", None, "x")]));
    let e = open_err(&repo, &path).await;
    assert_eq!(e.code(), "invalid_session");
    assert!(e.to_string().contains("session header"), "{e}");

    let (_d, repo, path) = with_file(b"");
    let e = open_err(&repo, &path).await;
    assert!(e.to_string().contains("missing session header"), "{e}");

    let (_d, repo, path) = with_file(b"\n  \n");
    let e = open_err(&repo, &path).await;
    assert!(e.to_string().contains("missing session header"), "{e}");
}

#[tokio::test]
async fn wrong_version_is_refused() {
    for (header, needle) in [
        (
            HEADER.replace("\"version\":3", "\"version\":4"),
            "unsupported session version 4",
        ),
        (
            HEADER.replace("\"version\":3", "\"version\":\"3\""),
            "version",
        ),
        (
            HEADER.replace("\"session\"", "\"sessionx\""),
            "session header",
        ),
    ] {
        let (_d, repo, path) = with_file(&lines(&[header, entry("a", None, "x")]));
        let e = open_err(&repo, &path).await;
        assert_eq!(e.code(), "invalid_session");
        assert!(e.to_string().contains(needle), "{e}");
        assert!(e.to_string().contains(":1:"), "{e}");
    }
}

#[tokio::test]
async fn duplicate_ids_are_refused_naming_both_lines() {
    let (_d, repo, path) = with_file(&lines(&[
        HEADER.into(),
        entry("a", None, "one"),
        entry("b", Some("a"), "two"),
        entry("a", Some("b"), "three"),
    ]));
    let e = open_err(&repo, &path).await;
    let msg = e.to_string();
    assert!(
        msg.contains(":4:") && msg.contains("duplicate entry id a") && msg.contains("line 2"),
        "{msg}"
    );
}

#[tokio::test]
async fn dangling_parent_opens_but_walks_fail_precisely() {
    let (_d, repo, path) = with_file(&lines(&[
        HEADER.into(),
        entry("a", None, "one"),
        entry("b", Some("ghost"), "two"),
        entry("c", Some("b"), "three"),
        entry("d", Some("a"), "four"),
    ]));
    let s = repo.open(p(&path)).await.expect("opens: nothing is lost");
    assert_eq!(s.entry_count().await.unwrap(), 4);
    assert_eq!(s.leaf_id().await.unwrap().as_deref(), Some("d"));
    assert_eq!(s.ancestry(None).await.unwrap().len(), 2);
    let e = s.ancestry(Some("c")).await.expect_err("dangling parent");
    assert_eq!(e.code(), "invalid_session");
    let msg = e.to_string();
    assert!(
        msg.contains("entry b") && msg.contains("ghost") && msg.contains("line 3"),
        "{msg}"
    );
    // Appends still work on the healthy branch.
    let e = s.append(EntryDraft::new(user("five"))).await.unwrap();
    assert_eq!(e.parent_id.as_deref(), Some("d"));
}

#[tokio::test]
async fn parent_cycle_does_not_hang() {
    let (_d, repo, path) = with_file(&lines(&[
        HEADER.into(),
        entry("a", Some("b"), "one"),
        entry("b", Some("a"), "two"),
    ]));
    let s = repo.open(p(&path)).await.expect("opens");
    let walk = tokio::time::timeout(std::time::Duration::from_secs(5), s.ancestry(None))
        .await
        .expect("no hang");
    let e = walk.expect_err("cycle");
    assert_eq!(e.code(), "invalid_session");
    assert!(e.to_string().contains("cycle"), "{e}");
    let path_walk = s
        .path_to_root_or_compaction(Some("a"))
        .await
        .expect_err("cycle");
    assert!(path_walk.to_string().contains("cycle"), "{path_walk}");
    // A self-parented entry too.
    let (_d2, repo2, path2) = with_file(&lines(&[HEADER.into(), entry("x", Some("x"), "self")]));
    let s2 = repo2.open(p(&path2)).await.expect("opens");
    assert!(s2
        .ancestry(None)
        .await
        .unwrap_err()
        .to_string()
        .contains("cycle"));
}

#[tokio::test]
async fn leaf_to_unknown_id_is_refused() {
    let leaf = json!({"type":"leaf","id":"l1","parentId":"a","timestamp":"t","targetId":"nowhere"});
    let (_d, repo, path) = with_file(&lines(&[
        HEADER.into(),
        entry("a", None, "x"),
        leaf.to_string(),
    ]));
    let e = open_err(&repo, &path).await;
    assert_eq!(e.code(), "invalid_session");
    let msg = e.to_string();
    assert!(
        msg.contains("l1") && msg.contains("nowhere") && msg.contains("line 3"),
        "{msg}"
    );

    // An old jump to an unknown id that a later entry supersedes does not decide the leaf.
    let (_d, repo, path) = with_file(&lines(&[
        HEADER.into(),
        entry("a", None, "x"),
        leaf.to_string(),
        entry("b", Some("a"), "y"),
    ]));
    let s = repo.open(p(&path)).await.expect("opens");
    assert_eq!(s.leaf_id().await.unwrap().as_deref(), Some("b"));
}

#[tokio::test]
async fn invalid_utf8_names_the_line() {
    let mut content = lines(&[HEADER.into(), entry("a", None, "ok")]);
    let mut bad = entry("b", Some("a"), "XX").into_bytes();
    let pos = bad.iter().position(|b| *b == b'X').unwrap();
    bad[pos] = 0xff;
    content.extend_from_slice(&bad);
    content.push(b'\n');
    let (_d, repo, path) = with_file(&content);
    let e = open_err(&repo, &path).await;
    let msg = e.to_string();
    assert!(msg.contains(":3:") && msg.contains("UTF-8"), "{msg}");
}

#[tokio::test]
async fn fifty_megabyte_line_round_trips() {
    let big = "x".repeat(50 * 1024 * 1024);
    let (_d, repo, path) = with_file(&lines(&[
        HEADER.into(),
        entry("a", None, "small"),
        entry("b", Some("a"), &big),
    ]));
    let s = repo.open(p(&path)).await.expect("opens");
    let b = s.get_entry("b").await.unwrap().expect("entry b");
    let v = serde_json::to_value(&b).unwrap();
    assert_eq!(
        v["message"]["content"].as_str().map(str::len),
        Some(big.len())
    );
    let c = s.append(EntryDraft::new(user("after"))).await.unwrap();
    assert_eq!(c.parent_id.as_deref(), Some("b"));
    drop(s);
    let s = repo.open(p(&path)).await.expect("reopens");
    assert_eq!(s.entry_count().await.unwrap(), 3);
}

// ---- repairs ----------------------------------------------------------------------------------

#[tokio::test]
async fn torn_tail_moves_to_sidecar_on_writable_open() {
    let good = lines(&[
        HEADER.into(),
        entry("a", None, "one"),
        entry("b", Some("a"), "two"),
    ]);
    let torn = br#"{"type":"message","id":"c","parentId":"b","timest"#;
    let mut content = good.clone();
    content.extend_from_slice(torn);
    let (dir, repo, path) = with_file(&content);

    // Read-only: reported, file untouched.
    let ro = repo.open_read_only(p(&path)).await.expect("read-only open");
    let report = ro.report().await;
    let tt = report.torn_tail.expect("torn tail reported");
    assert_eq!(
        (tt.offset, tt.len, tt.sidecar),
        (good.len() as u64, torn.len() as u64, None)
    );
    assert_eq!(ro.entry_count().await.unwrap(), 2);
    assert!(
        ro.append(EntryDraft::new(user("no"))).await.is_err(),
        "read-only refuses writes"
    );
    drop(ro);
    assert_eq!(std::fs::read(&path).unwrap(), content);

    // Writable: torn bytes go to `<file>.torn-<ms>`, the file ends on the last complete line.
    let s = repo.open(p(&path)).await.expect("writable open repairs");
    let sidecar = s
        .report()
        .await
        .torn_tail
        .and_then(|t| t.sidecar)
        .expect("sidecar");
    assert!(sidecar
        .file_name()
        .unwrap()
        .to_string_lossy()
        .contains(".jsonl.torn-"));
    assert_eq!(sidecar.parent(), Some(dir.path()));
    assert_eq!(std::fs::read(&sidecar).unwrap(), torn.to_vec());
    assert_eq!(std::fs::read(&path).unwrap(), good);
    let c = s.append(EntryDraft::new(user("three"))).await.unwrap();
    assert_eq!(c.parent_id.as_deref(), Some("b"));
    drop(s);
    let s = repo.open(p(&path)).await.expect("reopen");
    assert_eq!(s.report().await.torn_tail, None);
    assert_eq!(s.entry_count().await.unwrap(), 3);
    // The sidecar is not a session: listings ignore it.
    let list = repo.list().await.unwrap();
    assert_eq!(list.sessions.len(), 1);
    assert!(list.skipped.is_empty());
}

#[tokio::test]
async fn complete_last_line_without_newline_is_kept_and_terminated() {
    let mut content = lines(&[HEADER.into(), entry("a", None, "one")]);
    content.extend_from_slice(entry("b", Some("a"), "two").as_bytes());
    let (_d, repo, path) = with_file(&content);
    let s = repo.open(p(&path)).await.unwrap();
    assert!(s.report().await.missing_newline);
    assert_eq!(s.leaf_id().await.unwrap().as_deref(), Some("b"));
    s.append(EntryDraft::new(user("three"))).await.unwrap();
    drop(s);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 4);
    assert!(text.ends_with('\n'));
    assert!(text.starts_with(std::str::from_utf8(&content).unwrap()));
}

#[tokio::test]
async fn file_deleted_while_open_refuses_appends_and_keeps_reads() {
    let dir = tempfile::tempdir().unwrap();
    let repo = JsonlRepository::new(dir.path());
    let s = repo.create(CreateOptions::new("/w")).await.unwrap();
    let a = s.append(EntryDraft::new(user("one"))).await.unwrap();
    std::fs::remove_file(s.location()).unwrap();
    let e = s
        .append(EntryDraft::new(user("two")))
        .await
        .expect_err("deleted");
    assert_eq!(e.code(), "storage");
    assert!(
        e.to_string().contains("deleted or replaced while open"),
        "{e}"
    );
    assert_eq!(s.entry_count().await.unwrap(), 1);
    assert_eq!(s.get_entry(&a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(s.leaf_id().await.unwrap(), Some(a.id));
    assert!(!Path::new(&s.location()).exists(), "no file was recreated");
}

#[tokio::test]
async fn file_replaced_while_open_refuses_appends() {
    let dir = tempfile::tempdir().unwrap();
    let repo = JsonlRepository::new(dir.path());
    let s = repo.create(CreateOptions::new("/w")).await.unwrap();
    s.append(EntryDraft::new(user("one"))).await.unwrap();
    let loc = s.location();
    let other = dir.path().join("other");
    std::fs::write(&other, "{}\n").unwrap();
    std::fs::rename(&other, &loc).unwrap();
    let e = s
        .append(EntryDraft::new(user("two")))
        .await
        .expect_err("replaced");
    assert!(e.to_string().contains("replaced while open"), "{e}");
    assert_eq!(std::fs::read_to_string(&loc).unwrap(), "{}\n");
}

/// A writer that runs out of space after `budget` bytes, writing a partial line first.
struct FailingWriter {
    inner: FileWriter,
    budget: Arc<AtomicI64>,
    fail_truncate: Arc<AtomicBool>,
    syncs: Arc<AtomicUsize>,
}

impl SessionWriter for FailingWriter {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        let left = self.budget.load(Ordering::SeqCst);
        if left >= bytes.len() as i64 {
            self.budget.fetch_sub(bytes.len() as i64, Ordering::SeqCst);
            return self.inner.append(bytes);
        }
        let part = left.max(0) as usize;
        self.inner.append(&bytes[..part])?;
        self.budget.store(0, Ordering::SeqCst);
        Err(io::Error::new(
            io::ErrorKind::StorageFull,
            "No space left on device (simulated)",
        ))
    }
    fn sync(&mut self) -> io::Result<()> {
        self.syncs.fetch_add(1, Ordering::SeqCst);
        self.inner.sync()
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        if self.fail_truncate.swap(false, Ordering::SeqCst) {
            return Err(io::Error::other("truncate failed (simulated)"));
        }
        self.inner.truncate(len)
    }
}

struct Knobs {
    budget: Arc<AtomicI64>,
    fail_truncate: Arc<AtomicBool>,
    syncs: Arc<AtomicUsize>,
}

fn failing_factory() -> (WriterFactory, Knobs) {
    let knobs = Knobs {
        budget: Arc::new(AtomicI64::new(i64::MAX)),
        fail_truncate: Arc::new(AtomicBool::new(false)),
        syncs: Arc::new(AtomicUsize::new(0)),
    };
    let (b, t, s) = (
        knobs.budget.clone(),
        knobs.fail_truncate.clone(),
        knobs.syncs.clone(),
    );
    let factory: WriterFactory = Arc::new(move |file| {
        Box::new(FailingWriter {
            inner: FileWriter::new(file),
            budget: b.clone(),
            fail_truncate: t.clone(),
            syncs: s.clone(),
        }) as Box<dyn SessionWriter>
    });
    (factory, knobs)
}

#[tokio::test]
async fn full_disk_fails_the_append_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (factory, knobs) = failing_factory();
    let repo = JsonlRepository::new(dir.path()).with_writer(factory);
    let s = repo.create(CreateOptions::new("/w")).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(
            s.append(EntryDraft::new(user(&format!("m{i}"))))
                .await
                .unwrap()
                .id,
        );
    }
    let loc = s.location();
    let before = std::fs::read(&loc).unwrap();

    knobs.budget.store(10, Ordering::SeqCst);
    let e = s
        .append(EntryDraft::new(user("does not fit")))
        .await
        .expect_err("disk full");
    assert_eq!(e.code(), "storage");
    assert!(e.to_string().contains("No space left"), "{e}");
    assert_eq!(
        std::fs::read(&loc).unwrap(),
        before,
        "partial line cut off again"
    );
    assert_eq!(s.entry_count().await.unwrap(), 3);
    assert_eq!(s.leaf_id().await.unwrap().as_ref(), ids.last());

    // Now the cleanup itself fails: the next append must cut the partial line first.
    knobs.budget.store(5, Ordering::SeqCst);
    knobs.fail_truncate.store(true, Ordering::SeqCst);
    s.append(EntryDraft::new(user("fails again")))
        .await
        .expect_err("disk full");
    assert!(
        std::fs::read(&loc).unwrap().len() > before.len(),
        "partial bytes left behind"
    );

    knobs.budget.store(i64::MAX, Ordering::SeqCst);
    let ok = s
        .append(EntryDraft::new(user("fits")))
        .await
        .expect("space is back");
    assert_eq!(ok.parent_id.as_ref(), ids.last());
    drop(s);
    let s = repo.open(&loc).await.unwrap();
    assert_eq!(s.report().await.torn_tail, None);
    let page = s.entries(None, None).await.unwrap();
    let got: Vec<String> = page.entries.into_iter().map(|(_, e)| e.id).collect();
    ids.push(ok.id);
    assert_eq!(got, ids);
}

#[tokio::test]
async fn sync_policies_fsync_as_documented() {
    for (policy, appends, expected) in [
        (SyncPolicy::Always, 10usize, 10usize),
        (SyncPolicy::SavePoint, 10, 1),
        (SyncPolicy::Never, 10, 0),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (factory, knobs) = failing_factory();
        let repo = JsonlRepository::new(dir.path())
            .with_sync(policy)
            .with_writer(factory);
        let s = repo.create(CreateOptions::new("/w")).await.unwrap();
        for i in 0..appends {
            s.append(EntryDraft::new(user(&i.to_string())))
                .await
                .unwrap();
        }
        s.save_point().await.unwrap();
        s.save_point().await.unwrap();
        assert_eq!(knobs.syncs.load(Ordering::SeqCst), expected, "{policy:?}");
    }
}

// ---- the write lock ---------------------------------------------------------------------------

const CHILD_ENV: &str = "ARBOR_STORE_LOCK_CHILD";

/// Run twice: as the test, and (with `ARBOR_STORE_LOCK_CHILD` set) as the second process.
#[tokio::test]
async fn second_writer_process_is_refused() {
    if let Ok(path) = std::env::var(CHILD_ENV) {
        let repo = JsonlRepository::flat(Path::new(&path).parent().unwrap());
        let writer = match repo.open(&path).await {
            Ok(_) => "opened".to_owned(),
            Err(e) => format!("{} {}", e.code(), e),
        };
        let reader = match repo.open_read_only(&path).await {
            Ok(s) => format!("read {}", s.entry_count().await.unwrap()),
            Err(e) => format!("read failed {e}"),
        };
        println!("CHILD-WRITER: {writer}");
        println!("CHILD-READER: {reader}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let repo = JsonlRepository::new(dir.path());
    let s = repo.create(CreateOptions::new("/w")).await.unwrap();
    s.append(EntryDraft::new(user("held"))).await.unwrap();
    let run_child = |loc: &str| {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "suite::store_jsonl::second_writer_process_is_refused",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, loc)
            .output()
            .expect("spawn child");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let out = run_child(&s.location());
    assert!(
        out.contains(
            "CHILD-WRITER: storage storage error: session is open for writing by another process"
        ),
        "{out}"
    );
    assert!(
        out.contains("CHILD-READER: read 1"),
        "readers never block: {out}"
    );
    // Within the process too: a second handle is refused while the first lives.
    let e = repo
        .open(&s.location())
        .await
        .expect_err("second writer refused");
    assert!(
        e.to_string()
            .contains("open for writing by another process"),
        "{e}"
    );
    let loc = s.location();
    drop(s);
    let out = run_child(&loc);
    assert!(
        out.contains("CHILD-WRITER: opened"),
        "lock released on drop: {out}"
    );
}

// ---- pi files, migration, byte compatibility --------------------------------------------------

fn expected(name: &str) -> Value {
    let stem = name.trim_end_matches(".jsonl");
    let path = testdata_dir()
        .join("pi-sessions/expected")
        .join(format!("{stem}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn pi_v3_fixtures_open_with_the_expected_leaf() {
    let mut checked = 0;
    for path in fixture_files("pi-sessions") {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let exp = expected(&name);
        let repo = JsonlRepository::flat(path.parent().unwrap());
        let opened = repo.open_read_only(p(&path)).await;
        if exp["ok"] == json!(false) {
            let e = opened.expect_err("must be refused");
            assert!(e.to_string().contains(":4:"), "{name}: {e}");
            continue;
        }
        let s = opened.unwrap_or_else(|e| panic!("{name}: {e}"));
        let migrated = s.report().await.migrated_from.is_some();
        if !migrated {
            assert_eq!(
                s.leaf_id().await.unwrap().as_deref(),
                exp["leafId"].as_str(),
                "{name}"
            );
        }
        // Every entry parses lazily.
        let all = s
            .entries(None, None)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(all.entries.len() as u64, s.entry_count().await.unwrap());
        checked += 1;
    }
    assert!(checked >= 9, "checked {checked}");
    for path in fixture_files("generated/sessions") {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let exp: Value = serde_json::from_str(
            &std::fs::read_to_string(
                testdata_dir()
                    .join("generated/expected")
                    .join(format!("{stem}.json")),
            )
            .unwrap(),
        )
        .unwrap();
        let s = JsonlRepository::flat(path.parent().unwrap())
            .open_read_only(p(&path))
            .await
            .unwrap();
        assert_eq!(
            s.leaf_id().await.unwrap().as_deref(),
            exp["leafId"].as_str(),
            "{stem}"
        );
    }
}

/// Copies a fixture into a temp dir so a writable open may modify it.
fn copy_fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let src = testdata_dir().join("pi-sessions").join(name);
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join(name);
    std::fs::copy(&src, &dst).unwrap();
    (dir, dst)
}

#[tokio::test]
async fn v1_migrates_like_pi_and_rewrites_with_a_backup() {
    let name = "v1-large-session.pi-mono.jsonl";
    let (dir, path) = copy_fixture(name);
    let original = std::fs::read(&path).unwrap();
    let repo = JsonlRepository::flat(dir.path());
    let s = repo.open(p(&path)).await.unwrap();
    assert_eq!(s.report().await.migrated_from, Some(1));
    assert_eq!(
        std::fs::read(&path).unwrap(),
        original,
        "opening alone rewrites nothing"
    );

    let our_ids =
        assert_migrates_like_pi(&s, "v3-migrated-from-v1-large-session.pi-1.6.0.jsonl").await;
    let h = s.header().await.unwrap();
    assert_eq!(h.version, Some(3));
    assert!(h.extra.contains_key("provider"), "legacy header keys kept");

    // The first write keeps the original as .v1.bak and rewrites the file atomically.
    let added = s
        .append(EntryDraft::new(user("after migration")))
        .await
        .unwrap();
    assert_eq!(added.parent_id.as_ref(), our_ids.last());
    let backup = s.report().await.backup.expect("backup path");
    assert_eq!(
        backup.file_name().unwrap().to_string_lossy(),
        format!("{name}.v1.bak")
    );
    assert_eq!(std::fs::read(&backup).unwrap(), original);
    drop(s);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        2,
        "only the file and its backup: {leftovers:?}"
    );
    let s = repo.open(p(&path)).await.unwrap();
    assert_eq!(s.report().await.migrated_from, None, "now a v3 file");
    assert_eq!(s.entry_count().await.unwrap() as usize, our_ids.len() + 1);
    assert_eq!(s.leaf_id().await.unwrap(), Some(added.id));
    let first = std::fs::read_to_string(&path).unwrap();
    let header: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    assert_eq!(header["version"], json!(3));
}

#[tokio::test]
async fn v2_hook_messages_become_custom() {
    let text = std::fs::read_to_string(
        testdata_dir()
            .join("pi-sessions/v2-synthetic-hookMessage-and-malformed-line.handmade.jsonl"),
    )
    .unwrap();
    let without_bad: String = text
        .lines()
        .filter(|l| *l != "not json at all")
        .map(|l| format!("{l}\n"))
        .collect();
    let (_d, repo, path) = with_file(without_bad.as_bytes());
    let s = repo.open_read_only(p(&path)).await.unwrap();
    assert_eq!(s.report().await.migrated_from, Some(2));
    let b = serde_json::to_value(s.get_entry("bbbb2222").await.unwrap().unwrap()).unwrap();
    assert_eq!(b["message"]["role"], json!("custom"));
    let pi = std::fs::read_to_string(
        testdata_dir().join("pi-sessions/v3-migrated-from-v2-synthetic.pi-1.6.0.jsonl"),
    )
    .unwrap();
    let ours: Vec<Value> = s
        .entries(None, None)
        .await
        .unwrap()
        .entries
        .iter()
        .map(|(_, e)| serde_json::to_value(e).unwrap())
        .collect();
    let theirs: Vec<Value> = pi
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(ours, theirs);
}

#[tokio::test]
async fn pi_lines_stay_byte_identical_after_appends_and_forks() {
    let name = "v3-generated-branches-labels-branchsummary-compaction.pi-1.6.0.jsonl";
    let (dir, path) = copy_fixture(name);
    let original = std::fs::read(&path).unwrap();
    let repo = JsonlRepository::flat(dir.path());
    let s = repo.open(p(&path)).await.unwrap();
    let e = s.append(EntryDraft::new(user("one more"))).await.unwrap();
    let now = std::fs::read(&path).unwrap();
    assert!(now.starts_with(&original), "existing bytes untouched");
    let added = std::str::from_utf8(&now[original.len()..]).unwrap();
    assert_eq!(added, format!("{}\n", serde_json::to_string(&e).unwrap()));
    let v: Value = serde_json::from_str(added.trim_end()).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(&keys[..4], ["type", "id", "parentId", "timestamp"]);

    let f = repo
        .fork(&s.location(), ForkOptions::default())
        .await
        .unwrap();
    let forked = std::fs::read_to_string(f.location()).unwrap();
    let src_body = std::str::from_utf8(&now)
        .unwrap()
        .split_once('\n')
        .unwrap()
        .1;
    assert_eq!(
        forked.split_once('\n').unwrap().1,
        src_body,
        "fork copies lines byte for byte"
    );
    let fh: Value = serde_json::from_str(forked.lines().next().unwrap()).unwrap();
    assert_eq!(
        fh["parentSession"].as_str(),
        Some(std::path::absolute(&path).unwrap().to_str().unwrap())
    );
}

// ---- layout and listing -----------------------------------------------------------------------

#[tokio::test]
async fn files_follow_pi_layout_and_naming() {
    let dir = tempfile::tempdir().unwrap();
    let repo = JsonlRepository::new(dir.path());
    let s = repo
        .create(CreateOptions::new("/srv/u/proj").with_id("my-id"))
        .await
        .unwrap();
    let h = s.header().await.unwrap();
    let expected = dir.path().join("--srv-u-proj--").join(format!(
        "{}_my-id.jsonl",
        h.timestamp.replace([':', '.'], "-")
    ));
    assert_eq!(PathBuf::from(s.location()), expected);
    let text = std::fs::read_to_string(&expected).unwrap();
    assert_eq!(text, format!("{}\n", h.to_json()));
    let v: Value = serde_json::from_str(text.trim_end()).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["type", "version", "id", "timestamp", "cwd"]);
    let other = repo.create(CreateOptions::new("/srv/other")).await.unwrap();
    drop(other);
    assert_eq!(
        repo.list_cwd("/srv/u/proj").await.unwrap().sessions.len(),
        1
    );
    assert_eq!(repo.list().await.unwrap().sessions.len(), 2);
}

#[tokio::test]
async fn listing_skips_bad_headers_and_reads_pi_directories() {
    let dir = tempfile::tempdir().unwrap();
    // pi's layout: <root>/--cwd--/<ts>_<id>.jsonl, given to a flat repository.
    let cwd_dir = dir.path().join("--work-p--");
    std::fs::create_dir(&cwd_dir).unwrap();
    std::fs::write(
        cwd_dir.join("2026-06-20T15-00-00-000Z_s1.jsonl"),
        lines(&[HEADER.into(), entry("a", None, "hello there")]),
    )
    .unwrap();
    std::fs::write(
        cwd_dir.join("2026-06-20T15-00-01-000Z_bad.jsonl"),
        "garbage\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("2026-06-20T15-00-02-000Z_v9.jsonl"),
        lines(&[HEADER.replace("\"version\":3", "\"version\":9")]),
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a session").unwrap();
    let repo = JsonlRepository::flat(dir.path());
    let list = repo.list().await.unwrap();
    assert_eq!(list.sessions.len(), 1);
    let info = &list.sessions[0];
    assert_eq!(info.id, "s1");
    assert_eq!(info.first_message.as_deref(), Some("hello there"));
    assert_eq!(info.entry_count, Some(1));
    assert_eq!(list.skipped.len(), 2, "{:?}", list.skipped);
    assert!(list
        .skipped
        .iter()
        .any(|(p, why)| p.ends_with("_bad.jsonl") && why.contains("JSON")));
    assert!(list
        .skipped
        .iter()
        .any(|(p, why)| p.ends_with("_v9.jsonl") && why.contains("version 9")));
    let s = repo
        .open("s1")
        .await
        .expect("open by id inside a pi cwd directory");
    assert_eq!(s.entry_count().await.unwrap(), 1);
    assert_eq!(repo.list_cwd("/work/p").await.unwrap().sessions.len(), 1);
    assert_eq!(repo.list_cwd("/elsewhere").await.unwrap().sessions.len(), 0);
}

#[tokio::test]
async fn listing_large_files_reads_names_from_both_ends() {
    let dir = tempfile::tempdir().unwrap();
    let mut parts = vec![HEADER.to_owned(), entry("a", None, "the first prompt")];
    let mut parent = "a".to_owned();
    for i in 0..300 {
        let id = format!("e{i}");
        parts.push(entry(&id, Some(&parent), &"filler ".repeat(100)));
        parent = id;
    }
    parts.push(json!({"type":"session_info","id":"n1","parentId":parent,"timestamp":"t","name":"Late name"}).to_string());
    std::fs::write(
        dir.path().join("2026-06-20T15-00-00-000Z_s1.jsonl"),
        lines(&parts),
    )
    .unwrap();
    let list = JsonlRepository::flat(dir.path()).list().await.unwrap();
    let info = &list.sessions[0];
    assert_eq!(info.name.as_deref(), Some("Late name"));
    assert_eq!(info.first_message.as_deref(), Some("the first prompt"));
    assert_eq!(info.entry_count, None, "large files are not counted");
}

const HOME_CHILD_ENV: &str = "ARBOR_STORE_HOME_CHILD";

/// `ARBOR_HOME` moves `~/.arbor` (checked in a child process so no test shares the variable).
#[tokio::test]
async fn arbor_home_moves_the_default_root() {
    if std::env::var_os(HOME_CHILD_ENV).is_some() {
        let repo = JsonlRepository::default_location();
        println!("CHILD-LAYOUT: {:?}", repo.layout());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "suite::store_jsonl::arbor_home_moves_the_default_root",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HOME_CHILD_ENV, "1")
        .env("ARBOR_HOME", dir.path())
        .output()
        .expect("spawn child");
    let out = String::from_utf8_lossy(&out.stdout);
    let want = format!("CHILD-LAYOUT: PerCwd({:?})", dir.path().join("sessions"));
    assert!(out.contains(&want), "{out}");
}

/// Compares a migrated session with pi's own migration of the same file, mapping ids by
/// position (pi's ids are random). Returns our ids in log order.
async fn assert_migrates_like_pi(s: &arbor_session::JsonlStorage, pi_file: &str) -> Vec<String> {
    // Compare with pi's own migration of the same file, mapping ids by position.
    let pi = std::fs::read_to_string(testdata_dir().join("pi-sessions").join(pi_file)).unwrap();
    let pi_lines: Vec<Value> = pi
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ours = s.entries(None, None).await.unwrap().entries;
    assert_eq!(ours.len() + 1, pi_lines.len());
    let pos_of = |ids: &[String], id: &str| ids.iter().position(|x| x == id);
    let our_ids: Vec<String> = ours.iter().map(|(_, e)| e.id.clone()).collect();
    let pi_ids: Vec<String> = pi_lines[1..]
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_owned())
        .collect();
    for (i, ((_, e), pv)) in ours.iter().zip(&pi_lines[1..]).enumerate() {
        let mut ov = serde_json::to_value(e).unwrap();
        let mut pv = pv.clone();
        assert_eq!(e.id.len(), 8, "short ids");
        assert_eq!(
            e.parent_id.as_deref().and_then(|x| pos_of(&our_ids, x)),
            pv["parentId"].as_str().and_then(|x| pos_of(&pi_ids, x)),
            "entry {i} parent"
        );
        if let Some(k) = pv.get("firstKeptEntryId").and_then(Value::as_str) {
            let ours_k = ov["firstKeptEntryId"].as_str().expect("kept id mapped");
            assert_eq!(
                pos_of(&our_ids, ours_k),
                pos_of(&pi_ids, k),
                "entry {i} firstKeptEntryId"
            );
        }
        for v in [&mut ov, &mut pv] {
            let m = v.as_object_mut().unwrap();
            m.remove("id");
            m.remove("parentId");
            m.remove("firstKeptEntryId");
        }
        assert_eq!(ov, pv, "entry {i}");
    }
    our_ids
}

#[tokio::test]
async fn v1_fixtures_migrate_like_pi() {
    for (name, pi_file) in [
        (
            "v1-before-compaction.pi-mono.jsonl",
            "v3-migrated-from-v1-before-compaction.pi-1.6.0.jsonl",
        ),
        ("v1-prompt-cache-replay.earendil-pi.jsonl", ""),
    ] {
        let path = testdata_dir().join("pi-sessions").join(name);
        let s = JsonlRepository::flat(path.parent().unwrap())
            .open_read_only(p(&path))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(s.report().await.migrated_from, Some(1), "{name}");
        if !pi_file.is_empty() {
            assert_migrates_like_pi(&s, pi_file).await;
        }
        let kept: Vec<_> = s.find_entries("compaction").await.unwrap();
        for c in kept {
            let v = serde_json::to_value(&c).unwrap();
            assert!(
                v.get("firstKeptEntryIndex").is_none(),
                "{name}: index removed"
            );
            if let Some(k) = v["firstKeptEntryId"].as_str() {
                assert!(
                    s.get_entry(k).await.unwrap().is_some(),
                    "{name}: kept id resolves"
                );
            }
        }
        let exp = expected(name);
        let leaf = s.leaf_id().await.unwrap().expect("leaf");
        let page = s.entries(None, None).await.unwrap();
        assert_eq!(
            Some(leaf),
            page.entries.last().map(|(_, e)| e.id.clone()),
            "{name}"
        );
        assert_eq!(exp["ok"], json!(true));
    }
}

/// A lock released within the retry window (a forked child's copy of the descriptor, closed at
/// its `exec`) does not refuse the open; one still held after it does (DECISIONS §25.41).
#[tokio::test]
async fn an_open_waits_out_a_lock_released_at_once_but_refuses_a_held_one() {
    let dir = tempfile::tempdir().unwrap();
    let repo = JsonlRepository::flat(dir.path());
    let s = repo.create(CreateOptions::default()).await.unwrap();
    let path = s.location();
    drop(s);
    let holder = std::fs::File::open(&path).unwrap();
    holder.lock().unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(60));
        drop(holder);
    });
    repo.open(&path)
        .await
        .expect("lock released within the window");
    release.join().unwrap();

    let held = std::fs::File::open(&path).unwrap();
    held.lock().unwrap();
    let err = repo.open(&path).await.expect_err("a held lock refuses");
    assert!(
        err.to_string()
            .contains("session is open for writing by another process"),
        "{err}"
    );
}

/// Lines longer than the open's 256 KiB read chunk, lines ending exactly at a chunk's edge and
/// an unterminated last line (DECISIONS §25.111): every entry reads back as written.
#[tokio::test]
async fn lines_across_and_at_read_chunk_edges_are_indexed_whole() {
    const CHUNK: usize = 256 << 10;
    let big = "x".repeat(3 * CHUNK + 17);
    let mut parts = vec![HEADER.to_owned(), entry("a", None, &big)];
    // Pad so the next line ends exactly at a chunk edge.
    let used: usize = parts.iter().map(|l| l.len() + 1).sum();
    let probe = entry("b", Some("a"), "");
    let want_end = used.div_ceil(CHUNK) * CHUNK + CHUNK;
    let pad = want_end - used - (probe.len() + 1);
    parts.push(entry("b", Some("a"), &"y".repeat(pad)));
    parts.push(entry("c", Some("b"), "after the edge"));
    let mut content = lines(&parts);
    assert_eq!(
        content.len() % CHUNK,
        (entry("c", Some("b"), "after the edge").len() + 1) % CHUNK
    );
    // The last line lacks its newline (complete JSON: kept, as pi keeps it).
    content.extend_from_slice(entry("d", Some("c"), "last").as_bytes());
    let (_dir, repo, path) = with_file(&content);
    let storage = repo.open_read_only(p(&path)).await.expect("open");
    let got = storage.entries(None, None).await.expect("entries").entries;
    let texts: Vec<(String, usize)> = got
        .iter()
        .map(|(_, e)| {
            let line = serde_json::to_value(e).expect("json");
            let text = line["message"]["content"]
                .as_str()
                .unwrap_or_default()
                .len();
            (e.id.clone(), text)
        })
        .collect();
    assert_eq!(
        texts,
        vec![
            ("a".to_owned(), big.len()),
            ("b".to_owned(), pad),
            ("c".to_owned(), "after the edge".len()),
            ("d".to_owned(), 4),
        ]
    );
    assert_eq!(storage.leaf_id().await.expect("leaf").as_deref(), Some("d"));
}
