//! The log's read methods answered from the index, shared by the memory and JSONL backends:
//! each entry is parsed from its stored line only when it is asked for.

use crate::entry::SessionEntry;
use crate::error::{Result, SessionError};
use crate::index::{fold_usage, Index, LineSource, StatsAcc};
use crate::line::envelope::probe;
use crate::storage::{DerivedSettings, EntryPage, ForkOptions, ForkPosition, SessionStats};

/// Parses the stored line of entry `ix`.
pub(crate) fn read_entry(index: &Index, src: &dyn LineSource, ix: u32) -> Result<SessionEntry> {
    let raw = src.read(&index.slot(ix).raw)?;
    SessionEntry::from_json(&raw).map_err(|e| line_error(index, ix, &e.to_string()))
}

pub(crate) fn read_all(
    index: &Index,
    src: &dyn LineSource,
    ixs: &[u32],
) -> Result<Vec<SessionEntry>> {
    ixs.iter().map(|ix| read_entry(index, src, *ix)).collect()
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
    crate::rules::check_page_limit(limit)?;
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
        let env = probe(&raw).map_err(|e| line_error(index, ix as u32, &e.to_string()))?;
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
            let env = probe(&raw).map_err(|e| line_error(index, tix, &e.to_string()))?;
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
