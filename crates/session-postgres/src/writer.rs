//! The one writer of a session: a dedicated connection holding the session's advisory lock
//! (`pg_try_advisory_lock`, DECISIONS §24.3) for the handle's lifetime, the materialized state it
//! alone advances, and the single-statement append.
//!
//! Because only the lock holder appends, the state is cached here and each append is one
//! statement (the state update and the entry insert in one data-modifying CTE: atomic, one round
//! trip). The update is conditioned on the cached entry count, so a state that is somehow out
//! of step inserts nothing instead of forking the log.

use std::time::{Duration, Instant};

use arbor_session::error::SessionError;
use arbor_session::SessionEntry;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Statement};

use crate::db::{describe, is_connection_loss, Db};
use crate::sid::{gone, Sid};
use crate::state::{state_from_row, to_i64, STATE_COLUMNS};
use arbor_session::MaterializedState;

type Result<T> = std::result::Result<T, SessionError>;

const APPEND_SQL: &str = "
WITH st AS (
    UPDATE sessions SET leaf_id = $3, name = $4, entry_count = $5, message_count = $6,
        cached_tokens = $7, uncached_tokens = $8, total_tokens = $9, cost_total = $10,
        latest_compaction_id = $11, first_message = $12, updated_at = clock_timestamp()
    WHERE sid = $1 AND entry_count = $2
    RETURNING sid
)
INSERT INTO entries (sid, seq, id, parent_id, type, role, target_id, timestamp, payload)
SELECT sid, $5, $13, $14, $15, $16, $17, $18, CAST($19::text AS json) FROM st";

/// The error a second writer gets, worded as the JSONL store words it (DECISIONS §4.4).
pub(crate) fn locked_error(location: &str) -> SessionError {
    SessionError::Storage(format!(
        "session is open for writing by another process: {location}"
    ))
}

/// How an append ended when the statement could not be run to a known outcome.
pub(crate) enum Outcome {
    Stored,
    /// The statement was refused; nothing changed.
    Refused(SessionError),
}

