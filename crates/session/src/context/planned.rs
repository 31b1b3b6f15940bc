//! The default context list planned from a line index (DECISIONS §25.100, §25.120): the fast
//! path of [`visit_context_entries`](super::entries::visit_context_entries) and
//! [`render_context_entries`](super::entries::render_context_entries) for backends that offer
//! their stored lines.

use crate::context::projection::is_system_message;
use crate::context::renderer::EntryRenderer;
use crate::entry::{EntryKind, SessionEntry};
use crate::error::Result;
use crate::index::{Index, LineSource};
use crate::index_reads::{leaf_arg, read_entry};
use crate::workers::{cores, ordered_chunks_on};

/// The list [`visit_context_entries`] hands over, planned from the index
/// (DECISIONS §25.100): the window and the list's shape (the newest compaction, its kept range)
/// come from the index's types, and each entry is parsed only when it is handed over. The list
/// equals `default_context_indices` over the parsed window: the compaction is parsed first for
/// its `retainedTail` and `firstKeptEntryId`, and system messages of the kept range are dropped
/// once parsed.
///
/// [`visit_context_entries`]: super::entries::visit_context_entries
struct ContextList {
    window: Vec<u32>,
    /// The newest compaction of the window, parsed; it opens the list.
    opening: Option<SessionEntry>,
    /// `window[kept]` follows the opening, its system messages dropped.
    kept: std::ops::Range<usize>,
    /// `window[rest]` follows the kept range.
    rest: std::ops::Range<usize>,
    /// The type tag of `context_edit` entries, if the log has any.
    edit: Option<u32>,
}

impl ContextList {
    fn plan(index: &Index, src: &dyn LineSource, leaf: Option<&str>) -> Result<ContextList> {
        let start = leaf_arg(index, leaf)?;
        let window = index.path_to_root_or_compaction(start)?;
        let compaction = index.type_tag("compaction");
        let newest = compaction.and_then(|t| window.iter().rposition(|&ix| index.slot(ix).ty == t));
        let (opening, kept, rest) = match newest {
            None => (None, 0..0, 0..window.len()),
            Some(c) => {
                let entry = read_entry(index, src, window[c])?;
                let mut kept = 0..0;
                if let EntryKind::Compaction(info) = &entry.kind {
                    if info.retained_tail.is_none() {
                        if let Some(first) = info.first_kept_entry_id.as_deref() {
                            if let Some(s) =
                                window[..c].iter().position(|&ix| index.id(ix) == first)
                            {
                                kept = s..c;
                            }
                        }
                    }
                }
                (Some(entry), kept, c + 1..window.len())
            }
        };
        Ok(ContextList {
            window,
            opening,
            kept,
            rest,
            edit: index.type_tag("context_edit"),
        })
    }

    fn is_edit(&self, index: &Index, ix: u32) -> bool {
        Some(index.slot(ix).ty) == self.edit
    }

    /// The `context_edit` entries of the list, in list order.
    fn edits<'a>(&'a self, index: &'a Index) -> impl Iterator<Item = u32> + 'a {
        // A log without edits is not walked for them.
        let (kept, rest) = match self.edit {
            Some(_) => (self.kept.clone(), self.rest.clone()),
            None => (0..0, 0..0),
        };
        self.window[kept]
            .iter()
            .chain(&self.window[rest])
            .copied()
            .filter(move |&ix| self.is_edit(index, ix))
    }

    /// The entries after the opening that are not edits, each with whether it is dropped when
    /// it turns out to be a system message (the kept range).
    fn others(&self, index: &Index) -> Vec<(u32, bool)> {
        let kept = self.window[self.kept.clone()].iter().map(|&ix| (ix, true));
        let rest = self.window[self.rest.clone()].iter().map(|&ix| (ix, false));
        kept.chain(rest)
            .filter(|&(ix, _)| !self.is_edit(index, ix))
            .collect()
    }
}

/// [`visit_context_entries`] from the index ([`ContextList`]): at most one entry
/// of the path (plus the newest compaction) is held at a time.
///
/// [`visit_context_entries`]: super::entries::visit_context_entries
pub(crate) fn visit_planned(
    index: &Index,
    src: &dyn LineSource,
    leaf: Option<&str>,
    visit: &mut (dyn FnMut(SessionEntry) -> Result<()> + Send),
) -> Result<()> {
    let mut list = ContextList::plan(index, src, leaf)?;
    for ix in list.edits(index) {
        visit(read_entry(index, src, ix)?)?;
    }
    if let Some(entry) = list.opening.take() {
        visit(entry)?;
    }
    for (ix, drops_system) in list.others(index) {
        let entry = read_entry(index, src, ix)?;
        if drops_system && is_system_message(&entry) {
            continue;
        }
        visit(entry)?;
    }
    Ok(())
}

/// [`render_context_entries`] from the index ([`ContextList`], DECISIONS
/// §25.120): the edits and the opening on the calling thread, then the other entries read,
/// parsed and rendered in chunks by one worker per core, each through its own source from
/// `make_src`, so every entry is freed on the thread that parsed it and only rendered bytes
/// cross to the caller, which hands them to `out` in list order.
///
/// [`render_context_entries`]: super::entries::render_context_entries
pub(crate) fn render_planned<S: LineSource>(
    index: &Index,
    make_src: &(dyn Fn() -> S + Sync),
    leaf: Option<&str>,
    renderer: &mut (dyn EntryRenderer + Send + Sync),
    out: &mut (dyn FnMut(&[u8]) -> Result<()> + Send),
) -> Result<()> {
    let src = make_src();
    let mut list = ContextList::plan(index, &src, leaf)?;
    for ix in list.edits(index) {
        renderer.edit(read_entry(index, &src, ix)?)?;
    }
    let opened = list.opening.is_some();
    if let Some(entry) = list.opening.take() {
        let mut buf = Vec::new();
        renderer.render(entry, true, &mut buf)?;
        out(&buf)?;
    }
    drop(src);
    let others = list.others(index);
    let renderer: &(dyn EntryRenderer + Send + Sync) = renderer;
    let run = |src: &S, range: std::ops::Range<usize>, buf: &mut Vec<u8>| -> Result<()> {
        for i in range {
            let (ix, drops_system) = others[i];
            let entry = read_entry(index, src, ix)?;
            if drops_system && is_system_message(&entry) {
                continue;
            }
            renderer.render(entry, !opened && i == 0, buf)?;
        }
        Ok(())
    };
    ordered_chunks_on(cores(), RENDER_CHUNK, others.len(), make_src, &run, out)
}

/// Entries per unit of work of [`render_context_entries`]: a few hundred KB of output, so a
/// worker's reads stay sequential through its window and a hand-over is rare.
const RENDER_CHUNK: usize = 1024;
