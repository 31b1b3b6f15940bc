//! Logic shared by the memory and JSONL backends: index reads (append preparation is in `append.rs`).

use super::entry::{EntryKind, SessionEntry};
use super::index::{fold_usage, Index, LineSource, Raw, StatsAcc};
use super::probe::Envelope;
use super::rows::{RowCaps, RowSummary};
use super::storage::{
    DerivedSettings, EntryPage, EntryRenderer, ForkOptions, ForkPosition, SessionStats,
};
use crate::error::{Result, SessionError};
use serde_json::Value;

/// Reads the envelope facts of one line (which must hold a JSON object).
pub(crate) fn probe(line: &str) -> std::result::Result<Envelope<'_>, String> {
    if !line.trim_start().starts_with('{') {
        return Err(match serde_json::from_str::<serde::de::IgnoredAny>(line) {
            Ok(_) => "the line is not a JSON object".to_owned(),
            Err(e) => format!("invalid JSON: {e}"),
        });
    }
    serde_json::from_str::<Envelope<'_>>(line).map_err(|e| e.to_string())
}

/// [`probe`] over raw bytes (strings the envelope keeps are UTF-8-checked by the parser).
pub(crate) fn probe_bytes(line: &[u8]) -> std::result::Result<Envelope<'_>, String> {
    let first = line.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return Err(
            match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
                Ok(_) => "the line is not a JSON object".to_owned(),
                Err(e) => format!("invalid JSON: {e}"),
            },
        );
    }
    serde_json::from_slice::<Envelope<'_>>(line).map_err(|e| e.to_string())
}

/// Why a stored line failed, located by file line when it has one.
pub(crate) fn line_error(index: &Index, ix: u32, message: &str) -> SessionError {
    let slot = index.slot(ix);
    if slot.line > 0 {
        SessionError::Line {
            file: index.origin().to_owned(),
            line: slot.line as usize,
            message: format!("entry {}: {message}", index.id(ix)),
        }
    } else {
        SessionError::InvalidEntry(format!(
            "{}: entry {}: {message}",
            index.origin(),
            index.id(ix)
        ))
    }
}

/// Parses the stored line of entry `ix`.
pub(crate) fn read_entry(index: &Index, src: &dyn LineSource, ix: u32) -> Result<SessionEntry> {
    let raw = src.read(&index.slot(ix).raw)?;
    SessionEntry::from_json(&raw).map_err(|e| line_error(index, ix, &e.to_string()))
}

