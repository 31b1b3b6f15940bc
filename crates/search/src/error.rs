//! The one error type of `arbor-search`.

use std::path::PathBuf;

/// Why the index could not be opened, refreshed or queried. A caller treats every one of
/// these as "search is unavailable right now"; nothing else in Arbor depends on the index
/// (DECISIONS §34.6).
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// SQLite refused a step (opening, migrating, writing or querying the index).
    #[error("search index {}: {what}", path.display())]
    Sqlite {
        /// The index file.
        path: PathBuf,
        /// The step that failed, as a phrase (`cannot search`, ...).
        what: &'static str,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The filesystem refused a step on the index itself (creating its directory or file,
    /// removing an old index); unreadable session files are warnings, not errors.
    #[error("search index {}: {what}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The step that failed, as a phrase.
        what: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The query itself is unusable (no word to search for, a `since` that is not a date); the
    /// text says what to change.
    #[error("search: {0}")]
    Query(String),
}

/// The crate's result type, [`SearchError`] by default.
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
