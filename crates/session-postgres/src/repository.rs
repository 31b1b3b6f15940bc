//! `PostgresRepository`: the sessions of one PostgreSQL store (a database plus schema).

use std::sync::Arc;

use arbor_session::error::{Result, SessionError};
use arbor_session::{CreateOptions, ForkOptions, ListResult, SessionHeader, SessionRepository};
use async_trait::async_trait;

use crate::config::PostgresOptions;
use crate::db::Db;
use crate::listing::{ListPage, ListQuery};
use crate::ops::Conn;
use crate::sid::{gone, Sid};
use crate::storage::{location, PostgresStorage};
use arbor_session::MaterializedState;

/// Sessions stored in PostgreSQL. Cloning shares the connection pool. `create`, `open` and
/// `fork` return writable handles (each holds the session's writer lock on its own connection);
/// [`PostgresRepository::open_read_only`] takes no lock.
#[derive(Clone)]
pub struct PostgresRepository {
    db: Arc<Db>,
}

impl std::fmt::Debug for PostgresRepository {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresRepository")
            .field("server", &self.db.target.display)
            .field("schema", &self.db.options.schema)
            .finish()
    }
}

impl PostgresRepository {
    /// Connects with default options and migrates the schema to the current version.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, PostgresOptions::default()).await
    }

    /// Like [`connect`](Self::connect), with `options` instead of the defaults (another schema,
    /// durability, timeouts, pool size).
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<Self> {
        Ok(Self {
            db: connect(url, options).await?,
        })
    }

    /// The server as shown in messages and locations (`postgres://user@host/db`, no password).
    pub fn server(&self) -> &str {
        &self.db.target.display
    }

    /// The schema this repository's tables live in ([`PostgresOptions::schema`]).
    pub fn schema(&self) -> &str {
        &self.db.options.schema
    }

    /// Accepts a session id or a location (`<server>#<id>`) of this store.
    fn session_id<'a>(&self, id_or_location: &'a str) -> Result<&'a str> {
        match id_or_location.rsplit_once('#') {
            Some((server, id)) if server == self.db.target.display => Ok(id),
            Some((server, _)) => Err(SessionError::NotFound(format!(
                "Session not found: {id_or_location} (it belongs to {server}, not {})",
                self.db.target.display
            ))),
            None => Ok(id_or_location),
        }
    }

    /// Opens without the writer lock: reads see the writer's appends as they commit; appends
    /// are refused.
    pub async fn open_read_only(&self, id_or_location: &str) -> Result<PostgresStorage> {
        self.open_mode(id_or_location, false).await
    }

    async fn open_mode(&self, id_or_location: &str, writable: bool) -> Result<PostgresStorage> {
        let id = self.session_id(id_or_location)?;
        let (sid, header) = {
            let conn = self.db.conn().await?;
            Conn::new(&conn, &self.db).require_session(id).await?
        };
        PostgresStorage::open(Arc::clone(&self.db), sid, header, writable).await
    }

    /// Sessions newest first, one page at a time, from the materialized columns only (no
    /// payload is read): per cwd or all, optionally filtered by name / first message.
    pub async fn list_page(&self, query: &ListQuery) -> Result<ListPage> {
        let conn = self.db.conn().await?;
        let (result, next) = Conn::new(&conn, &self.db)
            .list(query, |id| location(&self.db, id))
            .await?;
        Ok(ListPage { result, next })
    }

    /// Every session of `cwd`, newest first.
    pub async fn list_cwd(&self, cwd: &str) -> Result<ListResult> {
        self.list_all(ListQuery {
            cwd: Some(cwd.to_owned()),
            ..Default::default()
        })
        .await
    }

    /// Sessions whose name or first message contains `text` (case-insensitive), newest first.
    pub async fn search(&self, text: &str) -> Result<ListResult> {
        self.list_all(ListQuery {
            search: Some(text.to_owned()),
            ..Default::default()
        })
        .await
    }

    async fn list_all(&self, mut query: ListQuery) -> Result<ListResult> {
        query.limit = None;
        query.after = None;
        Ok(self.list_page(&query).await?.result)
    }

    /// Inserts the session row for `header` (stored as `header_line`, verbatim).
    pub(crate) async fn insert_session(
        &self,
        header: &SessionHeader,
        header_line: &str,
    ) -> Result<Sid> {
        let conn = self.db.conn().await?;
        insert_session_row(&conn, &self.db, header, header_line)
            .await?
            .ok_or_else(|| already_exists(&self.db, header))
    }

    /// Creates a session from a header kept verbatim (import), returning its writable handle.
    pub(crate) async fn create_verbatim(
        &self,
        header: SessionHeader,
        header_line: &str,
    ) -> Result<PostgresStorage> {
        let sid = self.insert_session(&header, header_line).await?;
        PostgresStorage::open(Arc::clone(&self.db), sid, header, true).await
    }

    pub(crate) fn db(&self) -> &Arc<Db> {
        &self.db
    }
}

