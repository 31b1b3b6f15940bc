//! `navigate_tree` (DECISIONS §20.6–§20.7, §21): move the leaf to another
//! entry, optionally leaving a summary of the abandoned branch under the new position.

use arbor_ai::Message;

use crate::agent::{AgentError, AgentEvent, ErrorCode};
use crate::branch_summary::{
    collect_entries_for_branch_summary, generate_branch_summary, BranchSummaryCollection,
    BranchSummaryOptions,
};
use crate::compaction::SummaryOptions;
use crate::message::AgentMessage;
use crate::session::{BranchSummaryDraft, EntryKind, SessionEntry};

use super::handle::AgentHarness;
use super::hooks::TreePreparation;
use super::state::Phase;

/// Options of [`AgentHarness::navigate_tree`]. Non-exhaustive (DECISIONS §20.41): start from
/// `default()` (just move) or [`NavigateOptions::summarized`] and chain the setters.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct NavigateOptions {
    /// Summarize the abandoned branch into a `branch_summary` entry.
    pub summarize: bool,
    /// Extra focus for the summary (or, with `replace_instructions`, the whole instruction).
    pub custom_instructions: Option<String>,
    /// `custom_instructions` replace the default summary instruction instead of adding to it.
    pub replace_instructions: bool,
    /// Handed to hooks; not applied (pi 0.83 does not apply it either).
    pub label: Option<String>,
}

impl NavigateOptions {
    /// Move and summarize the abandoned branch.
    pub fn summarized() -> Self {
        NavigateOptions {
            summarize: true,
            ..NavigateOptions::default()
        }
    }
    /// Sets [`NavigateOptions::summarize`].
    pub fn with_summarize(mut self, summarize: bool) -> Self {
        self.summarize = summarize;
        self
    }
    /// Extra focus for the summary.
    pub fn with_custom_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.custom_instructions = Some(instructions.into());
        self
    }
    /// The whole summary instruction, replacing the default one.
    pub fn with_replaced_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.custom_instructions = Some(instructions.into());
        self.replace_instructions = true;
        self
    }
    /// Sets [`NavigateOptions::replace_instructions`].
    pub fn with_replace_instructions(mut self, replace: bool) -> Self {
        self.replace_instructions = replace;
        self
    }
    /// Sets [`NavigateOptions::label`].
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
}

/// What navigation did.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct NavigateResult {
    /// A hook cancelled, or the summary was aborted; the leaf did not move.
    pub cancelled: bool,
    /// The text of the user (or custom) message navigated to, for the editor.
    pub editor_text: Option<String>,
    /// The `branch_summary` entry written.
    pub summary_entry: Option<SessionEntry>,
}

/// Where the leaf goes for `target` and the editor text: a user or custom message is re-edited,
/// so the leaf goes to its parent; anything else becomes the leaf itself.
fn landing(target: &SessionEntry) -> (Option<String>, Option<String>) {
    match &target.kind {
        EntryKind::Message(m) => match &m.message {
            AgentMessage::Llm(Message::User(u)) => {
                (target.parent_id.clone(), Some(u.content.joined_text("")))
            }
            _ => (Some(target.id.clone()), None),
        },
        EntryKind::CustomMessage(c) => (target.parent_id.clone(), Some(c.content.joined_text(""))),
        _ => (Some(target.id.clone()), None),
    }
}

impl AgentHarness {
    /// Moves the leaf to `target` (`None`: before the first entry). Requires idle. With
    /// `summarize`, a failed summary is an error and the leaf stays; an aborted one (see
    /// [`AgentHarness::abort`]) returns `cancelled`. Nothing is deleted: the branch left
    /// stays in the log and can be navigated back to.
    ///
    /// Starting over from the root without a summary; the next prompt opens a second branch
    /// (the [crate documentation](crate) shows a move with a summary):
    ///
    /// ```
    /// use std::sync::Arc;
    /// use arbor_agent::prelude::*;
    /// use arbor_ai::faux::{FauxProvider, FauxResponse};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let faux = FauxProvider::new();
    /// faux.push(FauxResponse::text("Rust."));
    /// faux.push(FauxResponse::text("Go."));
    /// let session = Arc::new(Session::new(Arc::new(MemoryStorage::new("/work/project"))));
    /// let options = HarnessOptions::new(faux.model());
    /// let harness = AgentHarness::new(session.clone(), Arc::new(faux.clone()), options)?;
    /// harness.prompt("Pick a language.", &[]).await?;
    ///
    /// let moved = harness.navigate_tree(None, NavigateOptions::default()).await?;
    /// assert!(!moved.cancelled && moved.summary_entry.is_none());
    /// assert_eq!(session.leaf_id().await?, None);
    /// let context = session.build_context(&ContextOptions::default()).await?;
    /// assert!(context.messages.is_empty()); // the model will see nothing of the first branch
    ///
    /// harness.prompt("Pick another language.", &[]).await?;
    /// let tree = session.tree().await?;
    /// assert_eq!(tree.roots.len(), 2); // both branches are kept
    /// # Ok(())
    /// # }
    /// ```
    pub async fn navigate_tree(
        &self,
        target: Option<&str>,
        options: NavigateOptions,
    ) -> Result<NavigateResult, AgentError> {
        let cancel = self.begin(Phase::BranchSummary, "navigateTree() requires idle harness")?;
        let result = self.navigate_inner(target, options, cancel).await;
        self.finish();
        result
    }

