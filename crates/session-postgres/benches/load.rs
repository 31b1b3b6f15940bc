//! PostgreSQL load benchmark (`cargo bench -p arbor-session-postgres --bench load`), against
//! the server in `ARBOR_TEST_POSTGRES_URL` (a scratch schema, dropped afterwards):
//!
//! 1. 64 sessions appending concurrently from 4 processes (16 writers each, every append one
//!    awaited statement): total appends/s, p50/p99 latency, then a check that no entry was lost
//!    or duplicated and that every session is one chain (no accidental siblings);
//! 2. open + build the context of a 100,000-entry session (imported in bulk);
//! 3. list 10,000 sessions (all, one page of 50, one cwd).
//!
//! `BENCH_APPENDS` sets the appends per session (default 200); `BENCH_SCALE=0.1` shrinks
//! phases 2 and 3 for a smoke run.
//!
//! Phase 1 is closed-loop by default: every session sends its next append as soon as the last
//! one returned, so it measures latency at saturation. `BENCH_RATE=5000` makes it open-loop
//! (DECISIONS §24.51): appends are scheduled at that total rate over the 64 sessions (Poisson
//! arrivals per session, or evenly spaced with `BENCH_ARRIVALS=even`), each session still sends
//! one at a time, and latency is measured from the scheduled time, so an append that had to
//! wait for the previous one counts that wait (no coordinated omission). When the server runs
//! on this machine the phase also reports its CPU per append, read from /proc.
//! `BENCH_SETUP_SQL` runs once on the migrated scratch schema before the sessions are created
//! (A/B rounds of a schema change with one binary).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use arbor_ai::types::{Content, Message, UserMessage};
use arbor_session::context::projection::build_session_context_from_window;
use arbor_session::context::{ContextOptions, DerivedState};
use arbor_session::{CreateOptions, EntryDraft, EntryKind, SessionRepository, SessionStorage};
use arbor_session_postgres::scratch::ScratchSchema;
use arbor_session_postgres::{ListQuery, PostgresOptions, PostgresRepository, Synchronous};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const PROCESSES: usize = 4;
const SESSIONS: usize = 64;

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn scale(n: usize) -> usize {
    let f: f64 = std::env::var("BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    ((n as f64 * f) as usize).max(1)
}

fn user(text: String) -> EntryDraft {
    EntryDraft::new(EntryKind::message(Message::User(UserMessage {
        content: Content::text(text),
        timestamp: 1.into(),
        extra: Default::default(),
    })))
}

fn now_us() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0)
}

/// How phase 1 sends appends.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pace {
    /// Back to back: the next append as soon as the previous returned (saturation).
    Closed,
    /// Scheduled at `per_session` appends/s per session, arrivals as given.
    Open {
        per_session: f64,
        arrivals: Arrivals,
    },
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Arrivals {
    /// Exponential gaps (independent arrivals at the given mean rate).
    Poisson,
    /// Equal gaps, the sessions' phases spread evenly over one gap.
    Even,
}

/// `BENCH_RATE` (total appends/s) and `BENCH_ARRIVALS`; a bad value is an error, not a default.
fn pace() -> Result<Pace, BoxError> {
    let rate = match std::env::var("BENCH_RATE") {
        Ok(r) if !r.trim().is_empty() => r,
        _ => return Ok(Pace::Closed),
    };
    let total: f64 = rate
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v > 0.0)
        .ok_or_else(|| {
            format!("BENCH_RATE must be a positive number of appends per second, got {rate:?}")
        })?;
    let arrivals = match std::env::var("BENCH_ARRIVALS").as_deref() {
        Err(_) | Ok("") | Ok("poisson") => Arrivals::Poisson,
        Ok("even") => Arrivals::Even,
        Ok(other) => {
            return Err(format!("BENCH_ARRIVALS must be poisson or even, got {other:?}").into())
        }
    };
    Ok(Pace::Open {
        per_session: total / SESSIONS as f64,
        arrivals,
    })
}

impl Pace {
    fn to_spec(self) -> String {
        match self {
            Pace::Closed => "closed".to_owned(),
            Pace::Open {
                per_session,
                arrivals: Arrivals::Poisson,
            } => format!("poisson {per_session}"),
            Pace::Open {
                per_session,
                arrivals: Arrivals::Even,
            } => format!("even {per_session}"),
        }
    }

