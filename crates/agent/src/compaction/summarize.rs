//! The summary requests (history, turn prefix, branch) and [`compact`], which turns a
//! [`CompactionPreparation`] into what the compaction entry records.
//!
//! Every request is a one-message context under the summarization system prompt, sent with
//! `cacheRetention: none` (a one-off request never reads its cache) and a fresh session id
//! (isolated routing), retried on transient failures like a turn (DECISIONS §21.4).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use arbor_ai::retry::{next_retry, RetryDecision, RetryPolicy};
use arbor_ai::stream::{ApiProvider, CacheRetention, SimpleStreamOptions, StreamOptions};
use arbor_ai::{
    AssistantMessage, AssistantMessageEvent, ContentBlock, Context, Message, Model, StopReason,
    ThinkingLevel, Usage, UserMessage,
};
use futures::StreamExt;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::compaction::error::CompactionError;
use crate::compaction::file_ops::{format_file_operations, FileLists};
use crate::compaction::prepare::CompactionPreparation;
use crate::compaction::prompts;
use crate::compaction::serialize::serialize_conversation;
use crate::session::CompactionDraft;

/// Which summary request an event belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryRequestKind {
    /// The compaction summary of the history before the cut.
    History,
    /// The compaction summary of the start of a split turn.
    TurnPrefix,
    /// The summary of a branch left by tree navigation.
    Branch,
}

impl SummaryRequestKind {
    /// The label in failure messages ("Summarization failed: ...").
    pub fn label(self) -> &'static str {
        match self {
            SummaryRequestKind::History => "Summarization",
            SummaryRequestKind::TurnPrefix => "Turn prefix summarization",
            SummaryRequestKind::Branch => "Branch summarization",
        }
    }
}

/// Progress of a summary request, for a UI (stderr progress in the CLI, harness events).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SummaryEvent {
    /// A request is being sent (`attempt` 0 = first try).
    RequestStart {
        /// Which request.
        kind: SummaryRequestKind,
        /// How many retries came before this send: 0 for the first try.
        attempt: u32,
    },
    /// Summary text arrived.
    TextDelta {
        /// Which request.
        kind: SummaryRequestKind,
        /// The new text, to append to what came before.
        delta: String,
    },
    /// A transient failure; the request is re-sent after `delay_ms`.
    RetryScheduled {
        /// Which request.
        kind: SummaryRequestKind,
        /// The retry about to be made: 1 for the first retry.
        attempt: u32,
        /// The most retries the policy allows.
        max_attempts: u32,
        /// The wait before re-sending, in milliseconds.
        delay_ms: u64,
        /// Why the failed attempt failed.
        error_message: String,
    },
    /// The retries of one request ended (only sent when a retry happened).
    RetryFinished {
        /// Which request.
        kind: SummaryRequestKind,
        /// Whether the last attempt ended without error or abort (the reply may still be
        /// refused afterwards, e.g. for calling a tool or hitting the length cap).
        success: bool,
        /// The last retry made, or scheduled when cancellation came during the wait.
        attempt: u32,
        /// The last attempt's error message, if it had one.
        error_message: Option<String>,
    },
}

/// Receives [`SummaryEvent`]s.
pub type SummaryEventSink = Arc<dyn Fn(&SummaryEvent) + Send + Sync>;

/// How to run the summary requests.
#[derive(Clone, Default)]
pub struct SummaryOptions {
    /// Extra focus ("Additional focus: ..."); blank counts as none.
    pub custom_instructions: Option<String>,
    /// Sent as the reasoning level when the model reasons and the level is not `off`.
    pub thinking_level: Option<ThinkingLevel>,
    /// Cancels the request; the result is then [`CompactionError::Aborted`].
    pub cancel: CancellationToken,
    /// Retries of transient failures (`None`: no retries).
    pub retry: Option<RetryPolicy>,
    /// Receives the summary request's events (retries), if set.
    pub on_event: Option<SummaryEventSink>,
    /// Base request options (API key, headers, timeout, client). Cache retention, session id,
    /// cancellation and reasoning are set per request.
    pub stream: StreamOptions,
}

impl fmt::Debug for SummaryOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SummaryOptions")
            .field("custom_instructions", &self.custom_instructions)
            .field("thinking_level", &self.thinking_level)
            .field("cancelled", &self.cancel.is_cancelled())
            .field("retry", &self.retry)
            .field("on_event", &self.on_event.is_some())
            .field("stream", &self.stream)
            .finish()
    }
}

impl SummaryOptions {
    pub(crate) fn instructions(&self) -> Option<&str> {
        self.custom_instructions
            .as_deref()
            .filter(|s| !s.trim().is_empty())
    }

    fn emit(&self, event: SummaryEvent) {
        if let Some(sink) = &self.on_event {
            sink(&event);
        }
    }
}

