//! `cargo xtask plans`: compaction and branch-summary preparation against pi 1.6.0 on freshly
//! generated sessions (beyond the fixtures). Generates N sessions with
//! `shared/tools/gen_sessions.py`, has pi prepare them (`make_plans.py`, needs node and
//! PI_PKG), and compares Arbor's plans (the same library calls `arbor session compact/navigate
//! --dry-run --json` make) key by key, the conversation text byte for byte.
//!
//! `cargo xtask plans [--count N] [--seed S] [--dir DIR]`: DIR (default
//! `/tmp/arbor-plans-<seed>`) keeps `sessions/` and `plans/`; existing plans are reused.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Arc;

use arbor_agent::branch_summary::branch_plan_json;
use arbor_agent::branch_summary::{collect_branch_entries, prepare_branch_entries};
use arbor_agent::compaction::compaction_plan_json;
use arbor_agent::compaction::{prepare_compaction, CompactionSettings};
use arbor_session::{JsonlRepository, Session};
use serde_json::Value;

struct Args {
    count: usize,
    seed: u64,
    dir: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut out = Args {
        count: 300,
        seed: 4242,
        dir: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match a.as_str() {
            "--count" => {
                out.count = value("--count")?
                    .parse()
                    .map_err(|e| format!("--count: {e}"))?
            }
            "--seed" => {
                out.seed = value("--seed")?
                    .parse()
                    .map_err(|e| format!("--seed: {e}"))?
            }
            "--dir" => out.dir = Some(PathBuf::from(value("--dir")?)),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(out)
}

fn shared_dir() -> Result<PathBuf, String> {
    if let Some(d) = std::env::var_os("ARBOR_SHARED_DIR") {
        return Ok(PathBuf::from(d));
    }
    let mut dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    loop {
        if dir.join("shared/fixtures").is_dir() {
            return Ok(dir.join("shared"));
        }
        dir = dir
            .parent()
            .ok_or("shared/ not found above the checkout; set ARBOR_SHARED_DIR")?;
    }
}

fn pi_pkg() -> Result<String, String> {
    if let Ok(p) = std::env::var("PI_PKG") {
        return Ok(p);
    }
    let home = std::env::var("HOME").map_err(|_| "PI_PKG is not set".to_string())?;
    let p =
        Path::new(&home).join(".cache/arbor-pi-ref/node_modules/@earendil-works/pi-coding-agent");
    if p.is_dir() {
        Ok(p.display().to_string())
    } else {
        Err("PI_PKG is not set and pi is not installed (run shared/tools/setup.sh)".into())
    }
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("{cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed: {status}"))
    }
}

fn files_with(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == ext))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

pub fn plans(args: &[String]) -> ExitCode {
    match plans_inner(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("xtask plans: {e}");
            ExitCode::FAILURE
        }
    }
}

fn plans_inner(args: &[String]) -> Result<bool, String> {
    let args = parse(args)?;
    let shared = shared_dir()?;
    let dir = args
        .dir
        .unwrap_or_else(|| PathBuf::from(format!("/tmp/arbor-plans-{}", args.seed)));
    let sessions = dir.join("sessions");
    let plan_dir = dir.join("plans");
    if files_with(&sessions, "jsonl").len() != args.count {
        run(Command::new("python3")
            .arg(shared.join("tools/gen_sessions.py"))
            .arg(&sessions)
            .arg(args.count.to_string())
            .arg(args.seed.to_string()))?;
    }
    let session_files = files_with(&sessions, "jsonl");
    if files_with(&plan_dir, "json").len() != session_files.len() {
        eprintln!(
            "xtask plans: pi prepares {} sessions (make_plans.py; takes minutes)",
            session_files.len()
        );
        run(Command::new("python3")
            .arg(shared.join("tools/make_plans.py"))
            .arg(&plan_dir)
            .args(&session_files)
            .env("PI_PKG", pi_pkg()?))?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("async runtime: {e}"))?;
    let (mut compact, mut branch, mut skipped) = (0usize, 0usize, 0usize);
    let mut failures = Vec::new();
    for session_file in &session_files {
        let stem = session_file
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        let plan_path = plan_dir.join(format!("{stem}.json"));
        let plan: Value = std::fs::read_to_string(&plan_path)
            .map_err(|e| format!("{}: {e}", plan_path.display()))
            .and_then(|t| {
                serde_json::from_str(&t).map_err(|e| format!("{}: {e}", plan_path.display()))
            })?;
        runtime.block_on(async {
            let repo = JsonlRepository::flat(sessions.clone());
            let storage = match repo
                .open_read_only(&session_file.display().to_string())
                .await
            {
                Ok(s) => s,
                Err(e) => {
                    failures.push(format!("{stem}: cannot open: {e}"));
                    return;
                }
            };
            let session = Session::new(Arc::new(storage));
            let Ok(ancestry) = session.ancestry(None).await else {
                failures.push(format!("{stem}: no ancestry"));
                return;
            };
            for (keep, expected) in plan["compact"].as_object().into_iter().flatten() {
                if expected.get("error").is_some() {
                    skipped += 1;
                    continue;
                }
                let settings = CompactionSettings {
                    keep_recent_tokens: keep.parse().unwrap_or(20_000),
                    ..Default::default()
                };
                compact += 1;
                match prepare_compaction(&ancestry, &settings) {
                    Ok(p) if compaction_plan_json(p.as_ref()) == *expected => {}
                    Ok(_) => failures.push(format!("{stem} compact keep={keep}: differs")),
                    Err(e) => failures.push(format!("{stem} compact keep={keep}: {e}")),
                }
            }
            for case in plan["branch"].as_array().into_iter().flatten() {
                if case["plan"].get("error").is_some() {
                    skipped += 1;
                    continue;
                }
                let to = case["to"].as_str().unwrap_or_default();
                let budget = case["tokenBudget"].as_u64().unwrap_or(0);
                branch += 1;
                let Ok(target) = session.ancestry(Some(to)).await else {
                    failures.push(format!("{stem} branch to={to}: no ancestry"));
                    continue;
                };
                let collection = collect_branch_entries(&ancestry, &target);
                let prep = prepare_branch_entries(&collection.entries, budget);
                if branch_plan_json(&collection, &prep) != case["plan"] {
                    failures.push(format!("{stem} branch to={to} budget={budget}: differs"));
                }
            }
        });
    }
    println!(
        "{} sessions: {compact} compaction and {branch} branch-summary plans compared with pi 1.6.0, {} differ, {skipped} outside the reference (retainedTail)",
        session_files.len(),
        failures.len()
    );
    for f in failures.iter().take(20) {
        println!("  {f}");
    }
    Ok(failures.is_empty())
}
