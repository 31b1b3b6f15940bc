//! rusqlite failures as session errors, with the driver's error kept as the source.

use std::path::Path;

use arbor_session::error::SessionError;
use rusqlite::ErrorCode;

/// Maps a rusqlite error to the session error model; lock contention gets its own message
/// because it is the one failure a user can act on (another process is writing).
pub(crate) fn sql_error(path: &Path, context: &str, e: rusqlite::Error) -> SessionError {
    let message = match &e {
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) =>
        {
            format!(
                "{context}: session database {} is locked by another writer",
                path.display()
            )
        }
        rusqlite::Error::SqliteFailure(f, _) if f.code == ErrorCode::NotADatabase => {
            format!("{context}: {} is not a SQLite database", path.display())
        }
        _ => format!("{context}: {}", path.display()),
    };
    SessionError::backend(message, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_error_is_the_source_and_the_text_names_the_file() {
        let e = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        );
        let err = sql_error(Path::new("/tmp/s.db"), "append", e);
        assert_eq!(err.code(), "storage");
        let text = err.to_string();
        assert!(
            text.starts_with(
                "storage error: append: session database /tmp/s.db is locked by another writer ("
            ),
            "{text}"
        );
        let source = std::error::Error::source(&err).expect("source kept");
        assert!(source.downcast_ref::<rusqlite::Error>().is_some());
    }
}
