//! Test data: `testdata/` at the workspace root, committed with the code so a fresh clone needs
//! nothing beside it (`testdata/README.md` says where each file came from).

use std::path::{Path, PathBuf};

/// `testdata/` of this checkout.
pub fn testdata_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// A Node script under `crates/test-support/pi/` that asks the published pi package (`PI_PKG`)
/// for its answer; the optional pi-comparison tests run it when node and pi are installed.
pub fn pi_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("pi").join(name)
}

/// Every `*.jsonl` in `testdata/<sub>`, sorted by name.
///
/// # Panics
/// When the folder cannot be read or holds no session files.
pub fn fixture_files(sub: &str) -> Vec<PathBuf> {
    let dir = testdata_dir().join(sub);
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

/// One fixture file, `testdata/<sub>/<name>`.
///
/// # Panics
/// When the file does not exist.
pub fn fixture(sub: &str, name: &str) -> PathBuf {
    let path = testdata_dir().join(sub).join(name);
    assert!(path.is_file(), "missing fixture {}", path.display());
    path
}
