//! The storage contract's one capability for fast line access.
//!
//! Memory and JSONL keep every entry as its stored JSON line plus an in-memory index of the
//! envelope facts (`crate::index`). The views that read a whole log (rows, the rendered
//! context) are much faster over those lines than over parsed entries: they read only what
//! they show and spread the lines over one worker per core (DECISIONS §25.112, §25.120). A
//! backend offers that through [`SessionStorage::lines`](crate::SessionStorage::lines);
//! backends without lines (SQLite, PostgreSQL) return `None` and the views take the generic
//! path over the log methods.

use async_trait::async_trait;

use crate::error::Result;
use crate::index::{Index, LineSource, Raw};

/// Makes one line source per reading thread (a source may keep a read window of its own).
pub(crate) type Sources<'a> = dyn Fn() -> Box<dyn LineSource + 'a> + Sync + 'a;

/// The index and the stored lines of a session, lent for one read under the backend's lock.
pub struct Lines<'a> {
    pub(crate) index: &'a Index,
    pub(crate) sources: &'a Sources<'a>,
}

impl std::fmt::Debug for Lines<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lines")
            .field("origin", &self.index.origin())
            .field("entries", &self.index.len())
            .finish_non_exhaustive()
    }
}

/// Fast access to a backend's stored lines.
#[async_trait]
pub trait StoredLines: Send + Sync {
    /// Runs `read` over the session's lines as they are now; appends wait until it returns.
    async fn read_lines(
        &self,
        read: &mut (dyn for<'l> FnMut(Lines<'l>) -> Result<()> + Send),
    ) -> Result<()>;
    /// Where every line is as of now, readable without this storage: lines are never
    /// rewritten once indexed, so the copy stays valid while the log only grows (DECISIONS
    /// §25.82).
    async fn snapshot(&self) -> Result<LineSnapshot>;
}

/// Opens line sources for a [`LineSnapshot`] (the backend's own handle on its lines).
pub(crate) trait SnapshotSources: Send + Sync {
    fn source(&self) -> Box<dyn LineSource + '_>;
}

/// A copy of where every line of a session is (see [`StoredLines::snapshot`]).
pub struct LineSnapshot {
    pub(crate) origin: String,
    /// Each entry's line and its 1-based file line (0 when not from a file).
    pub(crate) lines: Vec<(Raw, u32)>,
    pub(crate) sources: Box<dyn SnapshotSources>,
}

impl std::fmt::Debug for LineSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineSnapshot")
            .field("origin", &self.origin)
            .field("entries", &self.lines.len())
            .finish_non_exhaustive()
    }
}

impl LineSnapshot {
    pub(crate) fn of(index: &Index, sources: Box<dyn SnapshotSources>) -> LineSnapshot {
        LineSnapshot {
            origin: index.origin().to_owned(),
            lines: index
                .slots()
                .iter()
                .map(|s| (s.raw.clone(), s.line))
                .collect(),
            sources,
        }
    }
}