/// What a compaction produced: exactly the fields of the compaction entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionResult {
    /// The summary text.
    pub summary: String,
    /// The first entry kept after the summary.
    pub first_kept_entry_id: String,
    /// The context's size before, in tokens.
    pub tokens_before: u64,
    /// Files read and modified in the summarized part.
    pub details: FileLists,
    /// What the summary request cost.
    pub usage: Usage,
}

impl CompactionResult {
    /// The draft `Session::append_compaction` writes (pi's shape: `firstKeptEntryId`, no
    /// `retainedTail`, `fromHook: false`).
    pub fn to_draft(&self) -> CompactionDraft {
        CompactionDraft {
            summary: self.summary.clone(),
            first_kept_entry_id: Some(self.first_kept_entry_id.clone()),
            tokens_before: self.tokens_before,
            retained_tail: None,
            system_message: None,
            details: serde_json::to_value(&self.details).ok(),
            usage: Some(self.usage.clone()),
            from_hook: Some(false),
        }
    }
}

/// Generates the summary for a preparation: one history request, or for a split turn a
/// history request (skipped when there is no history: the previous summary, or "No prior
/// history.", stands in) plus a turn-prefix request; then the file lists are appended.
pub async fn compact(
    preparation: &CompactionPreparation,
    provider: &dyn ApiProvider,
    model: &Model,
    options: &SummaryOptions,
) -> Result<CompactionResult, CompactionError> {
    let p = preparation;
    let (summary, usage) = if p.is_split_turn && !p.turn_prefix_messages.is_empty() {
        let (history, history_usage) = if p.messages_to_summarize.is_empty() {
            (
                p.previous_summary
                    .clone()
                    .unwrap_or_else(|| prompts::NO_PRIOR_HISTORY.to_string()),
                None,
            )
        } else {
            let prompt = prompts::history_prompt(
                &serialize_conversation(&p.messages_to_summarize),
                p.previous_summary.as_deref(),
                options.instructions(),
            );
            let (text, usage) = summary_request(
                provider,
                model,
                options,
                SummaryRequestKind::History,
                prompt,
            )
            .await?;
            (text, Some(usage))
        };
        let prompt = prompts::turn_prefix_prompt(
            &serialize_conversation(&p.turn_prefix_messages),
            options.instructions(),
        );
        let (prefix, prefix_usage) = summary_request(
            provider,
            model,
            options,
            SummaryRequestKind::TurnPrefix,
            prompt,
        )
        .await?;
        let usage = match history_usage {
            Some(h) => combine_usage(&h, &prefix_usage),
            None => prefix_usage,
        };
        (
            format!("{history}{}{prefix}", prompts::SPLIT_TURN_JOINER),
            usage,
        )
    } else {
        let prompt = prompts::history_prompt(
            &serialize_conversation(&p.messages_to_summarize),
            p.previous_summary.as_deref(),
            options.instructions(),
        );
        summary_request(
            provider,
            model,
            options,
            SummaryRequestKind::History,
            prompt,
        )
        .await?
    };
    let details = p.file_ops.file_lists();
    Ok(CompactionResult {
        summary: format!("{summary}{}", format_file_operations(&details)),
        first_kept_entry_id: p.first_kept_entry_id.clone(),
        tokens_before: p.tokens_before,
        details,
        usage,
    })
}

/// The context of one summary request.
pub fn summary_context(prompt: String) -> Context {
    Context {
        system_prompt: Some(prompts::SUMMARIZATION_SYSTEM_PROMPT.to_string()),
        messages: vec![Message::User(UserMessage {
            content: arbor_ai::Content::Blocks(vec![ContentBlock::text(prompt)]),
            timestamp: crate::time::now_ms().into(),
            extra: Default::default(),
        })]
        .into(),
        tools: None,
    }
}

/// The per-request options: the caller's base, no prompt cache, a fresh session id, the
/// cancel token, reasoning only for reasoning models.
pub fn summary_stream_options(model: &Model, options: &SummaryOptions) -> SimpleStreamOptions {
    let mut base = options.stream.clone();
    base.cache_retention = Some(CacheRetention::None);
    base.session_id = Some(uuid::Uuid::now_v7().to_string());
    base.cancel = Some(options.cancel.clone());
    let reasoning = options
        .thinking_level
        .filter(|l| model.reasoning && *l != ThinkingLevel::Off);
    let mut simple = SimpleStreamOptions::default().with_base(base);
    simple.reasoning = reasoning;
    simple
}

