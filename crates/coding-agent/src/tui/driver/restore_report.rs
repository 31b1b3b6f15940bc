//! The plan of a `/fork` code restore and the transcript lines that say what a restore did
//! and how to undo it (DECISIONS §27.21).

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

/// What a code restore did, and how to undo it (DECISIONS §27.21).
pub fn restore_notice(report: &crate::checkpoints::RestoreReport) -> String {
    match &report.restored {
        None => "Workspace already at that checkpoint; no file changed".to_owned(),
        Some(r) => format!(
            "Workspace restored to checkpoint {} ({} paths changed). The files before are kept \
             as checkpoint {}: /undo-restore puts them back",
            short(&report.to.id),
            r.changed.len(),
            short(&report.from.id)
        ),
    }
}

/// What `/undo-restore` did; running it again swaps back.
pub fn undo_notice(report: &crate::checkpoints::RestoreReport) -> String {
    match &report.restored {
        None => "Workspace already as before the restore; no file changed".to_owned(),
        Some(r) => format!(
            "Workspace back to checkpoint {} ({} paths changed). /undo-restore again returns \
             to checkpoint {}",
            short(&report.to.id),
            r.changed.len(),
            short(&report.from.id)
        ),
    }
}
