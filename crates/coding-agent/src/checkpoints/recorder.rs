//! [`Recorder`]: one session's checkpoints — when to capture, where the entry goes, and how a
//! navigation restores the code (DECISIONS §27.9–§27.12).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use arbor_agent::session::{EntryKind, Session};
use arbor_checkpoint::{
    Captured, Change, Checkpoint, CheckpointSettings, RestoreOptions, Restored, Workspace,
};

use super::record::*;
use crate::error::{CliError, Result};

/// Tools whose calls may change files (DECISIONS §27.9).
pub const WRITING_TOOLS: [&str; 3] = ["write", "edit", "bash"];

/// Why a capture happened (stored as the entry's `trigger`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    TurnStart,
    ToolBatch,
    BeforeRestore,
    Manual,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::TurnStart => "turn_start",
            Trigger::ToolBatch => "tool_batch",
            Trigger::BeforeRestore => "before_restore",
            Trigger::Manual => "manual",
        }
    }
}

/// What a navigation moves (the `/tree`, `/fork` and `--fork` choice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestoreMode {
    /// Move the conversation only; the files stay as they are.
    #[default]
    ConversationOnly,
    /// Restore the files to the target's checkpoint; the conversation stays.
    CodeOnly,
    /// Move the conversation and restore the files.
    Both,
}

impl RestoreMode {
    /// `conversation`, `code` or `both` (the `--restore` values).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "conversation" => Some(RestoreMode::ConversationOnly),
            "code" => Some(RestoreMode::CodeOnly),
            "both" => Some(RestoreMode::Both),
            _ => None,
        }
    }

    pub fn restores_code(self) -> bool {
        !matches!(self, RestoreMode::ConversationOnly)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RestoreMode::ConversationOnly => "conversation",
            RestoreMode::CodeOnly => "code",
            RestoreMode::Both => "both",
        }
    }
}

/// What a capture did, as the session sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Recorded {
    /// A new `arbor.checkpoint` entry.
    Created {
        entry_id: String,
        checkpoint: Checkpoint,
        changed: Vec<Change>,
    },
    /// The workspace is as the active path last recorded it; nothing was appended.
    Unchanged(Checkpoint),
    /// Not captured (snapshot limits); show `notice` to the user.
    Skipped { notice: String },
}

impl Recorded {
    /// The state captured (or found unchanged); `None` when skipped.
    pub fn checkpoint(&self) -> Option<&Checkpoint> {
        match self {
            Recorded::Created { checkpoint, .. } | Recorded::Unchanged(checkpoint) => {
                Some(checkpoint)
            }
            Recorded::Skipped { .. } => None,
        }
    }
}

/// A restore checked and prepared: the current state is captured, the target is restorable.
/// [`Recorder::finish_restore`] applies it after the caller moved the leaf (or not).
#[derive(Debug, Clone, PartialEq)]
pub struct RestorePlan {
    pub mode: RestoreMode,
    /// The entry whose state is restored (the nearest marker at or above the target).
    pub target_entry: Option<String>,
    pub target: Checkpoint,
    /// The state captured just before (an "undo restore" goes back to it).
    pub current: Checkpoint,
    /// The untracked files the restore would remove or overwrite (DECISIONS §27.43): named to
    /// the user before it runs; `current` holds them.
    pub at_risk: Vec<Change>,
}

/// Asked before a restore that would remove or overwrite untracked files, with their list;
/// `false` cancels the restore before anything changes (DECISIONS §27.43).
pub type ConfirmUntracked = std::sync::Arc<
    dyn Fn(Vec<Change>) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>>
        + Send
        + Sync,
>;

/// What a restore did.
#[derive(Debug, Clone, PartialEq)]
pub struct RestoreReport {
    /// The `arbor.workspace_restore` entry (`None` when the workspace already was there).
    pub entry_id: Option<String>,
    pub from: Checkpoint,
    pub to: Checkpoint,
    pub restored: Option<Restored>,
}

/// The nearest state marker found for a leaf, remembered so the next lookup from a
/// descendant stops here (a turn's lookup walks only the entries since the last one).
#[derive(Debug, Clone)]
struct Memo {
    leaf: Option<String>,
    marker: Option<(String, Checkpoint)>,
}

