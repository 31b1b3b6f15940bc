//! When to compact without being asked (DECISIONS §21.5): after a
//! run whose context crossed the threshold, before a new prompt, and once per user message on a
//! context-overflow error (compact, then retry the failed turn). The harness runs the
//! compaction and emits the events defined here; this module only decides.

use arbor_ai::overflow::is_context_overflow;
use arbor_ai::{AssistantMessage, Model, StopReason, Usage};
use serde::{Deserialize, Serialize};

use crate::compaction::error::CompactionError;
use crate::compaction::file_ops::FileLists;
use crate::compaction::settings::CompactionSettings;
use crate::compaction::summarize::CompactionResult;
use crate::compaction::tokens::{
    calculate_context_tokens, estimate_context_tokens, estimate_tokens, should_compact,
};
use crate::message::AgentMessage;

/// Why a compaction ran (`compaction_start.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionReason {
    /// Asked for (`/compact`, `AgentHarness::compact`).
    Manual,
    /// The context crossed `window − reserve`.
    Threshold,
    /// The provider refused the context as too long (or a reply overflowed the window).
    Overflow,
}

/// `compaction_start { reason }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionStartEvent {
    /// Why compaction started.
    pub reason: CompactionReason,
}

/// The `result` of a successful `compaction_end`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionEndResult {
    /// The summary written.
    pub summary: String,
    /// The first entry kept after the summary.
    pub first_kept_entry_id: String,
    /// The context's size before, in tokens.
    pub tokens_before: u64,
    /// Estimated tokens of the context rebuilt after the compaction.
    pub estimated_tokens_after: u64,
    /// What the summary request cost.
    pub usage: Usage,
    /// Files read and modified in the summarized part.
    pub details: FileLists,
}

/// `compaction_end { reason, result, aborted, willRetry, errorMessage? }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionEndEvent {
    /// Why the compaction ran (the reason its `compaction_start` gave).
    pub reason: CompactionReason,
    /// `None` when the compaction failed, was aborted, or recovery gave up.
    pub result: Option<CompactionEndResult>,
    /// The compaction was aborted.
    pub aborted: bool,
    /// The failed turn is sent again after this compaction.
    pub will_retry: bool,
    #[serde(rename = "errorMessage", skip_serializing_if = "Option::is_none")]
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// Reported when a second overflow follows an overflow compaction for the same user message.
pub const OVERFLOW_RECOVERY_FAILED: &str = "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model.";

impl CompactionEndEvent {
    /// A successful compaction; `context_after` is the context rebuilt from the session.
    pub fn succeeded(
        reason: CompactionReason,
        will_retry: bool,
        result: &CompactionResult,
        context_after: &[AgentMessage],
    ) -> Self {
        CompactionEndEvent {
            reason,
            result: Some(CompactionEndResult {
                summary: result.summary.clone(),
                first_kept_entry_id: result.first_kept_entry_id.clone(),
                tokens_before: result.tokens_before,
                estimated_tokens_after: context_after.iter().map(estimate_tokens).sum(),
                usage: result.usage.clone(),
                details: result.details.clone(),
            }),
            aborted: false,
            will_retry,
            error: None,
        }
    }

    /// A failed or aborted compaction (aborts carry no message).
    pub fn failed(reason: CompactionReason, error: &CompactionError) -> Self {
        let aborted = error.is_aborted();
        let message = match reason {
            _ if aborted => None,
            CompactionReason::Overflow => {
                Some(format!("Context overflow recovery failed: {error}"))
            }
            CompactionReason::Threshold => Some(format!("Auto-compaction failed: {error}")),
            CompactionReason::Manual => Some(error.to_string()),
        };
        CompactionEndEvent {
            reason,
            result: None,
            aborted,
            will_retry: false,
            error: message,
        }
    }
}

/// Where in the agent's cycle the check runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckPoint {
    /// After a run ended (aborted replies are skipped).
    AfterRun,
    /// Before a new prompt is sent (aborted replies count too; a decision to retry is
    /// meaningless here, the new prompt goes out anyway).
    BeforePrompt,
}

/// What the policy looks at.
#[derive(Debug, Clone, Copy)]
pub struct CompactionCheck<'a> {
    /// The last assistant message of the run (or of the session, before a prompt).
    pub assistant: &'a AssistantMessage,
    /// The model the next request will use.
    pub model: &'a Model,
    /// The current context messages (for the estimate when the reply has no usable usage).
    pub messages: &'a [AgentMessage],
    /// Epoch ms of the newest compaction on the active path (`latest_compaction_ms`).
    pub latest_compaction_ms: Option<i64>,
    /// When the check runs.
    pub point: CheckPoint,
}

