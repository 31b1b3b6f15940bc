//! Connections: a shared pool for reads and short writes, plus one dedicated connection per
//! open writer (it holds the session's advisory lock, DECISIONS §24.3). Error mapping lives here
//! so every message names the server without its password.

use std::sync::Arc;

use arbor_session::error::SessionError;
use deadpool_postgres::{ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres::error::SqlState;
use tokio_postgres::Client;

use crate::config::{PostgresOptions, Synchronous, Target};
use crate::connector::Connector;

type Result<T> = std::result::Result<T, SessionError>;

/// One repository's connection state.
pub(crate) struct Db {
    pub target: Target,
    pub options: PostgresOptions,
    connector: Connector,
    pool: Pool,
}

impl Db {
    pub(crate) async fn open(url: &str, options: PostgresOptions) -> Result<Arc<Db>> {
        let target = Target::parse(url, &options)?;
        let connector = Connector::new(&target, &options)?;
        let manager = connector.manager(
            target.config.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size.max(1))
            .build()
            .map_err(|e| {
                SessionError::Storage(format!(
                    "cannot set up connections to {}: {e}",
                    target.display
                ))
            })?;
        Ok(Arc::new(Db {
            target,
            options,
            connector,
            pool,
        }))
    }

    /// A pooled connection (reads, repository writes).
    pub(crate) async fn conn(&self) -> Result<Object> {
        self.pool.get().await.map_err(|e| {
            let detail = match e {
                deadpool_postgres::PoolError::Backend(e) => describe(&e),
                other => other.to_string(),
            };
            SessionError::Storage(format!(
                "cannot connect to PostgreSQL at {}: {detail}",
                self.target.display
            ))
        })
    }

    /// A new connection outside the pool, for a writer: its lifetime is the lock's.
    pub(crate) async fn dedicated(&self) -> Result<Client> {
        let mut config = self.target.config.clone();
        if self.options.synchronous == Synchronous::Normal {
            let opts = format!(
                "{} -c synchronous_commit=off",
                config.get_options().unwrap_or("")
            );
            config.options(opts.trim_start());
        }
        // When the server goes away, the next use of the client reports the closed connection
        // and the writer reconnects.
        self.connector.connect(&config).await.map_err(|e| {
            SessionError::Storage(format!(
                "cannot connect to PostgreSQL at {}: {}",
                self.target.display,
                describe(&e)
            ))
        })
    }

    pub(crate) fn err(
        &self,
        context: &str,
        e: impl std::borrow::Borrow<tokio_postgres::Error>,
    ) -> SessionError {
        pg_error(&self.target.display, context, e.borrow())
    }
}

/// The server's message (with its SQLSTATE) or the client's, never the connection string.
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut s = format!("{} (SQLSTATE {})", db.message(), db.code().code());
            if let Some(d) = db.detail() {
                s.push_str(&format!("; {d}"));
            }
            s
        }
        None => match std::error::Error::source(e) {
            Some(src) => format!("{e}: {src}"),
            None => e.to_string(),
        },
    }
}

pub(crate) fn pg_error(server: &str, context: &str, e: &tokio_postgres::Error) -> SessionError {
    let what = describe(e);
    if e.code() == Some(&SqlState::QUERY_CANCELED) {
        return SessionError::Storage(format!(
            "{context}: PostgreSQL at {server} cancelled the statement (statement timeout): {what}"
        ));
    }
    SessionError::Storage(format!("{context}: PostgreSQL at {server}: {what}"))
}

/// True when the error means the connection is gone (server restart, network), not that the
/// statement was refused.
pub(crate) fn is_connection_loss(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.code() {
        Some(c) => {
            *c == SqlState::ADMIN_SHUTDOWN
                || *c == SqlState::CRASH_SHUTDOWN
                || *c == SqlState::CANNOT_CONNECT_NOW
                || c.code().starts_with("08")
        }
        // No SQLSTATE: an I/O or protocol failure of the connection itself.
        None => e.as_db_error().is_none(),
    }
}
