//! Session store benchmarks (no harness; medians of several runs).
//!
//! `cargo bench -p arbor-session --bench store` runs everything. Inputs:
//! - `ARBOR_BENCH_BIG` (default `/tmp/arbor-bench/big.jsonl`): a 100 MB session made by
//!   `shared/tools/gen_big.py` (generated on first use when python3 is available);
//! - `ARBOR_BENCH_DIR` (default `/tmp/arbor-bench`): where the 1,000 listing files go.
//!
//! `cargo bench -p arbor-session --bench store -- open-once FILE` opens FILE and builds the
//! current path once, for whole-process timing next to `node shared/tools/pi-open.mjs FILE`
//! (e.g. with `/usr/bin/time -v`).
//!
//! `cargo bench -p arbor-session --bench store -- rows-once FILE` reads every row summary of
//! FILE, the storage half of `arbor session tree FILE` (time the whole command through the
//! CLI); `fork-once FILE OUT_DIR` runs what `arbor session fork FILE --entry LEAF --at` runs.
//!
//! `cargo bench -p arbor-session --bench store -- gen-wide FILE [ENTRIES]` writes a wide, deep
//! session (see [`wide`]): by default 1,000,000 entries, a 200,000-deep active path and 8,000
//! side branches, about 390 MB. Never commit the generated file.

use arbor_session::jsonl::{JsonlRepository, SyncPolicy};
use arbor_session::{
    CreateOptions, EntryDraft, EntryKind, MemoryRepository, SessionEntry, SessionRepository,
    SessionStorage,
};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[path = "store/wide.rs"]
mod wide;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn small_entry(i: usize) -> EntryDraft {
    let kind = EntryKind::from_fields(
        "custom",
        json!({"customType": "bench", "data": {"i": i}})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
    .unwrap_or_else(|e| panic!("custom entry: {e}"));
    EntryDraft::new(kind)
}

fn shared_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ARBOR_SHARED_DIR") {
        return PathBuf::from(dir);
    }
    let mut dir: &Path = Path::new(env!("CARGO_MANIFEST_DIR"));
    loop {
        if dir.join("shared/fixtures").is_dir() {
            return dir.join("shared");
        }
        dir = dir
            .parent()
            .unwrap_or_else(|| panic!("shared/ not found; set ARBOR_SHARED_DIR"));
    }
}

fn bench_dir() -> PathBuf {
    let d = std::env::var_os("ARBOR_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/arbor-bench"));
    std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
    d
}

fn gen_big(path: &Path, mb: u32) -> bool {
    if path.exists() {
        return true;
    }
    let script = shared_dir().join("tools/gen_big.py");
    let status = std::process::Command::new("python3")
        .arg(&script)
        .arg(path)
        .arg(mb.to_string())
        .status();
    matches!(status, Ok(s) if s.success())
}

