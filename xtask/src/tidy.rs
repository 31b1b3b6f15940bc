//! `cargo xtask tidy`: structural rules no compiler checks.
//!
//! - Layering: arbor-ai ← arbor-agent ← {arbor-session-sqlite, arbor-session-postgres,
//!   arbor-coding-agent}. No crate
//!   depends on one above it, the HTTP stack (reqwest, hyper, h2, rustls) stays out of the
//!   storage and agent crates, and terminal crates (ratatui, crossterm) stay in the app.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// Crates that must not appear in a crate's normal dependency tree.
const HTTP_CRATES: &[&str] = &["reqwest", "hyper", "hyper-util", "h2", "rustls"];
const TERMINAL_CRATES: &[&str] = &["ratatui", "crossterm"];

/// One workspace crate's rule: the workspace crates it may depend on, and the lists of crates it
/// must not pull in (normal dependencies, default features, as `cargo build -p <crate>` builds it).
type Layer = (
    &'static str,
    &'static [&'static str],
    &'static [&'static [&'static str]],
);

const LAYERS: &[Layer] = &[
    ("arbor-ai", &[], &[TERMINAL_CRATES]),
    (
        "arbor-agent",
        &["arbor-ai"],
        &[HTTP_CRATES, TERMINAL_CRATES],
    ),
    (
        "arbor-session-sqlite",
        &["arbor-ai", "arbor-agent"],
        &[HTTP_CRATES, TERMINAL_CRATES],
    ),
    (
        "arbor-session-postgres",
        &["arbor-ai", "arbor-agent"],
        &[HTTP_CRATES, TERMINAL_CRATES],
    ),
    (
        "arbor-coding-agent",
        &[
            "arbor-ai",
            "arbor-agent",
            "arbor-session-sqlite",
            "arbor-session-postgres",
        ],
        &[],
    ),
];

/// Runs every check; returns the problems found (empty = tidy).
pub fn run(root: &Path) -> Vec<String> {
    layering(root)
}

/// Package names in `cargo tree -p <krate> -e normal` (the crate itself excluded).
fn normal_dependencies(root: &Path, krate: &str) -> Result<BTreeSet<String>, String> {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .args([
            "tree", "-q", "-p", krate, "-e", "normal", "--prefix", "none",
        ])
        .args(["--format", "{p}"])
        .output()
        .map_err(|e| format!("cannot run cargo tree for {krate}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo tree -p {krate} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    Ok(text
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != krate)
        .map(str::to_string)
        .collect())
}

fn layering(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for (krate, allowed, banned) in LAYERS {
        let deps = match normal_dependencies(root, krate) {
            Ok(deps) => deps,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        for dep in deps.iter().filter(|d| d.starts_with("arbor-")) {
            if !allowed.contains(&dep.as_str()) {
                problems.push(format!(
                    "layering: {krate} depends on {dep} (allowed: {})",
                    if allowed.is_empty() {
                        "no workspace crate".to_string()
                    } else {
                        allowed.join(", ")
                    }
                ));
            }
        }
        for dep in banned.iter().flat_map(|list| list.iter()) {
            if deps.contains(*dep) {
                problems.push(format!(
                    "layering: {krate} pulls in {dep} (run `cargo tree -p {krate} -e normal -i {dep}`)"
                ));
            }
        }
    }
    problems
}
