//! Building event streams: the producer-side [`Emitter`], the lazily driven stream every
//! provider (HTTP or faux) returns, and the initial / setup-failure messages.
//!
//! A leaf of the crate: providers and the dispatch in [`crate::stream`] both build on it, and it
//! needs no HTTP client.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Instant;

use futures::channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};
use futures::{FutureExt, Stream, StreamExt};

use crate::event::{AssistantMessageEvent, AssistantMessageEventStream};
use crate::json::Num;
use crate::types::{AssistantMessage, Model, StopReason, Usage};

/// The initial assistant message of a request: no content, zero usage, `pending`.
pub fn empty_message(model: &Model) -> AssistantMessage {
    AssistantMessage {
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        usage: Usage::zero().into(),
        stop_reason: StopReason::Pending,
        timestamp: crate::time::now_ms().into(),
        ..AssistantMessage::default()
    }
}

/// A stream holding a single `error` event (request-setup failures).
pub fn error_stream(model: &Model, message: String) -> AssistantMessageEventStream {
    let model = model.clone();
    lazy_event_stream(empty_message(&model), move |mut emitter| async move {
        let mut msg = empty_message(&model);
        msg.error_message = Some(message);
        emitter.error(msg, StopReason::Error);
    })
}

/// The producer side of an event stream. Guarantees a single terminal event and stamps
/// `durationMs` on the final message.
pub struct Emitter {
    tx: UnboundedSender<AssistantMessageEvent>,
    created: Instant,
    terminated: bool,
    /// Whether terminal messages get `durationMs` (off for the faux provider: deterministic).
    timed: bool,
    /// Used for the safety-net error if the producer ends without a terminal event.
    template: AssistantMessage,
}

impl Emitter {
    /// Leaves `durationMs` off the final message (replies that must not depend on timing).
    #[cfg(feature = "faux")]
    pub fn set_timed(&mut self, timed: bool) {
        self.timed = timed;
    }

    pub fn push(&mut self, event: AssistantMessageEvent) {
        if self.terminated {
            return;
        }
        // A closed receiver means the consumer is gone; nothing to do.
        let _ = self.tx.unbounded_send(event);
    }

    // Only the built-in clients and the faux provider finish a stream with `done`.
    #[cfg(any(feature = "faux", feature = "providers"))]
    pub fn done(&mut self, mut message: AssistantMessage) {
        if self.terminated {
            return;
        }
        self.stamp(&mut message);
        let reason = message.stop_reason;
        self.push(AssistantMessageEvent::Done { reason, message });
        self.terminated = true;
    }

    /// Emits the terminal error; `reason` must be `Error` or `Aborted`.
    pub fn error(&mut self, mut message: AssistantMessage, reason: StopReason) {
        if self.terminated {
            return;
        }
        message.stop_reason = reason;
        if message.error_message.is_none() {
            message.error_message = Some(match reason {
                StopReason::Aborted => ABORTED_MESSAGE.to_string(),
                _ => "Unknown error".to_string(),
            });
        }
        self.stamp(&mut message);
        self.push(AssistantMessageEvent::Error {
            reason,
            error: message,
        });
        self.terminated = true;
    }

    fn stamp(&self, message: &mut AssistantMessage) {
        if self.timed && message.duration_ms.is_none() {
            let ms = self.created.elapsed().as_secs_f64() * 1000.0;
            message.duration_ms = Some(Num::new(ms.round()));
        }
    }
}

impl Drop for Emitter {
    fn drop(&mut self) {
        if !self.terminated && !self.tx.is_closed() {
            let mut message = self.template.clone();
            message.error_message = Some(if std::thread::panicking() {
                PANIC_MESSAGE.into()
            } else {
                "Provider stream ended without a terminal event".into()
            });
            self.error(message, StopReason::Error);
        }
    }
}

const PANIC_MESSAGE: &str = "Internal error: provider stream panicked";

/// The text of every abort error.
pub const ABORTED_MESSAGE: &str = "Request was aborted";

