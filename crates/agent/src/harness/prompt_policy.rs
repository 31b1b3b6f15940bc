//! The prompt policy: what happens around one prompt (DECISIONS §22.12). A transient
//! provider error is retried with exponential backoff, a context overflow compacts the session
//! and retries once, and a turn that leaves the context above `contextWindow − reserveTokens`
//! compacts afterwards. A failed attempt is hidden from the model with `context_edit` entries
//! (the log keeps it), so the retried request carries the prompt once.
//!
//! Retries restart the prompt, so they apply when the failure is the run's first answer (the
//! common case: 429/5xx/overloaded before anything happened). A failure after tool calls is
//! reported as is.
//!
//! It lives in the harness so every client (the app's modes, tests, embedders) runs the same
//! rules; the client brings the settings ([`PromptPolicy`]), the switches it may flip during
//! the run ([`PolicyControl`]) and where announcements go ([`PolicyObserver`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arbor_ai::{AssistantMessage, ImageContent, StopReason};

use crate::agent::AgentError;
use crate::SessionError;

use super::AgentHarness;

/// Retries of a failed first answer (`retry.*` settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptRetry {
    /// Whether failed turns are retried at all.
    pub enabled: bool,
    /// Retries after the first failure.
    pub max_retries: u32,
    /// The first delay; each retry doubles it.
    pub base_delay_ms: u64,
    /// The cap of one delay.
    pub max_agent_delay_ms: u64,
}

/// The settings the policy runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptPolicy {
    /// Retry of failed turns.
    pub retry: PromptRetry,
    /// Whether contexts are compacted automatically (on overflow and above the threshold).
    pub auto_compaction: bool,
    /// Head-room kept free in the context window: a run that leaves less compacts after it.
    /// (How much a compaction keeps is the harness's own `compaction` option.)
    pub reserve_tokens: u64,
}

/// Announcements of the policy's work (stderr, JSON events, transcript lines: the client
/// chooses).
pub trait PolicyObserver: Send + Sync {
    /// A failed answer will be retried: `attempt` (1 for the first retry) of `max_attempts`,
    /// after `delay_ms` milliseconds; `error` is the failed answer's message.
    fn retry_scheduled(&self, attempt: u32, max_attempts: u32, delay_ms: u64, error: &str);
    /// Retrying is over after `attempt` retries: `success` with the last answer good, or
    /// failed with `final_error` ([`RETRY_CANCELLED`] when `abort_retry` cut the wait short).
    /// Only called when at least one retry was scheduled.
    fn retry_finished(&self, success: bool, attempt: u32, final_error: Option<&str>);
    /// An automatic compaction starts; `reason` is a short phrase for people ("context
    /// overflow", "context above the threshold").
    fn compacting(&self, reason: &str);
    /// An automatic compaction failed; the answer stands.
    fn compaction_failed(&self, error: &AgentError);
}

/// Switches a client flips while the agent runs (pi's `set_auto_retry`, `set_auto_compaction`,
/// `abort_retry`); they start from the policy's settings.
#[derive(Debug)]
pub struct PolicyControl {
    auto_retry: AtomicBool,
    auto_compaction: AtomicBool,
    retry_wait: tokio::sync::Notify,
}

impl PolicyControl {
    /// Switches starting as `policy` sets them.
    pub fn new(policy: &PromptPolicy) -> PolicyControl {
        PolicyControl {
            auto_retry: AtomicBool::new(policy.retry.enabled),
            auto_compaction: AtomicBool::new(policy.auto_compaction),
            retry_wait: tokio::sync::Notify::new(),
        }
    }
    /// Whether failed turns are retried now.
    pub fn auto_retry(&self) -> bool {
        self.auto_retry.load(Ordering::Relaxed)
    }
    /// Whether automatic compaction is on now.
    pub fn auto_compaction(&self) -> bool {
        self.auto_compaction.load(Ordering::Relaxed)
    }
    /// Turns retries of failed turns on or off (from the next failure on).
    pub fn set_auto_retry(&self, on: bool) {
        self.auto_retry.store(on, Ordering::Relaxed);
    }
    /// Turns automatic compaction on or off (from the next check on).
    pub fn set_auto_compaction(&self, on: bool) {
        self.auto_compaction.store(on, Ordering::Relaxed);
    }
    /// Cancels the retry delay being waited out, if any: the failed answer stands.
    pub fn abort_retry(&self) {
        self.retry_wait.notify_waiters();
    }
}

/// The text `auto_retry_end.finalError` carries when `abort_retry` cut the delay short.
pub const RETRY_CANCELLED: &str = "Retry cancelled";

