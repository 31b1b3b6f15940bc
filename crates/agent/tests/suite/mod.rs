//! Integration tests, one module per topic, plus shared helpers.

mod agreement;
mod conformance_jsonl;
mod conformance_memory;
mod context_support;
mod projection;
mod proptests;
mod roundtrip;
mod session;
mod store_jsonl;

use std::path::{Path, PathBuf};

/// The shared fixture folder (`shared/` beside the repository checkout). `ARBOR_SHARED_DIR`
/// overrides; otherwise the nearest ancestor of this crate holding `shared/fixtures` wins, which
/// also finds it from a worktree nested elsewhere.
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

/// Every `*.jsonl` in `shared/fixtures/<sub>`, sorted.
pub fn fixture_files(sub: &str) -> Vec<PathBuf> {
    let dir = shared_dir().join("fixtures").join(sub);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {}", dir.display());
    files
}
