//! `arbor session ... --store postgres://…` and `import`/`export`: the same commands on a
//! PostgreSQL session store (`arbor-session-postgres`). Sessions there are named by full id or
//! location (`postgres://user@host/db#<id>`); the connection string's password never appears in
//! output or errors (the store shows `postgres://user@host/db`). `ARBOR_POSTGRES_SCHEMA` picks
//! the schema (default `arbor`), so several stores can share one database;
//! `ARBOR_POSTGRES_SSLROOTCERT` names a PEM CA file for TLS (`tls-rustls` builds).

use std::path::{Path, PathBuf};

use arbor_agent::session::{
    CreateOptions, ForkOptions, ForkPosition, SessionRepository, SessionStorage,
};
use arbor_agent::SessionError;
use arbor_session_postgres::{
    is_postgres_url, ListQuery, PostgresOptions, PostgresRepository, PostgresStorage,
};

use crate::cli::AgentArgs;

use crate::error::{CliError, Result};
use crate::store::{loaded, write_projected_json, Listing, LoadedContext};

/// Connects to the store named by `url` (which must be `postgres://` or `postgresql://`).
pub async fn connect(url: &str) -> Result<PostgresRepository> {
    if !is_postgres_url(url) {
        return Err(CliError::Usage(
            "--store/--session-store/--to/--from and the sessionStore setting take a PostgreSQL \
             connection string (postgres://user@host/db)"
                .into(),
        ));
    }
    let mut options = PostgresOptions {
        schema: schema(),
        ..PostgresOptions::default()
    };
    // A private CA for TLS stores (needs a build with the `tls-rustls` feature).
    if let Some(ca) = std::env::var_os("ARBOR_POSTGRES_SSLROOTCERT").filter(|s| !s.is_empty()) {
        options.tls_root_cert = Some(PathBuf::from(ca));
    }
    Ok(PostgresRepository::connect_with(url, options).await?)
}

/// The schema the store's tables are in: `ARBOR_POSTGRES_SCHEMA`, else the default (`arbor`).
pub fn schema() -> String {
    std::env::var("ARBOR_POSTGRES_SCHEMA")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| PostgresOptions::default().schema)
}

async fn open(repo: &PostgresRepository, session: &str) -> Result<PostgresStorage> {
    Ok(repo.open_read_only(session).await?)
}

/// `context --json` for a stored session, streamed into `out` (DECISIONS §25.100).
pub async fn write_context_json<W: std::io::Write + Send>(
    url: &str,
    session: &str,
    leaf: Option<&str>,
    out: W,
) -> Result<W> {
    let repo = connect(url).await?;
    write_projected_json(&open(&repo, session).await?, leaf, out).await
}

pub async fn load_context(url: &str, session: &str, leaf: Option<&str>) -> Result<LoadedContext> {
    let repo = connect(url).await?;
    loaded(&open(&repo, session).await?, leaf).await
}

pub async fn tree_view(url: &str, session: &str) -> Result<crate::render::tree::TreeView> {
    let repo = connect(url).await?;
    crate::store::tree_view_of(open(&repo, session).await?).await
}

pub async fn list(url: &str, cwd: &str, all: bool) -> Result<Listing> {
    let repo = connect(url).await?;
    let result = if all {
        repo.list().await?
    } else {
        repo.list_cwd(cwd).await?
    };
    let scanned = if all {
        repo.server().to_owned()
    } else {
        format!("{} for {cwd}", repo.server())
    };
    Ok(Listing {
        sessions: result.sessions,
        skipped: result.skipped,
        scanned,
    })
}

/// Forks inside the store; returns the new id and location.
pub async fn fork(
    url: &str,
    session: &str,
    entry: Option<&str>,
    position: ForkPosition,
) -> Result<(String, String)> {
    let repo = connect(url).await?;
    let entry_id = match (entry, position) {
        (Some(id), _) => Some(id.to_owned()),
        (None, ForkPosition::At) => match open(&repo, session).await?.leaf_id().await? {
            Some(leaf) => Some(leaf),
            None => {
                return Err(CliError::Usage(format!(
                    "session {session} has no entries to fork at"
                )))
            }
        },
        (None, ForkPosition::Before) => None,
    };
    let forked = repo
        .fork(session, {
            let mut o = ForkOptions::default();
            o.entry_id = entry_id;
            o.position = position;
            o
        })
        .await?;
    Ok((forked.id().to_owned(), forked.location()))
}

/// One imported file: `(file, session id, entries)`.
pub async fn import(url: &str, files: &[PathBuf]) -> Result<Vec<(PathBuf, String, u64)>> {
    let repo = connect(url).await?;
    let mut out = Vec::with_capacity(files.len());
    for file in files {
        let imported = repo.import_jsonl(file).await?;
        out.push((file.clone(), imported.id, imported.entries));
    }
    Ok(out)
}

pub async fn export(url: &str, session: &str, out: &Path) -> Result<u64> {
    let repo = connect(url).await?;
    Ok(repo.export_jsonl(session, out).await?)
}

/// Opens the store session named by id or location for the agent to write to (RPC
/// `switch_session` with a store, DECISIONS §34.22).
pub async fn open_for_writing(url: &str, session: &str) -> Result<PostgresStorage> {
    Ok(connect(url).await?.open(session).await?)
}

/// The agent's session in a PostgreSQL store (`--session-store` / `sessionStore`, DECISIONS
/// §24.13): the same choices as with session files, with sessions named by id or location.
/// Returns the writable storage and whether it existed before this run.
pub async fn agent_session(a: &AgentArgs, url: &str, cwd: &str) -> Result<(PostgresStorage, bool)> {
    let repo = connect(url).await?;
    let create = |id: Option<String>| {
        let mut o = CreateOptions::new(cwd.to_owned());
        o.id = id;
        o
    };
    if let Some(src) = &a.fork {
        let forked = repo
            .fork(src, {
                let mut o = ForkOptions::default().with_cwd(cwd.to_owned());
                o.id = a.session_id.clone();
                o
            })
            .await?;
        return Ok((forked, true));
    }
    if let Some(s) = &a.session {
        return Ok((repo.open(s).await?, true));
    }
    if let Some(id) = &a.session_id {
        return match repo.open(id).await {
            Ok(found) => Ok((found, true)),
            Err(SessionError::NotFound(_)) => {
                crate::notices::info(format!(
                    "No project session found with id '{id}'; creating a new session with that id."
                ));
                Ok((repo.create(create(Some(id.clone()))).await?, false))
            }
            Err(e) => Err(e.into()),
        };
    }
    if a.continue_ || a.resume {
        let newest = repo
            .list_page(&ListQuery {
                cwd: Some(cwd.to_owned()),
                limit: Some(1),
                ..ListQuery::default()
            })
            .await?
            .result
            .sessions
            .into_iter()
            .next();
        return match newest {
            Some(info) => Ok((repo.open(&info.id).await?, true)),
            None if a.resume => Err(CliError::NoSessionSelected),
            None => Ok((repo.create(create(None)).await?, false)),
        };
    }
    Ok((repo.create(create(None)).await?, false))
}
