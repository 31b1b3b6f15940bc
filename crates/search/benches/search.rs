//! The search benchmark of issue 31 (figures in docs/PERFORMANCE.md).
//!
//! `cargo bench -p arbor-search --bench search -- DIR` writes (once) about 1 GB of sessions
//! into DIR — ten 100 MB sessions and 1,000 small ones, text drawn from a 20,000-word
//! vocabulary with a Zipf-like spread, tool results of 1–40 KB, branches and compactions —
//! then measures: the full index build, the index size against the data, query latency
//! (p50, p99 over 200 two-word queries, 20 hits each) and the re-index after appending one
//! turn to a 100 MB session. `ARBOR_BENCH_SCALE=0.1` makes everything ten times smaller.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arbor_search::{Query, SearchIndex};

/// A small deterministic generator (xorshift), so every run writes the same files.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Words {
    list: Vec<String>,
}

impl Words {
    fn new(rng: &mut Rng) -> Self {
        let syllables = [
            "ka", "lo", "mi", "ra", "te", "su", "po", "ne", "vi", "da", "shu", "gor", "ben", "tal",
            "rix", "mon", "qua", "zel", "fin", "dro", "pel", "cam", "hu", "wes",
        ];
        let mut list: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        while list.len() < 20_000 {
            let n = 1 + rng.below(3) as usize;
            let w: String = (0..n)
                .map(|_| syllables[rng.below(syllables.len() as u64) as usize])
                .collect::<String>()
                + ["", "s", "er", "ing", "_id", "2"][rng.below(6) as usize];
            if seen.insert(w.clone()) {
                list.push(w);
            }
        }
        Self { list }
    }
    /// A word with a Zipf-like spread: low ranks far more often.
    fn pick(&self, rng: &mut Rng) -> &str {
        let r = rng.below(1_000_000) as f64 / 1_000_000.0;
        let i = ((self.list.len() as f64).powf(r) as usize).saturating_sub(1);
        &self.list[i.min(self.list.len() - 1)]
    }
    fn text(&self, rng: &mut Rng, n: usize) -> String {
        let mut s = String::with_capacity(n * 7);
        for k in 0..n {
            if k > 0 {
                s.push(if rng.below(12) == 0 { '\n' } else { ' ' });
            }
            s.push_str(self.pick(rng));
        }
        s
    }
}

struct Writer<'a> {
    out: std::io::BufWriter<std::fs::File>,
    n: u64,
    parent: Option<String>,
    ids: Vec<String>,
    size: u64,
    words: &'a Words,
}

impl Writer<'_> {
    fn entry(&mut self, body: &str) {
        self.n += 1;
        let id = format!("{:08x}", self.n);
        let parent = match &self.parent {
            Some(p) => format!("\"{p}\""),
            None => "null".into(),
        };
        let secs = self.n * 7;
        let line = format!(
            "{{\"type\":{body},\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-0{}-{:02}T{:02}:{:02}:{:02}.000Z\"}}\n",
            1 + (secs / 2_000_000) % 9,
            1 + (secs / 86_400) % 28,
            (secs / 3600) % 24,
            (secs / 60) % 60,
            secs % 60
        );
        self.out.write_all(line.as_bytes()).unwrap();
        self.size += line.len() as u64;
        self.ids.push(id.clone());
        self.parent = Some(id);
    }

    fn turn(&mut self, rng: &mut Rng) {
        let j = |s: String| serde_json::to_string(&s).unwrap();
        let w = self.words;
        let n = 5 + rng.below(60) as usize;
        self.entry(&format!(
            "\"message\",\"message\":{{\"role\":\"user\",\"content\":{},\"timestamp\":1}}",
            j(w.text(rng, n))
        ));
        for _ in 0..1 + rng.below(4) {
            let name = ["read", "bash", "edit", "grep"][rng.below(4) as usize];
            let path = format!("src/{}/{}.rs", w.pick(rng), w.pick(rng));
            let n = 5 + rng.below(50) as usize;
            self.entry(&format!(
                "\"message\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":{}}},{{\"type\":\"toolCall\",\"id\":\"call_{}\",\"name\":\"{name}\",\"arguments\":{{\"path\":{}}}}}],\"api\":\"anthropic-messages\",\"provider\":\"anthropic\",\"model\":\"claude-sonnet-4-5\",\"usage\":{{\"input\":100,\"output\":50,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":150,\"cost\":{{\"input\":0.0,\"output\":0.0,\"cacheRead\":0.0,\"cacheWrite\":0.0,\"total\":0.0}}}},\"stopReason\":\"toolUse\",\"timestamp\":1}}",
                j(w.text(rng, n)),
                self.n,
                j(path)
            ));
            let words = 150 + rng.below(5_500) as usize;
            self.entry(&format!(
                "\"message\",\"message\":{{\"role\":\"toolResult\",\"toolCallId\":\"call_{}\",\"toolName\":\"{name}\",\"content\":[{{\"type\":\"text\",\"text\":{}}}],\"isError\":false,\"timestamp\":1}}",
                self.n,
                j(w.text(rng, words))
            ));
        }
        if rng.below(50) == 0 && self.ids.len() > 40 {
            let back = self.ids[self.ids.len() - 2 - rng.below(30) as usize].clone();
            self.entry(&format!("\"leaf\",\"targetId\":\"{back}\""));
            self.parent = Some(back);
        }
        if rng.below(60) == 0 {
            self.entry(&format!(
                "\"compaction\",\"summary\":{},\"firstKeptEntryId\":\"{}\",\"tokensBefore\":1000",
                j(w.text(rng, 300)),
                self.ids[self.ids.len() / 2]
            ));
        }
    }
}