    fn from_spec(spec: &str) -> Result<Pace, BoxError> {
        let (kind, rate) = match spec.split_once(' ') {
            Some((k, r)) => (k, r.parse::<f64>()?),
            None if spec == "closed" => return Ok(Pace::Closed),
            None => return Err(format!("spec: pace {spec:?}").into()),
        };
        let arrivals = match kind {
            "poisson" => Arrivals::Poisson,
            "even" => Arrivals::Even,
            _ => return Err(format!("spec: pace {spec:?}").into()),
        };
        Ok(Pace::Open {
            per_session: rate,
            arrivals,
        })
    }
}

/// xorshift64* (seeded per session, so a run's schedule is reproducible).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Uniform in [0, 1).
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// An exponential gap of mean `mean` seconds.
    fn exp(&mut self, mean: f64) -> Duration {
        Duration::from_secs_f64(-(1.0 - self.next_f64()).ln() * mean)
    }
}

/// CPU time (ticks of 1/100 s, Linux's fixed `USER_HZ`) of a PostgreSQL server on this
/// machine: the postmaster, every live child, and the children it already reaped. `None` when
/// the server is not a local process this bench can see.
fn server_ticks(postmaster: u32) -> Option<u64> {
    let (comm, _, own) = proc_stat(postmaster)?;
    if comm != "postgres" && comm != "postmaster" {
        return None;
    }
    let mut total = own;
    for dir in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = dir.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Some((_, ppid, ticks)) = proc_stat(pid) {
            if ppid == postmaster {
                total += ticks;
            }
        }
    }
    Some(total)
}

/// `(comm, ppid, utime + stime + cutime + cstime)` of `pid` from /proc/<pid>/stat.
fn proc_stat(pid: u32) -> Option<(String, u32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_owned();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let ppid = rest.get(1)?.parse().ok()?;
    let mut ticks = 0;
    for i in 11..=14 {
        ticks += rest.get(i)?.parse::<u64>().ok()?;
    }
    Some((comm, ppid, ticks))
}

/// The CPU ticks of the worker processes this bench has waited for (its reaped children).
fn children_ticks() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest: Vec<&str> = text
        .get(text.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    let mut ticks = 0;
    for i in 13..=14 {
        ticks += rest.get(i)?.parse::<u64>().ok()?;
    }
    Some(ticks)
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1e6
}

fn main() -> Result<(), BoxError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    if let Ok(spec) = std::env::var("ARBOR_PG_BENCH_WORKER") {
        return rt.block_on(worker(spec));
    }
    let Some(url) = std::env::var("ARBOR_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        eprintln!("SKIPPED load bench: ARBOR_TEST_POSTGRES_URL is not set (eval \"$(.ci/postgres.sh start)\")");
        return Ok(());
    };
    let schema = ScratchSchema::new(&url);
    let out = rt.block_on(run(&url, &schema));
    drop(schema);
    out
}

/// `BENCH_SYNC=full`: every append waits for the server's WAL flush (`Synchronous::Full`);
/// default `Normal` (flushed at save points, DECISIONS §24.5).
fn sync_mode() -> Synchronous {
    match std::env::var("BENCH_SYNC").as_deref() {
        Ok("full") => Synchronous::Full,
        _ => Synchronous::Normal,
    }
}

fn options(schema: &str) -> PostgresOptions {
    PostgresOptions {
        schema: schema.to_owned(),
        application_name: schema.to_owned(),
        synchronous: sync_mode(),
        ..Default::default()
    }
}

