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

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use arbor_agent::context::projection::build_session_context_from_window;
use arbor_agent::context::{ContextOptions, DerivedState};
use arbor_agent::session::{
    CreateOptions, EntryDraft, EntryKind, SessionRepository, SessionStorage,
};
use arbor_ai::types::{Content, Message, UserMessage};
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
/// `start_us end_us` and then every latency (ns) on stdout.
async fn worker(spec: String) -> Result<(), BoxError> {
    let mut parts = spec.split('\n');
    let url = parts.next().ok_or("spec: url")?.to_owned();
    let schema = parts.next().ok_or("spec: schema")?.to_owned();
    let appends: usize = parts.next().ok_or("spec: appends")?.parse()?;
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
    let mut tasks = Vec::new();
    for s in sessions {
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(appends);
            for i in 0..appends {
                let t = Instant::now();
                s.append(user(format!(
                    "append {i}: please look at src/lib.rs and tell me what the parser does"
                )))
                .await?;
                lat.push(t.elapsed().as_nanos() as u64);
            }
            Ok::<_, arbor_agent::SessionError>(lat)
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    let end = now_us();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{start} {end}")?;
    let text: Vec<String> = all.iter().map(u64::to_string).collect();
    writeln!(out, "{}", text.join(","))?;
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
    // ---- 1. concurrent appends from 4 processes ------------------------------------------
    let mut ids = Vec::new();
    for _ in 0..SESSIONS {
        let s = repo
            .create(CreateOptions {
                cwd: "/bench".into(),
                ..Default::default()
            })
            .await?;
        ids.push(s.id().to_owned());
    }
    // Handles dropped: give their connections a moment to close and free the locks.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let exe = std::env::current_exe()?;
    let mut children = Vec::new();
    for chunk in ids.chunks(SESSIONS / PROCESSES) {
        let spec = format!("{url}\n{}\n{appends}\n{}", schema.name, chunk.join("\n"));
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
    for (child, _) in &mut children {
        writeln!(child.stdin.as_mut().ok_or("stdin")?, "GO")?;
    }
    let (mut first, mut last) = (u128::MAX, 0u128);
    let mut lat: Vec<u64> = Vec::new();
    for (mut child, mut lines) in children {
        let span = lines.next().ok_or("worker span")??;
        let (a, b) = span.split_once(' ').ok_or("span format")?;
        first = first.min(a.parse()?);
        last = last.max(b.parse()?);
        let samples = lines.next().ok_or("worker samples")??;
        for v in samples.split(',').filter(|v| !v.is_empty()) {
            lat.push(v.parse()?);
        }
        if !child.wait()?.success() {
            return Err("a worker failed".into());
        }
    }
    lat.sort_unstable();
    let sync = sync_mode();
    let total = SESSIONS * appends;
    let secs = (last - first) as f64 / 1e6;
    println!(
        "appends ({sync:?}): {total} from {PROCESSES} processes x {} sessions: {:.0} appends/s, p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms",
        SESSIONS / PROCESSES,
        total as f64 / secs,
        pct(&lat, 0.5),
        pct(&lat, 0.9),
        pct(&lat, 0.99),
        pct(&lat, 0.999),
        pct(&lat, 1.0)
    );
    let check = {
        let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
        tokio::spawn(conn);
        c.batch_execute(&format!("SET search_path = {}", schema.name))
            .await?;
        let row = c
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