/// Sends one summary request (with retries) and returns its text and usage, or the failure.
pub(crate) async fn summary_request(
    provider: &dyn ApiProvider,
    model: &Model,
    options: &SummaryOptions,
    kind: SummaryRequestKind,
    prompt: String,
) -> Result<(String, Usage), CompactionError> {
    let context = summary_context(prompt);
    let stream_options = summary_stream_options(model, options);
    let aborted = || CompactionError::Aborted(format!("{} aborted", kind.label()));
    let mut retries = 0u32;
    let response = loop {
        if options.cancel.is_cancelled() {
            return Err(aborted());
        }
        options.emit(SummaryEvent::RequestStart {
            kind,
            attempt: retries,
        });
        let message = run_stream(
            provider,
            model,
            &context,
            stream_options.clone(),
            options,
            kind,
        )
        .await;
        let policy = options
            .retry
            .clone()
            .unwrap_or(RetryPolicy::default().with_enabled(false));
        match next_retry(&policy, retries, &message) {
            RetryDecision::Finish => {
                if retries > 0 {
                    options.emit(SummaryEvent::RetryFinished {
                        kind,
                        success: !matches!(
                            message.stop_reason,
                            StopReason::Error | StopReason::Aborted
                        ),
                        attempt: retries,
                        error_message: message.error_message.clone(),
                    });
                }
                break message;
            }
            RetryDecision::RetryAfter { attempt, delay } => {
                options.emit(SummaryEvent::RetryScheduled {
                    kind,
                    attempt,
                    max_attempts: policy.max_retries,
                    delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    error_message: message
                        .error_message
                        .clone()
                        .unwrap_or_else(|| "Unknown error".to_string()),
                });
                if !sleep_or_cancel(delay, &options.cancel).await {
                    options.emit(SummaryEvent::RetryFinished {
                        kind,
                        success: false,
                        attempt,
                        error_message: message.error_message.clone(),
                    });
                    return Err(aborted());
                }
                retries = attempt;
            }
        }
    };
    check_response(response, kind, options)
}

async fn sleep_or_cancel(delay: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(delay) => true,
        _ = cancel.cancelled() => false,
    }
}

async fn run_stream(
    provider: &dyn ApiProvider,
    model: &Model,
    context: &Context,
    stream_options: SimpleStreamOptions,
    options: &SummaryOptions,
    kind: SummaryRequestKind,
) -> AssistantMessage {
    let mut events = provider.stream_simple(model, context, stream_options);
    while let Some(event) = events.next().await {
        match event {
            AssistantMessageEvent::TextDelta { delta, .. } => {
                options.emit(SummaryEvent::TextDelta { kind, delta })
            }
            AssistantMessageEvent::Done { message, .. } => return message,
            AssistantMessageEvent::Error { error, .. } => return error,
            _ => {}
        }
    }
    let mut message = AssistantMessage {
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        ..Default::default()
    };
    message.stop_reason = StopReason::Error;
    message.error_message = Some("Stream ended without a terminal event".to_string());
    message
}

/// Turns the final message into summary text, or the failure it is (DECISIONS §6.2b).
fn check_response(
    message: AssistantMessage,
    kind: SummaryRequestKind,
    options: &SummaryOptions,
) -> Result<(String, Usage), CompactionError> {
    let label = kind.label();
    if message.stop_reason == StopReason::Aborted || options.cancel.is_cancelled() {
        return Err(CompactionError::Aborted(
            message
                .error_message
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| format!("{label} aborted")),
        ));
    }
    if message.stop_reason == StopReason::Error {
        let why = message
            .error_message
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| "Unknown error".to_string());
        return Err(CompactionError::SummarizationFailed(format!(
            "{label} failed: {why}"
        )));
    }
    if message.stop_reason == StopReason::Length {
        return Err(CompactionError::SummarizationFailed(format!(
            "{label} failed: generation hit the token cap and the summary is incomplete"
        )));
    }
    if message
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolCall(_)))
    {
        return Err(CompactionError::SummarizationFailed(format!(
            "{label} attempted to call a tool"
        )));
    }
    let text = message
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n");
    Ok((text, message.usage.into_inner()))
}

/// Element-wise sum of two usages; optional splits present when either side has them.
pub fn combine_usage(a: &Usage, b: &Usage) -> Usage {
    use arbor_ai::json::Num;
    let add = |x: Num, y: Num| Num::new(x.get() + y.get());
    let opt = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0) + y.unwrap_or(0)),
    };
    Usage {
        input: a.input + b.input,
        output: a.output + b.output,
        cache_read: a.cache_read + b.cache_read,
        cache_write: a.cache_write + b.cache_write,
        cache_write_1h: opt(a.cache_write_1h, b.cache_write_1h),
        reasoning: opt(a.reasoning, b.reasoning),
        total_tokens: Some(a.total() + b.total()),
        cost: arbor_ai::Cost {
            input: add(a.cost.input, b.cost.input),
            output: add(a.cost.output, b.cost.output),
            cache_read: add(a.cost.cache_read, b.cost.cache_read),
            cache_write: add(a.cost.cache_write, b.cost.cache_write),
            total: add(a.cost.total, b.cost.total),
            total_from_provider: Some(
                a.cost.total_from_provider == Some(true)
                    && b.cost.total_from_provider == Some(true),
            ),
            extra: Default::default(),
        },
        extra: Default::default(),
    }
}