/// One worker process: opens its sessions, waits for GO on stdin, appends, reports
/// `start_us end_us late` and then every latency and every service time (ns) on stdout.
/// Latency is from the scheduled time (open loop) or the send (closed loop); service time is
/// always from the send; `late` counts appends sent more than 1 ms after their scheduled time.
async fn worker(spec: String) -> Result<(), BoxError> {
    let mut parts = spec.split('\n');
    let url = parts.next().ok_or("spec: url")?.to_owned();
    let schema = parts.next().ok_or("spec: schema")?.to_owned();
    let appends: usize = parts.next().ok_or("spec: appends")?.parse()?;
    let pace = Pace::from_spec(parts.next().ok_or("spec: pace")?)?;
    let first_index: usize = parts.next().ok_or("spec: first session")?.parse()?;
    let ids: Vec<String> = parts.map(str::to_owned).collect();
    let mut o = options(&schema);
    o.pool_size = 2;
    let repo = PostgresRepository::connect_with(&url, o).await?;
    let mut sessions = Vec::new();
    for id in &ids {
        sessions.push(repo.open(id).await?);
    }
    println!("READY");
    std::io::stdout().flush()?;
    let mut go = String::new();
    std::io::stdin().read_line(&mut go)?;
    let start = now_us();
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for (k, s) in sessions.into_iter().enumerate() {
        let index = first_index + k;
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(appends);
            let mut service = Vec::with_capacity(appends);
            let mut late = 0usize;
            let mut rng = Rng::new(index as u64 + 1);
            // The first due time: Poisson starts after one random gap; even spacing spreads
            // the sessions' phases over one gap so they do not all fire together.
            let mut due = match pace {
                Pace::Closed => t0,
                Pace::Open {
                    per_session,
                    arrivals: Arrivals::Poisson,
                } => t0 + rng.exp(1.0 / per_session),
                Pace::Open {
                    per_session,
                    arrivals: Arrivals::Even,
                } => t0 + Duration::from_secs_f64(index as f64 / SESSIONS as f64 / per_session),
            };
            for i in 0..appends {
                if pace != Pace::Closed {
                    tokio::time::sleep_until(due.into()).await;
                }
                let sent = Instant::now();
                if pace == Pace::Closed {
                    due = sent;
                } else if sent.duration_since(due) > Duration::from_millis(1) {
                    late += 1;
                }
                s.append(user(format!(
                    "append {i}: please look at src/lib.rs and tell me what the parser does"
                )))
                .await?;
                let done = Instant::now();
                lat.push(done.duration_since(due).as_nanos() as u64);
                service.push(done.duration_since(sent).as_nanos() as u64);
                if let Pace::Open {
                    per_session,
                    arrivals,
                } = pace
                {
                    due += match arrivals {
                        Arrivals::Poisson => rng.exp(1.0 / per_session),
                        Arrivals::Even => Duration::from_secs_f64(1.0 / per_session),
                    };
                }
            }
            Ok::<_, arbor_session::SessionError>((lat, service, late))
        }));
    }
    let (mut all, mut all_service, mut all_late) = (Vec::new(), Vec::new(), 0);
    for t in tasks {
        let (lat, service, late) = t.await??;
        all.extend(lat);
        all_service.extend(service);
        all_late += late;
    }
    let end = now_us();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{start} {end} {all_late}")?;
    for samples in [&all, &all_service] {
        let text: Vec<String> = samples.iter().map(u64::to_string).collect();
        writeln!(out, "{}", text.join(","))?;
    }
    Ok(())
}

async fn run(url: &str, schema: &ScratchSchema) -> Result<(), BoxError> {
    let repo = PostgresRepository::connect_with(url, options(&schema.name)).await?;
    // `BENCH_ONLY=appends|open|list` runs one phase (e.g. under callgrind).
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let wanted = |phase: &str| only.is_empty() || only == phase;
    if wanted("appends") {
        appends(url, schema, &repo).await?;
    }
    if wanted("open") {
        open(&repo).await?;
    }
    if wanted("list") {
        list(url, schema, &repo).await?;
    }
    Ok(())
}

