//! Checkpoint speed on a 10,000-file repository (DECISIONS §27, docs/PERFORMANCE.md):
//! an unchanged capture, a capture after editing one file, and a restore across a 100-file
//! difference. A small bench binary (median of N runs) rather than criterion: each sample
//! spawns git processes, and the numbers that matter are whole-operation wall times.
//!
//! `cargo bench -p arbor-checkpoint --bench checkpoint` (optional argument: runs, default 15).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use arbor_checkpoint::{Captured, Checkpoint, CheckpointSettings, RestoreOptions, Workspace};

const FILES: usize = 10_000;

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@localhost")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@localhost")
        .args(args)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "git {args:?} failed");
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// CPU time used so far by this process and its finished children (git), from
/// `/proc/self/stat` (10 ms ticks; averaged over many runs). On a loaded machine wall time
/// mostly measures waiting for a core; CPU time is what the work costs.
fn cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let sum = fields
        .get(11..15)?
        .iter()
        .map(|f| f.parse::<u64>().unwrap_or(0))
        .sum();
    Some(sum)
}

/// Git processes the store has started so far.
fn spawned(ws: &Workspace) -> u64 {
    match ws {
        Workspace::Git(g) => g.git_processes(),
        Workspace::Snapshot(_) => 0,
    }
}

/// `lstat`s of index paths so far (0 for a capture decided by change notification alone).
fn lstats(ws: &Workspace) -> u64 {
    match ws {
        Workspace::Git(g) => g.watch_stats().index_lstats,
        Workspace::Snapshot(_) => 0,
    }
}

/// Wall median, wall minimum, mean CPU (ms), git processes and index `lstat`s per run of
/// `samples` that used `ticks` CPU ticks, started `procs` git processes and made `stats`
/// `lstat`s.
fn report(
    name: &str,
    samples: Vec<Duration>,
    ticks: Option<u64>,
    (procs, stats): (u64, u64),
    target: &str,
) {
    let runs = samples.len();
    let per_run = procs as f64 / runs as f64;
    let stats_per_run = stats as f64 / runs as f64;
    let min = samples.iter().min().copied().unwrap_or_default();
    let cpu = ticks
        .map(|t| format!("{:.1} ms", t as f64 * 10.0 / runs as f64))
        .unwrap_or_else(|| "n/a".into());
    println!(
        "  {name:<44} median {:>9}  min {:>9}  cpu {cpu:>9}  git {per_run:>4.1}  lstat {stats_per_run:>7.1}  (target <= {target})",
        ms(median(samples)),
        ms(min)
    );
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn state(c: Captured) -> Checkpoint {
    match c {
        Captured::Created { checkpoint, .. } | Captured::Unchanged(checkpoint) => checkpoint,
        Captured::Skipped { notice } => panic!("{notice}"),
    }
}

fn main() {
    let runs: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(30);
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    git(root, &["init", "-q"]);
    for i in 0..FILES {
        let sub = root.join(format!("src/m{:03}", i / 100));
        std::fs::create_dir_all(&sub).expect("mkdir");
        let body = format!("// file {i}\npub fn f{i}() -> usize {{ {i} }}\n").repeat(4);
        std::fs::write(sub.join(format!("f{i:05}.rs")), body).expect("write");
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "10k files"]);
    // The user's index is fresh (as after any `git status`).
    git(root, &["status", "--porcelain"]);

    let home = root.join(".bench-home");
    let mut ws =
        Workspace::open(root, "bench", &CheckpointSettings::default(), &home).expect("open store");
    let t = Instant::now();
    let mut last = state(ws.capture(None).expect("first capture"));
    let first = t.elapsed();

    let mut unchanged = Vec::new();
    let p0 = spawned(&ws);
    let l0 = lstats(&ws);
    let cpu0 = cpu_ticks();
    for _ in 0..runs {
        let t = Instant::now();
        let c = ws.capture(Some(&last)).expect("capture");
        unchanged.push(t.elapsed());
        assert!(matches!(c, Captured::Unchanged(_)));
    }

    let unchanged_cpu = cpu_ticks().zip(cpu0).map(|(b, a)| b - a);
    let unchanged_procs = (spawned(&ws) - p0, lstats(&ws) - l0);
    let p0 = spawned(&ws);
    let l0 = lstats(&ws);
    let mut one_edit = Vec::new();
    let mut edit_cpu = 0;
    for run in 0..runs {
        std::fs::write(
            root.join("src/m042/f04242.rs"),
            format!("// edited {run}\n"),
        )
        .expect("edit");
        let c0 = cpu_ticks();
        let t = Instant::now();
        let c = ws.capture(Some(&last)).expect("capture");
        one_edit.push(t.elapsed());
        edit_cpu += cpu_ticks().zip(c0).map(|(b, a)| b - a).unwrap_or(0);
        last = state(c);
    }

    let edit_procs = (spawned(&ws) - p0, lstats(&ws) - l0);
    // Two states 100 files apart; restore back and forth.
    let a = last.clone();
    for i in 0..100 {
        let n = i * 97;
        std::fs::write(
            root.join(format!("src/m{:03}/f{n:05}.rs", n / 100)),
            format!("// changed {i}\n"),
        )
        .expect("edit");
    }
    let b = state(ws.capture(Some(&a)).expect("capture b"));
    let mut restore = Vec::new();
    let mut here = b.clone();
    let p0 = spawned(&ws);
    let l0 = lstats(&ws);
    let cpu0 = cpu_ticks();
    for run in 0..runs {
        let target = if run % 2 == 0 { &a } else { &b };
        let t = Instant::now();
        // What a restore costs the user: the capture first, then the restore itself.
        let now = state(ws.capture(Some(&here)).expect("capture before restore"));
        let done = ws
            .restore(target, &now, RestoreOptions::default())
            .expect("restore");
        restore.push(t.elapsed());
        assert_eq!(done.changed.len(), 100);
        here = target.clone();
    }

    let restore_cpu = cpu_ticks().zip(cpu0).map(|(b, a)| b - a);
    let restore_procs = (spawned(&ws) - p0, lstats(&ws) - l0);
    println!("checkpoints of a {FILES}-file git repository ({runs} runs each):");
    println!("  first capture (seeds the private index): {}", ms(first));
    report(
        "unchanged worktree",
        unchanged,
        unchanged_cpu,
        unchanged_procs,
        "20 ms",
    );
    report(
        "after editing one file",
        one_edit,
        Some(edit_cpu),
        edit_procs,
        "50 ms",
    );
    report(
        "restore across 100 files (incl. capture)",
        restore,
        restore_cpu,
        restore_procs,
        "200 ms",
    );
}
