//! `cargo xtask tidy`: structural rules no compiler checks. Each check lives in its own module
//! and reports one line per problem:
//!
//! - [`layering`]: which workspace crate may depend on which, and the HTTP and terminal stacks
//!   kept out of the crates below the app.
//! - [`module_circles`]: no files of a crate import each other in a loop.
//! - [`file_length`]: no source file over 800 lines before its `#[cfg(test)]` module.
//! - [`string_errors`]: no `Result<_, String>` in library code (DECISIONS §8.9).
//! - [`citations`]: every `DECISIONS §x.y` names an item of docs/DECISIONS.md, and every document
//!   a comment cites is in the repository.

mod citations;
mod file_length;
mod imports;
mod layering;
mod module_circles;
mod module_tree;
mod rust_source;
mod string_errors;

use std::path::{Path, PathBuf};

/// The problems one check found (none: that rule holds).
pub struct CheckReport {
    pub check: &'static str,
    pub problems: Vec<String>,
}

/// One check: reads the repository at the given root, returns its problems.
type Check = fn(&Path) -> Vec<String>;

/// Runs every check, in a fixed order.
pub fn run(root: &Path) -> Vec<CheckReport> {
    let checks: [(&'static str, Check); 5] = [
        ("layering", layering::check),
        ("module circles", module_circles::check),
        ("file length", file_length::check),
        ("typed errors", string_errors::check),
        ("citations", citations::check),
    ];
    checks
        .into_iter()
        .map(|(check, run)| CheckReport {
            check,
            problems: run(root),
        })
        .collect()
}

/// The crates whose code the source checks read: each folder of `crates/`, then `xtask`.
fn crate_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.join("Cargo.toml").is_file())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    let xtask = root.join("xtask");
    if xtask.join("Cargo.toml").is_file() {
        dirs.push(xtask);
    }
    dirs
}

/// Every `.rs` file under `dir` (build output left out), sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let start = out.len();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "target") {
                    pending.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out[start..].sort();
}

/// `path` from the repository root, with `/` separators, for messages.
fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}
