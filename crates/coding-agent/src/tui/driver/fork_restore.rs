//! `/fork` and `/clone` copies of the session, and the code restores that go with a fork or a
//! `/tree` move when workspace checkpoints are on (DECISIONS §27.20, §27.21).

use std::sync::Arc;

use crate::checkpoints::{ConfirmUntracked, RestoreMode};
use crate::error::CliError;
use crate::tui::restore_confirm::{ConfirmRequest, ReplySlot};
use crate::tui::state::{AppEvent, Effect, Outcome};

use super::restore_report::{declined_notice, restore_notice, ForkRestorePlan};
use super::Driver;

/// The question a restore asks before it removes or overwrites untracked files: an overlay
/// opened through `tx`, answered by a key (DECISIONS §27.43). No answer (the app gone) is no.
pub(super) fn confirm_untracked(
    tx: tokio::sync::mpsc::UnboundedSender<AppEvent>,
) -> ConfirmUntracked {
    Arc::new(move |files| {
        let tx = tx.clone();
        Box::pin(async move {
            let (reply, answer) = ReplySlot::new();
            let asked = tx.send(AppEvent::Done(Outcome::ConfirmRestore(ConfirmRequest {
                files,
                reply,
            })));
            asked.is_ok() && answer.await.unwrap_or(false)
        })
    })
}

impl Driver {
    /// Moves the code (and for `Both` the conversation) through `checkpoints::navigate` in a
    /// task; the transcript then says how to undo the restore (DECISIONS §27.21).
    pub(super) fn code_navigation(
        &mut self,
        target: Option<String>,
        summarize: bool,
        custom_instructions: Option<String>,
        restore: RestoreMode,
    ) {
        self.state.background = Some("navigating".into());
        if summarize {
            self.state.footer.compacting = Some("summarizing branch…".into());
        }
        let (h, tx) = (self.app.harness.clone(), self.tx.clone());
        let hook = self.app.checkpoints.clone();
        let confirm = confirm_untracked(tx.clone());
        self.tasks.spawn(async move {
            let opts = Effect::navigate_options(summarize, custom_instructions);
            let r = crate::checkpoints::navigate_confirmed(
                &h,
                hook.as_deref(),
                target.as_deref(),
                restore,
                opts,
                Some(&confirm),
            )
            .await;
            let o = match r {
                Ok(m) => {
                    let text = match (&m.restore, &m.declined) {
                        (_, Some(files)) => declined_notice(files),
                        (Some(report), None) => restore_notice(report),
                        (None, None) => "Workspace unchanged".to_owned(),
                    };
                    let moved = match m.navigation {
                        Some(n) if n.cancelled => Outcome::Navigated(Ok(None)),
                        Some(n) => Outcome::Navigated(Ok(n.editor_text)),
                        None => Outcome::Navigated(Ok(None)),
                    };
                    // After the move: a navigation reloads the transcript.
                    let _ = tx.send(AppEvent::Done(moved));
                    Outcome::Notice(text)
                }
                Err(e) => Outcome::Navigated(Err(std::sync::Arc::new(e))),
            };
            let _ = tx.send(AppEvent::Done(o));
        });
    }

    /// Refuses a `/fork` with "both" before any file is written: the fork point (the user
    /// message's parent) needs a checkpoint whose objects are still there.
    pub(super) async fn plan_fork_restore(
        &self,
        entry_id: &str,
    ) -> Result<ForkRestorePlan, CliError> {
        let Some(hook) = &self.app.checkpoints else {
            return Err(CliError::Workspace(
                "workspace checkpoints are off for this run; only the conversation can be forked"
                    .into(),
            ));
        };
        let session = &self.app.session;
        let point = session
            .get_entry(entry_id)
            .await?
            .ok_or_else(|| CliError::NotFound(format!("entry {entry_id} not found")))?
            .parent_id;
        let Some((marker, state)) = crate::checkpoints::state_of(session, point.as_deref()).await?
        else {
            return Err(CliError::Workspace(format!(
                "no workspace checkpoint above entry {entry_id}; only the conversation can be forked"
            )));
        };
        hook.recorder().check_restorable(&state).await?;
        Ok(ForkRestorePlan { marker, state })
    }

    /// The code restore a `/fork` with "both" still owes, for the forked session's driver
    /// ([`Driver::finish_fork_restore`]).
    pub fn take_fork_restore(&mut self) -> Option<ForkRestorePlan> {
        self.fork_restore.take()
    }

    /// Copies this session into a new file for `/fork` (`Some(entry)`: ending before that user
    /// message) or `/clone` (`None`: the whole branch). `Ok(None)`: the copy holds no message
    /// yet, so it is not written (the app then starts a fresh session).
    pub async fn fork_file(&self, before: Option<&str>) -> Result<Option<String>, CliError> {
        use arbor_agent::session::{
            ForkOptions, ForkPosition, JsonlRepository, SessionRepository, SessionStorage,
        };
        let Some(file) = &self.app.session_file else {
            return Err(CliError::Startup(
                "This session is not stored (--no-session): there is nothing to copy".into(),
            ));
        };
        let (entry_id, position) = match before {
            Some(id) => (Some(id.to_owned()), ForkPosition::Before),
            None => (self.app.session.leaf_id().await?, ForkPosition::At),
        };
        let dir = file
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default();
        let copy = JsonlRepository::flat(dir)
            .fork(&file.display().to_string(), {
                let mut o = ForkOptions::default();
                o.entry_id = entry_id;
                o.position = position;
                o
            })
            .await?;
        let location = SessionStorage::location(&copy);
        Ok(std::path::Path::new(&location)
            .is_file()
            .then_some(location))
    }

    /// In a session just forked or cloned: gives it its own refs to the checkpoints on its
    /// path (so pruning the source cannot take them away), then carries out the code restore a
    /// `/fork` with "both" asked for, saying how to undo it.
    pub async fn finish_fork_restore(&mut self, plan: Option<ForkRestorePlan>) {
        let Some(hook) = self.app.checkpoints.clone() else {
            if plan.is_some() {
                self.done(Outcome::Error(
                    "The forked session records no checkpoints: the files were not restored".into(),
                ));
            }
            return;
        };
        let session = self.app.session.clone();
        if let Err(e) = hook.recorder().adopt_path(&session).await {
            self.done(Outcome::Error(format!(
                "The fork could not adopt its checkpoints: {e}"
            )));
        }
        if let Some(plan) = plan {
            let r = hook
                .recorder()
                .restore_to(&session, Some(plan.marker), plan.state, RestoreMode::Both)
                .await;
            match r {
                Ok(report) => self.done(Outcome::Notice(restore_notice(&report))),
                Err(e) => self.done(Outcome::Error(format!(
                    "The fork was made but its files were not restored: {e}"
                ))),
            }
        }
    }
}