async fn appends(
    url: &str,
    schema: &ScratchSchema,
    repo: &PostgresRepository,
) -> Result<(), BoxError> {
    let appends = env_usize("BENCH_APPENDS", 200);
    let pace = pace()?;
    // ---- 1. concurrent appends from 4 processes ------------------------------------------
    let (admin, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(conn);
    admin
        .batch_execute(&format!("SET search_path = {}", schema.name))
        .await?;
    if let Ok(sql) = std::env::var("BENCH_SETUP_SQL") {
        if !sql.trim().is_empty() {
            admin
                .batch_execute(&sql)
                .await
                .map_err(|e| format!("BENCH_SETUP_SQL failed: {e}"))?;
            println!("setup SQL: {sql}");
        }
    }
    let backend: i32 = admin
        .query_one("SELECT pg_backend_pid()", &[])
        .await?
        .get(0);
    let postmaster = u32::try_from(backend)
        .ok()
        .and_then(proc_stat)
        .map(|(_, ppid, _)| ppid);
    let mut ids = Vec::new();
    for _ in 0..SESSIONS {
        let s = repo.create(CreateOptions::new("/bench")).await?;
        ids.push(s.id().to_owned());
    }
    // Handles dropped: give their connections a moment to close and free the locks.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let exe = std::env::current_exe()?;
    let mut children = Vec::new();
    let per_process = SESSIONS / PROCESSES;
    for (p, chunk) in ids.chunks(per_process).enumerate() {
        let spec = format!(
            "{url}\n{}\n{appends}\n{}\n{}\n{}",
            schema.name,
            pace.to_spec(),
            p * per_process,
            chunk.join("\n")
        );
        let mut child = Command::new(&exe)
            .env("ARBOR_PG_BENCH_WORKER", spec)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let mut lines = BufReader::new(child.stdout.take().ok_or("stdout")?).lines();
        match lines.next() {
            Some(Ok(l)) if l == "READY" => {}
            other => return Err(format!("worker did not get ready: {other:?}").into()),
        }
        children.push((child, lines));
    }
    let server_before = postmaster.and_then(server_ticks);
    let client_before = children_ticks();
    for (child, _) in &mut children {
        writeln!(child.stdin.as_mut().ok_or("stdin")?, "GO")?;
    }
    let (mut first, mut last, mut late) = (u128::MAX, 0u128, 0usize);
    let mut lat: Vec<u64> = Vec::new();
    let mut service: Vec<u64> = Vec::new();
    for (mut child, mut lines) in children {
        let span = lines.next().ok_or("worker span")??;
        let mut fields = span.split(' ');
        let mut field = || fields.next().ok_or("span format");
        first = first.min(field()?.parse()?);
        last = last.max(field()?.parse()?);
        late += field()?.parse::<usize>()?;
        for into in [&mut lat, &mut service] {
            let samples = lines.next().ok_or("worker samples")??;
            for v in samples.split(',').filter(|v| !v.is_empty()) {
                into.push(v.parse()?);
            }
        }
        if !child.wait()?.success() {
            return Err("a worker failed".into());
        }
    }
    // The workers' backends end with their connections; give the server a moment to reap them.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let server_after = postmaster.and_then(server_ticks);
    let client_after = children_ticks();
    lat.sort_unstable();
    service.sort_unstable();
    let sync = sync_mode();
    let total = SESSIONS * appends;
    let secs = (last - first) as f64 / 1e6;
    let mode = match pace {
        Pace::Closed => "closed loop".to_owned(),
        Pace::Open {
            per_session,
            arrivals,
        } => format!(
            "open loop at {:.0}/s, {arrivals:?} arrivals",
            per_session * SESSIONS as f64
        ),
    };
    println!(
        "appends ({sync:?}, {mode}): {total} from {PROCESSES} processes x {per_process} sessions: {:.0} appends/s, p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms",
        total as f64 / secs,
        pct(&lat, 0.5),
        pct(&lat, 0.9),
        pct(&lat, 0.99),
        pct(&lat, 0.999),
        pct(&lat, 1.0)
    );
    if pace != Pace::Closed {
        println!(
            "  latency from the scheduled time (above); service time from the send: p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms; {late} of {total} sent more than 1 ms late",
            pct(&service, 0.5),
            pct(&service, 0.99),
            pct(&service, 0.999),
        );
    }
    let per_append_us = |before: Option<u64>, after: Option<u64>| match (before, after) {
        (Some(b), Some(a)) => format!(
            "{:.0} µs",
            a.saturating_sub(b) as f64 * 10_000.0 / total as f64
        ),
        _ => "not measured".to_owned(),
    };
    println!(
        "  CPU per append: server {} (the postmaster and its children, /proc), clients {}",
        per_append_us(server_before, server_after),
        per_append_us(client_before, client_after)
    );
    let check = {
        let row = admin
            .query_one(
                "SELECT
                   (SELECT COUNT(*) FROM entries),
                   (SELECT COUNT(*) FROM (SELECT DISTINCT sid, id FROM entries) d),
                   (SELECT COUNT(*) FROM entries e WHERE e.parent_id IS DISTINCT FROM
                        (SELECT p.id FROM entries p WHERE p.sid = e.sid AND p.seq = e.seq - 1)),
                   (SELECT COUNT(*) FROM sessions s WHERE s.entry_count <>
                        (SELECT COUNT(*) FROM entries e WHERE e.sid = s.sid))",
                &[],
            )
            .await?;
        let (rows, distinct, off_chain, bad_state): (i64, i64, i64, i64) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        println!(
            "  check: {rows} rows for {total} appends, {} duplicated, {off_chain} off-chain (siblings), {bad_state} sessions with a wrong count",
            rows - distinct
        );
        rows == total as i64 && distinct == rows && off_chain == 0 && bad_state == 0
    };
    if !check {
        return Err("lost, duplicated or branched entries".into());
    }

    Ok(())
}

async fn open(repo: &PostgresRepository) -> Result<(), BoxError> {
    // ---- 2. open + build context of a 100k-entry session ---------------------------------
    let n = scale(100_000);
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("big.jsonl");
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&file)?);
        writeln!(
            w,
            r#"{{"type":"session","version":3,"id":"big-session","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/bench"}}"#
        )?;
        let mut parent = "null".to_owned();
        for i in 0..n {
            let id = format!("{i:08x}");
            let line = if i % 2 == 0 {
                format!(
                    r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"user","content":"question {i}: what does the parser in src/lib.rs do with nested blocks?","timestamp":1}}}}"#
                )
            } else {
                format!(
                    r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"answer {i}: it walks the token stream and builds a tree of blocks."}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{{"input":10,"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":30,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.001}}}},"stopReason":"stop","timestamp":2}}}}"#
                )
            };
            writeln!(w, "{line}")?;
            parent = format!("\"{id}\"");
        }
    }
    let t = Instant::now();
    repo.import_jsonl(&file).await?;
    println!(
        "import of a {n}-entry file: {:.0} ms",
        t.elapsed().as_secs_f64() * 1000.0
    );
    // "open" is what resuming needs before the transcript: the session, its leaf, stats and
    // the derived settings (this loads the handle's envelope index, DECISIONS §24.21); the
    // active-path context is timed on top of it.
    let (mut opens, mut paths, mut totals) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        let t = Instant::now();
        let s = repo.open_read_only("big-session").await?;
        s.leaf_id().await?;
        s.stats().await?;
        let settings = s.derived_settings(None).await?;
        let opened = t.elapsed().as_secs_f64() * 1000.0;
        let window = s.path_to_root_or_compaction(None).await?;
        let state = DerivedState::from_settings(settings);
        let ctx = build_session_context_from_window(window, state, &ContextOptions::default());
        if ctx.messages.len() != n {
            return Err(
                format!("context has {} messages, expected {n}", ctx.messages.len()).into(),
            );
        }
        let total = t.elapsed().as_secs_f64() * 1000.0;
        opens.push(opened);
        paths.push(total - opened);
        totals.push(total);
    }
    let median3 = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[1]
    };
    println!(
        "open of {n} entries (open + leaf + stats + derived settings): median {:.0} ms (runs {:?})",
        median3(opens.clone()),
        opens.iter().map(|t| t.round()).collect::<Vec<_>>()
    );
    println!(
        "  + active path ({n} entries read and parsed) + context: median {:.0} ms; open + context median {:.0} ms (runs {:?})",
        median3(paths),
        median3(totals.clone()),
        totals.iter().map(|t| t.round()).collect::<Vec<_>>()
    );

    Ok(())
}

