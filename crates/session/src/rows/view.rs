//! Every entry's [`RowSummary`] from any backend: read from the stored lines on one worker per
//! core where the backend offers them (DECISIONS §25.112), else parsed a page at a time.

use crate::error::Result;
use crate::index::{Index, LineSource};
use crate::index_reads::line_error;
use crate::rows::{RowCaps, RowSummary};
use crate::storage::SessionStorage;
use crate::workers::ordered_rows;

/// Entries per page when the rows are read through the log methods.
pub(crate) const ROW_PAGE: usize = 4096;

/// Every entry's [`RowSummary`], in log order, through `map` and then to `visit`: what tree
/// views draw (DECISIONS §25.80). Over stored lines, only what a row shows is read, on several
/// threads, and `map` runs on the thread that read the row, so a caller's per-row work (the
/// text of `arbor session tree`) is spread with it (§25.114).
pub async fn visit_row_summaries<S: SessionStorage + ?Sized, T: Send>(
    storage: &S,
    caps: RowCaps,
    map: &(dyn Fn(RowSummary) -> T + Sync),
    visit: &mut (dyn FnMut(T) + Send),
) -> Result<()> {
    if let Some(lines) = storage.lines() {
        return lines
            .read_lines(&mut |l| visit_rows(l.index, l.sources, caps, map, visit))
            .await;
    }
    let mut after = None;
    loop {
        let page = storage.entries(after, Some(ROW_PAGE)).await?;
        for (_, entry) in &page.entries {
            visit(map(RowSummary::from_entry(entry, caps)));
        }
        match page.next_after_seq {
            Some(next) if Some(next) != after && !page.entries.is_empty() => after = Some(next),
            _ => break,
        }
    }
    Ok(())
}

/// Every entry's row summary from its stored line, in log order (DECISIONS §25.80), read by
/// [`ordered_rows`] with one source per worker from `make_src`; each summary goes through
/// `map` on the thread that read it (§25.114).
fn visit_rows<S: LineSource, T: Send>(
    index: &Index,
    make_src: &(dyn Fn() -> S + Sync),
    caps: RowCaps,
    map: &(dyn Fn(RowSummary) -> T + Sync),
    visit: &mut (dyn FnMut(T) + Send),
) -> Result<()> {
    let slots = index.slots();
    ordered_rows(
        slots.len(),
        make_src,
        &|src, ix| {
            let mut row = None;
            // The line is lent from the read window, not copied (DECISIONS §25.91).
            src.with_line(&slots[ix].raw, &mut |text| {
                row = Some(
                    RowSummary::from_line(text, caps)
                        .map_err(|e| line_error(index, ix as u32, &e.to_string()))?,
                );
                Ok(())
            })?;
            row.map(map)
                .ok_or_else(|| line_error(index, ix as u32, "the line was not read"))
        },
        &mut |row| visit(row),
    )
}
