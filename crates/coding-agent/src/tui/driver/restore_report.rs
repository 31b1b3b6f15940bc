//! The plan of a `/fork` code restore and the transcript lines that say what a restore did
//! and how to undo it (DECISIONS §27.21).

use crate::checkpoints::report::{paths_changed, untracked_effect};

/// A `/fork` code restore checked before the fork: the fork point's state and the entry it
/// was recorded in.
#[derive(Debug, Clone, PartialEq)]
pub struct ForkRestorePlan {
    pub marker: String,
    pub state: arbor_checkpoint::Checkpoint,
}

/// The short form of a checkpoint id shown to users.
fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// `4 paths changed` or `1 path changed; removed untracked file notes.txt`.
fn what_changed(r: &arbor_checkpoint::Restored) -> String {
    let mut text = paths_changed(r.changed.len());
    if let Some(untracked) = untracked_effect(&r.untracked, true) {
        text.push_str("; ");
        text.push_str(&untracked);
    }
    text
}

/// What a code restore did, and how to undo it (DECISIONS §27.21, §27.43).
pub fn restore_notice(report: &crate::checkpoints::RestoreReport) -> String {
    match &report.restored {
        None => "Workspace already at that checkpoint; no file changed".to_owned(),
        Some(r) => format!(
            "Workspace restored to checkpoint {} ({}). The files before are kept as checkpoint \
             {}: /undo-restore puts them back",
            short(&report.to.id),
            what_changed(r),
            short(&report.from.id)
        ),
    }
}

/// What `/undo-restore` did; running it again swaps back.
pub fn undo_notice(report: &crate::checkpoints::RestoreReport) -> String {
    match &report.restored {
        None => "Workspace already as before the restore; no file changed".to_owned(),
        Some(r) => format!(
            "Workspace back to checkpoint {} ({}). /undo-restore again returns to checkpoint {}",
            short(&report.to.id),
            what_changed(r),
            short(&report.from.id)
        ),
    }
}

/// Why nothing moved: the user declined the confirmation.
pub fn declined_notice(untracked: &[arbor_checkpoint::Change]) -> String {
    format!(
        "Restore cancelled; nothing changed (it {})",
        untracked_effect(untracked, false).unwrap_or_else(|| "touches no untracked file".into())
    )
}
