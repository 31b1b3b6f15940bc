//! The SQL behind reads and repository operations, on a pooled connection. Reads never take
//! the writer's lock: the writer commits whole statements, so a reader sees an entry and the
//! state that includes it together or not at all.

use std::collections::HashMap;

use arbor_session::error::SessionError;
use arbor_session::rules;
use arbor_session::{
    DerivedSettings, EntryKind, EntryPage, ForkPosition, ListResult, SessionEntry, SessionHeader,
    SessionInfo,
};
use deadpool_postgres::Object;
use tokio_postgres::Row;

use crate::db::Db;
use crate::envelopes::{runs, EnvelopeRow, Envelopes, Mark};
use crate::listing::{ListCursor, ListQuery};
use crate::sid::{gone, Sid};
use crate::state::{state_from_row, to_i64, STATE_COLUMNS};
use arbor_session::MaterializedState;

type Result<T> = std::result::Result<T, SessionError>;

/// A pooled connection bound to its repository (whose server its error messages name); the
/// SQL of every read and repository operation is a method on it.
pub(crate) struct Conn<'a> {
    pub conn: &'a Object,
    pub db: &'a Db,
}

/// Decodes `(seq, id, payload)` rows, keyed by seq. Large batches are split over the blocking
/// pool: JSON parsing is most of a long path read, and the client's cores can share it.
async fn decode_all(s: &Sid, rows: Vec<Row>) -> Result<HashMap<i64, SessionEntry>> {
    const PARALLEL_MIN: usize = 4096;
    let threads = std::thread::available_parallelism()
        .map(std::num::NonZero::get)
        .unwrap_or(1)
        .min(8);
    let total = rows.len();
    let mut out = HashMap::with_capacity(total);
    if total < PARALLEL_MIN || threads < 2 {
        for (seq, e) in decode_chunk(s, &rows)? {
            out.insert(seq, e);
        }
        return Ok(out);
    }
    let per = total.div_ceil(threads);
    let mut rest = rows;
    let mut tasks = Vec::with_capacity(threads);
    while !rest.is_empty() {
        let chunk = rest.split_off(rest.len().saturating_sub(per));
        let s = s.clone();
        tasks.push(tokio::task::spawn_blocking(move || {
            decode_chunk(&s, &chunk)
        }));
    }
    for t in tasks {
        let decoded = t
            .await
            .map_err(|e| SessionError::Storage(format!("entry decoding task failed: {e}")))??;
        for (seq, e) in decoded {
            out.insert(seq, e);
        }
    }
    Ok(out)
}

fn decode_chunk(s: &Sid, rows: &[Row]) -> Result<Vec<(i64, SessionEntry)>> {
    rows.iter()
        .map(|r| {
            let seq: i64 = r.get(0);
            Ok((seq, decode(s, seq, r.get(1), r.get(2))?))
        })
        .collect()
}

/// Parses a stored payload, naming session, log position and entry id when it is unusable.
pub(crate) fn decode(s: &Sid, seq: i64, id: &str, payload: &str) -> Result<SessionEntry> {
    let entry = SessionEntry::from_json(payload).map_err(|e| {
        SessionError::InvalidSession(format!(
            "session {}: entry {id} (seq {seq}) has a corrupt payload: {e}",
            s.id
        ))
    })?;
    if entry.id != id {
        return Err(SessionError::InvalidSession(format!(
            "session {}: entry row {id} (seq {seq}) holds a payload for id {}",
            s.id, entry.id
        )));
    }
    Ok(entry)
}

impl<'a> Conn<'a> {
    pub(crate) fn new(conn: &'a Object, db: &'a Db) -> Self {
        Self { conn, db }
    }