/// Builds an event stream driven by polling it (no task is spawned, so dropping the stream
/// cancels the producer and its HTTP connection). A panic in the producer becomes
/// an `error` event instead of unwinding into the consumer.
pub fn lazy_event_stream<F, Fut>(
    template: AssistantMessage,
    producer: F,
) -> AssistantMessageEventStream
where
    F: FnOnce(Emitter) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = unbounded();
    let panic_tx = tx.clone();
    let panic_template = template.clone();
    let emitter = Emitter {
        tx,
        created: Instant::now(),
        terminated: false,
        timed: true,
        template,
    };
    let fut = std::panic::AssertUnwindSafe(producer(emitter))
        .catch_unwind()
        .map(move |result| {
            if result.is_err() {
                let mut message = panic_template;
                message.stop_reason = StopReason::Error;
                message.error_message = Some(PANIC_MESSAGE.into());
                // The emitter was dropped during unwinding and already sent its safety-net
                // error when the receiver was open; this send is then ignored by consumers
                // because the stream ends at the first terminal event.
                let _ = panic_tx.unbounded_send(AssistantMessageEvent::Error {
                    reason: StopReason::Error,
                    error: message,
                });
            }
        });
    Box::pin(DrivenStream {
        producer: Some(Box::pin(fut)),
        rx,
        finished: false,
    })
}

struct DrivenStream {
    producer: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    rx: UnboundedReceiver<AssistantMessageEvent>,
    /// Set after the terminal event was yielded: later events are dropped.
    finished: bool,
}

impl Stream for DrivenStream {
    type Item = AssistantMessageEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        if self.finished {
            return Poll::Ready(None);
        }
        if let Some(producer) = self.producer.as_mut() {
            if producer.as_mut().poll(cx).is_ready() {
                self.producer = None;
            }
        }
        match self.rx.poll_next_unpin(cx) {
            Poll::Ready(Some(event)) => {
                if matches!(
                    event,
                    AssistantMessageEvent::Done { .. } | AssistantMessageEvent::Error { .. }
                ) {
                    self.finished = true;
                    // Dropping the producer closes the HTTP connection right away.
                    self.producer = None;
                }
                Poll::Ready(Some(event))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Model {
        Model {
            id: "m".into(),
            api: "test".into(),
            provider: "p".into(),
            ..Model::default()
        }
    }

    async fn drain(mut s: AssistantMessageEventStream) -> Vec<AssistantMessageEvent> {
        let mut out = Vec::new();
        while let Some(e) = s.next().await {
            out.push(e);
        }
        out
    }

    #[tokio::test]
    async fn a_panicking_provider_ends_with_one_error_event() {
        let m = model();
        let s = lazy_event_stream(empty_message(&m), |mut emitter: Emitter| async move {
            emitter.push(AssistantMessageEvent::Start {
                partial: AssistantMessage::default(),
            });
            panic!("boom");
        });
        let events = drain(s).await;
        assert_eq!(events.len(), 2);
        match &events[1] {
            AssistantMessageEvent::Error { reason, error } => {
                assert_eq!(*reason, StopReason::Error);
                assert_eq!(
                    error.error_message.as_deref(),
                    Some("Internal error: provider stream panicked")
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_producer_without_terminal_event_gets_one_and_later_events_are_dropped() {
        let m = model();
        let s = lazy_event_stream(empty_message(&m), |mut emitter: Emitter| async move {
            emitter.push(AssistantMessageEvent::TextStart { content_index: 0 });
        });
        let events = drain(s).await;
        assert_eq!(events.len(), 2);
        assert!(events[1].is_terminal());

        let s = lazy_event_stream(empty_message(&m), |mut emitter: Emitter| async move {
            let mut done = empty_message(&model());
            done.stop_reason = StopReason::Stop;
            emitter.done(done.clone());
            emitter.done(done);
            emitter.push(AssistantMessageEvent::TextStart { content_index: 0 });
        });
        let events = drain(s).await;
        assert_eq!(events.len(), 1);
        assert!(events[0]
            .final_message()
            .is_some_and(|m| m.duration_ms.is_some()));
    }
}
