//! The app's side of the prompt policy, which lives in the harness
//! ([`AgentHarness::prompt_with_policy`]): the policy built from the settings, and the
//! announcements on stderr that print mode uses (DECISIONS §22.12).

use arbor_agent::agent::AgentError;
use arbor_agent::harness::{
    AgentHarness, PolicyControl, PolicyObserver, PromptPolicy, PromptRetry, RETRY_CANCELLED,
};
use arbor_ai::{AssistantMessage, ImageContent};

use crate::config::Settings;
use crate::error::CliError;

/// The policy the settings ask for (`retry.*`, `compaction.*`).
pub fn prompt_policy(settings: &Settings) -> PromptPolicy {
    let retry = settings.retry();
    let compaction = settings.compaction();
    PromptPolicy {
        retry: PromptRetry {
            enabled: retry.enabled,
            max_retries: retry.max_retries,
            base_delay_ms: retry.base_delay_ms,
            max_agent_delay_ms: retry.max_agent_delay_ms,
        },
        auto_compaction: compaction.enabled,
        reserve_tokens: compaction.reserve_tokens,
    }
}

/// The switches of a run that no client flips: as the settings say.
pub fn control(settings: &Settings) -> PolicyControl {
    PolicyControl::new(&prompt_policy(settings))
}

/// Sends one prompt under the settings' policy; returns the final answer.
pub async fn prompt(
    harness: &AgentHarness,
    settings: &Settings,
    text: &str,
    images: &[ImageContent],
    observer: &dyn PolicyObserver,
) -> Result<AssistantMessage, CliError> {
    let policy = prompt_policy(settings);
    let control = PolicyControl::new(&policy);
    Ok(harness
        .prompt_with_policy(text, images, &policy, observer, &control)
        .await?)
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
    let policy = prompt_policy(settings);
    Ok(harness
        .prompt_with_policy(text, images, &policy, observer, control)
        .await?)
}

/// A failed automatic compaction through the notice sink (the answer stands). "Nothing to
/// compact" is no failure: a quiet line (DECISIONS §23.174).
pub fn report_compaction_failure(error: &AgentError) {
    match compaction_failure(error) {
        (true, text) => crate::notices::info(text),
        (false, text) => crate::notices::error(text),
    }
}

/// The words for an automatic compaction that did not happen: (`true` = nothing to compact, a
/// quiet information; `false` = a failure).
pub fn compaction_failure(error: &AgentError) -> (bool, String) {
    if error.message() == arbor_agent::harness::NOTHING_TO_COMPACT {
        (
            true,
            "Nothing to compact (the context is too small or already compacted)".to_owned(),
        )
    } else {
        (false, format!("Compaction failed: {}", error.message()))
    }
}

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
        // Print mode prints the final error itself, once (DECISIONS §29.2).
        if !success {
            match final_error {
                Some(RETRY_CANCELLED) => eprintln!("arbor: {RETRY_CANCELLED}"),
                _ => eprintln!("arbor: giving up after {attempt} retries"),
            }
        }
    }
    fn compacting(&self, reason: &str) {
        eprintln!("arbor: compacting the session ({reason})");
    }
    fn compaction_failed(&self, error: &AgentError) {
        report_compaction_failure(error);
    }
}
