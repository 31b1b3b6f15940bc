//! `compact` (DECISIONS §20.11, §21): summarize the older part of the active path into
//! a `compaction` entry. The algorithms live in [`crate::compaction`]; this wires the phase, the
//! `session_before_compact` hook, cancellation and the events.

use std::sync::Arc;

use crate::agent::{AgentError, AgentEvent, ErrorCode, RetryOperation};
use crate::compaction::summarize::SummaryEventSink;
use crate::compaction::{
    compact, prepare_compaction, CompactionEndEvent, CompactionReason, CompactionStartEvent,
    SummaryEvent, SummaryOptions,
};
use crate::context::projection::ContextOptions;
use crate::session::{EntryKind, SessionEntry};

use super::handle::AgentHarness;
use super::hooks::BeforeCompact;
use super::state::Phase;

/// "Compaction cancelled": a hook declined, or [`AgentHarness::abort`] stopped the summary.
pub const COMPACTION_CANCELLED: &str = "Compaction cancelled";
/// Nothing before the kept tail (pi's text).
pub const NOTHING_TO_COMPACT: &str = "Nothing to compact (session too small)";
/// The leaf already is a compaction, so there is nothing new to summarize (pi's text).
pub const ALREADY_COMPACTED: &str = "Already compacted";

impl AgentHarness {
    /// Compacts the active path now (manual compaction). Requires idle. Returns the written
    /// `compaction` entry. Emits `compaction_start {reason: "manual"}`, then `session_compact`
    /// and `compaction_end` (or `compaction_end` with `aborted`/`errorMessage`, also when there
    /// is nothing to compact: [`NOTHING_TO_COMPACT`], [`ALREADY_COMPACTED`], as pi does;
    /// DECISIONS §31.15).
    pub async fn compact(
        &self,
        custom_instructions: Option<&str>,
    ) -> Result<SessionEntry, AgentError> {
        let cancel = self.begin(Phase::Compaction, "compact() requires idle harness")?;
        let result = self.compact_inner(custom_instructions, cancel).await;
        self.finish();
        result
    }

    async fn compact_inner(
        &self,
        custom_instructions: Option<&str>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Result<SessionEntry, AgentError> {
        let session = self.inner.session.clone();
        let reason = CompactionReason::Manual;
        self.deliver(&AgentEvent::CompactionStart(CompactionStartEvent {
            reason,
        }));
        let end_with = |aborted: bool, error: String| {
            AgentEvent::CompactionEnd(CompactionEndEvent {
                reason,
                result: None,
                aborted,
                will_retry: false,
                error: Some(error),
            })
        };
        let path = match session.ancestry(None).await {
            Ok(p) => p,
            Err(e) => {
                self.deliver(&end_with(false, e.to_string()));
                return Err(e.into());
            }
        };
        let settings = self.state().compaction;
        let preparation = match prepare_compaction(&path, &settings) {
            Ok(Some(p)) => p,
            Ok(None) => {
                let why = match path.last().map(|e| &e.kind) {
                    Some(EntryKind::Compaction(_)) => ALREADY_COMPACTED,
                    _ => NOTHING_TO_COMPACT,
                };
                self.deliver(&end_with(false, why.to_owned()));
                return Err(AgentError::new(ErrorCode::Compaction, why));
            }
            Err(e) => {
                self.deliver(&end_with(false, e.to_string()));
                return Err(AgentError::new(ErrorCode::Compaction, e.to_string()).with_source(e));
            }
        };

        let mut decision = None;
        let event = BeforeCompact {
            branch_entries: &path,
            custom_instructions,
        };
        for hook in self.hooks() {
            match hook.session_before_compact(&event).await {
                Ok(Some(d)) => decision = Some(d),
                Ok(None) => {}
                Err(e) => {
                    self.deliver(&end_with(false, e.message().to_string()));
                    return Err(e);
                }
            }
        }
        let (draft, from_hook, result) = match decision {
            Some(d) if d.cancel => {
                self.deliver(&end_with(true, COMPACTION_CANCELLED.to_string()));
                return Err(AgentError::new(ErrorCode::Compaction, COMPACTION_CANCELLED));
            }
            Some(d) if d.compaction.is_some() => {
                let mut draft = d.compaction.unwrap_or_default();
                draft.from_hook = Some(true);
                (draft, true, None)
            }
            _ => {
                let (model, thinking_level, stream, retry) = {
                    let s = self.state();
                    (
                        s.model.clone(),
                        s.thinking_level,
                        s.stream_options.clone(),
                        s.summary_retry.clone(),
                    )
                };
                let options = SummaryOptions {
                    custom_instructions: custom_instructions.map(str::to_string),
                    thinking_level: Some(thinking_level),
                    cancel: cancel.clone(),
                    retry,
                    on_event: Some(self.summary_event_sink(RetryOperation::Compaction)),
                    stream,
                };
                match compact(&preparation, self.inner.provider.as_ref(), &model, &options).await {
                    Ok(r) => (r.to_draft(), false, Some(r)),
                    Err(e) if e.is_aborted() || cancel.is_cancelled() => {
                        self.deliver(&end_with(true, COMPACTION_CANCELLED.to_string()));
                        return Err(AgentError::new(ErrorCode::Compaction, COMPACTION_CANCELLED)
                            .with_source(e));
                    }
                    Err(e) => {
                        self.deliver(&end_with(false, e.to_string()));
                        return Err(
                            AgentError::new(ErrorCode::Compaction, e.to_string()).with_source(e)
                        );
                    }
                }
            }
        };

        let id = match session.append_compaction(draft).await {
            Ok(id) => id,
            Err(e) => {
                self.deliver(&end_with(false, e.to_string()));
                return Err(e.into());
            }
        };
        session.storage().save_point().await?;
        let entry = session.get_entry(&id).await?.ok_or_else(|| {
            AgentError::new(
                ErrorCode::Session,
                format!("compaction entry {id} vanished after it was written"),
            )
        })?;
        self.deliver(&AgentEvent::SessionCompact {
            compaction_entry: entry.clone(),
            from_hook,
        });
        let end = match &result {
            Some(r) => {
                let ctx = session.build_context(&ContextOptions::default()).await?;
                CompactionEndEvent::succeeded(reason, false, r, &ctx.messages)
            }
            None => CompactionEndEvent {
                reason,
                result: None,
                aborted: false,
                will_retry: false,
                error: None,
            },
        };
        self.deliver(&AgentEvent::CompactionEnd(end));
        Ok(entry)
    }

    /// Summary progress → `retry_scheduled` / `retry_attempt_start` / `retry_finished`.
    pub(super) fn summary_event_sink(&self, operation: RetryOperation) -> SummaryEventSink {
        let harness = self.clone();
        Arc::new(move |event: &SummaryEvent| {
            let mapped = match event {
                SummaryEvent::RetryScheduled {
                    attempt,
                    max_attempts,
                    delay_ms,
                    error_message,
                    ..
                } => Some(AgentEvent::RetryScheduled {
                    operation,
                    attempt: *attempt,
                    max_attempts: *max_attempts,
                    delay_ms: *delay_ms,
                    error_message: error_message.clone(),
                }),
                SummaryEvent::RequestStart { attempt, .. } if *attempt > 0 => {
                    Some(AgentEvent::RetryAttemptStart { operation })
                }
                SummaryEvent::RetryFinished { .. } => Some(AgentEvent::RetryFinished { operation }),
                _ => None,
            };
            if let Some(e) = mapped {
                harness.deliver(&e);
            }
        })
    }
}