/// What to do.
#[derive(Debug, Clone, PartialEq)]
pub enum AutoDecision {
    /// Do nothing: disabled, an aborted or stale reply, no usable token count, or the context
    /// is still below the threshold.
    Skip,
    /// Compact with `reason`; with `will_retry`, drop the failed reply from the agent's
    /// messages and send the turn again afterwards.
    Compact {
        /// What to report in `compaction_start` / `compaction_end`.
        reason: CompactionReason,
        /// Send the failed turn again after compacting (overflow after a run, first try only).
        will_retry: bool,
    },
    /// A second overflow for the same user message: emit this event and stop.
    RecoveryFailed(Box<CompactionEndEvent>),
}

/// The automatic-compaction policy. One per agent; it remembers whether overflow recovery
/// was already tried for the current user message.
#[derive(Debug, Clone)]
pub struct AutoCompaction {
    settings: CompactionSettings,
    overflow_recovery_attempted: bool,
}

impl AutoCompaction {
    /// A tracker with `settings`.
    pub fn new(settings: CompactionSettings) -> Self {
        AutoCompaction {
            settings,
            overflow_recovery_attempted: false,
        }
    }

    /// The settings in use.
    pub fn settings(&self) -> &CompactionSettings {
        &self.settings
    }

    /// Replaces the settings.
    pub fn set_settings(&mut self, settings: CompactionSettings) {
        self.settings = settings;
    }

    /// Call when a user message starts a run and when a reply ends without error: the next
    /// overflow may be recovered again.
    pub fn reset_overflow_recovery(&mut self) {
        self.overflow_recovery_attempted = false;
    }

    /// An overflow was already answered with a compaction in this run (one try per run).
    pub fn overflow_recovery_attempted(&self) -> bool {
        self.overflow_recovery_attempted
    }

    /// Decides after a run or before a prompt.
    pub fn decide(&mut self, check: &CompactionCheck<'_>) -> AutoDecision {
        let a = check.assistant;
        if !self.settings.enabled {
            return AutoDecision::Skip;
        }
        if check.point == CheckPoint::AfterRun && a.stop_reason == StopReason::Aborted {
            return AutoDecision::Skip;
        }
        // A reply from before the newest compaction says nothing about the current context.
        if check
            .latest_compaction_ms
            .is_some_and(|c| a.timestamp.get() <= c)
        {
            return AutoDecision::Skip;
        }
        let window = check.model.context_window;
        let same_model = a.provider == check.model.provider && a.model == check.model.id;
        if same_model && is_context_overflow(a, Some(window)) {
            let will_retry = a.stop_reason != StopReason::Stop;
            if !will_retry {
                return AutoDecision::Compact {
                    reason: CompactionReason::Overflow,
                    will_retry: false,
                };
            }
            if self.overflow_recovery_attempted {
                return AutoDecision::RecoveryFailed(Box::new(CompactionEndEvent {
                    reason: CompactionReason::Overflow,
                    result: None,
                    aborted: false,
                    will_retry: false,
                    error: Some(OVERFLOW_RECOVERY_FAILED.to_string()),
                }));
            }
            self.overflow_recovery_attempted = true;
            return AutoDecision::Compact {
                reason: CompactionReason::Overflow,
                will_retry: check.point == CheckPoint::AfterRun,
            };
        }

        let direct = calculate_context_tokens(&a.usage);
        let tokens = if a.stop_reason == StopReason::Error || direct == 0 {
            // No usable usage on this reply: anchor on the last valid one in the context.
            let estimate = estimate_context_tokens(check.messages);
            match estimate.last_usage_index {
                None => return AutoDecision::Skip,
                Some(i) => {
                    let stale = match (&check.messages[i], check.latest_compaction_ms) {
                        (AgentMessage::Llm(arbor_ai::Message::Assistant(u)), Some(c)) => {
                            u.timestamp.get() <= c
                        }
                        _ => false,
                    };
                    if stale {
                        return AutoDecision::Skip;
                    }
                }
            }
            estimate.tokens
        } else {
            direct
        };
        if should_compact(tokens, window, &self.settings) {
            AutoDecision::Compact {
                reason: CompactionReason::Threshold,
                will_retry: false,
            }
        } else {
            AutoDecision::Skip
        }
    }
}