/// Every entry's row summary from its stored line, in log order (DECISIONS §25.80), read by
/// [`ordered_rows`] with one source per worker from `make_src`; each summary goes through
/// `map` on the thread that read it (§25.114).
pub(crate) fn visit_rows<S: LineSource, T: Send>(
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

/// Lines per unit of work in [`ordered_rows`]: a few MB of a typical log, enough that a
/// worker's reads stay sequential through its window and the hand-over costs nothing.
const ROWS_CHUNK: usize = 8192;

/// Runs `one` over lines `0..n` and hands the results to `visit` in order (DECISIONS §25.112).
/// A row depends on its own line only, so on a large log the lines are summarized by one worker
/// per core, chunk by chunk, each through its own source (`make_src`), while the calling
/// thread puts the chunks back in order and visits them; a small log, or a machine with one
/// core, is read on the calling thread. The first failing line in log order is the error,
/// as in a sequential read, and no row after it is visited.
pub(crate) fn ordered_rows<S: LineSource, T: Send>(
    n: usize,
    make_src: &(dyn Fn() -> S + Sync),
    one: &(dyn Fn(&S, usize) -> Result<T> + Sync),
    visit: &mut dyn FnMut(T),
) -> Result<()> {
    ordered_rows_on(cores(), ROWS_CHUNK, n, make_src, one, visit)
}

pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// [`ordered_rows`] with the worker count and chunk size given (tests force several workers
/// on any machine).
fn ordered_rows_on<S: LineSource, T: Send>(
    cores: usize,
    chunk: usize,
    n: usize,
    make_src: &(dyn Fn() -> S + Sync),
    one: &(dyn Fn(&S, usize) -> Result<T> + Sync),
    visit: &mut dyn FnMut(T),
) -> Result<()> {
    let workers = cores.min(n / chunk.max(1));
    if workers < 2 {
        let src = make_src();
        for ix in 0..n {
            visit(one(&src, ix)?);
        }
        return Ok(());
    }
    let chunks = n.div_ceil(chunk);
    in_chunk_order(
        workers,
        chunks,
        make_src,
        &|src, c| {
            let lines = c * chunk..((c + 1) * chunk).min(n);
            let rows = lines.map(|ix| one(src, ix)).collect::<Result<Vec<_>>>();
            let failed = rows.is_err();
            (rows, failed)
        },
        &mut |rows| {
            for row in rows? {
                visit(row);
            }
            Ok(())
        },
        "reading row summaries",
    )
}

/// The worker pool of [`ordered_rows_on`] and [`ordered_chunks_on`]: chunk `c` of `0..chunks`
/// is made by `make(src, c)` on one of `workers` scoped threads, each with its own source from
/// `make_src`, and `take` gets the results on the calling thread in chunk order. A result
/// `make` marks as failed stops the workers from starting more chunks; an error from `take`
/// stops everything and is returned. Workers run at most a few chunks ahead (a bounded
/// channel), and the receiver lives in the scope, so returning early also frees a worker
/// waiting on a full channel before the scope waits for it.
fn in_chunk_order<S, T: Send>(
    workers: usize,
    chunks: usize,
    make_src: &(dyn Fn() -> S + Sync),
    make: &(dyn Fn(&S, usize) -> (T, bool) + Sync),
    take: &mut dyn FnMut(T) -> Result<()>,
    what: &str,
) -> Result<()> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let stop = || next.store(chunks, std::sync::atomic::Ordering::Relaxed);
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, T)>(workers * 2);
        for _ in 0..workers {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || {
                let src = make_src();
                loop {
                    let c = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if c >= chunks {
                        return;
                    }
                    let (made, failed) = make(&src, c);
                    // A closed channel means the caller stopped at an earlier chunk.
                    if tx.send((c, made)).is_err() || failed {
                        // No later chunk matters once one failed.
                        stop();
                        return;
                    }
                }
            });
        }
        drop(tx);
        let mut waiting: std::collections::BTreeMap<usize, T> = Default::default();
        for want in 0..chunks {
            let made = loop {
                if let Some(made) = waiting.remove(&want) {
                    break made;
                }
                match rx.recv() {
                    Ok((c, made)) => {
                        waiting.insert(c, made);
                    }
                    Err(_) => {
                        return Err(SessionError::Storage(format!(
                            "{what}: chunk {want} of {chunks} was never made"
                        )))
                    }
                }
            };
            if let Err(e) = take(made) {
                stop();
                return Err(e);
            }
        }
        Ok(())
    })
}

/// Where every line of a session is, as of now: lines are never rewritten once indexed, so a
/// copy of their locations stays valid while the file only grows (DECISIONS §25.82).
pub(crate) struct LineSnapshot {
    pub origin: String,
    /// Each entry's line and its 1-based file line (0 when not from a file).
    pub lines: Vec<(Raw, u32)>,
}

impl LineSnapshot {
    pub(crate) fn of(index: &Index) -> LineSnapshot {
        LineSnapshot {
            origin: index.origin().to_owned(),
            lines: index
                .slots()
                .iter()
                .map(|s| (s.raw.clone(), s.line))
                .collect(),
        }
    }

