//! Schema and forward migrations.
//!
//! Everything lives in one schema (default `arbor`, [`crate::PostgresOptions::schema`]).
//! `schema_version` holds one row per applied migration; the store's version is the highest.
//! Migrations run in one transaction under a transaction-scoped advisory lock, so a failed
//! migration changes nothing and two processes opening an old store migrate it once. A shipped
//! migration is never edited; changes go into a new one.

use arbor_session::error::SessionError;
use deadpool_postgres::Object;

use crate::db::Db;

type Result<T> = std::result::Result<T, SessionError>;

/// The version this build writes.
pub const CURRENT_VERSION: i32 = 3;

/// Version 1.
///
/// `sessions` carries the materialized state (leaf, counts, stats, latest compaction, first
/// prompt) updated in the same statement as each entry insert. `entries.payload` is `json`,
/// not `jsonb`: `json` keeps the exact text (key order, number spelling, duplicate keys), which
/// pi-compatible export needs byte for byte; the server still checks it is JSON
/// (DECISIONS §24.2). `role` copies `message.role` so settings replay can skip user messages
/// without reading payloads.
const V1: &str = "
CREATE TABLE sessions (
    sid                  integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id                   text NOT NULL UNIQUE,
    cwd                  text NOT NULL,
    created              text NOT NULL,
    parent_session       text,
    header               text NOT NULL,
    name                 text,
    leaf_id              text,
    entry_count          bigint NOT NULL DEFAULT 0,
    message_count        bigint NOT NULL DEFAULT 0,
    cached_tokens        bigint NOT NULL DEFAULT 0,
    uncached_tokens      bigint NOT NULL DEFAULT 0,
    total_tokens         bigint NOT NULL DEFAULT 0,
    cost_total           double precision NOT NULL DEFAULT 0,
    latest_compaction_id text,
    first_message        text,
    updated_at           timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX sessions_recent ON sessions (updated_at DESC, sid DESC);
CREATE INDEX sessions_cwd_recent ON sessions (cwd, updated_at DESC, sid DESC);
CREATE TABLE entries (
    sid       integer NOT NULL REFERENCES sessions (sid) ON DELETE CASCADE,
    seq       bigint NOT NULL,
    id        text NOT NULL,
    parent_id text,
    type      text NOT NULL,
    role      text,
    target_id text,
    timestamp text NOT NULL,
    payload   json NOT NULL,
    PRIMARY KEY (sid, seq),
    UNIQUE (sid, id)
);
CREATE INDEX entries_parent ON entries (sid, parent_id);
CREATE INDEX entries_type ON entries (sid, type, seq);
CREATE INDEX entries_target ON entries (sid, target_id) WHERE target_id IS NOT NULL;
";

/// Version 2: the per-append update of a `sessions` row becomes a HOT update (no index entry
/// written, the new row version on the same page), which removes the buffer-lock contention
/// 64 concurrent writers had on the rightmost pages of the two `updated_at` indexes and on
/// shared heap pages (DECISIONS §24.20). Listing sorts by `updated_at` without an index (a
/// top-N sort of the sessions in scope); `cwd` keeps a plain index. A low fillfactor leaves
/// room on each page for the row versions of its few sessions.
const V2: &str = "
DROP INDEX sessions_recent;
DROP INDEX sessions_cwd_recent;
CREATE INDEX sessions_cwd ON sessions (cwd);
ALTER TABLE sessions SET (fillfactor = 20);
";

/// Version 3: less work per entry insert (DECISIONS §24.50). The type index keeps only the
/// rows whose type is looked up by type (everything but `message`, the bulk of a session;
/// `find_entries("message")` reads the session's log range), and the foreign key to `sessions`
/// goes with its per-insert check (the `RI_FKey_check` query and a `FOR KEY SHARE` lock of the
/// session row the same statement just updated). Entries cannot be orphaned without it: the
/// append inserts only through its update of the session row, import and fork insert the
/// session row in the same transaction, and `delete` removes a session's entries itself.
const V3: &str = "
DROP INDEX entries_type;
CREATE INDEX entries_type_not_message ON entries (sid, type, seq) WHERE type <> 'message';
ALTER TABLE entries DROP CONSTRAINT entries_sid_fkey;
";

/// The lookup by type of a non-message type. It repeats the predicate of the version-3 partial
/// index `entries_type_not_message`, so that even a generic plan of the prepared statement (what
/// a long-lived pooled connection ends up using, where `$2` is unknown) can use the index.
pub const FIND_BY_TYPE_SQL: &str = "SELECT seq, id, payload::text FROM entries
     WHERE sid = $1 AND type = $2 AND type <> 'message' ORDER BY seq";

/// The lookup of `message` entries: most of a session, read from its log range.
pub const FIND_MESSAGES_SQL: &str = "SELECT seq, id, payload::text FROM entries
     WHERE sid = $1 AND type = $2 ORDER BY seq";

const MIGRATIONS: &[(i32, &str)] = &[(1, V1), (2, V2), (3, V3)];

/// The SQL of migration `version` as shipped (tests build stores of an older version from it).
pub fn migration_sql(version: i32) -> Option<&'static str> {
    MIGRATIONS
        .iter()
        .find(|(v, _)| *v == version)
        .map(|(_, sql)| *sql)
}

