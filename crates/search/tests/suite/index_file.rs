//! The index file: private, rebuilt when of another schema or broken, never needed.

use std::os::unix::fs::PermissionsExt;

use arbor_search::{SearchIndex, SCHEMA_VERSION};

use super::support::Sessions;

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_index_is_private_and_beside_the_sessions() {
    let s = Sessions::new();
    let mut f = s.session("019a0000-0000-7000-8000-0000000000d1");
    f.user("d1", "the lemur");
    assert_eq!(s.search("lemur").hits.len(), 1);
    let path = s.index_path();
    assert_eq!(path.parent(), Some(s.dir.path()));
    assert_eq!(mode(&path), 0o600);
    let wal = path.with_file_name(format!("{}-wal", arbor_search::INDEX_FILE_NAME));
    if wal.exists() {
        assert_eq!(mode(&wal), 0o600);
    }
    let nested = s.dir.path().join("new-home").join("search-index.sqlite");
    SearchIndex::open(&nested).unwrap();
    assert_eq!(mode(nested.parent().unwrap()), 0o700);
}

#[test]
fn an_index_of_another_schema_is_rebuilt() {
    let s = Sessions::new();
    let mut f = s.session("019a0000-0000-7000-8000-0000000000d2");
    f.user("d1", "the tapir");
    assert_eq!(s.search("tapir").hits.len(), 1);
    {
        let conn = rusqlite_like_open(&s.index_path());
        conn.execute_batch(&format!("PRAGMA user_version = {};", SCHEMA_VERSION + 7))
            .unwrap();
    }
    let out = s.search("tapir");
    assert_eq!(out.hits.len(), 1);
    assert_eq!(out.report.indexed, 1, "rebuilt from the files");
}

#[test]
fn a_garbage_index_file_is_replaced_with_a_warning() {
    let s = Sessions::new();
    let mut f = s.session("019a0000-0000-7000-8000-0000000000d3");
    f.user("d1", "the pangolin");
    std::fs::write(s.index_path(), vec![0x5a; 8192]).unwrap();
    let out = s.search("pangolin");
    assert_eq!(out.hits.len(), 1);
    assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
    assert!(
        out.warnings[0].ends_with("rebuilding the search index"),
        "{:?}",
        out.warnings
    );
}

/// Opens the index file with SQLite directly, as another program would.
fn rusqlite_like_open(path: &std::path::Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}
