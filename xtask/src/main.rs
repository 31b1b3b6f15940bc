//! Project chores: `cargo xtask <command>`.
//!
//! - `conformance [BACKEND...]`: runs the session storage conformance suite against the memory,
//!   JSONL, SQLite and PostgreSQL backends (or the ones named), prints a backend × passed/failed
//!   table and the failures, and exits non-zero when any case fails. PostgreSQL needs a server:
//!   `ARBOR_TEST_POSTGRES_URL` (see `.ci/postgres.sh`); each case runs in a scratch schema that
//!   is dropped afterwards. Without the variable the postgres row is reported as skipped — an
//!   error when `postgres` was named or `ARBOR_TEST_POSTGRES_REQUIRE` is set (CI). Every
//!   backend but memory also runs the two-process case (a second writer from another process is
//!   refused): xtask re-runs itself as `conformance-child BACKEND LOCATION [SCHEMA]`.
//! - `tidy`: structural checks (crate layering, module circles, file length, typed errors,
//!   citations); see [`tidy`].
//! - `plans [--count N] [--seed S] [--dir DIR]`: compaction / branch-summary preparation
//!   against pi 1.6.0 on freshly generated sessions (see `plans.rs`).
//! - `parity requests|streams N [SEED] [--golden FILE K] [--show N]`: differential tests of the
//!   providers against pi-ai 1.6.0 (needs node and the reference install; see `parity`).
//! - `rpc-parity [--record-pi] [SCENARIO...]`: RPC and JSON mode against pi 1.6.0 through
//!   pi's own RPC client (see `rpc_parity.rs`).
//! - `downstream`: builds and runs the library crates' examples and USAGE's library snippets
//!   from a crate outside the workspace (see `downstream.rs`).

mod downstream;
mod parity;
mod plans;
mod rpc_parity;
mod tidy;

use arbor_session::conformance::{process, run_all, CaseOutcome, Fixture, CASES};
use arbor_session::jsonl::JsonlRepository;
use arbor_session::MemoryRepository;
use arbor_session_postgres::scratch::ScratchSchema;
use arbor_session_postgres::PostgresRepository;
use arbor_session_sqlite::SqliteRepository;
use std::process::ExitCode;

const BACKENDS: &[&str] = &["memory", "jsonl", "sqlite", "postgres"];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("conformance") => conformance(&args[1..]),
        Some("conformance-child") => conformance_child(&args[1..]),
        Some("tidy") => tidy_check(),
        Some("plans") => plans::plans(&args[1..]),
        Some("parity") => parity::run(&args[1..]),
        Some("rpc-parity") => rpc_parity::run(&args[1..]),
        Some("downstream") => downstream::run(&args[1..]),
        Some("help" | "--help" | "-h") | None => {
            println!("usage: cargo xtask conformance [memory|jsonl|sqlite|postgres ...]\n       cargo xtask parity requests|streams N [SEED] [--golden FILE K] [--show N]");
            println!("       cargo xtask rpc-parity [--record-pi] [SCENARIO...]");
            println!("       cargo xtask tidy");
            println!("       cargo xtask downstream");
            println!("       cargo xtask plans [--count N] [--seed S] [--dir DIR]");
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("unknown xtask command {other:?} (try `cargo xtask help`)");
            ExitCode::FAILURE
        }
    }
}

fn tidy_check() -> ExitCode {
    // xtask lives one level below the workspace root.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(std::path::Path::new("."));
    let reports = tidy::run(root);
    let mut total = 0;
    for report in &reports {
        if report.problems.is_empty() {
            println!("tidy: {}: ok", report.check);
            continue;
        }
        total += report.problems.len();
        eprintln!(
            "tidy: {}: {} problem(s)",
            report.check,
            report.problems.len()
        );
        for problem in &report.problems {
            eprintln!("  {}: {problem}", report.check);
        }
    }
    if total == 0 {
        println!("tidy: ok");
        ExitCode::SUCCESS
    } else {
        eprintln!("tidy: {total} problem(s)");
        ExitCode::FAILURE
    }
}

