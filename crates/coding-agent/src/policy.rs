//! What happens around one prompt (coding-agent.md §11.1, §7.2): a transient provider error is
//! retried with exponential backoff, a context overflow compacts the session and retries once,
//! and a turn that leaves the context above `contextWindow − reserveTokens` compacts
//! afterwards. A failed attempt is hidden from the model with `context_edit` entries (the log
//! keeps it), so the retried request carries the prompt once.
//!
//! Retries restart the prompt, so they apply when the failure is the run's first answer (the
//! common case: 429/5xx/overloaded before anything happened). A failure after tool calls is
//! reported as is (DECISIONS §22.12).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arbor_agent::harness::AgentHarness;
use arbor_ai::{AssistantMessage, ImageContent, StopReason};

use crate::config::Settings;
use crate::error::CliError;

/// Announcements of the policy's work (stderr in print mode, events in JSON/RPC mode).
pub trait PolicyObserver: Send + Sync {
    fn retry_scheduled(&self, attempt: u32, max_attempts: u32, delay_ms: u64, error: &str);
    fn retry_finished(&self, success: bool, attempt: u32, final_error: Option<&str>);
    fn compacting(&self, reason: &str);
}

/// Switches an RPC client flips while the agent runs (`set_auto_retry`, `set_auto_compaction`,
/// `abort_retry`); they start from the settings and live as long as the process (DECISIONS
/// §22.13).
#[derive(Debug)]
pub struct PolicyControl {
    auto_retry: AtomicBool,
    auto_compaction: AtomicBool,
    retry_wait: tokio::sync::Notify,
}

impl PolicyControl {
    pub fn new(settings: &Settings) -> PolicyControl {
        PolicyControl {
            auto_retry: AtomicBool::new(settings.retry().enabled),
            auto_compaction: AtomicBool::new(settings.compaction().enabled),
            retry_wait: tokio::sync::Notify::new(),
        }
    }
    pub fn auto_retry(&self) -> bool {
        self.auto_retry.load(Ordering::Relaxed)
    }
    pub fn auto_compaction(&self) -> bool {
        self.auto_compaction.load(Ordering::Relaxed)
    }
    pub fn set_auto_retry(&self, on: bool) {
        self.auto_retry.store(on, Ordering::Relaxed);
    }
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

/// Writes progress to stderr.
pub struct StderrObserver;

impl PolicyObserver for StderrObserver {
    fn retry_scheduled(&self, attempt: u32, max_attempts: u32, delay_ms: u64, error: &str) {
        eprintln!(
            "arbor: {error}; retrying ({attempt}/{max_attempts}) in {:.1}s",
            delay_ms as f64 / 1000.0
        );
    }
    fn retry_finished(&self, success: bool, attempt: u32, final_error: Option<&str>) {
        if !success {
            eprintln!(
                "arbor: giving up after {attempt} retries: {}",
                final_error.unwrap_or("unknown error")
            );
        }
    }
    fn compacting(&self, reason: &str) {
        eprintln!("arbor: compacting the session ({reason})");
    }
}

/// The ids of the entries a failed first answer produced: the user message and the answer,
/// when the answer's parent is that user message.
async fn failed_attempt(harness: &AgentHarness, text: &str) -> Option<(String, String)> {
    let session = harness.session();
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

async fn hide(harness: &AgentHarness, ids: &(String, String)) -> Result<(), CliError> {
    let s = harness.session();
    s.append_context_edit(&ids.1, None).await?;
    s.append_context_edit(&ids.0, None).await?;
    Ok(())
}

fn context_tokens(m: &AssistantMessage) -> u64 {
    m.usage.input + m.usage.output + m.usage.cache_read + m.usage.cache_write
}

/// Sends one prompt under the retry and compaction policy; returns the final answer.
pub async fn prompt(
    harness: &AgentHarness,
    settings: &Settings,
    text: &str,
    images: &[ImageContent],
    observer: &dyn PolicyObserver,
) -> Result<AssistantMessage, CliError> {
    let control = PolicyControl::new(settings);
    prompt_controlled(harness, settings, text, images, observer, &control).await
}

/// [`prompt`] with switches the caller can flip during the run.
pub async fn prompt_controlled(
    harness: &AgentHarness,
    settings: &Settings,
    text: &str,
    images: &[ImageContent],
    observer: &dyn PolicyObserver,
    control: &PolicyControl,
) -> Result<AssistantMessage, CliError> {
    let retry = settings.retry();
    let compaction = settings.compaction();
    let mut attempt = 0u32;
    let mut compacted_for_overflow = false;
    loop {
        let answer = harness.prompt(text, images).await?;
        if answer.stop_reason == StopReason::Error {
            let window = harness.model().context_window;
            if control.auto_compaction()
                && !compacted_for_overflow
                && arbor_ai::overflow::is_context_overflow(&answer, Some(window))
            {
                if let Some(ids) = failed_attempt(harness, text).await {
                    compacted_for_overflow = true;
                    // Hide the attempt first so the summary does not cover the failed answer.
                    hide(harness, &ids).await?;
                    observer.compacting("context overflow");
                    match harness.compact(None).await {
                        Ok(_) => continue,
                        Err(e) => {
                            eprintln!("arbor: compaction failed: {e}");
                            return Ok(answer);
                        }
                    }
                }
            }
            if control.auto_retry() && arbor_ai::retry::is_retryable_assistant_error(&answer) {
                if attempt < retry.max_retries {
                    if let Some(ids) = failed_attempt(harness, text).await {
                        attempt += 1;
                        let delay = retry
                            .base_delay_ms
                            .saturating_mul(1u64 << (attempt - 1).min(30))
                            .min(retry.max_agent_delay_ms);
                        observer.retry_scheduled(
                            attempt,
                            retry.max_retries,
                            delay,
                            answer.error_message.as_deref().unwrap_or(""),
                        );
                        hide(harness, &ids).await?;
                        tokio::select! {
                            () = tokio::time::sleep(Duration::from_millis(delay)) => continue,
                            () = control.retry_wait.notified() => {
                                observer.retry_finished(false, attempt, Some(RETRY_CANCELLED));
                                return Ok(answer);
                            }
                        }
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
        let window = harness.model().context_window;
        if control.auto_compaction()
            && answer.stop_reason != StopReason::Aborted
            && context_tokens(&answer) > window.saturating_sub(compaction.reserve_tokens)
        {
            observer.compacting("context above the threshold");
            if let Err(e) = harness.compact(None).await {
                eprintln!("arbor: compaction failed: {e}");
            }
        }
        return Ok(answer);
    }
}