    fn err(&self, context: &str) -> impl Fn(tokio_postgres::Error) -> SessionError + '_ {
        let context = context.to_owned();
        move |e| self.db.err(&context, e)
    }

    async fn query(
        &self,
        ctx: &str,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<Row>> {
        let st = self.conn.prepare_cached(sql).await.map_err(self.err(ctx))?;
        self.conn.query(&st, params).await.map_err(self.err(ctx))
    }

    async fn query_opt(
        &self,
        ctx: &str,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Option<Row>> {
        let st = self.conn.prepare_cached(sql).await.map_err(self.err(ctx))?;
        self.conn
            .query_opt(&st, params)
            .await
            .map_err(self.err(ctx))
    }

    // ---- sessions -----------------------------------------------------------------------

    pub(crate) async fn find_session(&self, id: &str) -> Result<Option<(Sid, SessionHeader)>> {
        let row = self
            .query_opt(
                "cannot look up session",
                "SELECT sid, header FROM sessions WHERE id = $1",
                &[&id],
            )
            .await?;
        let Some(row) = row else { return Ok(None) };
        let s = Sid {
            sid: row.get(0),
            id: id.to_owned(),
        };
        let header = SessionHeader::from_json(row.get(1)).map_err(|e| {
            SessionError::InvalidSession(format!(
                "session {id} in {}: stored header is unusable: {e}",
                self.db.target.display
            ))
        })?;
        Ok(Some((s, header)))
    }

    pub(crate) async fn require_session(&self, id: &str) -> Result<(Sid, SessionHeader)> {
        self.find_session(id)
            .await?
            .ok_or_else(|| SessionError::NotFound(format!("Session not found: {id}")))
    }

    pub(crate) async fn state(&self, s: &Sid) -> Result<MaterializedState> {
        let row = self
            .query_opt(
                "cannot read session state",
                &format!("SELECT {STATE_COLUMNS} FROM sessions WHERE sid = $1"),
                &[&s.sid],
            )
            .await?;
        row.map(|r| state_from_row(&r)).ok_or_else(|| gone(s))
    }

    // ---- entries ------------------------------------------------------------------------

    pub(crate) async fn entry_exists(&self, s: &Sid, id: &str) -> Result<bool> {
        Ok(self
            .query_opt(
                "cannot look up entry",
                "SELECT 1 FROM entries WHERE sid = $1 AND id = $2",
                &[&s.sid, &id],
            )
            .await?
            .is_some())
    }

    /// For a verbatim append: whether `id` is taken, and whether `parent` and `target` exist
    /// (`true` when not given).
    pub(crate) async fn verbatim_checks(
        &self,
        s: &Sid,
        id: &str,
        parent: Option<&str>,
        target: Option<&str>,
    ) -> Result<(bool, bool, bool)> {
        let rows = self
            .query(
                "cannot look up entries",
                "SELECT EXISTS (SELECT 1 FROM entries WHERE sid = $1 AND id = $2),
                        $3::text IS NULL
                            OR EXISTS (SELECT 1 FROM entries WHERE sid = $1 AND id = $3),
                        $4::text IS NULL
                            OR EXISTS (SELECT 1 FROM entries WHERE sid = $1 AND id = $4)",
                &[&s.sid, &id, &parent, &target],
            )
            .await?;
        let r = rows
            .first()
            .ok_or_else(|| SessionError::Storage("entry checks returned no row".to_owned()))?;
        Ok((r.get(0), r.get(1), r.get(2)))
    }

    pub(crate) async fn get_entry(&self, s: &Sid, id: &str) -> Result<Option<SessionEntry>> {
        let row = self
            .query_opt(
                "cannot read entry",
                "SELECT seq, payload::text FROM entries WHERE sid = $1 AND id = $2",
                &[&s.sid, &id],
            )
            .await?;
        row.map(|r| decode(s, r.get(0), id, r.get(1))).transpose()
    }

    /// Decodes `(seq, id, payload)` rows in order.
    fn decode_rows(s: &Sid, rows: &[Row]) -> Result<Vec<(u64, SessionEntry)>> {
        rows.iter()
            .map(|r| {
                let seq: i64 = r.get(0);
                Ok((seq.max(0) as u64, decode(s, seq, r.get(1), r.get(2))?))
            })
            .collect()
    }

    /// Entries of type `ty` in log order: non-message types through the partial index of
    /// schema v3 (DECISIONS §24.50), `message` (most of a session) from the log range.
    pub(crate) async fn find_entries(&self, s: &Sid, ty: &str) -> Result<Vec<SessionEntry>> {
        let sql = if ty == "message" {
            crate::schema::FIND_MESSAGES_SQL
        } else {
            crate::schema::FIND_BY_TYPE_SQL
        };
        let rows = self
            .query("cannot read entries", sql, &[&s.sid, &ty])
            .await?;
        Ok(Self::decode_rows(s, &rows)?
            .into_iter()
            .map(|(_, e)| e)
            .collect())
    }

    pub(crate) async fn children(
        &self,
        s: &Sid,
        parent: Option<&str>,
    ) -> Result<Vec<SessionEntry>> {
        let rows = match parent {
            Some(p) => {
                if !self.entry_exists(s, p).await? {
                    return Err(SessionError::NotFound(format!("Entry not found: {p}")));
                }
                self.query(
                    "cannot read entries",
                    "SELECT seq, id, payload::text FROM entries
                     WHERE sid = $1 AND parent_id = $2 ORDER BY seq",
                    &[&s.sid, &p],
                )
                .await?
            }
            None => {
                self.query(
                    "cannot read entries",
                    "SELECT seq, id, payload::text FROM entries
                     WHERE sid = $1 AND parent_id IS NULL ORDER BY seq",
                    &[&s.sid],
                )
                .await?
            }
        };
        Ok(Self::decode_rows(s, &rows)?
            .into_iter()
            .map(|(_, e)| e)
            .collect())
    }

    pub(crate) async fn entries_page(
        &self,
        s: &Sid,
        after_seq: Option<u64>,
        limit: Option<usize>,
    ) -> Result<EntryPage> {
        rules::check_page_limit(limit)?;
        self.state(s).await?; // not_found once deleted
        let last: Option<i64> = self
            .query_opt(
                "cannot read entries",
                "SELECT MAX(seq) FROM entries WHERE sid = $1",
                &[&s.sid],
            )
            .await?
            .and_then(|r| r.get(0));
        let total = last.unwrap_or(0).max(0) as u64;
        let start = after_seq.unwrap_or(0).min(total);
        let end = match limit {
            Some(l) => start.saturating_add(l as u64).min(total),
            None => total,
        };
        let rows = self
            .query(
                "cannot read entries",
                "SELECT seq, id, payload::text FROM entries
                 WHERE sid = $1 AND seq > $2 AND seq <= $3 ORDER BY seq",
                &[&s.sid, &to_i64(start), &to_i64(end)],
            )
            .await?;
        Ok(EntryPage {
            entries: Self::decode_rows(s, &rows)?,
            next_after_seq: (end < total).then_some(end),
        })
    }

    pub(crate) async fn get_label(&self, s: &Sid, target: &str) -> Result<Option<String>> {
        let rows = self
            .query(
                "cannot read labels",
                "SELECT seq, id, payload::text FROM entries
                 WHERE sid = $1 AND target_id = $2 AND type = 'label'
                 ORDER BY seq DESC LIMIT 1",
                &[&s.sid, &target],
            )
            .await?;
        Ok(Self::decode_rows(s, &rows)?
            .into_iter()
            .next()
            .and_then(|(_, e)| match e.kind {
                EntryKind::Label(l) => l
                    .label
                    .get()
                    .map(|t| t.trim().to_owned())
                    .filter(|t| !t.is_empty()),
                _ => None,
            }))
    }

    /// The current leaf, checked to exist.
    pub(crate) async fn leaf_id(&self, s: &Sid) -> Result<Option<String>> {
        let state = self.state(s).await?;
        if let Some(leaf) = &state.leaf_id {
            if !self.entry_exists(s, leaf).await? {
                return Err(SessionError::InvalidSession(format!(
                    "session {}: the leaf points at entry {leaf}, which does not exist",
                    s.id
                )));
            }
        }
        Ok(state.leaf_id)
    }

    // ---- paths --------------------------------------------------------------------------

    /// The `(seq, id, parent_id, type, role)` rows after log position `after`, in no particular
    /// order (the index is keyed by id; sorting a whole session's rows would spill to disk on
    /// the server for nothing).
    pub(crate) async fn envelope_rows(&self, s: &Sid, after: i64) -> Result<Vec<Row>> {
        self.query(
            "cannot read entry envelopes",
            "SELECT seq, id, parent_id, type, role FROM entries WHERE sid = $1 AND seq > $2",
            &[&s.sid, &after],
        )
        .await
    }

    /// The envelope chain from `from` (default: the leaf) up to the root, leaf first, after
    /// bringing `env` up to date. The state is read first, so the leaf it names is in `env`.
    pub(crate) async fn chain<'e>(
        &self,
        s: &Sid,
        from: Option<&str>,
        env: &'e mut Envelopes,
    ) -> Result<Vec<&'e EnvelopeRow>> {
        let state = self.state(s).await?;
        let start = match from {
            Some(id) => id.to_owned(),
            None => match state.leaf_id {
                Some(leaf) => leaf,
                None => return Ok(Vec::new()),
            },
        };
        let rows = self.envelope_rows(s, env.last_seq()).await?;
        env.extend(s, &rows)?;
        let env: &'e Envelopes = env;
        env.chain(s, &start, from.is_some())
    }

    /// Payloads at log positions `seqs`, decoded, keyed by seq. The positions are fetched as
    /// ranges of consecutive seqs (a path is mostly long runs), one index range scan each.
    async fn payloads(&self, s: &Sid, seqs: &[i64]) -> Result<HashMap<i64, SessionEntry>> {
        if seqs.is_empty() {
            return Ok(HashMap::new());
        }
        let mut sorted = seqs.to_vec();
        sorted.sort_unstable();
        let (lo, hi) = runs(&sorted);
        let rows = self
            .query(
                "cannot read entry payloads",
                "SELECT e.seq, e.id, e.payload::text
                 FROM unnest($2::bigint[], $3::bigint[]) AS r(lo, hi)
                 JOIN entries e ON e.sid = $1 AND e.seq BETWEEN r.lo AND r.hi",
                &[&s.sid, &lo, &hi],
            )
            .await?;
        decode_all(s, rows).await
    }

    /// The entries of `links` (leaf first) in root-to-leaf order.
    async fn materialize(&self, s: &Sid, links: &[&EnvelopeRow]) -> Result<Vec<SessionEntry>> {
        let seqs: Vec<i64> = links.iter().map(|l| l.seq).collect();
        let mut found = self.payloads(s, &seqs).await?;
        let mut out = Vec::with_capacity(links.len());
        for l in links.iter().rev() {
            match found.remove(&l.seq) {
                Some(e) => out.push(e),
                None => {
                    return Err(SessionError::InvalidSession(format!(
                        "session {}: entry {} vanished while its path was read",
                        s.id, l.id
                    )))
                }
            }
        }
        Ok(out)
    }

    /// root..=from (default: the leaf); with `stop_at_compaction` from the newest compaction
    /// boundary on the path instead of the root (DECISIONS §3.1). Only the path's payloads
    /// (and the compaction's, to find its boundary) are read.
    pub(crate) async fn walk(
        &self,
        s: &Sid,
        from: Option<&str>,
        stop_at_compaction: bool,
        env: &mut Envelopes,
    ) -> Result<Vec<SessionEntry>> {
        let mut links = self.chain(s, from, env).await?;
        if stop_at_compaction {
            if let Some(pos) = links.iter().position(|l| l.mark == Mark::Compaction) {
                let comp = self.payloads(s, &[links[pos].seq]).await?;
                let boundary = match comp.get(&links[pos].seq).map(|e| &e.kind) {
                    Some(EntryKind::Compaction(c)) if c.retained_tail.is_some() => Some(pos),
                    Some(EntryKind::Compaction(c)) => {
                        c.first_kept_entry_id.as_deref().and_then(|kept| {
                            links[pos..]
                                .iter()
                                .position(|l| &*l.id == kept)
                                .map(|i| pos + i)
                        })
                    }
                    _ => None,
                };
                if let Some(b) = boundary {
                    links.truncate(b + 1);
                }
            }
        }
        self.materialize(s, &links).await
    }

    /// DECISIONS §3.2 from the envelope chain: only the nearest entry that can decide each
    /// setting is read (assistant messages are told apart by the `role` column).
    pub(crate) async fn derived_settings(
        &self,
        s: &Sid,
        from: Option<&str>,
        env: &mut Envelopes,
    ) -> Result<DerivedSettings> {
        let links = self.chain(s, from, env).await?;
        let nearest = |f: &dyn Fn(Mark) -> bool| links.iter().find(|l| f(l.mark)).map(|l| l.seq);
        let model = nearest(&|m| matches!(m, Mark::ModelChange | Mark::AssistantMessage));
        let thinking = nearest(&|m| m == Mark::ThinkingLevelChange);
        let tools = nearest(&|m| m == Mark::ActiveToolsChange);
        let wanted: Vec<i64> = [model, thinking, tools].into_iter().flatten().collect();
        let found = self.payloads(s, &wanted).await?;
        let mut out = DerivedSettings::default();
        let pick = |seq: Option<i64>| {
            let mut single = DerivedSettings::default();
            if let Some(e) = seq.and_then(|q| found.get(&q)) {
                single.apply(e);
            }
            single
        };
        out.model = pick(model).model;
        out.thinking_level = pick(thinking).thinking_level;
        out.active_tool_names = pick(tools).active_tool_names;
        Ok(out)
    }

    /// Whether `ancestor` is on the path root..=`from`.
    pub(crate) async fn is_ancestor(
        &self,
        s: &Sid,
        ancestor: &str,
        from: &str,
        env: &mut Envelopes,
    ) -> Result<bool> {
        Ok(self
            .chain(s, Some(from), env)
            .await?
            .iter()
            .any(|l| &*l.id == ancestor))
    }

    // ---- repository ---------------------------------------------------------------------

    /// One page of sessions, newest first, from the state columns only (no payload is read).
    pub(crate) async fn list(
        &self,
        q: &ListQuery,
        location: impl Fn(&str) -> String,
    ) -> Result<(ListResult, Option<ListCursor>)> {
        let limit = q
            .limit
            .map(|l| l.clamp(1, 100_000) as i64)
            .unwrap_or(i64::MAX);
        let pattern = q.search.as_deref().map(like_pattern);
        let (after_ms, after_sid) = match &q.after {
            Some(c) => (Some(c.modified_us), Some(c.sid)),
            None => (None, None),
        };
        let rows = self
            .query(
                "cannot list sessions",
                "SELECT id, header, name, entry_count,
                        (extract(epoch FROM updated_at) * 1000000)::bigint, first_message, sid
                 FROM sessions
                 WHERE ($1::text IS NULL OR cwd = $1)
                   AND ($2::text IS NULL OR name ILIKE $2 OR first_message ILIKE $2)
                   AND ($3::bigint IS NULL
                        OR ((extract(epoch FROM updated_at) * 1000000)::bigint, sid) < ($3, $4))
                 ORDER BY updated_at DESC, sid DESC
                 LIMIT $5",
                &[&q.cwd, &pattern, &after_ms, &after_sid, &limit],
            )
            .await?;
        let mut sessions = Vec::with_capacity(rows.len());
        let mut skipped = Vec::new();
        let mut cursor = None;
        for r in &rows {
            let id: String = r.get(0);
            let modified_us: i64 = r.get(4);
            cursor = Some(ListCursor {
                modified_us,
                sid: r.get(6),
            });
            let header = match SessionHeader::from_json(r.get(1)) {
                Ok(h) => h,
                Err(e) => {
                    skipped.push((location(&id), format!("unusable session header: {e}")));
                    continue;
                }
            };
            sessions.push(SessionInfo {
                location: location(&id),
                id,
                cwd: header.cwd,
                name: r.get(2),
                created: header.timestamp,
                modified_ms: modified_us / 1000,
                entry_count: Some(r.get::<_, i64>(3).max(0) as u64),
                first_message: r.get(5),
                parent_session: header.parent_session,
            });
        }
        let next = if (rows.len() as i64) < limit {
            None
        } else {
            cursor
        };
        Ok((ListResult { sessions, skipped }, next))
    }

    /// The root→target path a fork copies (DECISIONS §5), as log positions in root-to-leaf
    /// order plus the decoded entries (for the new session's state).
    pub(crate) async fn fork_path(
        &self,
        s: &Sid,
        target_id: &str,
        position: ForkPosition,
    ) -> Result<Vec<(i64, SessionEntry)>> {
        let row = self
            .query_opt(
                "cannot read fork target",
                "SELECT type, role, parent_id FROM entries WHERE sid = $1 AND id = $2",
                &[&s.sid, &target_id],
            )
            .await?;
        let Some(row) = row else {
            return Err(SessionError::InvalidForkTarget(format!(
                "Entry {target_id} not found"
            )));
        };
        let last: Option<String> = match position {
            ForkPosition::At => Some(target_id.to_owned()),
            ForkPosition::Before => {
                let (ty, role): (&str, Option<&str>) = (row.get(0), row.get(1));
                if ty != "message" || role != Some("user") {
                    return Err(SessionError::InvalidForkTarget(format!(
                        "Entry {target_id} is not a user message"
                    )));
                }
                row.get(2)
            }
        };
        let Some(last) = last else {
            return Ok(Vec::new());
        };
        let mut env = Envelopes::default();
        let links = self.chain(s, Some(&last), &mut env).await?;
        let entries = self.materialize(s, &links).await?;
        Ok(links.iter().rev().map(|l| l.seq).zip(entries).collect())
    }
}

/// `%text%` for ILIKE with the pattern characters of `text` escaped.
fn like_pattern(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}
