//! The one entry point for a restore choice in the UI (`/tree`, `/fork`) and at startup
//! (`--fork … --restore`): move the conversation, the code, or both (DECISIONS §27.10, §27.13).

use arbor_agent::harness::{AgentHarness, NavigateOptions, NavigateResult, Phase};

use arbor_checkpoint::Change;

use super::hook::{navigation_leaf, CheckpointHook};
use super::recorder::{ConfirmUntracked, RestoreMode, RestoreReport};
use crate::error::{CliError, Result};

/// What [`navigate`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeMove {
    /// The conversation's move (`None` for code only).
    pub navigation: Option<NavigateResult>,
    /// The code's restore (`None` for conversation only, and when the navigation was
    /// cancelled before the code moved).
    pub restore: Option<RestoreReport>,
    /// The user declined removing or overwriting these untracked files: nothing moved
    /// (DECISIONS §27.43).
    pub declined: Option<Vec<Change>>,
}

/// Moves the harness's session to `target` per `mode`:
/// - conversation only: `navigate_tree(target, options)`, the files stay;
/// - code only: the files go to the state of the node the leaf *would* move to (a user
///   message's parent, else the entry), the conversation stays;
/// - both: refuse early (no checkpoint there, mid-merge/rebase, objects gone), capture the
///   current files, `navigate_tree`, then restore and record it at the new leaf. A cancelled
///   navigation (aborted summary) leaves the files alone.
///
/// Requires an idle harness. `checkpoints` is the session's hook (`None` when checkpoints are
/// disabled: only the conversation can move).
pub async fn navigate(
    harness: &AgentHarness,
    checkpoints: Option<&CheckpointHook>,
    target: Option<&str>,
    mode: RestoreMode,
    options: NavigateOptions,
) -> Result<TreeMove> {
    navigate_confirmed(harness, checkpoints, target, mode, options, None).await
}

/// [`navigate`], asking `confirm` with the list first when the code restore would remove or
/// overwrite untracked files (DECISIONS §27.43); a "no" moves neither conversation nor code.
pub async fn navigate_confirmed(
    harness: &AgentHarness,
    checkpoints: Option<&CheckpointHook>,
    target: Option<&str>,
    mode: RestoreMode,
    options: NavigateOptions,
    confirm: Option<&ConfirmUntracked>,
) -> Result<TreeMove> {
    if harness.phase() != Phase::Idle {
        return Err(CliError::Workspace(
            "cannot navigate while the agent is busy; wait for it or abort first".into(),
        ));
    }
    if mode == RestoreMode::ConversationOnly {
        let nav = harness.navigate_tree(target, options).await?;
        return Ok(TreeMove {
            navigation: Some(nav),
            restore: None,
            declined: None,
        });
    }
    let Some(hook) = checkpoints else {
        return Err(CliError::Workspace(
            "workspace checkpoints are off (settings.json checkpoints.enabled); only the \
             conversation can move"
                .into(),
        ));
    };
    let session = harness.session();
    let recorder = hook.recorder();
    let new_leaf = navigation_leaf(session, target).await?;
    let plan = recorder
        .prepare_restore(session, new_leaf.as_deref(), mode)
        .await?
        .ok_or_else(|| CliError::Workspace("restore mode moves no code".into()))?;
    if let Some(ask) = confirm {
        if !plan.at_risk.is_empty() && !ask(plan.at_risk.clone()).await {
            return Ok(TreeMove {
                navigation: None,
                restore: None,
                declined: Some(plan.at_risk),
            });
        }
    }
    if mode == RestoreMode::CodeOnly {
        let report = recorder.finish_restore(session, plan).await?;
        return Ok(TreeMove {
            navigation: None,
            restore: Some(report),
            declined: None,
        });
    }
    let nav = harness.navigate_tree(target, options).await?;
    if nav.cancelled {
        return Ok(TreeMove {
            navigation: Some(nav),
            restore: None,
            declined: None,
        });
    }
    let report = recorder.finish_restore(session, plan).await?;
    Ok(TreeMove {
        navigation: Some(nav),
        restore: Some(report),
        declined: None,
    })
}
