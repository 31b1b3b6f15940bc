//! The shared fixture folder: `shared/` beside the repository checkout, never copied into it.

use std::path::{Path, PathBuf};

/// `shared/`: `ARBOR_SHARED_DIR` when set, otherwise the nearest ancestor of this crate that
/// holds `shared/fixtures` (the checkout's parent in CI and on developer machines).
///
/// # Panics
/// When no such folder exists: tests that need fixtures cannot run without them.
pub fn shared_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ARBOR_SHARED_DIR") {
        return PathBuf::from(dir);
    }
    let mut dir: &Path = Path::new(env!("CARGO_MANIFEST_DIR"));
    loop {
        let candidate = dir.join("shared");
        if candidate.join("fixtures").is_dir() {
            return candidate;
        }
        match dir.parent() {
            Some(parent) => dir = parent,
            None => panic!(
                "shared/fixtures not found above {}; set ARBOR_SHARED_DIR",
                env!("CARGO_MANIFEST_DIR")
            ),
        }
    }
}

/// Every `*.jsonl` in `shared/fixtures/<sub>`, sorted by name.
///
/// # Panics
/// When the folder cannot be read or holds no session files.
pub fn fixture_files(sub: &str) -> Vec<PathBuf> {
    let dir = shared_dir().join("fixtures").join(sub);
    let entries =
        std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {}", dir.display());
    files
}

/// One fixture file, `shared/fixtures/<sub>/<name>`.
///
/// # Panics
/// When the file does not exist.
pub fn fixture(sub: &str, name: &str) -> PathBuf {
    let path = shared_dir().join("fixtures").join(sub).join(name);
    assert!(path.is_file(), "missing fixture {}", path.display());
    path
}
