//! `PostgresStorage`: one open session of a PostgreSQL store.

use std::sync::Arc;

use arbor_session::append::{self, DraftEntry};
use arbor_session::error::{Result, SessionError};
use arbor_session::ids;
use arbor_session::{
    rules, DerivedSettings, EntryDraft, EntryKind, EntryPage, LeafEntry, SessionEntry,
    SessionHeader, SessionStats, SessionStorage,
};
use async_trait::async_trait;
use serde_json::Value;

use crate::config::Synchronous;
use crate::db::Db;
use crate::envelopes::Envelopes;
use crate::ops::Conn;
use crate::sid::Sid;
use crate::writer::{Outcome, Writer};
use arbor_session::MaterializedState;

/// Runs `$body` with a pooled connection `$c` and the session `$s` (and, in the
/// second form, the handle's envelope index `$e`, locked).
macro_rules! read {
    ($self:ident, |$c:ident, $s:ident| $body:expr) => {{
        let conn = $self.inner.db.conn().await?;
        let $c = Conn::new(&conn, &$self.inner.db);
        let $s = &$self.inner.sid;
        $body
    }};
    ($self:ident, |$c:ident, $s:ident, $e:ident| $body:expr) => {{
        let mut guard = $self.inner.envelopes.lock().await;
        let $e = &mut *guard;
        read!($self, |$c, $s| $body)
    }};
}

/// One session in a PostgreSQL store. A writable handle holds the session's writer lock on its
/// own connection until the last clone is dropped; reads use the repository's pool and see
/// every committed append of any process at once.
#[derive(Clone)]
pub struct PostgresStorage {
    inner: Arc<Inner>,
}

struct Inner {
    db: Arc<Db>,
    sid: Sid,
    header: SessionHeader,
    location: String,
    /// `None` for read-only handles. The mutex serializes this process's appends.
    writer: Option<tokio::sync::Mutex<Writer>>,
    /// The envelopes read so far (DECISIONS §24.21). Taken after `writer` when both are needed.
    envelopes: tokio::sync::Mutex<Envelopes>,
}

impl std::fmt::Debug for PostgresStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStorage")
            .field("location", &self.inner.location)
            .field("writable", &self.inner.writer.is_some())
            .finish()
    }
}

pub(crate) fn location(db: &Db, id: &str) -> String {
    format!("{}#{id}", db.target.display)
}

impl PostgresStorage {
    pub(crate) async fn open(
        db: Arc<Db>,
        sid: Sid,
        header: SessionHeader,
        writable: bool,
    ) -> Result<Self> {
        let location = location(&db, &sid.id);
        let writer = if writable {
            Some(tokio::sync::Mutex::new(
                Writer::open(&db, &sid, &location).await?,
            ))
        } else {
            None
        };
        Ok(Self {
            inner: Arc::new(Inner {
                db,
                sid,
                header,
                location,
                writer,
                envelopes: tokio::sync::Mutex::new(Envelopes::default()),
            }),
        })
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.inner.sid.id
    }

    /// Whether this handle holds the writer lock.
    pub fn is_writable(&self) -> bool {
        self.inner.writer.is_some()
    }

    fn writer(&self) -> Result<&tokio::sync::Mutex<Writer>> {
        self.inner.writer.as_ref().ok_or_else(|| {
            SessionError::Storage(format!(
                "session {} was opened read-only",
                self.inner.location
            ))
        })
    }

    /// Stores `entry` as serialized in `line` (the exact text kept in the store), after the
    /// checks every verbatim append makes. Used by `append_entry` and by import.
    pub(crate) async fn append_line(&self, entry: &SessionEntry, line: &str) -> Result<()> {
        let mut w = self.writer()?.lock().await;
        let (db, s, loc) = (&self.inner.db, &self.inner.sid, &self.inner.location);
        w.state(db, s, loc).await?;
        append::check_entry_id(&entry.id)?;
        // Duplicate id, parent and target in one round trip.
        let conn = db.conn().await?;
        let (duplicate, parent_found, target_found) = Conn::new(&conn, db)
            .verbatim_checks(
                s,
                &entry.id,
                entry.parent_id.as_deref(),
                entry.kind.target_id(),
            )
            .await?;
        drop(conn);
        if duplicate {
            return Err(SessionError::InvalidEntry(format!(
                "duplicate entry id {} in session {}",
                entry.id, s.id
            )));
        }
        if let (Some(p), false) = (&entry.parent_id, parent_found) {
            return Err(SessionError::InvalidEntry(format!(
                "entry {} has parentId {p}, which is not in session {}",
                entry.id, s.id
            )));
        }
        if let (Some(t), false) = (entry.kind.target_id(), target_found) {
            return Err(SessionError::NotFound(format!("Entry not found: {t}")));
        }
        match w.commit(db, s, loc, entry, line).await? {
            Outcome::Stored => Ok(()),
            Outcome::Refused(e) => Err(e),
        }
    }
}

/// Targets of `leaf`, `label` and `context_edit` must exist (`not_found`, like pi).
async fn check_target(c: &Conn<'_>, s: &Sid, kind: &EntryKind) -> Result<()> {
    match kind.target_id() {
        Some(t) if !c.entry_exists(s, t).await? => {
            Err(SessionError::NotFound(format!("Entry not found: {t}")))
        }
        _ => Ok(()),
    }
}

