//! Automatic compaction around a prompt (compaction-and-harness.md §E, DECISIONS §21.5): the
//! app owns the [`AutoCompaction`] policy and calls [`AgentHarness::prompt_with_auto_compaction`]
//! instead of `prompt`. Before the prompt and after the run the policy decides; an overflow
//! error gets one compaction, the failed reply is hidden with a `context_edit` (pi 1.6.0's
//! omission), and the turn continues once.

use std::sync::Mutex;

use arbor_ai::{AssistantMessage, ImageContent, Message, StopReason};

use crate::agent::{run_agent_loop_continue, AgentError, AgentEvent, RetryOperation};
use crate::compaction::auto::{AutoCompaction, AutoDecision, CheckPoint, CompactionCheck};
use crate::compaction::{
    compact, prepare_compaction, CompactionEndEvent, CompactionReason, CompactionStartEvent,
    SummaryOptions,
};
use crate::context::projection::ContextOptions;
use crate::message::AgentMessage;
use crate::session::EntryKind;

use super::run::RunHooks;
use super::{AgentHarness, Phase};

impl AgentHarness {
    /// [`AgentHarness::prompt`] with automatic compaction: a threshold check before the prompt
    /// and after the run, and on a context-overflow error one compaction followed by one retry
    /// of the failed turn. Emits `compaction_start` / `compaction_end` with reason `threshold`
    /// or `overflow`. Returns the last assistant message.
    pub async fn prompt_with_auto_compaction(
        &self,
        text: &str,
        images: &[ImageContent],
        policy: &mut AutoCompaction,
    ) -> Result<AssistantMessage, AgentError> {
        if let Some(last) = self.last_context_assistant().await? {
            if let AutoDecision::Compact { reason, .. } = self
                .decide(policy, &last, CheckPoint::BeforePrompt, false)
                .await?
            {
                self.auto_compact(policy, reason, false).await?;
            }
        }
        policy.reset_overflow_recovery();
        let mut last = self.prompt(text, images).await?;
        let mut retried = false;
        loop {
            if last.stop_reason != StopReason::Error {
                policy.reset_overflow_recovery();
            }
            match self
                .decide(policy, &last, CheckPoint::AfterRun, retried)
                .await?
            {
                AutoDecision::Skip => return Ok(last),
                AutoDecision::RecoveryFailed(event) => {
                    self.deliver(&AgentEvent::CompactionEnd(*event));
                    return Ok(last);
                }
                AutoDecision::Compact { reason, will_retry } => {
                    if will_retry {
                        self.omit_failed_reply().await?;
                    }
                    let compacted = self.auto_compact(policy, reason, will_retry).await?;
                    if !(compacted && will_retry) {
                        return Ok(last);
                    }
                    last = self.continue_turn().await?;
                    retried = true;
                }
            }
        }
    }

    async fn last_context_assistant(&self) -> Result<Option<AssistantMessage>, AgentError> {
        let ctx = self
            .inner
            .session
            .build_context(&ContextOptions::default())
            .await?;
        Ok(ctx.messages.iter().rev().find_map(|m| match m {
            AgentMessage::Llm(Message::Assistant(a)) => Some(a.clone()),
            _ => None,
        }))
    }

    async fn decide(
        &self,
        policy: &mut AutoCompaction,
        assistant: &AssistantMessage,
        point: CheckPoint,
        after_compaction: bool,
    ) -> Result<AutoDecision, AgentError> {
        let ctx = self
            .inner
            .session
            .build_context(&ContextOptions::default())
            .await?;
        // The context opens with the newest compaction's summary, stamped with its entry time.
        // A retried reply is newer than the compaction before it by construction, even when
        // both fall in the same millisecond.
        let latest_compaction_ms = if after_compaction {
            None
        } else {
            ctx.messages.iter().find_map(|m| match m {
                AgentMessage::CompactionSummary(c) => Some(c.timestamp.get()),
                _ => None,
            })
        };
        let model = self.model();
        Ok(policy.decide(&CompactionCheck {
            assistant,
            model: &model,
            messages: &ctx.messages,
            latest_compaction_ms,
            point,
        }))
    }