/// Captures and restores one session's workspace.
pub struct Recorder {
    workspace: Arc<Mutex<Workspace>>,
    memo: tokio::sync::Mutex<Option<Memo>>,
    batch_may_have_written: AtomicBool,
    restore_options: RestoreOptions,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder for the session `session_id` working in `cwd`; `None` when
    /// `settings.enabled` is false.
    pub fn open(
        cwd: &Path,
        session_id: &str,
        settings: &CheckpointSettings,
        arbor_home: &Path,
    ) -> Result<Option<Recorder>> {
        if !settings.enabled {
            return Ok(None);
        }
        let workspace = Workspace::open(cwd, session_id, settings, arbor_home)?;
        Ok(Some(Recorder {
            workspace: Arc::new(Mutex::new(workspace)),
            memo: tokio::sync::Mutex::new(None),
            batch_may_have_written: AtomicBool::new(false),
            restore_options: RestoreOptions::default(),
        }))
    }

    /// Also detach HEAD at the checkpoint's HEAD on restore (off by default).
    pub fn restore_head(mut self, yes: bool) -> Self {
        self.restore_options.head = yes;
        self
    }

    /// Runs a store operation off the async threads (git plumbing blocks).
    async fn with_workspace<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut Workspace) -> arbor_checkpoint::Result<T> + Send + 'static,
    ) -> Result<T> {
        let ws = Arc::clone(&self.workspace);
        let joined = tokio::task::spawn_blocking(move || {
            let mut guard = ws
                .lock()
                .map_err(|_| CliError::Workspace("checkpoint store lock poisoned".into()))?;
            op(&mut guard).map_err(CliError::from)
        })
        .await;
        joined.map_err(|e| CliError::Workspace(format!("checkpoint task failed: {e}")))?
    }

    // ---- events --------------------------------------------------------------------------

    /// A turn starts: capture (user edits since the last turn become a checkpoint).
    pub async fn turn_start(&self, session: &Session) -> Result<Recorded> {
        self.batch_may_have_written.store(false, Ordering::Relaxed);
        self.capture(session, Trigger::TurnStart).await
    }

    /// A tool call starts; remembers whether the batch may write.
    pub fn tool_started(&self, tool_name: &str) {
        if WRITING_TOOLS.contains(&tool_name) {
            self.batch_may_have_written.store(true, Ordering::Relaxed);
        }
    }

    /// A tool batch ended: capture if one of its calls may have written.
    pub async fn tool_batch_end(&self, session: &Session) -> Result<Option<Recorded>> {
        if self.batch_may_have_written.swap(false, Ordering::Relaxed) {
            Ok(Some(self.capture(session, Trigger::ToolBatch).await?))
        } else {
            Ok(None)
        }
    }

    // ---- capture -------------------------------------------------------------------------

    /// Captures now and appends an `arbor.checkpoint` entry at the leaf unless the state equals
    /// the one the active path already records.
    pub async fn capture(&self, session: &Session, trigger: Trigger) -> Result<Recorded> {
        let mut memo = self.memo.lock().await;
        let leaf = session.leaf_id().await?;
        let previous = nearest_marker(session, leaf.as_deref(), memo.as_ref()).await?;
        let prev_state = previous.as_ref().map(|(_, c)| c.clone());
        let captured = self
            .with_workspace(move |ws| ws.capture(prev_state.as_ref()))
            .await?;
        let (checkpoint, changed) = match captured {
            Captured::Unchanged(c) => {
                *memo = Some(Memo {
                    leaf,
                    marker: previous,
                });
                return Ok(Recorded::Unchanged(c));
            }
            Captured::Skipped { notice } => return Ok(Recorded::Skipped { notice }),
            Captured::Created {
                checkpoint,
                changed,
            } => (checkpoint, changed),
        };
        let record = CheckpointRecord {
            checkpoint: checkpoint.clone(),
            changed_count: changed.len(),
            changed: changed.iter().take(MAX_RECORDED_CHANGES).cloned().collect(),
            trigger: trigger.as_str().to_string(),
        };
        let data = serde_json::to_value(&record)
            .map_err(|e| CliError::Workspace(format!("checkpoint entry: {e}")))?;
        let entry_id = session
            .append_custom_entry(CHECKPOINT_TYPE, Some(data))
            .await?;
        *memo = Some(Memo {
            leaf: Some(entry_id.clone()),
            marker: Some((entry_id.clone(), checkpoint.clone())),
        });
        Ok(Recorded::Created {
            entry_id,
            checkpoint,
            changed,
        })
    }

    /// The workspace state of a node: the nearest checkpoint or restore at or above it.
    pub async fn state_at(
        &self,
        session: &Session,
        node: Option<&str>,
    ) -> Result<Option<(String, Checkpoint)>> {
        let memo = self.memo.lock().await;
        nearest_marker(session, node, memo.as_ref()).await
    }

    // ---- restore -------------------------------------------------------------------------

    /// Checks and prepares restoring the code to the state of `target` (the node the leaf is
    /// about to move to, or for code only any node): refuses mid-merge/rebase and when the
    /// objects are gone *before* anything changes, then captures the current state (appended
    /// at the current leaf) so the restore can be undone.
    pub async fn prepare_restore(
        &self,
        session: &Session,
        target: Option<&str>,
        mode: RestoreMode,
    ) -> Result<Option<RestorePlan>> {
        if !mode.restores_code() {
            return Ok(None);
        }
        let found = self.state_at(session, target).await?;
        let Some((target_entry, target_state)) = found else {
            return Err(CliError::Workspace(format!(
                "no workspace checkpoint at or above entry {}; the code cannot be restored there",
                target.unwrap_or("(root)")
            )));
        };
        self.plan_to(session, Some(target_entry), target_state, mode)
            .await
            .map(Some)
    }

    async fn plan_to(
        &self,
        session: &Session,
        target_entry: Option<String>,
        target: Checkpoint,
        mode: RestoreMode,
    ) -> Result<RestorePlan> {
        let check = target.clone();
        self.with_workspace(move |ws| ws.check_restorable(&check))
            .await?;
        let current = match self.capture(session, Trigger::BeforeRestore).await? {
            Recorded::Skipped { notice } => {
                return Err(CliError::Workspace(format!(
                    "cannot restore: the current workspace could not be captured first ({notice})"
                )))
            }
            recorded => recorded
                .checkpoint()
                .cloned()
                .ok_or_else(|| CliError::Workspace("capture returned no state".into()))?,
        };
        let at_risk = if current.same_state(&target) {
            Vec::new()
        } else {
            let (t, c) = (target.clone(), current.clone());
            self.with_workspace(move |ws| ws.untracked_at_risk(&t, &c))
                .await?
        };
        Ok(RestorePlan {
            mode,
            target_entry,
            target,
            current,
            at_risk,
        })
    }

    /// Restores the files of `plan` and appends `arbor.workspace_restore` at the (possibly
    /// moved) leaf.
    pub async fn finish_restore(
        &self,
        session: &Session,
        plan: RestorePlan,
    ) -> Result<RestoreReport> {
        if plan.current.same_state(&plan.target) {
            return Ok(RestoreReport {
                entry_id: None,
                from: plan.current,
                to: plan.target,
                restored: None,
            });
        }
        let (target, current, opts) = (
            plan.target.clone(),
            plan.current.clone(),
            self.restore_options,
        );
        let restored = self
            .with_workspace(move |ws| ws.restore(&target, &current, opts))
            .await?;
        let record = RestoreRecord {
            from: plan.current.clone(),
            to: plan.target.clone(),
            to_entry: plan.target_entry.clone(),
            mode: plan.mode.as_str().to_string(),
        };
        let data = serde_json::to_value(&record)
            .map_err(|e| CliError::Workspace(format!("restore entry: {e}")))?;
        let mut memo = self.memo.lock().await;
        let entry_id = session
            .append_custom_entry(RESTORE_TYPE, Some(data))
            .await?;
        *memo = Some(Memo {
            leaf: Some(entry_id.clone()),
            marker: Some((entry_id.clone(), plan.target.clone())),
        });
        Ok(RestoreReport {
            entry_id: Some(entry_id),
            from: plan.current,
            to: plan.target,
            restored: Some(restored),
        })
    }

    /// A whole navigation: for `Both`, prepare, move the leaf to `new_leaf`, restore; for
    /// `CodeOnly`, restore the code of `new_leaf` and leave the leaf; for `ConversationOnly`,
    /// only move the leaf. (The app's `/tree` computes `new_leaf` — a user message's parent —
    /// and may call the three steps itself to add a branch summary.)
    pub async fn navigate(
        &self,
        session: &Session,
        new_leaf: Option<&str>,
        mode: RestoreMode,
    ) -> Result<Option<RestoreReport>> {
        let plan = self.prepare_restore(session, new_leaf, mode).await?;
        if mode != RestoreMode::CodeOnly {
            session.move_to(new_leaf, None).await?;
        }
        match plan {
            Some(plan) => self.finish_restore(session, plan).await.map(Some),
            None => Ok(None),
        }
    }

    /// Refuses (mid-merge/rebase, objects gone) before anything changes.
    pub async fn check_restorable(&self, target: &Checkpoint) -> Result<()> {
        let check = target.clone();
        self.with_workspace(move |ws| ws.check_restorable(&check))
            .await
    }

    /// Restores a state found elsewhere (another session's fork point): check, capture the
    /// current files at the leaf, restore, record. `target_entry` names the node the state
    /// came from, for the restore entry.
    pub async fn restore_to(
        &self,
        session: &Session,
        target_entry: Option<String>,
        target: Checkpoint,
        mode: RestoreMode,
    ) -> Result<RestoreReport> {
        let plan = self.plan_to(session, target_entry, target, mode).await?;
        self.finish_restore(session, plan).await
    }

    /// Undoes the latest restore on the active path: the workspace goes back to the state
    /// captured just before it (the conversation stays where it is).
    pub async fn undo_restore(&self, session: &Session) -> Result<RestoreReport> {
        self.undo_restore_confirmed(session, None)
            .await?
            .ok_or_else(|| CliError::Workspace("undo restore cancelled".into()))
    }

    /// [`Recorder::undo_restore`], asking `confirm` first when it would remove or overwrite
    /// untracked files; `Ok(None)`: the user said no, nothing changed.
    pub async fn undo_restore_confirmed(
        &self,
        session: &Session,
        confirm: Option<&ConfirmUntracked>,
    ) -> Result<Option<RestoreReport>> {
        let leaf = session.leaf_id().await?;
        let mut cursor = leaf;
        while let Some(id) = cursor {
            let entry = session
                .get_entry(&id)
                .await?
                .ok_or_else(|| CliError::Workspace(format!("entry {id} not found")))?;
            if let Some(StateMarker::Restore(r)) = StateMarker::of(&entry)? {
                let plan = self
                    .plan_to(session, None, r.from, RestoreMode::CodeOnly)
                    .await?;
                if let Some(ask) = confirm {
                    if !plan.at_risk.is_empty() && !ask(plan.at_risk.clone()).await {
                        return Ok(None);
                    }
                }
                return self.finish_restore(session, plan).await.map(Some);
            }
            cursor = entry.parent_id;
        }
        Err(CliError::Workspace(
            "no workspace restore on the active path to undo".into(),
        ))
    }

    /// After a fork: gives the new session its own refs to every checkpoint on its path, so
    /// pruning the source session cannot take them away.
    pub async fn adopt_path(&self, session: &Session) -> Result<usize> {
        let mut states = Vec::new();
        for entry in session.ancestry(None).await? {
            if let Some(marker) = StateMarker::of(&entry)? {
                states.push(marker.state().clone());
                if let StateMarker::Restore(r) = marker {
                    states.push(r.from);
                }
            }
        }
        let count = states.len();
        self.with_workspace(move |ws| {
            for s in &states {
                // A checkpoint already gone stays gone; restoring it will say so.
                if ws.check_restorable(s).is_ok() {
                    ws.adopt(s)?;
                }
            }
            Ok(())
        })
        .await?;
        Ok(count)
    }
}