/// Why a prompt under the policy failed (a failed answer is not an error: it is returned).
#[derive(Debug, thiserror::Error)]
pub enum PromptPolicyError {
    /// The harness refused or failed the prompt.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// Hiding a failed attempt from the context could not be written.
    #[error(transparent)]
    Session(#[from] SessionError),
}

impl AgentHarness {
    /// Sends one prompt under the [`PromptPolicy`]; returns the final answer.
    pub async fn prompt_with_policy(
        &self,
        text: &str,
        images: &[ImageContent],
        policy: &PromptPolicy,
        observer: &dyn PolicyObserver,
        control: &PolicyControl,
    ) -> Result<AssistantMessage, PromptPolicyError> {
        let retry = policy.retry;
        let mut attempt = 0u32;
        let mut compacted_for_overflow = false;
        let mut answer = self.prompt(text, images).await?;
        loop {
            if answer.stop_reason == StopReason::Error {
                let window = self.model().context_window;
                if control.auto_compaction()
                    && !compacted_for_overflow
                    && arbor_ai::overflow::is_context_overflow(&answer, Some(window))
                {
                    if let Some(ids) = self.failed_attempt(text).await {
                        compacted_for_overflow = true;
                        // Hide the attempt first so the summary does not cover the failed
                        // answer.
                        self.hide_attempt(&ids).await?;
                        observer.compacting("context overflow");
                        match self.compact(None).await {
                            Ok(_) => {
                                answer = self.prompt(text, images).await?;
                                continue;
                            }
                            Err(e) => {
                                observer.compaction_failed(&e);
                                return Ok(answer);
                            }
                        }
                    }
                }
                if control.auto_retry() && arbor_ai::retry::is_retryable_assistant_error(&answer) {
                    if attempt < retry.max_retries {
                        if let Some(failed) = self.failed_answer_id().await {
                            attempt += 1;
                            let backoff = retry
                                .base_delay_ms
                                .saturating_mul(1u64 << (attempt - 1).min(30))
                                .min(retry.max_agent_delay_ms);
                            // The server's own wait wins (the driver already refused one
                            // above the cap, DECISIONS §29.3).
                            let delay = arbor_ai::retry::requested_retry_delay(&answer)
                                .map_or(backoff, |d| {
                                    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
                                });
                            observer.retry_scheduled(
                                attempt,
                                retry.max_retries,
                                delay,
                                answer.error_message.as_deref().unwrap_or(""),
                            );
                            // Only the failed answer is hidden: the prompt stays where it is
                            // and the retry runs on from it (DECISIONS §29.1).
                            self.session().append_context_edit(&failed, None).await?;
                            tokio::select! {
                                () = tokio::time::sleep(Duration::from_millis(delay)) => {}
                                () = control.retry_wait.notified() => {
                                    observer.retry_finished(false, attempt, Some(RETRY_CANCELLED));
                                    return Ok(answer);
                                }
                            }
                            answer = self.rerun().await?;
                            continue;
                        }
                    }
                    if attempt > 0 {
                        observer.retry_finished(false, attempt, answer.error_message.as_deref());
                    }
                }
                return Ok(answer);
            }
            if attempt > 0 {
                observer.retry_finished(true, attempt, None);
            }
            let window = self.model().context_window;
            if control.auto_compaction()
                && answer.stop_reason != StopReason::Aborted
                && context_tokens(&answer) > window.saturating_sub(policy.reserve_tokens)
            {
                observer.compacting("context above the threshold");
                if let Err(e) = self.compact(None).await {
                    observer.compaction_failed(&e);
                }
            }
            return Ok(answer);
        }
    }

    /// The ids of the entries a failed first answer produced: the user message and the
    /// answer, when the answer's parent is that user message.
    async fn failed_attempt(&self, text: &str) -> Option<(String, String)> {
        let session = self.session();
        let leaf = session.leaf_id().await.ok()??;
        let answer = session.get_entry(&leaf).await.ok()??;
        let parent_id = answer.parent_id.clone()?;
        let parent = session.get_entry(&parent_id).await.ok()??;
        let v = serde_json::to_value(&parent).ok()?;
        let is_user = v.pointer("/message/role").and_then(|r| r.as_str()) == Some("user");
        let same_text = serde_json::to_string(&v.pointer("/message/content"))
            .ok()?
            .contains(
                &serde_json::to_string(text)
                    .ok()?
                    .trim_matches('"')
                    .to_owned(),
            );
        (is_user && same_text).then_some((parent_id, leaf))
    }

    /// The id of the run's failed answer when it is the session's leaf (a retry hides it and
    /// runs on from its parent's context).
    async fn failed_answer_id(&self) -> Option<String> {
        let session = self.session();
        let leaf = session.leaf_id().await.ok()??;
        let entry = session.get_entry(&leaf).await.ok()??;
        let v = serde_json::to_value(&entry).ok()?;
        let failed = v.pointer("/message/role").and_then(|r| r.as_str()) == Some("assistant")
            && v.pointer("/message/stopReason").and_then(|r| r.as_str()) == Some("error");
        failed.then_some(leaf)
    }

    /// Hides a failed attempt (answer first, then its prompt) from the context.
    async fn hide_attempt(&self, ids: &(String, String)) -> Result<(), SessionError> {
        let s = self.session();
        s.append_context_edit(&ids.1, None).await?;
        s.append_context_edit(&ids.0, None).await?;
        Ok(())
    }
}

/// The context size an answer reports (input + output + cache).
fn context_tokens(m: &AssistantMessage) -> u64 {
    m.usage.input + m.usage.output + m.usage.cache_read + m.usage.cache_write
}
