//! SQLite backend benchmarks (`cargo bench -p arbor-session-sqlite --bench append`).
//!
//! - append rate of small entries, one transaction per append, awaited one by one (nothing is
//!   batched across appends), under `Synchronous::Normal` and `Synchronous::Full`;
//! - the same from 8 concurrent tasks on one session;
//! - on a large session: open (repository + session), `leaf_id`, `path_to_root_or_compaction`,
//!   `ancestry`, `stats`.
//!
//! Every number is the median of several runs. Set `BENCH_SCALE=0.1` for a quick smoke run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor_ai::types::{
    AssistantMessage, Content, ContentBlock, Message, StopReason, TextContent, UserMessage,
};
use arbor_session::{
    CompactionEntry, CreateOptions, CustomEntry, EntryDraft, EntryKind, ForkOptions,
    SessionRepository, SessionStorage, ThinkingLevelChangeEntry,
};
use arbor_session_sqlite::{SqliteOptions, SqliteRepository, Synchronous};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn scale(n: usize) -> usize {
    let f: f64 = std::env::var("BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    ((n as f64 * f) as usize).max(1)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn custom(i: usize) -> EntryDraft {
    EntryDraft::new(EntryKind::Custom(CustomEntry {
        custom_type: "bench".into(),
        data: Some(serde_json::json!({ "i": i })),
        extra: Default::default(),
    }))
}

fn user(text: String) -> EntryDraft {
    EntryDraft::new(EntryKind::message(Message::User(UserMessage {
        content: Content::text(text),
        timestamp: 1.into(),
        extra: Default::default(),
    })))
}

fn reply(text: String) -> EntryDraft {
    EntryDraft::new(EntryKind::message(Message::Assistant(AssistantMessage {
        content: vec![ContentBlock::Text(TextContent {
            text,
            text_signature: None,
            extra: Default::default(),
        })],
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        stop_reason: StopReason::Stop,
        timestamp: 2.into(),
        ..Default::default()
    })))
}

fn opts() -> CreateOptions {
    CreateOptions::new("/bench")
}

/// Default options, with `BENCH_PAGE_SIZE` / `BENCH_CKPT` overriding page size and WAL
/// auto-checkpoint (pages) for tuning runs.
fn bench_options() -> SqliteOptions {
    let d = SqliteOptions::default();
    let env = |k: &str, v: u32| {
        std::env::var(k)
            .ok()
            .and_then(|x| x.parse().ok())
            .unwrap_or(v)
    };
    SqliteOptions {
        page_size: env("BENCH_PAGE_SIZE", d.page_size),
        wal_autocheckpoint: env("BENCH_CKPT", d.wal_autocheckpoint),
        ..d
    }
}

/// Process CPU time (user + system, all threads) in seconds, from `/proc/self/stat`; `None`
/// where that file does not exist. Load-independent, unlike wall-clock rates on a shared box.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // Fields 14 and 15 of the file (utime, stime) are 11 and 12 after the command name.
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// Returns (median entries/s, median CPU microseconds per append).
async fn sequential_rate(sync: Synchronous, n: usize, runs: usize) -> Result<(f64, f64), BoxError> {
    let mut rates = Vec::new();
    let mut cpu = Vec::new();
    for _ in 0..runs {
        let dir = tempfile::tempdir()?;
        let env = |k: &str, d: u32| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(d)
        };
        let d = SqliteOptions::default();
        let options = SqliteOptions {
            synchronous: sync,
            page_size: env("BENCH_PAGE_SIZE", d.page_size),
            wal_autocheckpoint: env("BENCH_CKPT", d.wal_autocheckpoint),
            ..d
        };
        let repo = SqliteRepository::open_with(dir.path().join("s.db"), options).await?;
        let s = repo.create(opts()).await?;
        let c = cpu_seconds();
        let t = Instant::now();
        for i in 0..n {
            s.append(custom(i)).await?;
        }
        rates.push(n as f64 / t.elapsed().as_secs_f64());
        if let (Some(c0), Some(c1)) = (c, cpu_seconds()) {
            cpu.push((c1 - c0) / n as f64 * 1e6);
        }
        assert_eq!(s.entry_count().await?, n as u64);
    }
    let cpu = if cpu.is_empty() {
        f64::NAN
    } else {
        median(cpu)
    };
    Ok((median(rates), cpu))
}

async fn concurrent_rate(n: usize, tasks: usize, runs: usize) -> Result<f64, BoxError> {
    let mut rates = Vec::new();
    for _ in 0..runs {
        let dir = tempfile::tempdir()?;
        let repo = SqliteRepository::open_with(dir.path().join("s.db"), bench_options()).await?;
        let s = Arc::new(repo.create(opts()).await?);
        let t = Instant::now();
        let mut handles = Vec::new();
        for k in 0..tasks {
            let s = Arc::clone(&s);
            handles.push(tokio::spawn(async move {
                for i in 0..n / tasks {
                    s.append(custom(k * n + i)).await?;
                }
                Ok::<_, arbor_session::SessionError>(())
            }));
        }
        for h in handles {
            h.await??;
        }
        rates.push((n / tasks * tasks) as f64 / t.elapsed().as_secs_f64());
        // No accidental siblings: one chain from root to leaf.
        assert_eq!(s.ancestry(None).await?.len() as u64, s.entry_count().await?);
    }
    Ok(median(rates))
}

