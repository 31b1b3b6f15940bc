//! The SQL behind every storage and repository operation runs on a [`Conn`]: a connection
//! (or transaction) with the database path its errors name. Everything runs with the connection
//! held (see `db.rs`); writes are one `BEGIN IMMEDIATE` transaction each ([`immediate`]), so a
//! failure anywhere rolls back the entry row and the `session_state` update together. The
//! methods are filed by concern: `sessions.rs`, `append.rs`, `reads.rs`, `paths.rs`.

use std::path::Path;

use arbor_session::error::SessionError;
use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::db::Db;
use crate::error::sql_error;

type Result<T> = std::result::Result<T, SessionError>;

/// The identity of one session inside the database.
#[derive(Debug, Clone)]
pub(crate) struct Sid {
    pub sid: i64,
    pub id: String,
}

/// A connection (or transaction) bound to the database path, for error messages.
pub(crate) struct Conn<'a> {
    pub conn: &'a Connection,
    pub path: &'a Path,
}

impl<'a> Conn<'a> {
    pub(crate) fn new(conn: &'a Connection, path: &'a Path) -> Self {
        Self { conn, path }
    }

    pub(crate) fn err(&self, context: &str) -> impl Fn(rusqlite::Error) -> SessionError + '_ {
        let context = context.to_owned();
        move |e| sql_error(self.path, &context, e)
    }
}

/// Starts the one transaction a write runs in, after checking the file is still the one opened.
pub(crate) fn immediate<'c>(conn: &'c mut Connection, db: &Db) -> Result<Transaction<'c>> {
    db.check_file()?;
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| sql_error(db.path(), "cannot start transaction", e))
}

pub(crate) fn commit(tx: Transaction<'_>, path: &Path) -> Result<()> {
    tx.commit()
        .map_err(|e| sql_error(path, "cannot commit transaction", e))
}

/// A count as an INTEGER column value (saturating; counts never get near it).
pub(crate) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The error for a session whose row disappeared under an open handle.
pub(crate) fn gone(s: &Sid) -> SessionError {
    SessionError::NotFound(format!("Session not found: {} (it was deleted)", s.id))
}