    /// Hides the failed reply (the newest assistant entry of the path) from the context with a
    /// `context_edit`, so the retried turn does not continue from it.
    async fn omit_failed_reply(&self) -> Result<(), AgentError> {
        let session = &self.inner.session;
        let branch = session.branch(None).await?;
        let failed = branch.iter().rev().find(|e| {
            matches!(&e.kind, EntryKind::Message(m) if matches!(m.message, AgentMessage::Llm(Message::Assistant(_))))
        });
        if let Some(entry) = failed {
            session.append_context_edit(&entry.id, None).await?;
            session.storage().save_point().await?;
        }
        Ok(())
    }

    /// Runs one automatic compaction; `Ok(false)` when there was nothing to compact or it
    /// failed (reported in `compaction_end`).
    async fn auto_compact(
        &self,
        policy: &AutoCompaction,
        reason: CompactionReason,
        will_retry: bool,
    ) -> Result<bool, AgentError> {
        let session = self.inner.session.clone();
        let path = session.ancestry(None).await?;
        let Ok(Some(preparation)) = prepare_compaction(&path, policy.settings()) else {
            return Ok(false);
        };
        let cancel = self.begin(Phase::Compaction, "AgentHarness is busy")?;
        self.deliver(&AgentEvent::CompactionStart(CompactionStartEvent {
            reason,
        }));
        let (model, thinking_level, stream) = {
            let s = self.state();
            (s.model.clone(), s.thinking_level, s.stream_options.clone())
        };
        let options = SummaryOptions {
            thinking_level: Some(thinking_level),
            cancel,
            on_event: Some(self.summary_event_sink(RetryOperation::Compaction)),
            stream,
            ..Default::default()
        };
        let outcome = compact(&preparation, self.inner.provider.as_ref(), &model, &options).await;
        let result = match outcome {
            Ok(r) => r,
            Err(e) => {
                self.finish();
                self.deliver(&AgentEvent::CompactionEnd(CompactionEndEvent::failed(
                    reason, &e,
                )));
                return Ok(false);
            }
        };
        let written = async {
            let id = session.append_compaction(result.to_draft()).await?;
            session.storage().save_point().await?;
            let entry = session.get_entry(&id).await?;
            let ctx = session.build_context(&ContextOptions::default()).await?;
            Ok::<_, AgentError>((entry, ctx))
        }
        .await;
        self.finish();
        let (entry, ctx) = written?;
        if let Some(entry) = entry {
            self.deliver(&AgentEvent::SessionCompact {
                compaction_entry: entry,
                from_hook: false,
            });
        }
        self.deliver(&AgentEvent::CompactionEnd(CompactionEndEvent::succeeded(
            reason,
            will_retry,
            &result,
            &ctx.messages,
        )));
        Ok(true)
    }

    /// Sends the current context again without a new user message (the retry after an
    /// overflow compaction).
    async fn continue_turn(&self) -> Result<AssistantMessage, AgentError> {
        let cancel = self.begin(Phase::Turn, "AgentHarness is busy")?;
        let result = async {
            let ctx = self
                .inner
                .session
                .build_context(&ContextOptions::default())
                .await?;
            let config = self.loop_config(None);
            let failure_model = config.model.clone();
            let hooks = RunHooks {
                harness: self,
                last_assistant: Mutex::new(None),
            };
            if let Err(error) =
                run_agent_loop_continue(ctx.messages, config, &hooks, cancel.clone()).await
            {
                hooks
                    .report_failure(&failure_model, &cancel, &error)
                    .await?;
            }
            let last = hooks
                .last_assistant
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            last.ok_or_else(|| {
                AgentError::new(
                    crate::agent::ErrorCode::InvalidState,
                    "AgentHarness retry completed without an assistant message",
                )
            })
        }
        .await;
        let flushed = self.flush_pending().await;
        self.finish();
        let message = result?;
        flushed?;
        Ok(message)
    }
}