async fn list(
    url: &str,
    schema: &ScratchSchema,
    repo: &PostgresRepository,
) -> Result<(), BoxError> {
    // ---- 3. list 10,000 sessions ---------------------------------------------------------
    let count = scale(10_000);
    {
        let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
        tokio::spawn(conn);
        c.batch_execute(&format!("SET search_path = {}", schema.name))
            .await?;
        c.execute(
            "INSERT INTO sessions (id, cwd, created, header, entry_count, first_message, updated_at)
             SELECT 'list-' || g, '/proj/' || (g % 100), '2026-01-01T00:00:00.000Z',
                    '{\"type\":\"session\",\"version\":3,\"id\":\"list-' || g ||
                    '\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/proj/' || (g % 100) || '\"}',
                    g % 50, 'first prompt of session ' || g,
                    now() - g * interval '1 second'
             FROM generate_series(1, $1::int) g",
            &[&(count as i32)],
        )
        .await?;
        c.batch_execute("ANALYZE sessions").await?;
    }
    let median_ms = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mut all = Vec::new();
    let mut page = Vec::new();
    let mut cwd = Vec::new();
    let mut listed = 0;
    for _ in 0..5 {
        let t = Instant::now();
        listed = repo.list().await?.sessions.len();
        all.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        repo.list_page(&ListQuery {
            limit: Some(50),
            ..Default::default()
        })
        .await?;
        page.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        repo.list_cwd("/proj/7").await?;
        cwd.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "list {listed} sessions: all {:.1} ms, first page of 50 {:.2} ms, one cwd ({} sessions) {:.2} ms (medians of 5)",
        median_ms(all),
        median_ms(page),
        count / 100,
        median_ms(cwd)
    );
    Ok(())
}
