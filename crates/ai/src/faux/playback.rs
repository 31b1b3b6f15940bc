//! Playing a planned reply back as a real stream would: deltas in seeded chunks, a stall
//! where scripted, and an `aborted` error with the partial message when cancelled.

use std::collections::VecDeque;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::emit::{lazy_event_stream, Emitter};
use crate::event::{AssistantMessageEvent, AssistantMessageEventStream, MessageAccumulator};
use crate::types::{AssistantMessage, ContentBlock, StopReason, Usage};

use crate::emit::ABORTED_MESSAGE;

/// Splits `text` into chunks of `size·4` characters, `size` drawn from `[min, max]`. Empty
/// text gives one empty chunk (a real stream still sends a delta).
pub(super) fn split_chunks(
    text: &str,
    min: usize,
    max: usize,
    rng: &mut SplitMix64,
) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    let mut out = Vec::with_capacity(chars.len() / (min * 4) + 1);
    let mut index = 0;
    while index < chars.len() {
        let span = (max - min + 1) as u64;
        let tokens = min + (rng.next() % span) as usize;
        let end = (index + tokens * 4).min(chars.len());
        out.push(chars[index..end].iter().collect());
        index = end;
    }
    out
}

/// A small, fast, seedable generator (SplitMix64): reproducible chunking without a dependency.
#[derive(Debug, Clone)]
pub(super) struct SplitMix64(pub(super) u64);

impl SplitMix64 {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[derive(Debug)]
pub(super) struct Planned {
    event: Option<AssistantMessageEvent>,
    wait: Option<Duration>,
    /// Cancellation is honoured before this event (block starts and deltas, like pi).
    cancellable: bool,
    /// Before this event, wait until cancelled.
    stall: bool,
}

impl Planned {
    pub(super) fn checked(event: AssistantMessageEvent, wait: Option<Duration>) -> Self {
        Self {
            event: Some(event),
            wait,
            cancellable: true,
            stall: false,
        }
    }
    pub(super) fn delta(event: AssistantMessageEvent, wait: Option<Duration>, stall: bool) -> Self {
        Self {
            event: Some(event),
            wait,
            cancellable: true,
            stall,
        }
    }
    pub(super) fn unchecked(event: AssistantMessageEvent) -> Self {
        Self {
            event: Some(event),
            wait: None,
            cancellable: false,
            stall: false,
        }
    }
    pub(super) fn stall() -> Self {
        Self {
            event: None,
            wait: None,
            cancellable: true,
            stall: true,
        }
    }
}

/// Plays a plan through the same [`Emitter`] the HTTP providers use. The live partial (the
/// `error` message of an abort) is rebuilt by the same [`MessageAccumulator`] consumers use.
/// One event per poll: the producer yields after each event, so a consumer that cancels
/// between two events sees the abort next, as with a real connection.
pub(super) fn play(
    plan: VecDeque<Planned>,
    template: AssistantMessage,
    cancel: Option<CancellationToken>,
) -> AssistantMessageEventStream {
    lazy_event_stream(template.clone(), move |mut emitter: Emitter| async move {
        // Faux replies carry no `durationMs`: final messages must not depend on timing.
        emitter.set_timed(false);
        let mut plan = plan;
        let mut acc = MessageAccumulator::new();
        let mut started = false;
        let cancelled = || {
            cancel
                .as_ref()
                .is_some_and(tokio_util::sync::CancellationToken::is_cancelled)
        };
        while let Some(step) = plan.pop_front() {
            if let Some(wait) = step.wait.filter(|w| !w.is_zero()) {
                if !wait_or_cancel(cancel.as_ref(), wait).await && step.cancellable {
                    return abort(&mut emitter, &acc, started, &template, &plan);
                }
            }
            if step.stall {
                match &cancel {
                    Some(token) => token.cancelled().await,
                    None => futures::future::pending::<()>().await,
                }
            }
            if step.cancellable && cancelled() {
                return abort(&mut emitter, &acc, started, &template, &plan);
            }
            let Some(event) = step.event else { continue };
            acc.apply(&event);
            match event {
                AssistantMessageEvent::Done { message, .. } => return emitter.done(message),
                AssistantMessageEvent::Error { reason, error } => {
                    return emitter.error(error, reason)
                }
                event => {
                    started |= matches!(event, AssistantMessageEvent::Start { .. });
                    emitter.push(event);
                }
            }
            YieldOnce(false).await;
        }
    })
}

/// Returns `Pending` once (waking itself), handing control back to the stream's consumer.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// Sleeps for `wait`; `false` if cancelled first.
async fn wait_or_cancel(cancel: Option<&CancellationToken>, wait: Duration) -> bool {
    match cancel {
        Some(token) => tokio::select! {
            _ = tokio::time::sleep(wait) => true,
            _ = token.cancelled() => false,
        },
        None => {
            tokio::time::sleep(wait).await;
            true
        }
    }
}

/// The terminal event for a cancelled stream: the partial message so far, marked aborted.
/// Tool calls still streaming show the id and name the API announced at their start and
/// their arguments once the streamed text is a complete object.
fn abort(
    emitter: &mut Emitter,
    acc: &MessageAccumulator,
    started: bool,
    template: &AssistantMessage,
    rest: &VecDeque<Planned>,
) {
    let mut error = if started {
        acc.partial().clone()
    } else {
        // Nothing was generated: no content, no usage (like a request that never went out).
        let mut message = template.clone();
        message.content.clear();
        message.usage = Usage::zero().into();
        message
    };
    for (index, block) in error.content.iter_mut().enumerate() {
        let ContentBlock::ToolCall(call) = block else {
            continue;
        };
        let announced = rest.iter().find_map(|p| match &p.event {
            Some(AssistantMessageEvent::ToolcallEnd {
                content_index,
                tool_call,
            }) if *content_index == index => Some(tool_call),
            _ => None,
        });
        let Some(announced) = announced else { continue };
        call.id.clone_from(&announced.id);
        call.name.clone_from(&announced.name);
        let text = acc.tool_arguments_text(index).unwrap_or("");
        if let Ok(arguments @ Value::Object(_)) = serde_json::from_str::<Value>(text) {
            call.arguments = arguments;
        }
    }
    error.error_message = Some(ABORTED_MESSAGE.to_string());
    emitter.error(error, StopReason::Aborted);
}

/// A stream that is one `error` event (after an optional delay; cancellation during the
/// delay turns it into an abort).
pub(super) fn lone_error(
    message: AssistantMessage,
    cancel: Option<CancellationToken>,
    delay: Option<Duration>,
) -> AssistantMessageEventStream {
    let mut plan = VecDeque::new();
    let reason = message.stop_reason;
    let mut partial = message.clone();
    partial.content.clear();
    plan.push_back(Planned {
        event: Some(AssistantMessageEvent::Error {
            reason,
            error: message,
        }),
        wait: delay,
        cancellable: true,
        stall: false,
    });
    play(plan, partial, cancel)
}