/// The workspace state of `node` in any session (no recorder needed): the nearest checkpoint
/// or restore at or above it.
pub async fn state_of(
    session: &Session,
    node: Option<&str>,
) -> Result<Option<(String, Checkpoint)>> {
    nearest_marker(session, node, None).await
}

/// Walks up from `from` to the nearest state marker, stopping early at the memoized leaf.
async fn nearest_marker(
    session: &Session,
    from: Option<&str>,
    memo: Option<&Memo>,
) -> Result<Option<(String, Checkpoint)>> {
    // Without a memo (the first capture after start) the walk below parses every entry of the
    // path when the session holds no marker at all: a resumed 100 MB session would be read in
    // full before its first request. Markers are custom entries, which the store lists by type
    // from its index, so a session without one is answered at once.
    if memo.is_none() && !has_markers(session).await? {
        return Ok(None);
    }
    let mut cursor = from.map(str::to_string);
    while let Some(id) = cursor {
        if let Some(m) = memo {
            if m.leaf.as_deref() == Some(id.as_str()) {
                return Ok(m.marker.clone());
            }
        }
        let entry = session
            .get_entry(&id)
            .await?
            .ok_or_else(|| CliError::Workspace(format!("entry {id} not found")))?;
        if let Some(marker) = StateMarker::of(&entry)? {
            return Ok(Some((entry.id, marker.state().clone())));
        }
        cursor = entry.parent_id;
    }
    Ok(None)
}

/// Whether the session holds any checkpoint or restore entry.
async fn has_markers(session: &Session) -> Result<bool> {
    let customs = session.storage().find_entries("custom").await?;
    Ok(customs.iter().any(|e| {
        matches!(&e.kind, EntryKind::Custom(c)
            if c.custom_type == CHECKPOINT_TYPE || c.custom_type == RESTORE_TYPE)
    }))
}