fn write_session(path: &Path, bytes: u64, seed: u64, words: &Words) -> u64 {
    let mut rng = Rng(seed | 1);
    let file = std::fs::File::create(path).unwrap();
    let mut w = Writer {
        out: std::io::BufWriter::new(file),
        n: 0,
        parent: None,
        ids: Vec::new(),
        size: 0,
        words,
    };
    let header = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"019b0000-0000-7000-8000-{seed:012x}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/work/project{}\"}}\n",
        seed % 7
    );
    w.out.write_all(header.as_bytes()).unwrap();
    while w.size < bytes {
        w.turn(&mut rng);
    }
    w.out.flush().unwrap();
    w.size + header.len() as u64
}

fn files_of(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

/// CPU time this thread has run (Linux `schedstat`), to tell work from waiting for a core on
/// a loaded machine; zero where unavailable.
fn thread_cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map(Duration::from_nanos)
        .unwrap_or_default()
}

/// CPU time of the whole process (user + system), from `/proc/self/stat` in clock ticks.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // Fields 14 and 15 of the file (utime, stime) are 12 and 13 after the command name.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_default()
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

fn main() {
    let dir = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/arbor-search-bench"));
    let scale: f64 = std::env::var("ARBOR_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = Rng(0x5eed);
    let words = Words::new(&mut rng);
    let big = (100e6 * scale) as u64;
    let small = (50e3 * scale.max(0.1)) as u64;
    if files_of(&dir).is_empty() {
        let t = Instant::now();
        for i in 0..10 {
            write_session(
                &dir.join(format!("big-{i:02}.jsonl")),
                big,
                1000 + i,
                &words,
            );
        }
        for i in 0..1000 {
            write_session(
                &dir.join(format!("small-{i:04}.jsonl")),
                small,
                5000 + i,
                &words,
            );
        }
        eprintln!("generated in {:.1?}", t.elapsed());
    }
    let files = files_of(&dir);
    let data: u64 = files.iter().map(|f| file_size(f)).sum();
    let index_path = dir.join("bench-index").join(arbor_search::INDEX_FILE_NAME);
    let _ = std::fs::remove_dir_all(index_path.parent().unwrap());
    let t = Instant::now();
    let cpu = process_cpu();
    let mut index = SearchIndex::open(&index_path).unwrap();
    let report = index.refresh(&files).unwrap();
    let build = t.elapsed();
    let build_cpu = process_cpu() - cpu;
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let mut index_bytes = 0;
    for suffix in ["", "-wal"] {
        index_bytes += file_size(&PathBuf::from(format!("{}{suffix}", index_path.display())));
    }
    println!(
        "data: {} files, {:.1} MB; build {:.2?} (CPU {:.2?}, load {}); index {:.1} MB = {:.1} % of the data",
        files.len(),
        data as f64 / 1e6,
        build,
        build_cpu,
        load(),
        index_bytes as f64 / 1e6,
        100.0 * index_bytes as f64 / data as f64
    );
    let mut times: Vec<Duration> = Vec::new();
    let mut cpu_times: Vec<Duration> = Vec::new();
    let mut total_hits = 0;
    for _ in 0..200 {
        let text = format!("{} {}", words.pick(&mut rng), words.pick(&mut rng));
        let t = Instant::now();
        let cpu = thread_cpu();
        let hits = index
            .search(&Query {
                text,
                limit: Some(20),
                ..Query::default()
            })
            .unwrap();
        times.push(t.elapsed());
        cpu_times.push(thread_cpu() - cpu);
        total_hits += hits.len();
    }
    times.sort();
    cpu_times.sort();
    println!(
        "query (two words, 20 hits with snippets, 200 queries, {total_hits} hits): p50 {:.2?}, p99 {:.2?}, max {:.2?} (CPU p50 {:.2?}, p99 {:.2?}; load {})",
        times[times.len() / 2],
        times[times.len() * 99 / 100],
        times[times.len() - 1],
        cpu_times[cpu_times.len() / 2],
        cpu_times[cpu_times.len() * 99 / 100],
        load()
    );
    // One more turn on a 100 MB session.
    let target = dir.join("big-00.jsonl");
    let before = file_size(&target);
    let last_id = {
        let text = std::fs::read(&target).unwrap();
        let tail = &text[text.len().saturating_sub(200_000)..text.len() - 1];
        let start = tail.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let v: serde_json::Value = serde_json::from_slice(&tail[start..]).unwrap();
        v["id"].as_str().unwrap().to_owned()
    };
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&target)
        .unwrap();
    let turn = format!(
        "{{\"type\":\"message\",\"id\":\"append{}\",\"parentId\":\"{last_id}\",\"timestamp\":\"2026-09-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":{},\"timestamp\":1}}}}\n",
        before,
        serde_json::to_string(&format!(
            "one more turn about the zanzibar cache {}",
            words.text(&mut rng, 1500)
        ))
        .unwrap()
    );
    f.write_all(turn.as_bytes()).unwrap();
    drop(f);
    let t = Instant::now();
    let cpu = thread_cpu();
    let report = index.refresh(&files).unwrap();
    let append = t.elapsed();
    let append_cpu = thread_cpu() - cpu;
    assert_eq!(report.appended, 1);
    println!(
        "re-index after appending one turn ({} bytes) to a {:.0} MB session: {:.2?} (CPU {:.2?}, load {}; {} files unchanged)",
        turn.len(),
        before as f64 / 1e6,
        append,
        append_cpu,
        load(),
        report.unchanged
    );
    let hits = index
        .search(&Query {
            text: "zanzibar cache".into(),
            ..Query::default()
        })
        .unwrap();
    assert!(!hits.is_empty());
}
