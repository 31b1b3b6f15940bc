//! The envelope index of one session: id, parent and kind of every entry, without payloads,
//! kept in memory by each storage handle and extended by the rows appended since it was last
//! read (DECISIONS §24.21).
//!
//! Paths are walked here, on the client: one index-order read of the envelope columns the first
//! time, afterwards one `seq > last` range read returning only what other writers (or this one)
//! appended. A path walk then costs O(path length) in memory and never O(session) in queries, and
//! payloads are fetched only for the entries a caller actually reads. Entries are never changed
//! or removed inside a session and log positions only grow, so the rows read once stay valid;
//! a deleted session is caught by the state read every walk starts with.

use std::collections::HashMap;

use arbor_session::error::SessionError;

use tokio_postgres::Row;

use crate::sid::Sid;

type Result<T> = std::result::Result<T, SessionError>;

/// What the path readers need to know about an entry's kind without parsing its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    Compaction,
    ModelChange,
    /// A `message` entry whose message role is `assistant` (it carries a model).
    AssistantMessage,
    ThinkingLevelChange,
    ActiveToolsChange,
    Other,
}

impl Mark {
    fn of(ty: &str, role: Option<&str>) -> Mark {
        match ty {
            "compaction" => Mark::Compaction,
            "model_change" => Mark::ModelChange,
            "message" if role == Some("assistant") => Mark::AssistantMessage,
            "thinking_level_change" => Mark::ThinkingLevelChange,
            "active_tools_change" => Mark::ActiveToolsChange,
            _ => Mark::Other,
        }
    }
}

/// One entry's envelope.
#[derive(Debug, Clone)]
pub(crate) struct EnvelopeRow {
    pub seq: i64,
    pub id: Box<str>,
    parent: Option<Box<str>>,
    pub mark: Mark,
}

/// The envelopes of one session read so far (in the order they were read).
#[derive(Debug, Default)]
pub(crate) struct Envelopes {
    rows: Vec<EnvelopeRow>,
    by_id: HashMap<Box<str>, u32>,
    last_seq: i64,
}

impl Envelopes {
    /// The highest log position read so far: the next read asks only for rows after it.
    pub(crate) fn last_seq(&self) -> i64 {
        self.last_seq
    }

    /// Adds the `(seq, id, parent_id, type, role)` rows read after [`Envelopes::last_seq`].
    pub(crate) fn extend(&mut self, s: &Sid, rows: &[Row]) -> Result<()> {
        self.rows.reserve(rows.len());
        self.by_id.reserve(rows.len());
        for r in rows {
            let seq: i64 = r.get(0);
            let id: &str = r.get(1);
            let parent: Option<&str> = r.get(2);
            let index = u32::try_from(self.rows.len()).map_err(|_| {
                SessionError::InvalidSession(format!(
                    "session {}: more entries than this build can index",
                    s.id
                ))
            })?;
            self.by_id.insert(id.into(), index);
            self.rows.push(EnvelopeRow {
                seq,
                id: id.into(),
                parent: parent.map(Into::into),
                mark: Mark::of(r.get(3), r.get(4)),
            });
            self.last_seq = self.last_seq.max(seq);
        }
        Ok(())
    }

    /// The envelope of `id`, if read.
    pub(crate) fn get(&self, id: &str) -> Option<&EnvelopeRow> {
        self.by_id.get(id).map(|&i| &self.rows[i as usize])
    }

    /// The chain from `start` up to the root, leaf first. `start_given` tells a caller's id
    /// (`not_found` when unknown) from the stored leaf (a broken session). A dangling parent or
    /// a cycle is an error; the walk is bounded by the entry count, so a cycle cannot hang it.
    pub(crate) fn chain(
        &self,
        s: &Sid,
        start: &str,
        start_given: bool,
    ) -> Result<Vec<&EnvelopeRow>> {
        let Some(mut cur) = self.get(start) else {
            return Err(if start_given {
                SessionError::NotFound(format!("Entry not found: {start}"))
            } else {
                SessionError::InvalidSession(format!(
                    "session {}: the leaf points at entry {start}, which does not exist",
                    s.id
                ))
            });
        };
        let mut out = Vec::new();
        loop {
            if out.len() >= self.rows.len() {
                return Err(SessionError::InvalidSession(format!(
                    "session {}: the parentId chain through entry {} forms a cycle",
                    s.id, cur.id
                )));
            }
            out.push(cur);
            match &cur.parent {
                None => break,
                Some(parent) => match self.get(parent) {
                    Some(p) => cur = p,
                    None => {
                        return Err(SessionError::InvalidSession(format!(
                        "session {}: entry {} has parentId {parent}, which is not in the session",
                        s.id, cur.id
                    )))
                    }
                },
            }
        }
        Ok(out)
    }
}

/// Sorted log positions as inclusive `(first, last)` runs of consecutive positions, so a path
/// (mostly long runs: a chain appended in order) is fetched with a few range scans.
pub(crate) fn runs(sorted: &[i64]) -> (Vec<i64>, Vec<i64>) {
    let (mut lo, mut hi) = (Vec::new(), Vec::new());
    for &q in sorted {
        match hi.last_mut() {
            Some(h) if *h + 1 == q => *h = q,
            Some(h) if *h == q => {}
            _ => {
                lo.push(q);
                hi.push(q);
            }
        }
    }
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::runs;

    #[test]
    fn runs_join_consecutive_positions() {
        assert_eq!(runs(&[]), (vec![], vec![]));
        assert_eq!(runs(&[4]), (vec![4], vec![4]));
        assert_eq!(
            runs(&[1, 2, 3, 7, 9, 10, 10, 11]),
            (vec![1, 7, 9], vec![3, 7, 11])
        );
    }
}
