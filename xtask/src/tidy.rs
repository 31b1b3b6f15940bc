//! `cargo xtask tidy`: structural rules no compiler checks.
//!
//! - Layering: arbor-ai ← arbor-agent ← {arbor-session-sqlite, arbor-session-postgres,
//!   arbor-coding-agent}. No crate
//!   depends on one above it, the HTTP stack (reqwest, hyper, h2, rustls) stays out of the
//!   storage and agent crates, and terminal crates (ratatui, crossterm) stay in the app.
//!   arbor-checkpoint depends on no workspace crate.
//! - Citations: every `DECISIONS §x.y` in the code names an item of docs/DECISIONS.md.
//! - Typed errors: no `pub fn` in a crate's `src/` returns `Result<_, String>` (DECISIONS §8.9).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
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
    // Workspace checkpoints: git plumbing and a file store, nothing of sessions or models.
    ("arbor-checkpoint", &[], &[HTTP_CRATES, TERMINAL_CRATES]),
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
            "arbor-checkpoint",
        ],
        &[],
    ),
];

/// Runs every check; returns the problems found (empty = tidy).
pub fn run(root: &Path) -> Vec<String> {
    let mut problems = layering(root);
    problems.extend(citations(root));
    problems.extend(string_errors(root));
    problems
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

/// Item numbers docs/DECISIONS.md defines: `## 3. Title` gives `3`, `**3.5**` or `3.5 ` at a
/// line start (list items, `### 3.5`) gives `3.5`.
fn decision_items(text: &str) -> BTreeSet<String> {
    let mut items = BTreeSet::new();
    for line in text.lines() {
        let line = line
            .trim_start_matches('#')
            .trim_start_matches(['-', '*', ' '])
            .trim_start_matches("**");
        let number: String = line
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let number = number.trim_end_matches('.');
        if !number.is_empty() && number.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            items.insert(number.to_string());
        }
    }
    items
}

/// `§x.y` numbers cited right after `DECISIONS` in `text` (`DECISIONS §3.5`, `§3.5/§3.6`).
fn cited(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("DECISIONS §") {
        rest = &rest[at + "DECISIONS ".len()..];
        // One citation may name several items: `§3.5, §3.6` or `§3.5/§3.6`.
        let mut tail = rest;
        while let Some(after) = tail.strip_prefix('§') {
            let number: String = after
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let number = number.trim_end_matches('.').to_string();
            if !number.is_empty() {
                out.push(number.clone());
            }
            tail = &after[number.len()..];
            tail = tail
                .strip_prefix(", ")
                .or_else(|| tail.strip_prefix('/'))
                .or_else(|| tail.strip_prefix(" and "))
                .unwrap_or("");
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn citations(root: &Path) -> Vec<String> {
    let decisions = root.join("docs/DECISIONS.md");
    let items = match std::fs::read_to_string(&decisions) {
        Ok(text) => decision_items(&text),
        Err(e) => return vec![format!("cannot read {}: {e}", decisions.display())],
    };
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    rust_files(&root.join("xtask"), &mut files);
    files.sort();
    let mut problems = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for (index, line) in text.lines().enumerate() {
            for number in cited(line) {
                if !items.contains(&number) {
                    problems.push(format!(
                        "citation: {}:{}: DECISIONS §{number} is not an item of docs/DECISIONS.md",
                        file.strip_prefix(root).unwrap_or(&file).display(),
                        index + 1
                    ));
                }
            }
        }
    }
    problems
}

/// The signature of each `pub fn` (not `pub(crate)`) in `text`, with its 1-based line: the
/// text from `pub` up to the body's `{` or a `;`.
fn public_signatures(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let t = t.strip_prefix("pub ").unwrap_or("");
        let t = t.strip_prefix("async ").unwrap_or(t);
        if !t.starts_with("fn ") {
            continue;
        }
        let mut sig = String::new();
        for l in &lines[i..] {
            sig.push_str(l.trim());
            sig.push(' ');
            if l.contains('{') || l.trim_end().ends_with(';') {
                break;
            }
        }
        out.push((i + 1, sig));
    }
    out
}

/// Whether a signature's return type is `Result<…, String>`.
fn returns_string_error(sig: &str) -> bool {
    let Some((_, ret)) = sig.rsplit_once("->") else {
        return false;
    };
    let ret = ret.split(" where ").next().unwrap_or(ret);
    ret.contains("Result<") && ret.replace(' ', "").contains(",String>")
}

fn string_errors(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    files.sort();
    let mut problems = Vec::new();
    for file in files {
        let rel = file.strip_prefix(root).unwrap_or(&file);
        // Library and binary code only: tests, benches and examples may use plain strings.
        let in_src = rel
            .components()
            .nth(2)
            .is_some_and(|c| c.as_os_str() == "src");
        if !in_src {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        // Unit-test modules sit at the end of a file; stop reading there.
        let code = text.split("#[cfg(test)]").next().unwrap_or(&text);
        for (line, sig) in public_signatures(code) {
            if returns_string_error(&sig) {
                problems.push(format!(
                    "typed errors: {}:{line}: a public function returns Result<_, String> (DECISIONS §8.9)",
                    rel.display()
                ));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_errors_are_found_in_public_signatures_only() {
        let text =
            "pub fn a() -> Result<u8, String> {\n}\npub(crate) fn b() -> Result<u8, String> {}\n\
                    pub async fn c(\n    x: u8,\n) -> Result<Vec<String>, Error> {\n}\n\
                    pub fn d<T>(f: impl Fn() -> Result<T, String>) -> Result<T, AiError> {}\n";
        let flagged: Vec<usize> = public_signatures(text)
            .into_iter()
            .filter(|(_, sig)| returns_string_error(sig))
            .map(|(line, _)| line)
            .collect();
        assert_eq!(flagged, vec![1]);
    }

    #[test]
    fn citations_are_read_with_their_siblings() {
        assert_eq!(cited("see DECISIONS §3.5."), vec!["3.5"]);
        assert_eq!(cited("DECISIONS §3.5/§3.6 and"), vec!["3.5", "3.6"]);
        assert_eq!(cited("(DECISIONS §12, §9.3)"), vec!["12", "9.3"]);
        assert!(cited("ai-layer §6.3").is_empty());
    }

    #[test]
    fn items_are_headings_and_numbered_entries() {
        let items =
            decision_items("## 3. Storage\n**3.5** Lines…\n### 9.3 Ids\n- 9.4 more\nText 7.1 no");
        let want: BTreeSet<String> = ["3", "3.5", "9.3", "9.4"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        assert_eq!(items, want);
    }
}