/// Opens the repository's connections and brings its schema to the current version.
async fn connect(url: &str, options: PostgresOptions) -> Result<Arc<Db>> {
    let db = Db::open(url, options).await?;
    let mut conn = db.conn().await?;
    crate::schema::migrate(&mut conn, &db).await?;
    drop(conn);
    Ok(db)
}

/// Inserts the `sessions` row of `header` (kept as `header_line`, verbatim); `None` when a
/// session with that id exists. Shared by create, fork and import, which run it on a pooled
/// connection or inside their transaction.
pub(crate) async fn insert_session_row(
    client: &impl deadpool_postgres::GenericClient,
    db: &Db,
    header: &SessionHeader,
    header_line: &str,
) -> Result<Option<Sid>> {
    let row = client
        .query_opt(
            "INSERT INTO sessions (id, cwd, created, parent_session, header)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (id) DO NOTHING RETURNING sid",
            &[
                &header.id,
                &header.cwd,
                &header.timestamp,
                &header.parent_session,
                &header_line,
            ],
        )
        .await
        .map_err(|e| db.err("cannot insert session", e))?;
    Ok(row.map(|r| Sid {
        sid: r.get(0),
        id: header.id.clone(),
    }))
}

pub(crate) fn already_exists(db: &Db, header: &SessionHeader) -> SessionError {
    SessionError::InvalidSession(format!(
        "session {} already exists in {}",
        header.id, db.target.display
    ))
}

#[async_trait]
impl SessionRepository for PostgresRepository {
    type Storage = PostgresStorage;

    async fn create(&self, opts: CreateOptions) -> Result<PostgresStorage> {
        let header = SessionHeader::create(opts.id, opts.cwd, opts.parent_session, opts.metadata)?;
        let line = header.to_json();
        self.create_verbatim(header, &line).await
    }

    async fn open(&self, id_or_location: &str) -> Result<PostgresStorage> {
        self.open_mode(id_or_location, true).await
    }

    async fn list(&self) -> Result<ListResult> {
        self.list_all(ListQuery::default()).await
    }

