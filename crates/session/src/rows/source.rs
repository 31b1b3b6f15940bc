//! A session's rows readable after its storage is gone (DECISIONS §25.82).

use std::fmt;
use std::sync::Arc;

use crate::entry::SessionEntry;
use crate::error::{Result, SessionError};
use crate::rows::view::ROW_PAGE;
use crate::rows::{RowCaps, RowSummary};
use crate::storage::SessionStorage;
use crate::stored_lines::LineSnapshot;
use crate::workers::ordered_rows;

/// A session's log as it was when the source was made, summarized on demand and without the
/// storage: the TUI's `/tree` search summarizes again with longer texts at its first keystroke
/// (DECISIONS §25.82). Summaries are in log order, one per entry.
pub trait RowSource: Send + Sync {
    /// Every entry of the log as it was, summarized with `caps`, in log order. Errors when the
    /// stored lines can no longer be read (a file changed underneath).
    fn summaries(&self, caps: RowCaps) -> Result<Vec<RowSummary>>;
}

/// A source over parsed entries (the default for backends without a line index).
#[derive(Debug)]
pub struct EntryRows(pub Vec<SessionEntry>);

impl RowSource for EntryRows {
    fn summaries(&self, caps: RowCaps) -> Result<Vec<RowSummary>> {
        Ok(self
            .0
            .iter()
            .map(|e| RowSummary::from_entry(e, caps))
            .collect())
    }
}

impl fmt::Debug for dyn RowSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RowSource")
    }
}

/// Shared handle to a source.
pub type RowSourceRef = Arc<dyn RowSource>;

/// The log as it is now, to summarize later without `storage` (DECISIONS §25.82): where each
/// line is when the backend offers its stored lines, every parsed entry otherwise.
pub async fn row_source<S: SessionStorage + ?Sized>(storage: &S) -> Result<RowSourceRef> {
    if let Some(lines) = storage.lines() {
        return Ok(Arc::new(lines.snapshot().await?));
    }
    let mut entries = Vec::new();
    let mut after = None;
    loop {
        let page = storage.entries(after, Some(ROW_PAGE)).await?;
        let empty = page.entries.is_empty();
        entries.extend(page.entries.into_iter().map(|(_, e)| e));
        match page.next_after_seq {
            Some(next) if Some(next) != after && !empty => after = Some(next),
            _ => break,
        }
    }
    Ok(Arc::new(EntryRows(entries)))
}

/// Summaries of every line, each read through a source of the snapshot's own
/// (`ordered_rows`).
impl RowSource for LineSnapshot {
    fn summaries(&self, caps: RowCaps) -> Result<Vec<RowSummary>> {
        let make_src = || self.sources.source();
        let mut out = Vec::with_capacity(self.lines.len());
        ordered_rows(
            self.lines.len(),
            &make_src,
            &|src, i| {
                let (raw, line) = &self.lines[i];
                let mut row = None;
                src.with_line(raw, &mut |text| {
                    row = Some(RowSummary::from_line(text, caps).map_err(|e| match line {
                        0 => SessionError::InvalidEntry(format!("{}: {e}", self.origin)),
                        n => SessionError::Line {
                            file: self.origin.clone(),
                            line: *n as usize,
                            message: e.to_string(),
                        },
                    })?);
                    Ok(())
                })?;
                row.ok_or_else(|| {
                    SessionError::Storage(format!("{}: line {line} was not read", self.origin))
                })
            },
            &mut |row| out.push(row),
        )?;
        Ok(out)
    }
}
