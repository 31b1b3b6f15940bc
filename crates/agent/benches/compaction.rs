//! Compaction and branch-summary preparation on a big session's active path (criterion).
//!
//! Input: `ARBOR_BENCH_BIG` (default `/tmp/arbor-bench/big.jsonl`, made with
//! `python3 shared/tools/gen_big.py /tmp/arbor-bench/big.jsonl 100` when missing). The path is
//! read once outside the timing; measured is `prepare_compaction` on the full ancestry (what
//! the harness hands it), with the default settings, plus the dry-run JSON of the plan and a
//! branch preparation from the leaf to the middle of the path. pi's `prepareCompaction` on the
//! same file: `node crates/agent/benches/pi_prepare_timing.mjs FILE`.
//!
//! `cargo bench -p arbor-agent --bench compaction -- --warm-up-time 1 --measurement-time 3`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use arbor_agent::branch_summary::{collect_branch_entries, prepare_branch_entries};
use arbor_agent::compaction::compaction_plan_json;
use arbor_agent::compaction::{prepare_compaction, CompactionSettings};
use arbor_agent::session::{JsonlRepository, Session, SessionEntry};
use criterion::{criterion_group, criterion_main, Criterion};

fn big_file() -> PathBuf {
    let path = PathBuf::from(
        std::env::var("ARBOR_BENCH_BIG").unwrap_or_else(|_| "/tmp/arbor-bench/big.jsonl".into()),
    );
    if !path.is_file() {
        let tools =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/tools/gen_big.py");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let status = std::process::Command::new("python3")
            .arg(tools)
            .arg(&path)
            .arg("100")
            .status()
            .expect("python3 for gen_big.py");
        assert!(status.success(), "gen_big.py failed");
    }
    path
}

fn load() -> (Vec<SessionEntry>, Vec<SessionEntry>) {
    let path = big_file();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let storage = JsonlRepository::flat(path.parent().unwrap().to_path_buf())
            .open_read_only(&path.display().to_string())
            .await
            .unwrap();
        let session = Session::new(Arc::new(storage));
        let ancestry = session.ancestry(None).await.unwrap();
        let middle = ancestry[ancestry.len() / 2].id.clone();
        let target = session.ancestry(Some(&middle)).await.unwrap();
        (ancestry, target)
    })
}

fn bench(c: &mut Criterion) {
    let (ancestry, target) = load();
    let settings = CompactionSettings::default();
    let prep = prepare_compaction(&ancestry, &settings).unwrap();
    eprintln!(
        "active path: {} entries; plan: {}",
        ancestry.len(),
        prep.as_ref()
            .map_or("nothing to compact".to_string(), |p| format!(
                "{} messages to summarize, split turn {}, tokens before {}",
                p.messages_to_summarize.len(),
                p.is_split_turn,
                p.tokens_before
            ))
    );
    c.bench_function("prepare_compaction (100 MB session, active path)", |b| {
        b.iter(|| prepare_compaction(&ancestry, &settings).unwrap())
    });
    c.bench_function("prepare_compaction + plan JSON", |b| {
        b.iter(|| compaction_plan_json(prepare_compaction(&ancestry, &settings).unwrap().as_ref()))
    });
    c.bench_function("branch: collect + prepare (leaf to mid-path)", |b| {
        b.iter(|| {
            let collection = collect_branch_entries(&ancestry, &target);
            prepare_branch_entries(&collection.entries, 111_616)
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