    /// Deletes the session row and then its entries, in one transaction (there is no foreign
    /// key to cascade since schema v3, DECISIONS §24.50). The row goes first: an append in
    /// flight holds the row until it commits, so the entry delete, a later statement with a
    /// fresh snapshot, sees that entry too, and every later append matches no row and inserts
    /// nothing. A writer still holding the session gets `not_found` on its next append.
    async fn delete(&self, id_or_location: &str) -> Result<()> {
        let id = match self.session_id(id_or_location) {
            Ok(id) => id,
            // A location in another store names nothing here: deleting it is a no-op.
            Err(SessionError::NotFound(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        let mut conn = self.db.conn().await?;
        let err = |ctx: &'static str| move |e| self.db.err(ctx, e);
        let tx = conn
            .transaction()
            .await
            .map_err(err("cannot start deleting the session"))?;
        let sid: Option<i32> = tx
            .query_opt("DELETE FROM sessions WHERE id = $1 RETURNING sid", &[&id])
            .await
            .map_err(err("cannot delete session"))?
            .map(|r| r.get(0));
        if let Some(sid) = sid {
            tx.execute("DELETE FROM entries WHERE sid = $1", &[&sid])
                .await
                .map_err(err("cannot delete the session's entries"))?;
        }
        tx.commit()
            .await
            .map_err(err("cannot commit the session's deletion"))
    }

    /// Inside the database: the rows are copied with `INSERT ... SELECT` in one repeatable-read
    /// transaction (payload text untouched, no JSON round trip through the client). A whole-tree
    /// fork copies the source's state columns; a path fork folds the copied entries' state.
    /// `parentSession` is the source's id.
    async fn fork(&self, source: &str, opts: ForkOptions) -> Result<PostgresStorage> {
        let source_id = self.session_id(source)?;
        let mut conn = self.db.conn().await?;
        let err = |ctx: &'static str| move |e| self.db.err(ctx, e);
        let (src, src_header) = Conn::new(&conn, &self.db)
            .require_session(source_id)
            .await?;
        let path = match opts.entry_id.as_deref() {
            Some(target) => Some(
                Conn::new(&conn, &self.db)
                    .fork_path(&src, target, opts.position)
                    .await?,
            ),
            None => None,
        };
        let header = SessionHeader::create(
            opts.id,
            opts.cwd.unwrap_or(src_header.cwd),
            Some(src.id.clone()),
            src_header.metadata,
        )?;
        let line = header.to_json();
        let tx = conn
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .start()
            .await
            .map_err(err("cannot start fork"))?;
        let dst = insert_session_row(&tx, &self.db, &header, &line)
            .await?
            .ok_or_else(|| already_exists(&self.db, &header))?;
        const COLUMNS: &str = "id, parent_id, type, role, target_id, timestamp, payload";
        match path {
            None => {
                tx.execute(
                    &format!(
                        "INSERT INTO entries (sid, seq, {COLUMNS})
                         SELECT $2, seq, {COLUMNS} FROM entries WHERE sid = $1"
                    ),
                    &[&src.sid, &dst.sid],
                )
                .await
                .map_err(err("cannot copy entries"))?;
                let changed = tx
                    .execute(
                        "UPDATE sessions d SET leaf_id = s.leaf_id, name = s.name,
                             entry_count = s.entry_count, message_count = s.message_count,
                             cached_tokens = s.cached_tokens, uncached_tokens = s.uncached_tokens,
                             total_tokens = s.total_tokens, cost_total = s.cost_total,
                             latest_compaction_id = s.latest_compaction_id,
                             first_message = s.first_message
                         FROM sessions s WHERE s.sid = $1 AND d.sid = $2",
                        &[&src.sid, &dst.sid],
                    )
                    .await
                    .map_err(err("cannot copy session state"))?;
                if changed != 1 {
                    return Err(gone(&src));
                }
            }
            Some(path) => {
                let seqs: Vec<i64> = path.iter().map(|(q, _)| *q).collect();
                tx.execute(
                    &format!(
                        "INSERT INTO entries (sid, seq, {COLUMNS})
                         SELECT $2, p.ord, {}
                         FROM unnest($3::bigint[]) WITH ORDINALITY AS p(seq, ord)
                         JOIN entries e ON e.sid = $1 AND e.seq = p.seq",
                        COLUMNS
                            .split(", ")
                            .map(|c| format!("e.{c}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    &[&src.sid, &dst.sid, &seqs],
                )
                .await
                .map_err(err("cannot copy entries"))?;
                let mut state = MaterializedState::default();
                for (_, e) in &path {
                    state.apply(e);
                }
                crate::state::write(&tx, &dst, &state)
                    .await
                    .map_err(err("cannot write session state"))?;
            }
        }
        tx.commit().await.map_err(err("cannot commit fork"))?;
        drop(conn);
        PostgresStorage::open(Arc::clone(&self.db), dst, header, true).await
    }
}