    async fn navigate_inner(
        &self,
        target: Option<&str>,
        options: NavigateOptions,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Result<NavigateResult, AgentError> {
        let session = self.inner.session.clone();
        let old_leaf = session.leaf_id().await?;
        if old_leaf.as_deref() == target {
            return Ok(NavigateResult::default());
        }
        let target_entry = match target {
            Some(id) => Some(session.get_entry(id).await?.ok_or_else(|| {
                AgentError::new(ErrorCode::InvalidArgument, format!("Entry {id} not found"))
            })?),
            None => None,
        };
        let collection = match target {
            Some(id) => collect_entries_for_branch_summary(&session, old_leaf.as_deref(), id)
                .await
                .map_err(|e| {
                    AgentError::new(ErrorCode::BranchSummary, e.to_string()).with_source(e)
                })?,
            None => BranchSummaryCollection {
                common_ancestor_id: None,
                entries: match &old_leaf {
                    Some(leaf) => session.ancestry(Some(leaf)).await?,
                    None => Vec::new(),
                },
            },
        };
        let mut preparation = TreePreparation {
            target_id: target.map(str::to_string),
            old_leaf_id: old_leaf.clone(),
            common_ancestor_id: collection.common_ancestor_id,
            entries_to_summarize: collection.entries,
            user_wants_summary: options.summarize,
            custom_instructions: options.custom_instructions.clone(),
            replace_instructions: options.replace_instructions,
            label: options.label.clone(),
        };
        let mut decision = None;
        for hook in self.hooks() {
            if let Some(d) = hook.session_before_tree(&preparation).await? {
                decision = Some(d);
            }
        }
        let mut hook_summary = None;
        if let Some(d) = decision {
            if d.cancel {
                return Ok(NavigateResult {
                    cancelled: true,
                    ..NavigateResult::default()
                });
            }
            if let Some(ci) = d.custom_instructions {
                preparation.custom_instructions = Some(ci);
            }
            if let Some(ri) = d.replace_instructions {
                preparation.replace_instructions = ri;
            }
            hook_summary = d.summary;
        }

        let (summary, from_hook) = match hook_summary {
            Some(s) => (
                Some(BranchSummaryDraft {
                    summary: s.summary,
                    details: s.details,
                    usage: s.usage,
                    from_hook: Some(true),
                }),
                true,
            ),
            None if options.summarize && !preparation.entries_to_summarize.is_empty() => {
                // One lock for everything read here: the guard of a `self.state()` inside the
                // struct expression below would live to its end and deadlock a second one.
                let (model, thinking_level, summary_retry, stream) = {
                    let s = self.state();
                    (
                        s.model.clone(),
                        s.thinking_level,
                        s.summary_retry.clone(),
                        s.stream_options.clone(),
                    )
                };
                let branch_options = BranchSummaryOptions {
                    summary: SummaryOptions {
                        custom_instructions: preparation.custom_instructions.clone(),
                        thinking_level: Some(thinking_level),
                        cancel: cancel.clone(),
                        retry: summary_retry,
                        on_event: Some(
                            self.summary_event_sink(crate::agent::RetryOperation::BranchSummary),
                        ),
                        stream,
                    },
                    replace_instructions: preparation.replace_instructions,
                    ..BranchSummaryOptions::default()
                };
                match generate_branch_summary(
                    &preparation.entries_to_summarize,
                    self.inner.provider.as_ref(),
                    &model,
                    &branch_options,
                )
                .await
                {
                    Ok(r) => (Some(r.to_draft()), false),
                    Err(e) if e.is_aborted() || cancel.is_cancelled() => {
                        return Ok(NavigateResult {
                            cancelled: true,
                            ..NavigateResult::default()
                        })
                    }
                    Err(e) => {
                        return Err(
                            AgentError::new(ErrorCode::BranchSummary, e.to_string()).with_source(e)
                        )
                    }
                }
            }
            None => (None, false),
        };

        let (new_leaf, editor_text) = match &target_entry {
            Some(t) => landing(t),
            None => (None, None),
        };
        let has_summary = summary.is_some();
        let summary_id = session.move_to(new_leaf.as_deref(), summary).await?;
        let summary_entry = match &summary_id {
            Some(id) => session.get_entry(id).await?,
            None => None,
        };
        let new_leaf_id = session.leaf_id().await?;
        session.storage().save_point().await?;
        self.deliver(&AgentEvent::SessionTree {
            new_leaf_id,
            old_leaf_id: old_leaf,
            summary_entry: summary_entry.clone(),
            from_hook: has_summary.then_some(from_hook),
        });
        self.restore_settings().await?;
        Ok(NavigateResult {
            cancelled: false,
            editor_text,
            summary_entry,
        })
    }
}