fn conformance(selected: &[String]) -> ExitCode {
    for s in selected {
        if !BACKENDS.contains(&s.as_str()) {
            eprintln!(
                "unknown backend {s:?}; expected one of {}",
                BACKENDS.join(", ")
            );
            return ExitCode::FAILURE;
        }
    }
    let wanted: Vec<&str> = if selected.is_empty() {
        BACKENDS.to_vec()
    } else {
        selected.iter().map(String::as_str).collect()
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let postgres_url = std::env::var("ARBOR_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty());
    let mut rows: Vec<(&str, Vec<CaseOutcome>)> = Vec::new();
    let mut skipped = false;
    for backend in wanted {
        if backend == "postgres" && postgres_url.is_none() {
            let required =
                !selected.is_empty() || std::env::var_os("ARBOR_TEST_POSTGRES_REQUIRE").is_some();
            eprintln!(
                "{}: postgres: ARBOR_TEST_POSTGRES_URL is not set (start a server with `eval \"$(.ci/postgres.sh start)\"`)",
                if required { "error" } else { "SKIPPED" }
            );
            if required {
                return ExitCode::FAILURE;
            }
            skipped = true;
            continue;
        }
        let mut outcomes = runtime.block_on(run_backend(backend));
        if backend != "memory" {
            outcomes.push(runtime.block_on(second_process_case(backend)));
        }
        rows.push((backend, outcomes));
    }
    print_table(&rows);
    if skipped {
        println!("{:<10} skipped (no ARBOR_TEST_POSTGRES_URL)", "postgres");
    }
    let failed: usize = rows
        .iter()
        .map(|(_, o)| o.iter().filter(|c| c.result.is_err()).count())
        .sum();
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn temp_dir() -> tempfile::TempDir {
    match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("cannot create a temporary directory: {e}"),
    }
}

async fn run_backend(backend: &str) -> Vec<CaseOutcome> {
    match backend {
        "memory" => run_all(|| async { Fixture::bare(MemoryRepository::new()) }).await,
        "sqlite" => {
            run_all(|| async {
                let dir = temp_dir();
                match SqliteRepository::open(dir.path().join("sessions.db")).await {
                    Ok(repo) => Fixture::new(repo, dir),
                    Err(e) => panic!("cannot open a SQLite session database: {e}"),
                }
            })
            .await
        }
        "postgres" => {
            let url = std::env::var("ARBOR_TEST_POSTGRES_URL").unwrap_or_default();
            run_all(|| {
                let url = url.clone();
                async move {
                    let schema = ScratchSchema::new(&url);
                    match PostgresRepository::connect_with(&url, schema.options()).await {
                        Ok(repo) => Fixture::new(repo, schema),
                        Err(e) => panic!("cannot open a PostgreSQL session store: {e}"),
                    }
                }
            })
            .await
        }
        _ => {
            run_all(|| async {
                let dir = temp_dir();
                Fixture::new(JsonlRepository::new(dir.path()), dir)
            })
            .await
        }
    }
}

/// The two-process case on `backend`: this process holds a session for writing while a child
/// xtask tries to open it (`conformance-child`).
async fn second_process_case(backend: &str) -> CaseOutcome {
    let started = std::time::Instant::now();
    let result = match backend {
        "jsonl" => {
            let dir = temp_dir();
            let repo = JsonlRepository::new(dir.path());
            process::run_parent(&repo, |loc| spawn_child(backend, loc, None)).await
        }
        "sqlite" => {
            let dir = temp_dir();
            match SqliteRepository::open(dir.path().join("sessions.db")).await {
                Ok(repo) => process::run_parent(&repo, |loc| spawn_child(backend, loc, None)).await,
                Err(e) => Err(format!("cannot open a SQLite session database: {e}").into()),
            }
        }
        _ => {
            let url = std::env::var("ARBOR_TEST_POSTGRES_URL").unwrap_or_default();
            let schema = ScratchSchema::new(&url);
            match PostgresRepository::connect_with(&url, schema.options()).await {
                Ok(repo) => {
                    process::run_parent(&repo, |loc| spawn_child(backend, loc, Some(&schema.name)))
                        .await
                }
                Err(e) => Err(format!("cannot open a PostgreSQL session store: {e}").into()),
            }
        }
    };
    CaseOutcome {
        group: "process",
        name: process::CASE,
        result,
        millis: started.elapsed().as_millis(),
    }
}

/// Runs `xtask conformance-child` and returns its report.
fn spawn_child(backend: &str, location: &str, schema: Option<&str>) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current xtask binary: {e}"))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["conformance-child", backend, location]);
    if let Some(schema) = schema {
        cmd.arg(schema);
    }
    // The parent's runtime keeps serving its connections on the other worker meanwhile.
    let out = tokio::task::block_in_place(|| cmd.output())
        .map_err(|e| format!("starting the child process: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    process::parse_report(&stdout).ok_or_else(|| {
        format!(
            "the child printed no report; stdout: {stdout}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The child half: reopen `LOCATION`'s store the way another process would and try to open it.
fn conformance_child(args: &[String]) -> ExitCode {
    let (Some(backend), Some(location)) = (args.first(), args.get(1)) else {
        eprintln!("usage: cargo xtask conformance-child jsonl|sqlite|postgres LOCATION [SCHEMA]");
        return ExitCode::FAILURE;
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let report = runtime.block_on(async {
        match backend.as_str() {
            "jsonl" => {
                let path = std::path::Path::new(location);
                let dir = path.parent().unwrap_or(std::path::Path::new("."));
                process::child_report(Ok(JsonlRepository::flat(dir)), location).await
            }
            "sqlite" => {
                let db = location
                    .rsplit_once('#')
                    .map_or(location.as_str(), |(db, _)| db);
                process::child_report(SqliteRepository::open(db).await, location).await
            }
            "postgres" => {
                let url = std::env::var("ARBOR_TEST_POSTGRES_URL").unwrap_or_default();
                let mut options = arbor_session_postgres::PostgresOptions::default();
                if let Some(schema) = args.get(2) {
                    options.schema.clone_from(schema);
                    // The parent's scratch schema ends its connections by this name on drop.
                    options.application_name.clone_from(schema);
                }
                let repo = PostgresRepository::connect_with(&url, options).await;
                process::child_report(repo, location).await
            }
            other => format!("reopen failed: unknown backend {other:?}"),
        }
    });
    process::print_report(&report);
    ExitCode::SUCCESS
}

fn print_table(rows: &[(&str, Vec<CaseOutcome>)]) {
    println!(
        "session storage conformance ({} cases per backend; every backend but memory also runs \
         the two-process case)\n",
        CASES.len()
    );
    println!(
        "{:<10} {:>7} {:>7} {:>7} {:>9}",
        "backend", "passed", "failed", "total", "time ms"
    );
    for (backend, outcomes) in rows {
        let failed = outcomes.iter().filter(|c| c.result.is_err()).count();
        let millis: u128 = outcomes.iter().map(|c| c.millis).sum();
        println!(
            "{:<10} {:>7} {:>7} {:>7} {:>9}",
            backend,
            outcomes.len() - failed,
            failed,
            outcomes.len(),
            millis
        );
    }
    for (backend, outcomes) in rows {
        for c in outcomes {
            if let Err(e) = &c.result {
                println!(
                    "\nFAILED {backend} / {} / {}:\n  {}",
                    c.group,
                    c.name,
                    e.to_string().replace('\n', "\n  ")
                );
            }
        }
    }
}
