//! The one error type of `arbor-search`.

use std::path::PathBuf;

/// Why the index could not be opened, refreshed or queried. A caller treats every one of
/// these as "search is unavailable right now"; nothing else in Arbor depends on the index
/// (DECISIONS §34.6).
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("search index {}: {what}", path.display())]
    Sqlite {
        path: PathBuf,
        what: &'static str,
        #[source]
        source: rusqlite::Error,
    },
    #[error("search index {}: {what}", path.display())]
    Io {
        path: PathBuf,
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("search: {0}")]
    Query(String),
}

pub type Result<T, E = SearchError> = std::result::Result<T, E>;

/// Wraps a SQLite error with the index path and the step that failed.
pub(crate) fn sql<'a>(
    path: &'a std::path::Path,
    what: &'static str,
) -> impl Fn(rusqlite::Error) -> SearchError + 'a {
    move |source| SearchError::Sqlite {
        path: path.to_owned(),
        what,
        source,
    }
}

/// Wraps an I/O error with the path and the step that failed.
pub(crate) fn io<'a>(
    path: &'a std::path::Path,
    what: &'static str,
) -> impl Fn(std::io::Error) -> SearchError + 'a {
    move |source| SearchError::Io {
        path: path.to_owned(),
        what,
        source,
    }
}