/// An attempt that lost its connection mid-statement: whether the entry was stored is unknown
/// until the writer reconnects and looks. Displayed as the server's or client's description.
#[derive(Debug, thiserror::Error)]
#[error("{}", describe(.0))]
struct ConnectionLost(#[source] tokio_postgres::Error);

struct Live {
    client: Client,
    append: Statement,
    state: MaterializedState,
}

/// The writer of one session. `live` is `None` after the connection was lost; the next
/// operation reconnects, takes the lock again and reloads the state.
pub(crate) struct Writer {
    live: Option<Live>,
}

impl Writer {
    /// Connects and takes the lock (waiting up to `lock_wait` for a releasing holder).
    pub(crate) async fn open(db: &Db, s: &Sid, location: &str) -> Result<Writer> {
        let live = connect(db, s, location).await?;
        Ok(Writer { live: Some(live) })
    }

    /// The cached state, reconnecting first if the connection was lost.
    pub(crate) async fn state(
        &mut self,
        db: &Db,
        s: &Sid,
        location: &str,
    ) -> Result<&MaterializedState> {
        Ok(&self.live(db, s, location).await?.state)
    }

    async fn live(&mut self, db: &Db, s: &Sid, location: &str) -> Result<&mut Live> {
        if self.live.as_ref().is_some_and(|l| l.client.is_closed()) {
            self.live = None;
        }
        if self.live.is_none() {
            self.live = Some(connect(db, s, location).await?);
        }
        match self.live.as_mut() {
            Some(l) => Ok(l),
            None => Err(SessionError::Storage("writer connection missing".into())),
        }
    }

    /// Stores `entry` (serialized as `line`) as the next log position. On success the cached
    /// state includes it. If the connection drops mid-statement, the writer reconnects, finds
    /// out from the database whether the entry was stored, and if not runs it once more: an
    /// append either is stored or reports failure, never half of it.
    pub(crate) async fn commit(
        &mut self,
        db: &Db,
        s: &Sid,
        location: &str,
        entry: &SessionEntry,
        line: &str,
    ) -> Result<Outcome> {
        let expected = {
            let live = self.live(db, s, location).await?;
            live.state.entry_count
        };
        let first = self.run(db, s, location, entry, line).await;
        let lost = match first {
            Ok(o) => return Ok(o),
            Err(lost) => lost,
        };
        // The connection dropped: reconnect (lock + fresh state), then decide.
        self.live = None;
        let live = match connect(db, s, location).await {
            Ok(l) => l,
            Err(e) => {
                return Err(SessionError::Storage(format!(
                    "connection to PostgreSQL at {} lost while appending entry {} ({lost}); reconnecting failed ({e}); whether the entry was stored is unknown until the server is reachable again",
                    db.target.display, entry.id
                )))
            }
        };
        let stored = live.state.entry_count == expected + 1
            && live
                .client
                .query_opt(
                    "SELECT 1 FROM entries WHERE sid = $1 AND seq = $2 AND id = $3",
                    &[&s.sid, &to_i64(expected + 1), &entry.id],
                )
                .await
                .map_err(|e| db.err("cannot check an interrupted append", e))?
                .is_some();
        self.live = Some(live);
        if stored {
            return Ok(Outcome::Stored);
        }
        match self.run(db, s, location, entry, line).await {
            Ok(o) => Ok(o),
            Err(lost) => {
                self.live = None;
                Err(SessionError::Storage(format!(
                    "connection to PostgreSQL at {} lost twice while appending entry {} ({lost}); whether it was stored is unknown until the server is reachable again",
                    db.target.display, entry.id
                )))
            }
        }
    }

    /// One attempt. `Err` is a lost connection; every other failure is an `Outcome::Refused`
    /// (nothing changed).
    async fn run(
        &mut self,
        db: &Db,
        s: &Sid,
        location: &str,
        entry: &SessionEntry,
        line: &str,
    ) -> std::result::Result<Outcome, ConnectionLost> {
        let live = match self.live(db, s, location).await {
            Ok(l) => l,
            Err(e) => return Ok(Outcome::Refused(e)),
        };
        let mut next = live.state.clone();
        next.apply(entry);
        let st = &next.stats;
        let role = entry.message().map(arbor_session::AgentMessage::role);
        let ty = entry.entry_type();
        let result = live
            .client
            .execute(
                &live.append,
                &[
                    &s.sid,
                    &to_i64(live.state.entry_count),
                    &next.leaf_id,
                    &next.name,
                    &to_i64(next.entry_count),
                    &to_i64(st.message_count),
                    &to_i64(st.cached_tokens),
                    &to_i64(st.uncached_tokens),
                    &to_i64(st.total_tokens),
                    &st.cost_total,
                    &next.latest_compaction_id,
                    &next.first_message,
                    &entry.id,
                    &entry.parent_id,
                    &ty,
                    &role,
                    &entry.kind.target_id(),
                    &entry.timestamp,
                    &line,
                ],
            )
            .await;
        match result {
            Ok(1) => {
                live.state = next;
                Ok(Outcome::Stored)
            }
            Ok(_) => {
                // Deleted, or the state moved without us: reload before anything else.
                self.live = None;
                Ok(Outcome::Refused(out_of_step(db, s).await))
            }
            Err(e) if is_connection_loss(&e) => Err(ConnectionLost(e)),
            Err(e) => Ok(Outcome::Refused(refusal(
                db,
                s,
                next.entry_count,
                entry,
                &e,
            ))),
        }
    }

    /// Waits until every earlier append is on the server's disk (see `Synchronous`): a
    /// transaction with an id commits with `synchronous_commit = on`, which flushes the WAL up
    /// to its commit record and so every record before it.
    pub(crate) async fn flush(&mut self, db: &Db, s: &Sid, location: &str) -> Result<()> {
        let live = self.live(db, s, location).await?;
        live.client
            .batch_execute(
                "BEGIN; SET LOCAL synchronous_commit = on; SELECT txid_current(); COMMIT",
            )
            .await
            .map_err(|e| {
                if is_connection_loss(&e) {
                    self.live = None;
                }
                db.err("save point failed", e)
            })
    }
}

async fn out_of_step(db: &Db, s: &Sid) -> SessionError {
    let exists = match db.conn().await {
        Ok(c) => c
            .query_opt("SELECT 1 FROM sessions WHERE sid = $1", &[&s.sid])
            .await
            .map(|r| r.is_some())
            .unwrap_or(true),
        Err(_) => true,
    };
    if exists {
        SessionError::Storage(format!(
            "session {}: its stored state changed without this writer; the append was not stored (state reloaded, try again)",
            s.id
        ))
    } else {
        gone(s)
    }
}

fn refusal(
    db: &Db,
    s: &Sid,
    seq: u64,
    entry: &SessionEntry,
    e: &tokio_postgres::Error,
) -> SessionError {
    if e.code() == Some(&SqlState::UNIQUE_VIOLATION) {
        let constraint = e.as_db_error().and_then(|d| d.constraint()).unwrap_or("");
        if constraint.ends_with("_pkey") {
            return SessionError::InvalidSession(format!(
                "session {}: log position {seq} is already taken (its entry count is out of step with its entries)",
                s.id
            ));
        }
        return SessionError::InvalidEntry(format!(
            "duplicate entry id {} in session {}",
            entry.id, s.id
        ));
    }
    if e.code() == Some(&SqlState::FOREIGN_KEY_VIOLATION) {
        return gone(s);
    }
    db.err(&format!("cannot append entry {}", entry.id), e)
}

async fn connect(db: &Db, s: &Sid, location: &str) -> Result<Live> {
    let client = db.dedicated().await?;
    let deadline = Instant::now() + db.options.lock_wait;
    loop {
        let got: bool = client
            .query_one(
                "SELECT pg_try_advisory_lock(hashtext('arbor:' || current_schema()), $1)",
                &[&s.sid],
            )
            .await
            .map_err(|e| db.err("cannot take the session's writer lock", e))?
            .get(0);
        if got {
            break;
        }
        if Instant::now() >= deadline {
            return Err(locked_error(location));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let row = client
        .query_opt(
            &format!("SELECT {STATE_COLUMNS} FROM sessions WHERE sid = $1"),
            &[&s.sid],
        )
        .await
        .map_err(|e| db.err("cannot read session state", e))?;
    let state = match row {
        Some(r) => state_from_row(&r),
        None => return Err(gone(s)),
    };
    let append = client
        .prepare(APPEND_SQL)
        .await
        .map_err(|e| db.err("cannot prepare the append statement", e))?;
    Ok(Live {
        client,
        append,
        state,
    })
}