    /// Summaries of every line, read through sources from `make_src` ([`ordered_rows`]).
    pub(crate) fn summaries<S: LineSource>(
        &self,
        make_src: &(dyn Fn() -> S + Sync),
        caps: RowCaps,
    ) -> Result<Vec<RowSummary>> {
        let mut out = Vec::with_capacity(self.lines.len());
        ordered_rows(
            self.lines.len(),
            make_src,
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

pub(crate) fn read_all(
    index: &Index,
    src: &dyn LineSource,
    ixs: &[u32],
) -> Result<Vec<SessionEntry>> {
    ixs.iter().map(|ix| read_entry(index, src, *ix)).collect()
}

/// The list [`SessionStorage::visit_context_entries`] hands over, planned from the index
/// (DECISIONS §25.100): the window and the list's shape (the newest compaction, its kept range)
/// come from the index's types, and each entry is parsed only when it is handed over. The list
/// equals `default_context_indices` over the parsed window: the compaction is parsed first for
/// its `retainedTail` and `firstKeptEntryId`, and system messages of the kept range are dropped
/// once parsed.
///
/// [`SessionStorage::visit_context_entries`]: super::storage::SessionStorage::visit_context_entries
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

/// [`SessionStorage::visit_context_entries`] from the index ([`ContextList`]): at most one entry
/// of the path (plus the newest compaction) is held at a time.
///
/// [`SessionStorage::visit_context_entries`]: super::storage::SessionStorage::visit_context_entries
pub(crate) fn visit_context_entries(
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
        if drops_system && crate::context::projection::is_system_message(&entry) {
            continue;
        }
        visit(entry)?;
    }
    Ok(())
}

/// [`SessionStorage::render_context_entries`] from the index ([`ContextList`], DECISIONS
/// §25.120): the edits and the opening on the calling thread, then the other entries read,
/// parsed and rendered in chunks by one worker per core, each through its own source from
/// `make_src`, so every entry is freed on the thread that parsed it and only rendered bytes
/// cross to the caller, which hands them to `out` in list order.
///
/// [`SessionStorage::render_context_entries`]: super::storage::SessionStorage::render_context_entries
pub(crate) fn render_context_entries<S: LineSource>(
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
            if drops_system && crate::context::projection::is_system_message(&entry) {
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

/// Renders the entries `range` of a list through a source into a buffer.
type RenderChunk<'a, S> =
    dyn Fn(&S, std::ops::Range<usize>, &mut Vec<u8>) -> Result<()> + Sync + 'a;

/// Runs `run` over `0..n` in chunks of `chunk` and hands each chunk's bytes to `out` in order:
/// on one worker per core for more than one chunk and core, else on the calling thread. A
/// chunk that fails hands over the bytes it made before failing, then its error is returned;
/// a failing `out` is returned as it is; either way no later chunk reaches `out`.
fn ordered_chunks_on<S: LineSource>(
    cores: usize,
    chunk: usize,
    n: usize,
    make_src: &(dyn Fn() -> S + Sync),
    run: &RenderChunk<'_, S>,
    out: &mut (dyn FnMut(&[u8]) -> Result<()> + Send),
) -> Result<()> {
    let chunk = chunk.max(1);
    let chunks = n.div_ceil(chunk);
    let range = |c: usize| c * chunk..((c + 1) * chunk).min(n);
    let workers = cores.min(chunks);
    if workers < 2 {
        let src = make_src();
        let mut buf = Vec::new();
        for c in 0..chunks {
            buf.clear();
            let ran = run(&src, range(c), &mut buf);
            out(&buf)?;
            ran?;
        }
        return Ok(());
    }
    in_chunk_order(
        workers,
        chunks,
        make_src,
        &|src, c| {
            let mut buf = Vec::new();
            let ran = run(src, range(c), &mut buf);
            let failed = ran.is_err();
            ((buf, ran), failed)
        },
        &mut |(buf, ran)| out(&buf).and(ran),
        "rendering the context",
    )
}

/// `None` = the current leaf; an id must exist (`not_found`).
pub(crate) fn leaf_arg(index: &Index, leaf: Option<&str>) -> Result<Option<u32>> {
    match leaf {
        None => Ok(index.leaf()),
        Some(id) => index
            .resolve(id)
            .map(Some)
            .ok_or_else(|| SessionError::NotFound(format!("Entry not found: {id}"))),
    }
}

pub(crate) fn page(
    index: &Index,
    src: &dyn LineSource,
    after_seq: Option<u64>,
    limit: Option<usize>,
) -> Result<EntryPage> {
    if limit == Some(0) {
        return Err(SessionError::InvalidEntry(
            "limit must be a positive integer".into(),
        ));
    }
    let total = index.len() as u64;
    let start = after_seq.unwrap_or(0).min(total);
    let end = match limit {
        Some(l) => start.saturating_add(l as u64).min(total),
        None => total,
    };
    let mut entries = Vec::with_capacity((end - start) as usize);
    for seq in start + 1..=end {
        entries.push((seq, read_entry(index, src, (seq - 1) as u32)?));
    }
    Ok(EntryPage {
        entries,
        next_after_seq: (end < total).then_some(end),
    })
}

/// Session totals. Usage lives in payloads the open does not parse, so the first call reads
/// the lines that can carry one (assistant messages, compactions, branch summaries, `usage`
/// entries) and the index keeps the figure current from then on (DECISIONS §25.22).
pub(crate) fn stats(index: &Index, src: &dyn LineSource) -> Result<SessionStats> {
    let s = index.stats(|index| count_usage(index, src))?;
    let tokens = |v: f64| {
        if v.is_finite() && v > 0.0 {
            v.round() as u64
        } else {
            0
        }
    };
    Ok(SessionStats {
        message_count: s.message_count,
        cached_tokens: tokens(s.cached),
        uncached_tokens: tokens(s.uncached),
        total_tokens: tokens(s.total),
        cost_total: s.cost,
    })
}

fn count_usage(index: &Index, src: &dyn LineSource) -> Result<StatsAcc> {
    let message = index.type_tag("message");
    let counted: Vec<u32> = ["compaction", "branch_summary", "usage"]
        .iter()
        .filter_map(|t| index.type_tag(t))
        .collect();
    let mut acc = StatsAcc::default();
    for (ix, slot) in index.slots().iter().enumerate() {
        if Some(slot.ty) == message {
            if slot.assistant == Some(false) {
                acc.message_count += 1;
                continue;
            }
        } else if !counted.contains(&slot.ty) {
            continue;
        }
        let raw = src.read(&slot.raw)?;
        let env = probe(&raw).map_err(|e| line_error(index, ix as u32, &e))?;
        fold_usage(&mut acc, &env);
    }
    Ok(acc)
}

/// [`DerivedSettings`] by walking up from the leaf and parsing only the nearest entry of each
/// kind that matters (the replay's "latest wins" is the walk's "nearest wins").
pub(crate) fn derived_settings(
    index: &Index,
    src: &dyn LineSource,
    leaf: Option<&str>,
) -> Result<DerivedSettings> {
    let start = leaf_arg(index, leaf)?;
    let path = index.ancestry(start)?;
    let (model_t, thinking_t, tools_t) = (
        index.type_tag("model_change"),
        index.type_tag("thinking_level_change"),
        index.type_tag("active_tools_change"),
    );
    let mut out = DerivedSettings::default();
    let (mut model, mut thinking, mut tools) = (false, thinking_t.is_none(), tools_t.is_none());
    for &ix in path.iter().rev() {
        if model && thinking && tools {
            break;
        }
        let slot = index.slot(ix);
        let wanted = (!model && (slot.assistant != Some(false) || Some(slot.ty) == model_t))
            || (!thinking && Some(slot.ty) == thinking_t)
            || (!tools && Some(slot.ty) == tools_t);
        if !wanted {
            continue;
        }
        let entry = read_entry(index, src, ix)?;
        let mut single = DerivedSettings::default();
        if !single.apply(&entry) {
            continue;
        }
        if Some(slot.ty) == thinking_t {
            out.thinking_level = single.thinking_level;
            thinking = true;
        } else if Some(slot.ty) == tools_t {
            out.active_tool_names = single.active_tool_names;
            tools = true;
        } else {
            out.model = single.model;
            model = true;
        }
    }
    Ok(out)
}

/// DECISIONS §5: which entries a fork copies, in log order (whole log) or root→target order.
pub(crate) fn fork_selection(
    index: &Index,
    src: &dyn LineSource,
    opts: &ForkOptions,
) -> Result<Vec<u32>> {
    let Some(target) = opts.entry_id.as_deref() else {
        return Ok((0..index.len() as u32).collect());
    };
    let Some(tix) = index.resolve(target) else {
        return Err(SessionError::InvalidForkTarget(format!(
            "Entry {target} not found"
        )));
    };
    let effective = match opts.position {
        ForkPosition::At => Some(tix),
        ForkPosition::Before => {
            let raw = src.read(&index.slot(tix).raw)?;
            let env = probe(&raw).map_err(|e| line_error(index, tix, &e))?;
            if env.ty != "message" || env.message.role.as_deref() != Some("user") {
                return Err(SessionError::InvalidForkTarget(format!(
                    "Entry {target} is not a user message"
                )));
            }
            index.parent(tix)?
        }
    };
    index.ancestry(effective)
}

/// The text of a user message for listings: a string content, or text blocks joined by spaces.
pub(crate) fn user_text(message: &Value) -> Option<String> {
    match message.get("content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let parts: Vec<&str> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            Some(parts.join(" "))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::ordered_rows_on;
    use crate::error::SessionError;
    use crate::index::MemSource;

    fn run(cores: usize, n: usize, fail: &[usize]) -> (Vec<usize>, Option<String>) {
        let mut seen = Vec::new();
        let r = ordered_rows_on(
            cores,
            7,
            n,
            &|| MemSource,
            &|_, i| {
                if fail.contains(&i) {
                    Err(SessionError::Storage(format!("line {i}")))
                } else {
                    Ok(i)
                }
            },
            &mut |i| seen.push(i),
        );
        (seen, r.err().map(|e| e.to_string()))
    }

    /// Every worker count visits every line once, in order.
    #[test]
    fn rows_come_back_in_log_order() {
        for cores in [1, 2, 3, 8] {
            for n in [0, 1, 6, 7, 8, 13, 14, 15, 500] {
                let (seen, err) = run(cores, n, &[]);
                assert_eq!(err, None);
                assert_eq!(seen, (0..n).collect::<Vec<_>>(), "cores {cores}, n {n}");
            }
        }
    }

    /// The first failing line in log order is the error, and nothing after it is visited, as
    /// in a sequential read, whichever worker fails first in time.
    #[test]
    fn the_first_failing_line_wins() {
        for cores in [1, 2, 4] {
            let (seen, err) = run(cores, 500, &[480, 123, 300]);
            assert!(
                err.as_deref().is_some_and(|e| e.contains("line 123")),
                "{err:?}"
            );
            // Lines before the failing one's chunk are all visited, and nothing past it.
            assert!(seen.len() <= 123 && seen.len() >= 119, "{}", seen.len());
            assert_eq!(seen, (0..seen.len()).collect::<Vec<_>>());
        }
    }

    /// [`super::ordered_chunks_on`] with chunks of 4 over `0..n`: each index rendered as one
    /// byte, `fail` failing in `run` and `out_fails` failing in `out` (at that many calls).
    fn chunks(
        cores: usize,
        n: usize,
        fail: Option<usize>,
        out_fails: Option<usize>,
    ) -> (Vec<u8>, usize, Option<String>) {
        let mut got = Vec::new();
        let mut calls = 0;
        let r = super::ordered_chunks_on(
            cores,
            4,
            n,
            &|| MemSource,
            &|_, range, buf| {
                for i in range {
                    if Some(i) == fail {
                        return Err(SessionError::Storage(format!("entry {i}")));
                    }
                    buf.push(i as u8);
                }
                Ok(())
            },
            &mut |bytes| {
                calls += 1;
                if Some(calls) == out_fails {
                    return Err(SessionError::Storage("out".into()));
                }
                got.extend_from_slice(bytes);
                Ok(())
            },
        );
        (got, calls, r.err().map(|e| e.to_string()))
    }

    /// Chunks reach `out` in order on any worker count; a failing entry's chunk hands over
    /// what came before it and nothing after; a failing `out` stops the rest.
    #[test]
    fn rendered_chunks_keep_order_and_stop_at_the_first_failure() {
        for cores in [1, 2, 3, 8] {
            for n in [0, 1, 4, 5, 9, 200] {
                let (got, _, err) = chunks(cores, n, None, None);
                assert_eq!(err, None);
                assert_eq!(
                    got,
                    (0..n).map(|i| i as u8).collect::<Vec<_>>(),
                    "{cores}/{n}"
                );
            }
            let (got, _, err) = chunks(cores, 200, Some(37), None);
            assert_eq!(
                err.as_deref(),
                Some("storage error: entry 37"),
                "cores {cores}"
            );
            assert_eq!(
                got,
                (0..37).map(|i| i as u8).collect::<Vec<_>>(),
                "cores {cores}"
            );
            let (got, calls, err) = chunks(cores, 200, None, Some(6));
            assert_eq!(err.as_deref(), Some("storage error: out"), "cores {cores}");
            assert_eq!((got.len(), calls), (20, 6), "cores {cores}");
        }
    }

    /// A visitor slower than the workers keeps the channel full; a failing chunk behind it
    /// still ends the walk, with the rows before it visited.
    #[test]
    fn a_failure_behind_a_slow_visitor_ends_the_walk() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut seen = 0usize;
            let r = ordered_rows_on(
                2,
                7,
                2_000,
                &|| MemSource,
                &|_, i| {
                    if i == 300 {
                        Err(SessionError::Storage(format!("line {i}")))
                    } else {
                        Ok(i)
                    }
                },
                &mut |_| {
                    seen += 1;
                    std::thread::sleep(std::time::Duration::from_micros(200));
                },
            );
            let _ = tx.send((seen, r.err().map(|e| e.to_string())));
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(60));
        assert_eq!(
            got.ok(),
            Some((294, Some("storage error: line 300".to_owned()))),
            "the walk must end with the first failure"
        );
    }
}
