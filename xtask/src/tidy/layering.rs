//! Layering: arbor-ai ← arbor-session ← arbor-agent ← arbor-tools (the built-in coding tools,
//! standing on the agent's tool contract); the storage backends (arbor-session-sqlite,
//! arbor-session-postgres) and search (arbor-search) stand on arbor-ai and arbor-session only,
//! never on the agent loop; arbor-coding-agent, the app, on everything. No crate depends on one
//! above it, the HTTP stack (reqwest, hyper, h2, rustls) stays out of the session, storage, search,
//! agent and tools crates, and terminal
//! crates (ratatui, crossterm) stay in the app. arbor-checkpoint depends on no workspace crate.
//!
//! Read from `cargo tree -p <crate> -e normal` (normal dependencies, default features: what
//! `cargo build -p <crate>` builds). A crate of the rules that is not in the workspace is
//! reported, not skipped in silence.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// Crates that must not appear in a crate's normal dependency tree.
const HTTP_CRATES: &[&str] = &["reqwest", "hyper", "hyper-util", "h2", "rustls"];
const TERMINAL_CRATES: &[&str] = &["ratatui", "crossterm"];

/// One workspace crate's rule: the workspace crates it may depend on, and the lists of crates it
/// must not pull in.
struct Layer {
    krate: &'static str,
    allowed: &'static [&'static str],
    banned: &'static [&'static [&'static str]],
}

const LAYERS: &[Layer] = &[
    Layer {
        krate: "arbor-ai",
        allowed: &[],
        banned: &[TERMINAL_CRATES],
    },
    // Entries, the storage contract, the memory and JSONL backends, projection and context.
    Layer {
        krate: "arbor-session",
        allowed: &["arbor-ai"],
        banned: &[HTTP_CRATES, TERMINAL_CRATES],
    },
    // The loop, the harness, compaction and branch summaries.
    Layer {
        krate: "arbor-agent",
        allowed: &["arbor-ai", "arbor-session"],
        banned: &[HTTP_CRATES, TERMINAL_CRATES],
    },
    Layer {
        krate: "arbor-session-sqlite",
        allowed: &["arbor-ai", "arbor-session"],
        banned: &[HTTP_CRATES, TERMINAL_CRATES],
    },
    Layer {
        krate: "arbor-session-postgres",
        allowed: &["arbor-ai", "arbor-session"],
        banned: &[HTTP_CRATES, TERMINAL_CRATES],
    },
    // Search across session files: reads entries through arbor-session, nothing of the loop.
    Layer {
        krate: "arbor-search",
        allowed: &["arbor-ai", "arbor-session"],
        banned: &[HTTP_CRATES, TERMINAL_CRATES],
    },
    // The built-in coding tools, their process groups and the tool environment policy: they
    // stand on the agent's tool contract, never on the app (DECISIONS §22.80).
    Layer {
        krate: "arbor-tools",
        allowed: &["arbor-ai", "arbor-session", "arbor-agent"],
        banned: &[HTTP_CRATES, TERMINAL_CRATES],
    },
    // Workspace checkpoints: git plumbing and a file store, nothing of sessions or models.
    Layer {
        krate: "arbor-checkpoint",
        allowed: &[],
        banned: &[HTTP_CRATES, TERMINAL_CRATES],
    },
    Layer {
        krate: "arbor-coding-agent",
        allowed: &[
            "arbor-ai",
            "arbor-session",
            "arbor-agent",
            "arbor-session-sqlite",
            "arbor-session-postgres",
            "arbor-checkpoint",
            "arbor-search",
            "arbor-tools",
        ],
        banned: &[],
    },
];