/// DECISIONS §3.5: the replacement is `null` or `{content}`, and the target is a user,
/// assistant or toolResult message or a custom_message on the active branch.
async fn check_context_edit(
    c: &Conn<'_>,
    s: &Sid,
    env: &mut Envelopes,
    state: &MaterializedState,
    target: &str,
    replacement: &Value,
) -> Result<()> {
    let Some(entry) = c.get_entry(s, target).await? else {
        return Err(SessionError::NotFound(format!("Entry not found: {target}")));
    };
    rules::check_replacement_shape(target, replacement)?;
    let on_branch = match &state.leaf_id {
        Some(leaf) => c.is_ancestor(s, target, leaf, env).await?,
        None => false,
    };
    let role = match &entry.kind {
        EntryKind::Message(m) => Some(m.message.role()),
        _ => None,
    };
    rules::check_context_edit_target(target, on_branch, entry.entry_type(), role)
}

#[async_trait]
impl SessionStorage for PostgresStorage {
    async fn header(&self) -> Result<SessionHeader> {
        Ok(self.inner.header.clone())
    }

    fn location(&self) -> String {
        self.inner.location.clone()
    }

    async fn leaf_id(&self) -> Result<Option<String>> {
        read!(self, |c, s| c.leaf_id(s).await)
    }

    async fn set_leaf(&self, target: Option<&str>) -> Result<SessionEntry> {
        let draft = EntryDraft::new(EntryKind::Leaf(LeafEntry {
            target_id: target.map(str::to_owned),
            extra: Default::default(),
        }));
        self.append(draft).await
    }

    async fn create_entry_id(&self) -> Result<String> {
        let conn = self.inner.db.conn().await?;
        let c = Conn::new(&conn, &self.inner.db);
        for _ in 0..ids::ENTRY_ID_TRIES {
            let id = ids::random_entry_id();
            if !c.entry_exists(&self.inner.sid, &id).await? {
                return Ok(id);
            }
        }
        Ok(ids::fallback_entry_id())
    }

    async fn append(&self, draft: EntryDraft) -> Result<SessionEntry> {
        let mut w = self.writer()?.lock().await;
        let (db, s, loc) = (&self.inner.db, &self.inner.sid, &self.inner.location);
        let state = w.state(db, s, loc).await?.clone();
        let draft = DraftEntry::new(draft);
        if draft.kind().target_id().is_some() {
            let conn = db.conn().await?;
            let c = Conn::new(&conn, db);
            check_target(&c, s, draft.kind()).await?;
            if let EntryKind::ContextEdit(edit) = draft.kind() {
                let mut env = self.inner.envelopes.lock().await;
                check_context_edit(&c, s, &mut env, &state, &edit.target_id, &edit.replacement)
                    .await?;
            }
        }
        draft.check_given_id()?;
        let mut pending = draft.place(state.leaf_id.clone(), ids::random_entry_id);
        // The (sid, id) unique index is the existence check: a duplicate given id is refused
        // (nothing changes); a generated id that collides is drawn again.
        loop {
            let line = pending.entry().to_json();
            match w.commit(db, s, loc, pending.entry(), &line).await? {
                Outcome::Stored => return Ok(pending.into_entry()),
                Outcome::Refused(SessionError::InvalidEntry(_)) if pending.redraw_id() => {}
                Outcome::Refused(e) => return Err(e),
            }
        }
    }

    async fn append_entry(&self, entry: SessionEntry) -> Result<()> {
        let line = entry.to_json();
        self.append_line(&entry, &line).await
    }

    async fn get_entry(&self, id: &str) -> Result<Option<SessionEntry>> {
        read!(self, |c, s| c.get_entry(s, id).await)
    }

    async fn find_entries(&self, entry_type: &str) -> Result<Vec<SessionEntry>> {
        read!(self, |c, s| c.find_entries(s, entry_type).await)
    }

    async fn get_label(&self, id: &str) -> Result<Option<String>> {
        read!(self, |c, s| c.get_label(s, id).await)
    }

    async fn session_name(&self) -> Result<Option<String>> {
        read!(self, |c, s| Ok(c.state(s).await?.name))
    }

    async fn stats(&self) -> Result<SessionStats> {
        read!(self, |c, s| Ok(c.state(s).await?.stats))
    }

    async fn path_to_root_or_compaction(&self, leaf: Option<&str>) -> Result<Vec<SessionEntry>> {
        read!(self, |c, s, e| c.walk(s, leaf, true, e).await)
    }

    async fn ancestry(&self, leaf: Option<&str>) -> Result<Vec<SessionEntry>> {
        read!(self, |c, s, e| c.walk(s, leaf, false, e).await)
    }

    async fn entries(&self, after_seq: Option<u64>, limit: Option<usize>) -> Result<EntryPage> {
        read!(self, |c, s| c.entries_page(s, after_seq, limit).await)
    }

    async fn children(&self, id: Option<&str>) -> Result<Vec<SessionEntry>> {
        read!(self, |c, s| c.children(s, id).await)
    }

    async fn entry_count(&self) -> Result<u64> {
        read!(self, |c, s| Ok(c.state(s).await?.entry_count))
    }

    async fn derived_settings(&self, leaf: Option<&str>) -> Result<DerivedSettings> {
        read!(self, |c, s, e| c.derived_settings(s, leaf, e).await)
    }

    /// Under `Synchronous::Normal`, waits for the server's WAL flush of every earlier append
    /// (one flush per turn); under `Full` each append already waited. Read-only: nothing to do.
    async fn save_point(&self) -> Result<()> {
        let Some(w) = &self.inner.writer else {
            return Ok(());
        };
        if self.inner.db.options.synchronous == Synchronous::Full {
            return Ok(());
        }
        let mut w = w.lock().await;
        w.flush(&self.inner.db, &self.inner.sid, &self.inner.location)
            .await
    }
}
