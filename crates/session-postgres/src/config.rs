//! Connection settings: the connection string, the schema the tables live in, timeouts, and the
//! password-free name used in every message and location.

use std::time::Duration;

use arbor_session::error::SessionError;

type Result<T> = std::result::Result<T, SessionError>;

/// How hard each append is pushed to stable storage (the server's `synchronous_commit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// Appends commit without waiting for the server's WAL flush (`synchronous_commit = off`).
    /// An agent crash loses nothing (the server has the commit); a server crash may lose the
    /// appends made since the last `save_point`, never half an append. `save_point` waits for
    /// the flush (one WAL flush per turn). DECISIONS §24.5.
    #[default]
    Normal,
    /// Every append waits for the WAL flush: each successful append survives a server crash.
    Full,
}

/// Tuning for a repository.
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    /// The schema holding Arbor's tables (created on first open). Several independent stores
    /// can share one database under different schemas. Lowercase letters, digits and `_`.
    pub schema: String,
    /// How each append reaches the server's disk (default: [`Synchronous::Normal`]).
    pub synchronous: Synchronous,
    /// The server aborts any statement running longer (`statement_timeout`); `None` = no limit.
    pub statement_timeout: Option<Duration>,
    /// How long `open`/`create` wait for another holder's writer lock to go away (a handle being
    /// dropped releases it as its connection closes) before refusing.
    pub lock_wait: Duration,
    /// Connections of the shared read pool (writers hold one connection each besides).
    pub pool_size: usize,
    /// Reported to the server as `application_name` (visible in `pg_stat_activity`).
    pub application_name: String,
    /// How long a new connection may take.
    pub connect_timeout: Duration,
    /// PEM file of the certificates that TLS connections trust instead of the webpki roots
    /// (a private CA). Needs the `tls-rustls` feature. DECISIONS §24.15.
    pub tls_root_cert: Option<std::path::PathBuf>,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            schema: "arbor".into(),
            synchronous: Synchronous::Normal,
            statement_timeout: Some(Duration::from_secs(30)),
            lock_wait: Duration::from_millis(500),
            pool_size: 8,
            application_name: "arbor".into(),
            connect_timeout: Duration::from_secs(10),
            tls_root_cert: None,
        }
    }
}

/// Whether `s` names a PostgreSQL store (`postgres://` or `postgresql://`).
pub fn is_postgres_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// A parsed connection string plus its display form without password.
#[derive(Clone)]
pub(crate) struct Target {
    pub config: tokio_postgres::Config,
    /// `postgres://user@host:port/db` (no password, no query), for messages and locations.
    pub display: String,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display)
    }
}

impl Target {
    pub(crate) fn parse(url: &str, options: &PostgresOptions) -> Result<Target> {
        check_schema(&options.schema)?;
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
            // The parser's message never quotes the input; ours names only the scheme.
            SessionError::Storage(format!("invalid PostgreSQL connection string: {e}"))
        })?;
        let display = display(&config);
        let mut extra = format!("-c search_path={}", options.schema);
        if let Some(t) = options.statement_timeout {
            extra.push_str(&format!(" -c statement_timeout={}", t.as_millis().max(1)));
        }
        let opts = match config.get_options() {
            Some(o) if !o.is_empty() => format!("{o} {extra}"),
            _ => extra,
        };
        config.options(&opts);
        config.application_name(&options.application_name);
        config.connect_timeout(options.connect_timeout);
        Ok(Target { config, display })
    }
}

fn check_schema(schema: &str) -> Result<()> {
    let ok = !schema.is_empty()
        && schema.len() <= 63
        && schema
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !schema.starts_with(|c: char| c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(SessionError::Storage(format!(
            "invalid schema name {schema:?}: use lowercase letters, digits and _ (not first)"
        )))
    }
}

/// `postgres://user@host[:port]/db`, hosts joined by commas; never the password.
fn display(config: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let host = match h {
                Host::Tcp(name) => name.clone(),
                #[cfg(unix)]
                Host::Unix(path) => path.display().to_string(),
            };
            match config.get_ports().get(i).or(config.get_ports().first()) {
                Some(port) if *port != 5432 => format!("{host}:{port}"),
                _ => host,
            }
        })
        .collect();
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or("");
    format!("postgres://{user}{}/{db}", hosts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_never_shows_the_password() {
        let o = PostgresOptions::default();
        let t = Target::parse("postgres://alice:s3cret@db.example:5433/agents", &o).unwrap();
        assert_eq!(t.display, "postgres://alice@db.example:5433/agents");
        assert!(!format!("{t:?}").contains("s3cret"));
        let t = Target::parse(
            "postgresql:///postgres?host=/tmp/x&user=bob&password=pw",
            &o,
        )
        .unwrap();
        assert_eq!(t.display, "postgres://bob@/tmp/x/postgres");
    }

    #[test]
    fn bad_inputs_are_named() {
        let o = PostgresOptions::default();
        let e = Target::parse("postgres://u:pw@h/db?sslmode=bogus", &o).unwrap_err();
        assert!(!e.to_string().contains("pw"), "{e}");
        let bad = PostgresOptions {
            schema: "Bad-Name".into(),
            ..Default::default()
        };
        let e = Target::parse("postgres://h/db", &bad).unwrap_err();
        assert!(e.to_string().contains("Bad-Name"), "{e}");
    }
}
