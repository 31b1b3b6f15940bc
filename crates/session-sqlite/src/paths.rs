//! Paths through the tree: root-to-leaf walks (whole or from the compaction boundary), the
//! envelope chain, the settings derived from a path, and the path a fork copies.

use arbor_ai::types::Message;
use arbor_session::error::SessionError;
use arbor_session::message::AgentMessage;
use arbor_session::{DerivedSettings, EntryKind, SessionEntry};
use rusqlite::params;

use crate::conn::{to_i64, Conn, Sid};
use crate::rows::decode_payload;

type Result<T> = std::result::Result<T, SessionError>;

impl Conn<'_> {
    /// Walks from `from` (default: the leaf) towards the root and returns root..=from.
    /// With `stop_at_compaction` the walk ends at the newest compaction boundary (DECISIONS
    /// §3.1). A missing parent or a parent cycle is `invalid_session`; the walk is bounded by
    /// the session's entry count, so a cycle cannot hang it.
    pub(crate) fn walk(
        &self,
        s: &Sid,
        from: Option<&str>,
        stop_at_compaction: bool,
    ) -> Result<Vec<SessionEntry>> {
        self.walk_with(s, from, stop_at_compaction, |entry, _| entry)
    }

    /// [`Conn::walk`], handing each entry and its stored payload to `keep`.
    fn walk_with<T>(
        &self,
        s: &Sid,
        from: Option<&str>,
        stop_at_compaction: bool,
        mut keep: impl FnMut(SessionEntry, String) -> T,
    ) -> Result<Vec<T>> {
        let state = self.state(s)?;
        let start = match from {
            Some(id) => id.to_owned(),
            None => match state.leaf_id {
                Some(leaf) => leaf,
                None => return Ok(Vec::new()),
            },
        };
        let bound = to_i64(state.entry_count);
        let mut st = self
            .conn
            .prepare_cached(
                "WITH RECURSIVE up(key, id, parent_id, n) AS (
                     SELECT key, id, parent_id, 1 FROM entries WHERE sid = ?1 AND id = ?2
                     UNION ALL
                     SELECT e.key, e.id, e.parent_id, up.n + 1
                     FROM up JOIN entries e ON e.sid = ?1 AND e.id = up.parent_id
                     WHERE up.n <= ?3
                 )
                 SELECT key, id FROM up",
            )
            .map_err(self.err("cannot walk entry path"))?;
        let mut rows = st
            .query(params![s.sid, start, bound])
            .map_err(self.err("cannot walk entry path"))?;
        let mut out: Vec<T> = Vec::new();
        let mut boundary_fixed = !stop_at_compaction;
        let mut stop_at: Option<String> = None;
        let mut stopped = false;
        // The last entry kept: its parent must exist unless the walk stopped at a boundary.
        let mut last: Option<(String, Option<String>)> = None;
        // The recursive query carries only envelope columns (payloads would be copied through
        // its queue); each payload is then one rowid lookup.
        let mut payload_of = self
            .conn
            .prepare_cached("SELECT payload FROM entries WHERE key = ?1")
            .map_err(self.err("cannot walk entry path"))?;
        while let Some(row) = rows.next().map_err(self.err("cannot walk entry path"))? {
            let (key, id): (i64, String) = (|| Ok((row.get(0)?, row.get(1)?)))()
                .map_err(self.err("cannot walk entry path"))?;
            let payload: String = payload_of
                .query_row([key], |r| r.get(0))
                .map_err(self.err("cannot read entry payload"))?;
            if out.len() as u64 >= state.entry_count {
                return Err(SessionError::InvalidSession(format!(
                    "session {}: the parentId chain through entry {id} forms a cycle",
                    s.id
                )));
            }
            let entry = decode_payload(&s.id, key, &id, &payload)?;
            let mut at_boundary = false;
            if !boundary_fixed {
                if let EntryKind::Compaction(c) = &entry.kind {
                    boundary_fixed = true;
                    if c.retained_tail.is_some() {
                        at_boundary = true;
                    } else {
                        stop_at = c.first_kept_entry_id.clone();
                    }
                }
            }
            // A compaction that kept nothing names itself as the first kept entry.
            at_boundary |= stop_at.as_deref() == Some(entry.id.as_str());
            last = Some((entry.id.clone(), entry.parent_id.clone()));
            out.push(keep(entry, payload));
            if at_boundary {
                stopped = true;
                break;
            }
        }
        if out.is_empty() {
            return Err(match from {
                Some(id) => SessionError::NotFound(format!("Entry not found: {id}")),
                None => SessionError::InvalidSession(format!(
                    "session {}: the leaf points at entry {start}, which does not exist",
                    s.id
                )),
            });
        }
        if let (false, Some((id, Some(parent)))) = (stopped, &last) {
            return Err(SessionError::InvalidSession(format!(
                "session {}: entry {id} has parentId {parent}, which is not in the session",
                s.id
            )));
        }
        out.reverse();
        Ok(out)
    }

    /// The envelope chain from `from` (default: the leaf) to the root, leaf first:
    /// `(key, type)` per entry. Validated like [`Conn::walk`] (missing start, dangling parent,
    /// cycle) without reading any payload.
    fn envelope_chain(&self, s: &Sid, from: Option<&str>) -> Result<Vec<(i64, String)>> {
        let state = self.state(s)?;
        let start = match from {
            Some(id) => id.to_owned(),
            None => match state.leaf_id {
                Some(leaf) => leaf,
                None => return Ok(Vec::new()),
            },
        };
        let mut st = self
            .conn
            .prepare_cached(
                "WITH RECURSIVE up(key, id, parent_id, type, n) AS (
                     SELECT key, id, parent_id, type, 1 FROM entries WHERE sid = ?1 AND id = ?2
                     UNION ALL
                     SELECT e.key, e.id, e.parent_id, e.type, up.n + 1
                     FROM up JOIN entries e ON e.sid = ?1 AND e.id = up.parent_id
                     WHERE up.n <= ?3
                 )
                 SELECT key, id, parent_id, type FROM up",
            )
            .map_err(self.err("cannot walk entry path"))?;
        let mut rows = st
            .query(params![s.sid, start, to_i64(state.entry_count)])
            .map_err(self.err("cannot walk entry path"))?;
        let mut out = Vec::new();
        let mut last: Option<(String, Option<String>)> = None;
        while let Some(row) = rows.next().map_err(self.err("cannot walk entry path"))? {
            let read = || -> rusqlite::Result<(i64, String, Option<String>, String)> {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            };
            let (key, id, parent, ty) = read().map_err(self.err("cannot walk entry path"))?;
            if out.len() as u64 >= state.entry_count {
                return Err(SessionError::InvalidSession(format!(
                    "session {}: the parentId chain through entry {id} forms a cycle",
                    s.id
                )));
            }
            out.push((key, ty));
            last = Some((id, parent));
        }
        match last {
            None => Err(match from {
                Some(id) => SessionError::NotFound(format!("Entry not found: {id}")),
                None => SessionError::InvalidSession(format!(
                    "session {}: the leaf points at entry {start}, which does not exist",
                    s.id
                )),
            }),
            Some((id, Some(parent))) => Err(SessionError::InvalidSession(format!(
                "session {}: entry {id} has parentId {parent}, which is not in the session",
                s.id
            ))),
            Some((_, None)) => Ok(out),
        }
    }

    /// DECISIONS §3.2 without parsing the whole path: walk the (validated) envelope chain from
    /// the leaf and parse only rows that can still decide a setting; message rows are first
    /// probed for their role, so only assistant messages are built.
    pub(crate) fn derived_settings(&self, s: &Sid, from: Option<&str>) -> Result<DerivedSettings> {
        let chain = self.envelope_chain(s, from)?;
        let mut payload_of = self
            .conn
            .prepare_cached("SELECT id, payload FROM entries WHERE key = ?1")
            .map_err(self.err("cannot read entry payload"))?;
        let mut out = DerivedSettings::default();
        let (mut model, mut thinking, mut tools) = (false, false, false);
        for (key, ty) in chain {
            if model && thinking && tools {
                break;
            }
            let wanted = match ty.as_str() {
                "model_change" | "message" => !model,
                "thinking_level_change" => !thinking,
                "active_tools_change" => !tools,
                _ => false,
            };
            if !wanted {
                continue;
            }
            let (id, payload): (String, String) = payload_of
                .query_row([key], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(self.err("cannot read entry payload"))?;
            if ty == "message" && !probe_is_assistant(&payload) {
                continue;
            }
            let entry = decode_payload(&s.id, key, &id, &payload)?;
            let mut single = DerivedSettings::default();
            if !single.apply(&entry) {
                continue;
            }
            match ty.as_str() {
                "thinking_level_change" => {
                    out.thinking_level = single.thinking_level;
                    thinking = true;
                }
                "active_tools_change" => {
                    out.active_tool_names = single.active_tool_names;
                    tools = true;
                }
                _ => {
                    out.model = single.model;
                    model = true;
                }
            }
        }
        Ok(out)
    }

    /// The root→target path a fork copies (DECISIONS §5), with the stored payloads (copied byte
    /// for byte).
    pub(crate) fn fork_rows(
        &self,
        s: &Sid,
        target_id: &str,
        position: arbor_session::ForkPosition,
    ) -> Result<Vec<(SessionEntry, String)>> {
        use arbor_session::ForkPosition;
        let target = self.get_entry(s, target_id)?.ok_or_else(|| {
            SessionError::InvalidForkTarget(format!("Entry {target_id} not found"))
        })?;
        let last = match position {
            ForkPosition::At => Some(target.id),
            ForkPosition::Before => {
                let is_user = matches!(target.message(), Some(AgentMessage::Llm(Message::User(_))));
                if !is_user {
                    return Err(SessionError::InvalidForkTarget(format!(
                        "Entry {target_id} is not a user message"
                    )));
                }
                target.parent_id
            }
        };
        let Some(last) = last else {
            return Ok(Vec::new());
        };
        self.walk_with(s, Some(&last), false, |entry, payload| (entry, payload))
    }
}

/// Whether a message payload's `message.role` is `assistant`, skipping everything else without
/// building it. A payload this cannot read counts as a candidate, so the full parse reports it.
fn probe_is_assistant(payload: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Entry<'a> {
        #[serde(borrow, default)]
        message: Option<Role<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Role<'a> {
        #[serde(borrow, default)]
        role: Option<std::borrow::Cow<'a, str>>,
    }
    match serde_json::from_str::<Entry<'_>>(payload) {
        Ok(e) => e
            .message
            .and_then(|m| m.role)
            .is_some_and(|r| r == "assistant"),
        Err(_) => true,
    }
}
