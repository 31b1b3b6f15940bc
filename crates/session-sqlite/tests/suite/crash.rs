//! SIGKILL of a writing process, CI-sized (issue 15): a child (this test binary, re-run with
//! `ARBOR_SQLITE_CRASH_CHILD`) appends entries to a SQLite session, printing each id once its
//! append returned; it is killed at a random moment. The reopened session must hold every
//! acknowledged entry, in order, as one chain whose state row matches, and take appends again
//! (the dead writer's lock is gone). Both `Synchronous` modes; `ARBOR_CRASH_RUNS` for more runs.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use arbor_session::{CreateOptions, SessionRepository, SessionStorage};
use arbor_session_sqlite::{SqliteOptions, SqliteRepository, Synchronous};

use super::custom;

const CHILD_ENV: &str = "ARBOR_SQLITE_CRASH_CHILD";

fn options(sync: &str) -> SqliteOptions {
    SqliteOptions {
        synchronous: if sync == "full" {
            Synchronous::Full
        } else {
            Synchronous::Normal
        },
        ..SqliteOptions::default()
    }
}

/// The child: appends until killed, one `ack <id>` line per returned append.
#[test]
fn crash_writer_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (sync, db) = spec.split_once(':').unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async move {
        let repo = SqliteRepository::open_with(db, options(sync))
            .await
            .unwrap();
        let s = repo.create(CreateOptions::new("/crash")).await.unwrap();
        println!("\nsession {}", s.id());
        for i in 0..100_000 {
            let e = s
                .append(custom("k", serde_json::json!({ "i": i })))
                .await
                .unwrap();
            if i % 16 == 15 {
                s.save_point().await.unwrap();
            }
            println!("ack {}", e.id);
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_of_a_writer_loses_no_acknowledged_entry() {
    let runs: usize = std::env::var("ARBOR_CRASH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(7)
        | 1;
    let mut killed_while_writing = 0;
    for run in 0..runs {
        let sync = if run % 2 == 0 { "normal" } else { "full" };
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sessions.db");
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "suite::crash::crash_writer_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, format!("{sync}:{}", db.display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut session = None;
        let mut acked: Vec<String> = Vec::new();
        // Wait for the session, then kill after a random 20..220 ms of appending.
        while session.is_none() {
            let line = rx
                .recv_timeout(Duration::from_secs(30))
                .expect("child started");
            session = line.strip_prefix("session ").map(str::to_owned);
        }
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        tokio::time::sleep(Duration::from_millis(20 + seed % 200)).await;
        child.kill().unwrap();
        let status = child.wait().unwrap();
        reader.join().unwrap();
        acked.extend(
            rx.try_iter()
                .filter_map(|l| l.strip_prefix("ack ").map(str::to_owned)),
        );
        if !status.success() {
            killed_while_writing += 1;
        }
        let session = session.unwrap();

        let repo = SqliteRepository::open_with(&db, options(sync))
            .await
            .unwrap();
        let s = repo
            .open(&session)
            .await
            .unwrap_or_else(|e| panic!("run {run} ({sync}): reopen after SIGKILL failed: {e}"));
        let page = s.entries(None, None).await.unwrap();
        let stored: Vec<String> = page.entries.iter().map(|(_, e)| e.id.clone()).collect();
        assert!(
            stored.len() >= acked.len() && stored[..acked.len()] == acked[..],
            "run {run} ({sync}): {} acknowledged, {} stored; acknowledged entries lost",
            acked.len(),
            stored.len()
        );
        // At most the one append in flight at the kill may be stored unacknowledged.
        assert!(
            stored.len() <= acked.len() + 1,
            "run {run}: {} extra",
            stored.len() - acked.len()
        );
        for w in page.entries.windows(2) {
            assert_eq!(
                w[1].1.parent_id.as_deref(),
                Some(w[0].1.id.as_str()),
                "run {run}"
            );
        }
        assert_eq!(
            s.entry_count().await.unwrap(),
            stored.len() as u64,
            "run {run}"
        );
        assert_eq!(
            s.leaf_id().await.unwrap(),
            stored.last().cloned(),
            "run {run}"
        );
        let after = s
            .append(custom("k", serde_json::json!("after")))
            .await
            .unwrap();
        assert_eq!(after.parent_id, stored.last().cloned(), "run {run}");
    }
    assert_eq!(
        killed_while_writing, runs,
        "every child was still writing when killed"
    );
}
