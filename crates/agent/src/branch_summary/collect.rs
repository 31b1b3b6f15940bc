//! Which entries a branch summary covers: from the old leaf back to (not including) the
//! deepest entry the old and the target paths share. Full paths, so a compaction between the
//! two does not hide the fork point (DECISIONS §6.1).

use std::borrow::Borrow;
use std::collections::HashSet;

use crate::compaction::error::CompactionError;
use crate::session::entry::SessionEntry;
use crate::session::Session;

/// The abandoned entries, oldest first, and where the two paths meet.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchSummaryCollection {
    /// `None` when the paths share no entry (or there was no old leaf).
    pub common_ancestor_id: Option<String>,
    /// The abandoned branch's entries, oldest first.
    pub entries: Vec<SessionEntry>,
}

/// Pure form: `old_path` is the full ancestry of the old leaf, `target_path` that of the
/// target (both root first).
pub fn collect_branch_entries<E: Borrow<SessionEntry>>(
    old_path: &[E],
    target_path: &[E],
) -> BranchSummaryCollection {
    let on_old: HashSet<&str> = old_path.iter().map(|e| e.borrow().id.as_str()).collect();
    let common = target_path
        .iter()
        .rev()
        .map(|e| e.borrow().id.as_str())
        .find(|id| on_old.contains(id));
    let start = match common {
        Some(id) => old_path
            .iter()
            .position(|e| e.borrow().id == id)
            .map_or(0, |i| i + 1),
        None => 0,
    };
    BranchSummaryCollection {
        common_ancestor_id: common.map(str::to_string),
        entries: old_path[start..]
            .iter()
            .map(|e| e.borrow().clone())
            .collect(),
    }
}

/// Reads both ancestries from the session. No old leaf → nothing to summarize.
pub async fn collect_entries_for_branch_summary(
    session: &Session,
    old_leaf: Option<&str>,
    target: &str,
) -> Result<BranchSummaryCollection, CompactionError> {
    let Some(old_leaf) = old_leaf else {
        return Ok(BranchSummaryCollection {
            common_ancestor_id: None,
            entries: Vec::new(),
        });
    };
    let old_path = session.ancestry(Some(old_leaf)).await?;
    let target_path = session.ancestry(Some(target)).await?;
    Ok(collect_branch_entries(&old_path, &target_path))
}
