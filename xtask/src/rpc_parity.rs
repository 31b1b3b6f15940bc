//! `cargo xtask rpc-parity [--record-pi] [SCENARIO...]`: the RPC / JSON-mode differential
//! against pi 1.6.0 (DECISIONS §31.1). Builds `arbor`, records each scenario of
//! `crates/coding-agent/tests/data/rpc/scenarios/` with arbor through pi's own `RpcClient`
//! (`tools/rpc-parity/record.mjs`), and compares it step by step with pi's committed
//! recording (`tests/data/rpc/pi/`); `--record-pi` records pi first (refreshing the committed
//! files). Every difference must be listed in `tests/data/rpc/decisions.txt` with the
//! DECISIONS id that explains it. Needs `PI_PKG` (pi's package directory) and, for pi,
//! `PI_NODE` (a Node ≥ 22 binary; its directory is put first on PATH for the client's
//! `node`). `ARBOR_BIN` names an arbor binary to use instead of building one.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use arbor_test_support::rpc_parity::{compare, parse_accepted, verdict};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf()
}

/// The arbor binary: `ARBOR_BIN` when set (say, the one `cargo test` built), else the debug
/// build this command makes.
fn arbor_bin() -> PathBuf {
    std::env::var_os("ARBOR_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/debug/arbor"))
}

fn record(agent: &str, out: &Path, only: &[String]) -> Result<(), String> {
    let pkg = std::env::var("PI_PKG").map_err(|_| {
        "PI_PKG is not set (pi's package directory; see tools/rpc-parity/README.md)"
    })?;
    let node = std::env::var("PI_NODE").unwrap_or_else(|_| "node".into());
    let mut path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(dir) = Path::new(&node)
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
    {
        let mut dirs = vec![dir.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        path = std::env::join_paths(dirs).map_err(|e| format!("PATH: {e}"))?;
    }
    let arbor = arbor_bin();
    let status = Command::new(&node)
        .arg(root().join("tools/rpc-parity/record.mjs"))
        .args(["--agent", agent, "--pi-pkg", &pkg, "--out"])
        .arg(out)
        .arg("--arbor")
        .arg(&arbor)
        .args(only)
        .env("PATH", path)
        .status()
        .map_err(|e| format!("cannot run {node}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("recording {agent} failed ({status})"))
    }
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn run_inner(args: &[String]) -> Result<bool, String> {
    let record_pi = args.iter().any(|a| a == "--record-pi");
    let only: Vec<String> = args
        .iter()
        .filter(|a| !a.starts_with("--"))
        .cloned()
        .collect();
    let data = root().join("crates/coding-agent/tests/data/rpc");
    if std::env::var_os("ARBOR_BIN").is_none() {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "-p", "arbor-coding-agent", "--bin", "arbor"])
            .current_dir(root())
            .status()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        if !status.success() {
            return Err("building arbor failed".into());
        }
    }
    if record_pi {
        record("pi", &data.join("pi"), &only)?;
    }
    let out = root().join("target/rpc-parity");
    record("arbor", &out, &only)?;
    let accepted_path = data.join("decisions.txt");
    let accepted = parse_accepted(
        &std::fs::read_to_string(&accepted_path)
            .map_err(|e| format!("{}: {e}", accepted_path.display()))?,
    )
    .map_err(|e| e.to_string())?;
    let mut units = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(data.join("scenarios"))
        .map_err(|e| format!("scenarios: {e}"))?
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .map(str::to_owned)
        })
        .filter(|n| only.is_empty() || only.contains(n))
        .collect();
    names.sort();
    for name in &names {
        let pi = read_json(&data.join("pi").join(format!("{name}.pi.json")))?;
        let arbor = read_json(&out.join(format!("{name}.arbor.json")))?;
        units.extend(compare(name, &pi, &arbor));
    }
    let scoped: Vec<_> = accepted
        .into_iter()
        .filter(|a| names.iter().any(|n| a.key.starts_with(&format!("{n}#"))))
        .collect();
    let (lines, ok) = verdict(&units, &scoped);
    for l in lines {
        println!("{l}");
    }
    Ok(ok)
}

pub fn run(args: &[String]) -> ExitCode {
    match run_inner(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("rpc-parity: {e}");
            ExitCode::FAILURE
        }
    }
}