/// A session shaped like a long coding session: alternating user and assistant messages of
/// ~400 characters, one thinking-level change at the start, a compaction every `compact_every`
/// entries, and a branch (leaf moved back) every 500 entries.
async fn build_large(
    repo: &SqliteRepository,
    n: usize,
    compact_every: usize,
) -> Result<String, BoxError> {
    let s = repo.create(opts()).await?;
    let body = "x".repeat(400);
    let mut ids: Vec<String> = Vec::with_capacity(n);
    for i in 0..n {
        let e = if i > 0 && i % compact_every == 0 {
            // `i - compact_every / 10` is a multiple of 500 (a `leaf` entry, never on a
            // path); the entry after it is on the path.
            let kept = ids[i - compact_every / 10 + 1].clone();
            s.append(EntryDraft::new(EntryKind::Compaction(Box::new(
                CompactionEntry {
                    summary: format!("summary {i}"),
                    first_kept_entry_id: Some(kept),
                    tokens_before: 1000,
                    ..Default::default()
                },
            ))))
            .await?
        } else if i > 0 && i % 500 == 0 {
            let back: &String = &ids[i - 3];
            s.set_leaf(Some(back)).await?
        } else if i == 1 {
            s.append(EntryDraft::new(EntryKind::ThinkingLevelChange(
                ThinkingLevelChangeEntry {
                    thinking_level: "high".into(),
                    extra: Default::default(),
                },
            )))
            .await?
        } else if i % 2 == 1 {
            s.append(reply(format!("{i} {body}"))).await?
        } else {
            s.append(user(format!("{i} {body}"))).await?
        };
        ids.push(e.id);
    }
    Ok(s.id().to_owned())
}

async fn time_it<F, Fut, T>(runs: usize, mut f: F) -> Result<(Duration, T), BoxError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, BoxError>>,
{
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        last = Some(f().await?);
        times.push(t.elapsed().as_secs_f64());
    }
    let out = last.ok_or("no runs")?;
    Ok((Duration::from_secs_f64(median(times)), out))
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let n = scale(20_000);
    // BENCH_ONLY=append: only the sequential append rate; BENCH_ONLY=large: only the large session.
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    println!("# arbor-session-sqlite benchmarks (median of runs)");
    if only != "large" {
        let (normal, cpu) = sequential_rate(Synchronous::Normal, n, 5).await?;
        println!(
        "append, small custom entries, synchronous=NORMAL: {normal:>9.0} entries/s (n={n}), {cpu:.1} us CPU/append (= {:.0}/s on one free core)",
        1e6 / cpu
    );
        if only == "append" {
            return Ok(());
        }
        let (full, _) = sequential_rate(Synchronous::Full, scale(1_000), 3).await?;
        println!("append, small custom entries, synchronous=FULL:   {full:>9.0} entries/s");
        let conc = concurrent_rate(n, 8, 3).await?;
        println!("append, 8 concurrent tasks, one session, NORMAL:  {conc:>9.0} entries/s");
    }

    let large = scale(100_000);
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("large.db");
    let build = Instant::now();
    let id = {
        let repo = SqliteRepository::open_with(&path, bench_options()).await?;
        build_large(&repo, large, 10_000).await?
    };
    let db_mb = std::fs::metadata(&path)?.len() as f64 / 1e6;
    println!(
        "large session: {large} entries (~{db_mb:.0} MB db + WAL) built in {:.1} s",
        build.elapsed().as_secs_f64()
    );
    let (open, _) = time_it(7, || {
        let path = path.clone();
        let id = id.clone();
        async move {
            let repo = SqliteRepository::open(&path).await?;
            let s = repo.open(&id).await?;
            Ok(s.leaf_id().await?)
        }
    })
    .await?;
    println!(
        "open (repository + session + leaf):        {:>9.3} ms",
        ms(open)
    );
    let repo = SqliteRepository::open(&path).await?;
    let s = repo.open(&id).await?;
    let (leaf, _) = time_it(101, || async { Ok(s.leaf_id().await?) }).await?;
    println!(
        "leaf_id:                                   {:>9.3} ms",
        ms(leaf)
    );
    let (stats, _) = time_it(101, || async { Ok(s.stats().await?) }).await?;
    println!(
        "stats:                                     {:>9.3} ms",
        ms(stats)
    );
    let (path_t, p) = time_it(21, || async {
        Ok(s.path_to_root_or_compaction(None).await?)
    })
    .await?;
    println!(
        "path_to_root_or_compaction ({} entries):  {:>9.3} ms",
        p.len(),
        ms(path_t)
    );
    let (anc, a) = time_it(5, || async { Ok(s.ancestry(None).await?) }).await?;
    println!(
        "ancestry ({} entries):                   {:>9.3} ms",
        a.len(),
        ms(anc)
    );
    let (derived, _) = time_it(21, || async { Ok(s.derived_settings(None).await?) }).await?;
    println!(
        "derived_settings (walks {} entries):     {:>9.3} ms",
        a.len(),
        ms(derived)
    );
    let (fork_all, _) = time_it(3, || async {
        let f = repo.fork(&id, ForkOptions::default()).await?;
        Ok(f.entry_count().await?)
    })
    .await?;
    println!(
        "fork, whole tree ({large} entries):       {:>9.3} ms",
        ms(fork_all)
    );
    let leaf = s.leaf_id().await?.ok_or("no leaf")?;
    let (fork_at, _) = time_it(3, || async {
        let f = repo.fork(&id, ForkOptions::at(leaf.clone())).await?;
        Ok(f.entry_count().await?)
    })
    .await?;
    println!(
        "fork, at the leaf ({} entries):        {:>9.3} ms",
        a.len(),
        ms(fork_at)
    );
    let (log, l) = time_it(5, || async { Ok(s.entries(None, None).await?) }).await?;
    println!(
        "entries (whole log, {} entries):          {:>9.3} ms",
        l.entries.len(),
        ms(log)
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