#[derive(Debug, thiserror::Error)]
enum TreeError {
    #[error("cannot run cargo tree for {krate}")]
    Spawn {
        krate: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("cargo tree -p {krate} failed: {stderr}")]
    Failed { krate: &'static str, stderr: String },
}

/// Every dependency that breaks a crate's layer, and every crate of the rules not in the
/// workspace.
pub fn check(root: &Path) -> Vec<String> {
    let members = workspace_crates(root);
    let mut problems = Vec::new();
    for layer in LAYERS {
        if !members.contains(layer.krate) {
            problems.push(format!(
                "{} is not a crate of this workspace (no crates/*/Cargo.toml names it); its rule cannot be checked",
                layer.krate
            ));
            continue;
        }
        match normal_dependencies(root, layer.krate) {
            Ok(deps) => problems.extend(violations(layer, &deps)),
            Err(e) => problems.push(error_chain(&e)),
        }
    }
    problems
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

fn violations(layer: &Layer, deps: &BTreeSet<String>) -> Vec<String> {
    let krate = layer.krate;
    let mut problems = Vec::new();
    for dep in deps.iter().filter(|d| d.starts_with("arbor-")) {
        if !layer.allowed.contains(&dep.as_str()) {
            let allowed = if layer.allowed.is_empty() {
                "no workspace crate".to_string()
            } else {
                layer.allowed.join(", ")
            };
            problems.push(format!("{krate} depends on {dep} (allowed: {allowed})"));
        }
    }
    for dep in layer.banned.iter().flat_map(|list| list.iter()) {
        if deps.contains(*dep) {
            problems.push(format!(
                "{krate} pulls in {dep} (run `cargo tree -p {krate} -e normal -i {dep}`)"
            ));
        }
    }
    problems
}

/// The package names of `crates/*/Cargo.toml`.
fn workspace_crates(root: &Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir(root.join("crates")) else {
        return names;
    };
    for entry in entries.flatten() {
        let Ok(manifest) = std::fs::read_to_string(entry.path().join("Cargo.toml")) else {
            continue;
        };
        if let Some(name) = package_name(&manifest) {
            names.insert(name);
        }
    }
    names
}

/// The `name` of a manifest's `[package]` table.
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package {
            if let Some(value) = line.strip_prefix("name").map(str::trim_start) {
                if let Some(value) = value.strip_prefix('=') {
                    return Some(value.trim().trim_matches('"').to_string());
                }
            }
        }
    }
    None
}

/// Package names in `cargo tree -p <krate> -e normal` (the crate itself excluded).
fn normal_dependencies(root: &Path, krate: &'static str) -> Result<BTreeSet<String>, TreeError> {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .args([
            "tree", "-q", "-p", krate, "-e", "normal", "--prefix", "none",
        ])
        .args(["--format", "{p}"])
        .output()
        .map_err(|source| TreeError::Spawn { krate, source })?;
    if !output.status.success() {
        return Err(TreeError::Failed {
            krate,
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        });
    }
    let text = String::from_utf8_lossy(&output.stdout);
    Ok(text
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != krate)
        .map(str::to_string)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(krate: &str) -> &'static Layer {
        match LAYERS.iter().find(|l| l.krate == krate) {
            Some(layer) => layer,
            None => panic!("no layer for {krate}"),
        }
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| (*n).to_string()).collect()
    }

    #[test]
    fn storage_backends_stand_on_the_session_crate_not_the_agent() {
        let sqlite = layer("arbor-session-sqlite");
        assert!(violations(sqlite, &set(&["arbor-ai", "arbor-session", "rusqlite"])).is_empty());
        assert_eq!(
            violations(sqlite, &set(&["arbor-agent", "arbor-ai", "reqwest"])),
            [
                "arbor-session-sqlite depends on arbor-agent (allowed: arbor-ai, arbor-session)",
                "arbor-session-sqlite pulls in reqwest (run `cargo tree -p arbor-session-sqlite -e normal -i reqwest`)",
            ]
        );
        let session = layer("arbor-session");
        assert_eq!(
            violations(session, &set(&["arbor-agent", "ratatui"])),
            [
                "arbor-session depends on arbor-agent (allowed: arbor-ai)",
                "arbor-session pulls in ratatui (run `cargo tree -p arbor-session -e normal -i ratatui`)",
            ]
        );
        assert!(violations(
            layer("arbor-coding-agent"),
            &set(&["arbor-session", "ratatui"])
        )
        .is_empty());
    }

    #[test]
    fn the_tools_stand_on_the_agent_not_the_app() {
        let tools = layer("arbor-tools");
        assert!(violations(
            tools,
            &set(&["arbor-ai", "arbor-session", "arbor-agent", "globset"])
        )
        .is_empty());
        assert_eq!(
            violations(tools, &set(&["arbor-agent", "arbor-coding-agent", "crossterm"])),
            [
                "arbor-tools depends on arbor-coding-agent (allowed: arbor-ai, arbor-session, arbor-agent)",
                "arbor-tools pulls in crossterm (run `cargo tree -p arbor-tools -e normal -i crossterm`)",
            ]
        );
    }

    #[test]
    fn a_crate_missing_from_the_workspace_is_reported_not_fatal() {
        let dir = match tempfile::tempdir() {
            Ok(dir) => dir,
            Err(e) => panic!("tempdir: {e}"),
        };
        let problems = check(dir.path());
        assert_eq!(problems.len(), LAYERS.len(), "{problems:?}");
        assert!(problems.iter().any(|p| p.starts_with(
            "arbor-session is not a crate of this workspace (no crates/*/Cargo.toml names it)"
        )));
    }

    #[test]
    fn package_names_come_from_the_package_table() {
        let manifest = "[package]\nname = \"arbor-session\"\n\n[dependencies]\nname = \"no\"\n";
        assert_eq!(package_name(manifest).as_deref(), Some("arbor-session"));
        assert_eq!(package_name("[workspace]\nname = \"x\"\n"), None);
    }
}