async fn appends(policy: SyncPolicy, n: usize, turn: usize) -> (Duration, usize) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let repo = JsonlRepository::new(dir.path()).with_sync(policy);
    let s = repo
        .create(CreateOptions::new("/bench"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let start = Instant::now();
    let mut turns = 0;
    for i in 0..n {
        s.append(small_entry(i))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        if (i + 1) % turn == 0 {
            s.save_point().await.unwrap_or_else(|e| panic!("{e}"));
            turns += 1;
        }
    }
    (start.elapsed(), turns)
}

async fn memory_appends(n: usize) -> Duration {
    let repo = MemoryRepository::new();
    let s = repo
        .create(CreateOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let start = Instant::now();
    for i in 0..n {
        s.append(small_entry(i))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    start.elapsed()
}

/// Open (load + index + leaf recovery), then read what context building needs: the current
/// path to the compaction boundary and the settings of the full ancestry.
async fn open_and_path(path: &Path) -> (Duration, Duration, usize, u64) {
    let repo = JsonlRepository::flat(path.parent().unwrap_or(Path::new(".")));
    let start = Instant::now();
    let s = repo
        .open_read_only(path.to_str().unwrap_or_default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let opened = start.elapsed();
    let branch = s
        .path_to_root_or_compaction(None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let settings = s
        .derived_settings(None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(settings.model.is_some(), "gen_big sessions name a model");
    let count = s.entry_count().await.unwrap_or(0);
    (opened, start.elapsed(), branch.len(), count)
}

/// 1,000 session files of ~2 MB each (copies of one generated session with distinct ids).
fn listing_dir() -> PathBuf {
    let dir = bench_dir().join("list1000");
    let cwd_dir = dir.join("--bench-project--");
    let count = std::fs::read_dir(&cwd_dir)
        .map(std::iter::Iterator::count)
        .unwrap_or(0);
    if count == 1000 {
        return dir;
    }
    let template = bench_dir().join("two_mb.jsonl");
    assert!(
        gen_big(&template, 2),
        "python3 gen_big.py is needed for the listing bench"
    );
    let text = std::fs::read_to_string(&template).unwrap_or_else(|e| panic!("{e}"));
    let (_, body) = text.split_once('\n').unwrap_or(("", ""));
    std::fs::create_dir_all(&cwd_dir).unwrap_or_else(|e| panic!("{e}"));
    for i in 0..1000 {
        let id = format!("019a0000-0000-7000-8000-{i:012}");
        let ts = format!("2026-06-20T15:{:02}:{:02}.000Z", i / 60 % 60, i % 60);
        let header = json!({"type": "session", "version": 3, "id": id, "timestamp": ts, "cwd": "/bench/project"});
        let name = format!("{}_{id}.jsonl", ts.replace([':', '.'], "-"));
        std::fs::write(cwd_dir.join(name), format!("{header}\n{body}"))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    dir
}

async fn run_all() {
    let only = std::env::var("ARBOR_BENCH_ONLY").unwrap_or_default();
    let want = |section: &str| only.is_empty() || only.split(',').any(|s| s == section);
    if want("append") {
        bench_appends().await;
    }
    if want("open") {
        bench_open().await;
    }
    if want("list") {
        bench_list().await;
    }
}

async fn bench_appends() {
    let n = 200_000;
    println!("## append (small custom entries)");
    let policies = [
        (SyncPolicy::Never, usize::MAX),
        (SyncPolicy::SavePoint, 10),
        (SyncPolicy::Always, usize::MAX),
    ];
    let only_policy = std::env::var("ARBOR_BENCH_POLICY").ok();
    for (policy, turn) in policies {
        if only_policy.as_deref().is_some_and(|p| p != policy.as_str()) {
            continue;
        }
        // fsync-bound runs are shorter: their rate is the disk's, not ours.
        let count = match policy {
            SyncPolicy::Never => n,
            SyncPolicy::SavePoint => 20_000,
            SyncPolicy::Always => 2_000,
        };
        let mut times = Vec::new();
        let mut turns = 0;
        for _ in 0..3 {
            let (t, k) = appends(policy, count, turn).await;
            times.push(t);
            turns = k;
        }
        let t = median(times);
        let rate = count as f64 / t.as_secs_f64();
        let per_turn = if turns > 0 {
            format!(
                ", {turns} save points = {:.1} µs per turn of 10",
                t.as_secs_f64() * 1e6 / turns as f64
            )
        } else {
            String::new()
        };
        println!(
            "jsonl sync={:<10} {count:>7} entries in {:>8.1} ms = {:>9.0} entries/s{per_turn}",
            policy.as_str(),
            t.as_secs_f64() * 1e3,
            rate
        );
    }
    let mut times = Vec::new();
    for _ in 0..3 {
        times.push(memory_appends(n).await);
    }
    let t = median(times);
    println!(
        "memory                {n:>7} entries in {:>8.1} ms = {:>9.0} entries/s",
        t.as_secs_f64() * 1e3,
        n as f64 / t.as_secs_f64()
    );
}

async fn bench_open() {
    println!("\n## open of a 100 MB session (gen_big.py)");
    let big = std::env::var_os("ARBOR_BENCH_BIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| bench_dir().join("big.jsonl"));
    if gen_big(&big, 100) {
        let size = std::fs::metadata(&big).map(|m| m.len()).unwrap_or(0);
        let (mut opens, mut totals) = (Vec::new(), Vec::new());
        let (mut branch, mut count) = (0, 0);
        for _ in 0..5 {
            let (o, t, b, c) = open_and_path(&big).await;
            opens.push(o);
            totals.push(t);
            (branch, count) = (b, c);
        }
        println!(
            "{} ({:.1} MB, {count} entries): open {:.1} ms, open + current path ({branch} entries) + derived settings {:.1} ms (median of 5)",
            big.display(),
            size as f64 / 1e6,
            median(opens).as_secs_f64() * 1e3,
            median(totals).as_secs_f64() * 1e3
        );
    } else {
        println!(
            "skipped: {} missing and python3 gen_big.py failed",
            big.display()
        );
    }
}

async fn bench_list() {
    println!("\n## list 1,000 session files of ~2 MB");
    let dir = listing_dir();
    let repo = JsonlRepository::new(&dir);
    let mut times = Vec::new();
    let mut found = 0;
    for _ in 0..5 {
        let start = Instant::now();
        let list = repo.list().await.unwrap_or_else(|e| panic!("{e}"));
        times.push(start.elapsed());
        found = list.sessions.len();
    }
    println!(
        "{found} sessions listed in {:.1} ms (median of 5, warm page cache)",
        median(times).as_secs_f64() * 1e3
    );
}

/// What `arbor session context FILE --json` does (the CLI adds argument parsing and holds the
/// first MiB of output, DECISIONS §25.102): open, then the context streamed entry by entry
/// (DECISIONS §25.100) to OUT, or discarded.
async fn context_once(path: &Path, out: Option<&str>) {
    let repo = JsonlRepository::flat(path.parent().unwrap_or(Path::new(".")));
    let start = Instant::now();
    let s = repo
        .open_read_only(path.to_str().unwrap_or_default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let opened = start.elapsed();
    let sink: Box<dyn std::io::Write + Send> = match out {
        Some(p) => Box::new(std::fs::File::create(p).unwrap_or_else(|e| panic!("{p}: {e}"))),
        None => Box::new(std::io::sink()),
    };
    arbor_session::context::write_context_json(
        &s,
        None,
        std::io::BufWriter::with_capacity(1 << 16, sink),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let written = start.elapsed();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "open {:.1} ms, context streamed {:.1} ms; peak RSS {} kB",
        ms(opened),
        ms(written),
        peak_rss_kb()
    );
}

/// The pipeline `context-once` ran before the streamed context (kept for comparisons): open,
/// the whole window parsed, settings, projection, then the JSON written message by message.
async fn context_whole(path: &Path, out: Option<&str>) {
    use arbor_session::context::projection::build_session_context_from_window;
    use arbor_session::context::{ContextOptions, DerivedState};
    let repo = JsonlRepository::flat(path.parent().unwrap_or(Path::new(".")));
    let start = Instant::now();
    let s = repo
        .open_read_only(path.to_str().unwrap_or_default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let opened = start.elapsed();
    let window = s
        .path_to_root_or_compaction(None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let read = start.elapsed();
    let settings = s
        .derived_settings(None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let state = DerivedState::from_settings(settings);
    let n = window.len();
    let ctx = build_session_context_from_window(window, state, &ContextOptions::default());
    let projected = start.elapsed();
    let leaf = s.leaf_id().await.unwrap_or_else(|e| panic!("{e}"));
    let sink: Box<dyn std::io::Write> = match out {
        Some(p) => Box::new(std::fs::File::create(p).unwrap_or_else(|e| panic!("{p}: {e}"))),
        None => Box::new(std::io::sink()),
    };
    arbor_session::context::write_expected_json(
        std::io::BufWriter::with_capacity(1 << 16, sink),
        &ctx,
        leaf.as_deref(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let written = start.elapsed();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "open {:.1} ms, window read {:.1} ms ({n} entries), projected {:.1} ms ({} messages), \
         JSON written {:.1} ms; peak RSS {} kB",
        ms(opened),
        ms(read),
        ms(projected),
        ctx.messages.len(),
        ms(written),
        peak_rss_kb()
    );
}

/// The row half of `arbor session tree FILE` (the tree layout and text live in the app and
/// are timed through its CLI): open read-only and read every entry's row summary with the
/// command's caps (previews of 80 characters, no tool arguments).
async fn rows_once(path: &Path) {
    use arbor_session::rows::{visit_row_summaries, RowCaps};
    let repo = JsonlRepository::flat(path.parent().unwrap_or(Path::new(".")));
    let start = Instant::now();
    let s = repo
        .open_read_only(path.to_str().unwrap_or_default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let opened = start.elapsed();
    let caps = RowCaps {
        text: 80,
        tool_args: false,
    };
    let mut rows = 0usize;
    let mut bytes = 0usize;
    visit_row_summaries(&s, caps, &|row| row, &mut |row| {
        rows += 1;
        bytes += row.id.len();
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let read = start.elapsed();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "open {:.1} ms, rows read {:.1} ms ({rows} rows, {bytes} id bytes); peak RSS {} kB",
        ms(opened),
        ms(read),
        peak_rss_kb()
    );
}

/// `VmHWM` of this process (Linux), 0 elsewhere.
fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    if args.first().map(String::as_str) == Some("gen-wide") {
        let file = PathBuf::from(args.get(1).cloned().unwrap_or_else(|| {
            panic!("usage: gen-wide FILE [ENTRIES]");
        }));
        let entries = args
            .get(2)
            .map(|n| n.parse().unwrap_or_else(|e| panic!("ENTRIES: {e}")))
            .unwrap_or(1_000_000);
        let made = wide::generate(&file, &wide::Shape::scaled(entries))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        println!(
            "{}: {} entries ({} on the active path, {} side branches), {:.1} MB",
            file.display(),
            made.entries,
            made.active_depth,
            made.branches,
            made.bytes as f64 / 1e6
        );
        return;
    }
    if args.first().map(String::as_str) == Some("fork-once") {
        // fork-once FILE OUT_DIR: `arbor session fork FILE --entry LEAF --at` into OUT_DIR.
        let file = PathBuf::from(args.get(1).cloned().unwrap_or_default());
        let out = PathBuf::from(args.get(2).cloned().unwrap_or_else(|| {
            panic!("usage: fork-once FILE OUT_DIR");
        }));
        rt.block_on(async {
            let src_repo = JsonlRepository::flat(file.parent().unwrap_or(Path::new(".")));
            let src = src_repo
                .open_read_only(file.to_str().unwrap_or_default())
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let leaf = src
                .leaf_id()
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .unwrap_or_else(|| panic!("the session has no leaf"));
            drop(src);
            std::fs::create_dir_all(&out).unwrap_or_else(|e| panic!("{e}"));
            let repo = JsonlRepository::flat(&out);
            let start = Instant::now();
            let forked = repo
                .fork(
                    file.to_str().unwrap_or_default(),
                    arbor_session::ForkOptions::at(leaf),
                )
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let took = start.elapsed();
            println!(
                "fork --entry (leaf, --at) {:.1} ms; {} entries copied; peak RSS {} kB",
                took.as_secs_f64() * 1e3,
                forked.entry_count().await.unwrap_or(0),
                peak_rss_kb()
            );
        });
        return;
    }
    if args.first().map(String::as_str) == Some("rows-once") {
        let file = PathBuf::from(args.get(1).cloned().unwrap_or_default());
        rt.block_on(rows_once(&file));
        return;
    }
    if args.first().map(String::as_str) == Some("context-once") {
        let file = PathBuf::from(args.get(1).cloned().unwrap_or_default());
        let out = args.get(2).cloned();
        rt.block_on(context_once(&file, out.as_deref()));
        return;
    }
    if args.first().map(String::as_str) == Some("context-whole") {
        let file = PathBuf::from(args.get(1).cloned().unwrap_or_default());
        let out = args.get(2).cloned();
        rt.block_on(context_whole(&file, out.as_deref()));
        return;
    }
    if args.first().map(String::as_str) == Some("parse-all") {
        // parse-all FILE [value|direct]: every entry line through `SessionEntry::from_json`
        // (or the `Value` path alone, or the direct reader alone), for instructions per entry.
        let file = PathBuf::from(args.get(1).cloned().unwrap_or_default());
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}"));
        let how = args.get(2).cloned().unwrap_or_default();
        let start = Instant::now();
        let mut parsed = 0usize;
        for line in text.lines().skip(1) {
            let ok = match how.as_str() {
                "value" => SessionEntry::from_json_via_value(line).is_ok(),
                "direct" => SessionEntry::from_json_direct(line).is_some(),
                _ => SessionEntry::from_json(line).is_ok(),
            };
            parsed += usize::from(ok);
        }
        println!(
            "parsed {parsed} entries ({}) in {:.1} ms",
            if how.is_empty() { "from_json" } else { &how },
            start.elapsed().as_secs_f64() * 1e3
        );
        return;
    }
    if args.first().map(String::as_str) == Some("open-only") {
        let file = PathBuf::from(args.get(1).cloned().unwrap_or_default());
        let repo = JsonlRepository::flat(file.parent().unwrap_or(Path::new(".")));
        let start = Instant::now();
        let s = rt
            .block_on(repo.open_read_only(file.to_str().unwrap_or_default()))
            .unwrap_or_else(|e| panic!("{e}"));
        let opened = start.elapsed();
        let count = rt.block_on(s.entry_count()).unwrap_or(0);
        println!(
            "open {:.1} ms; {count} entries; peak RSS {} kB",
            opened.as_secs_f64() * 1e3,
            peak_rss_kb()
        );
        return;
    }
    if args.first().map(String::as_str) == Some("open-once") {
        let file = PathBuf::from(args.get(1).cloned().unwrap_or_default());
        let (o, t, b, c) = rt.block_on(open_and_path(&file));
        println!(
            "open {:.1} ms, with path {:.1} ms; {b} path entries, {c} entries; peak RSS {} kB",
            o.as_secs_f64() * 1e3,
            t.as_secs_f64() * 1e3,
            peak_rss_kb()
        );
        return;
    }
    rt.block_on(run_all());
}