/// Brings the schema to [`CURRENT_VERSION`]; refuses a store written by a newer build and a
/// schema that holds tables but is not an Arbor store.
pub(crate) async fn migrate(conn: &mut Object, db: &Db) -> Result<i32> {
    let schema = &db.options.schema;
    let err = |ctx: &'static str| move |e| db.err(ctx, e);
    let tx = conn
        .transaction()
        .await
        .map_err(err("cannot start schema migration"))?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext('arbor-migrate:' || $1::text))",
        &[schema],
    )
    .await
    .map_err(err("cannot lock schema for migration"))?;
    // `schema` is validated to [a-z0-9_] (config.rs), so it is safe to splice.
    tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
        .await
        .map_err(err("cannot create schema"))?;
    let has_version: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM information_schema.tables
                            WHERE table_schema = $1 AND table_name = 'schema_version')",
            &[schema],
        )
        .await
        .map_err(err("cannot read schema"))?
        .get(0);
    let from: i32 = if has_version {
        tx.query_one("SELECT COALESCE(MAX(version), 0) FROM schema_version", &[])
            .await
            .map_err(err("cannot read schema_version"))?
            .get(0)
    } else {
        let tables: i64 = tx
            .query_one(
                "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = $1",
                &[schema],
            )
            .await
            .map_err(err("cannot read schema"))?
            .get(0);
        if tables > 0 {
            return Err(SessionError::Storage(format!(
                "schema {schema} in {} is not an Arbor session store (it has tables but no schema_version)",
                db.target.display
            )));
        }
        tx.batch_execute(
            "CREATE TABLE schema_version (
                 version    integer PRIMARY KEY,
                 applied_at timestamptz NOT NULL DEFAULT now()
             )",
        )
        .await
        .map_err(err("cannot create schema_version"))?;
        0
    };
    if from > CURRENT_VERSION {
        return Err(SessionError::Storage(format!(
            "session store {} (schema {schema}) has schema version {from}, newer than this build supports ({CURRENT_VERSION}); upgrade Arbor",
            db.target.display
        )));
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > from) {
        tx.batch_execute(sql)
            .await
            .map_err(|e| db.err(&format!("schema migration to version {version} failed"), e))?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES ($1)",
            &[version],
        )
        .await
        .map_err(err("cannot record schema version"))?;
    }
    tx.commit()
        .await
        .map_err(err("cannot commit schema migration"))?;
    Ok(CURRENT_VERSION)
}
