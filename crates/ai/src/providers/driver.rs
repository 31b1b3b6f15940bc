//! Sends a prepared request (with optional retries), pumps the body through the SSE decoder
//! into a parser and turns every outcome into the stream's terminal event.

use std::sync::OnceLock;
use std::time::Duration;

use crate::emit::{Emitter, ABORTED_MESSAGE};
use crate::event::AssistantMessageEvent;
use crate::options::StreamOptions;
use crate::retry::{
    final_request_failure, is_retryable_request_failure, request_retry_delay, RetryAfterHeaders,
};
use crate::types::{AssistantMessage, Model, StopReason};

use super::anthropic::strict_limits;
use super::anthropic::threads::{self, Rejection, ThreadSession};
use super::api_client::ApiClient;
use super::http_error::{invalid_request_text, transport_error_text};
use super::keys::{PreparedRequest, Secrets};
use super::output::{Halt, Output, StreamParser};
use super::sse::{SseDecoder, SseEvent};

fn shared_client() -> reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .build()
                .unwrap_or_else(|_| reqwest::Client::new())
        })
        .clone()
}

enum SendOutcome {
    Response(reqwest::Response),
    /// The error text, and the HTTP status and body when the server answered.
    Failed(String, Option<(u16, String)>),
    Aborted,
}

/// Builds the request once more with `prefer` strict tools non-strict (DECISIONS §26.25).
pub(crate) type StrictFallback = Box<dyn FnOnce() -> Option<PreparedRequest> + Send>;

/// The error text of a silence longer than `timeout`, before the headers or between body chunks
/// (the SDKs' words; the retry classifier takes it as transient).
const TIMED_OUT: &str = "Request timed out.";

/// The most one server-sent event may hold before it ends (its lines and data): far above any
/// real event (a large image is a few MB of base64), far below what hurts the machine.
/// `StreamOptions::max_event_bytes` overrides it (DECISIONS §9.22, §30.1).
pub const MAX_EVENT_BYTES: usize = 64 << 20;

/// The most one whole response body may hold: far above any real reply (a long generation is a
/// few MB of events), a bound on what a server that never ends can make us read
/// (DECISIONS §30.1). `StreamOptions::max_response_bytes` overrides it.
pub const MAX_RESPONSE_BYTES: u64 = 256 << 20;

/// Sends the request, retrying per DECISIONS §9.11 when `max_retries > 0`.
async fn send_with_retries(
    http: &reqwest::Client,
    client: &dyn ApiClient,
    model: &Model,
    options: &StreamOptions,
    request: &PreparedRequest,
) -> SendOutcome {
    let body = match serde_json::to_vec(&request.body) {
        Ok(body) => body,
        Err(err) => {
            return SendOutcome::Failed(format!("Could not serialize request: {err}"), None)
        }
    };
    let cancel = options.cancel.clone().unwrap_or_default();
    let mut attempt: u32 = 0;
    loop {
        let mut builder = http.post(&request.url).body(body.clone());
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let send = builder.send();
        let result = tokio::select! {
            biased;
            _ = cancel.cancelled() => return SendOutcome::Aborted,
            result = with_timeout(options.timeout, send) => result,
        };
        let (message, retryable, retry_headers, answer) = match result {
            Ok(Ok(response)) if response.status().is_success() => {
                return SendOutcome::Response(response)
            }
            Ok(Ok(response)) => {
                let status = response.status().as_u16();
                let headers = response.headers().clone();
                let content_type = headers
                    .get(reqwest::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                let text = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return SendOutcome::Aborted,
                    text = response.text() => text.unwrap_or_default(),
                };
                let message = client.http_error(model, status, content_type.as_deref(), &text);
                let should_retry = headers.get("x-should-retry").and_then(|v| v.to_str().ok());
                let retryable = is_retryable_request_failure(Some(status), should_retry);
                (message, retryable, Some(headers), Some((status, text)))
            }
            // A request that cannot be built never succeeds (DECISIONS §29.4).
            Ok(Err(err)) if err.is_builder() => {
                let text = invalid_request_text(model, &request.url, &request.headers, &err);
                (text, false, None, None)
            }
            Ok(Err(err)) => (transport_error_text(&err), true, None, None),
            Err(()) => (TIMED_OUT.to_string(), true, None, None),
        };
        let header = |name: &str| {
            retry_headers
                .as_ref()
                .and_then(|h| h.get(name))
                .and_then(|v| v.to_str().ok())
        };
        let wait = RetryAfterHeaders {
            retry_after_ms: header("retry-after-ms"),
            retry_after: header("retry-after"),
        };
        let max_delay = options.max_retry_delay.map(|d| d.as_millis() as u64);
        if !retryable || attempt >= options.max_retries {
            let now = crate::time::now_ms();
            let message = final_request_failure(message, retryable, &wait, max_delay, now);
            return SendOutcome::Failed(message, answer);
        }
        let delay = request_retry_delay(
            attempt,
            &wait,
            max_delay,
            crate::time::now_ms(),
            rand::random::<f64>(),
            &message,
        );
        let delay = match delay {
            Ok(delay) => delay,
            Err(too_long) => return SendOutcome::Failed(too_long.message, answer),
        };
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return SendOutcome::Aborted,
            _ = tokio::time::sleep(delay) => {}
        }
        attempt += 1;
    }
}

async fn with_timeout<F: std::future::Future>(
    timeout: Option<Duration>,
    fut: F,
) -> Result<F::Output, ()> {
    match timeout {
        Some(t) => tokio::time::timeout(t, fut).await.map_err(|_| ()),
        None => Ok(fut.await),
    }
}

/// Sends `full`, as a thread request when `thread` is given (DECISIONS §26.23, §26.40): prepared
/// against the session's memory, and resent once in full when the rejection is about the
/// thread. Returns the outcome and whether the request that produced it carried a thread.
#[allow(clippy::too_many_arguments)]
async fn send_request(
    http: &reqwest::Client,
    client: &dyn ApiClient,
    model: &Model,
    options: &StreamOptions,
    full: &PreparedRequest,
    thread: Option<&ThreadSession>,
    out: &mut Output,
    secrets: &Secrets,
) -> (SendOutcome, bool) {
    let Some(thread) = thread else {
        return (
            send_with_retries(http, client, model, options, full).await,
            false,
        );
    };
    let (request, threaded) = threads::prepare(model, &thread.session, full);
    let outcome = send_with_retries(http, client, model, options, &request).await;
    if !threaded {
        return (outcome, false);
    }
    let SendOutcome::Failed(message, Some((status, body))) = &outcome else {
        return (outcome, true);
    };
    let Some((rejection, reason)) = threads::rejection(*status, body, message) else {
        return (outcome, true);
    };
    // Recorded before the resend, so a failed resend keeps it.
    note_diagnostic(
        out,
        "anthropic_thread_fallback",
        &secrets.scrub(message),
        &reason,
    );
    match rejection {
        Rejection::NewThread => {
            let created = threads::create(full);
            (
                send_with_retries(http, client, model, options, &created).await,
                true,
            )
        }
        Rejection::Unsupported => {
            let plain = threads::unthreaded(full);
            let outcome = send_with_retries(http, client, model, options, &plain).await;
            if matches!(outcome, SendOutcome::Response(_)) {
                threads::turn_off(&thread.session);
            }
            (outcome, false)
        }
    }
}

/// Runs one request to its terminal event.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    emitter: &mut Emitter,
    model: &Model,
    options: &StreamOptions,
    request: PreparedRequest,
    parser: &mut dyn StreamParser,
    client: &dyn ApiClient,
    strict_fallback: Option<StrictFallback>,
    thread: Option<ThreadSession>,
) {
    let mut out = Output::new(model);
    parser.init_output(&mut out);
    if options.is_cancelled() {
        return emitter.error(out.message, StopReason::Aborted);
    }
    // Error texts may echo the request (DECISIONS §25.6): scrub what we sent before any of it
    // reaches `errorMessage`.
    let secrets = Secrets::of(&request);
    let http = options.client.clone().unwrap_or_else(shared_client);
    let mut full = request;
    let (mut outcome, mut threaded) = send_request(
        &http,
        client,
        model,
        options,
        &full,
        thread.as_ref(),
        &mut out,
        &secrets,
    )
    .await;
    if let (SendOutcome::Failed(message, Some((status, body))), Some(fallback)) =
        (&outcome, strict_fallback)
    {
        if strict_limits::is_limit_rejection(*status, body) {
            strict_limits::mark(options.session_id.as_deref());
            note_diagnostic(
                &mut out,
                "anthropic_strict_tools_fallback",
                &secrets.scrub(message),
                "strict_tool_limits_exceeded",
            );
            if let Some(retry) = fallback() {
                full = retry;
                (outcome, threaded) = send_request(
                    &http,
                    client,
                    model,
                    options,
                    &full,
                    thread.as_ref(),
                    &mut out,
                    &secrets,
                )
                .await;
            }
        }
    }
    let mut response = match outcome {
        SendOutcome::Response(r) => r,
        SendOutcome::Failed(message, _) => {
            out.message.error_message = Some(secrets.scrub(&message));
            return emitter.error(out.message, StopReason::Error);
        }
        SendOutcome::Aborted => {
            out.message.error_message = Some(ABORTED_MESSAGE.to_string());
            return emitter.error(out.message, StopReason::Aborted);
        }
    };
    emitter.push(AssistantMessageEvent::Start {
        partial: out.message.clone(),
    });
    let cancel = options.cancel.clone().unwrap_or_default();
    let mut decoder = new_decoder(parser);
    let max_event = options.max_event_bytes.unwrap_or(MAX_EVENT_BYTES);
    let max_response = options.max_response_bytes.unwrap_or(MAX_RESPONSE_BYTES);
    let mut received: u64 = 0;
    let outcome: Result<(), Halt> = loop {
        // `timeout` bounds every silence, the wait for each body chunk as well as the one for
        // the headers: a stream that stalls ends instead of hanging the turn (DECISIONS §9.10).
        let chunk = tokio::select! {
            biased;
            _ = cancel.cancelled() => break Err(Halt::Fail(String::new())),
            chunk = with_timeout(options.timeout, response.chunk()) => chunk,
        };
        let Ok(chunk) = chunk else {
            break Err(Halt::Fail(TIMED_OUT.to_string()));
        };
        match chunk {
            Ok(Some(bytes)) => {
                received = received.saturating_add(bytes.len() as u64);
                // Checked before the chunk is decoded, so nothing past the limit is delivered.
                if received > max_response {
                    break Err(Halt::Fail(response_limit_text(max_response)));
                }
                let fed = decoder.feed(&bytes, &mut |event| deliver(&mut *parser, event, &mut out));
                drain(emitter, &mut out);
                if let Err(halt) = fed {
                    break Err(halt);
                }
                // Bounds on what a server can make us hold (DECISIONS §9.22).
                if decoder.buffered_len() > max_event {
                    break Err(Halt::Fail(format!(
                        "The provider's stream sent an event over {} without ending it",
                        byte_size_text(max_event as u64)
                    )));
                }
            }
            // A connection dropped mid-body ends the stream like an early end of the body: the
            // parser then reports the incomplete stream in pi's words ("… ended before
            // message_stop", "… without finish_reason"), which the retry classifier accepts,
            // and closes open blocks as it does at a clean end (DECISIONS §26.3).
            Ok(None) | Err(_) => {
                if decoder.has_unterminated_event() {
                    if let Some(message) = parser.unterminated_tail_error() {
                        break Err(Halt::Fail(message));
                    }
                }
                let fed = decoder.finish(&mut |event| deliver(&mut *parser, event, &mut out));
                drain(emitter, &mut out);
                break fed;
            }
        }
    };
    // Close the connection before reporting (matters for aborts and early `[DONE]`).
    drop(response);
    if cancel.is_cancelled() {
        parser.on_failure(&mut out);
        drain(emitter, &mut out);
        out.message.error_message = Some(ABORTED_MESSAGE.to_string());
        return emitter.error(out.message, StopReason::Aborted);
    }
    let finished = match outcome {
        Ok(()) | Err(Halt::Stop) => parser.finish(&mut out).map_err(|failure| failure.0),
        Err(Halt::Fail(message)) => Err(message),
    };
    drain(emitter, &mut out);
    // In-stream error events set `errorMessage` inside the parsers.
    if let Some(m) = out.message.error_message.take() {
        out.message.error_message = Some(secrets.scrub(&m));
    }
    match finished {
        Ok(()) => {
            // A clean reply to a thread request is where the session's next request may
            // continue (DECISIONS §26.23, §26.40).
            if let (true, Some(thread)) = (threaded, &thread) {
                if !matches!(
                    out.message.stop_reason,
                    StopReason::Error | StopReason::Aborted
                ) {
                    threads::record(model, thread, &full, &out.message);
                }
            }
            emitter.done(out.message)
        }
        Err(message) => {
            parser.on_failure(&mut out);
            drain(emitter, &mut out);
            out.message.error_message = Some(secrets.scrub(&message));
            emitter.error(out.message, StopReason::Error);
        }
    }
}

/// The error of a response over `limit` bytes. Worded so the retry classifier does not take it
/// as transient: the same server would most likely send the same flood again (DECISIONS §30.1).
fn response_limit_text(limit: u64) -> String {
    format!(
        "The provider's response went over the limit of {} (maxResponseBytes); the reply was cut there",
        byte_size_text(limit)
    )
}

/// `64 MiB` for whole mebibytes, else the byte count.
fn byte_size_text(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// Records a resend on the reply (`diagnostics`, as pi does): the strict-tools fallback
/// (DECISIONS §26.25) or the thread fallback (§26.40).
fn note_diagnostic(out: &mut Output, kind: &str, message: &str, reason: &str) {
    let entry = serde_json::json!({
        "type": kind,
        "timestamp": crate::time::now_ms(),
        "error": {"message": message},
        "details": {"reason": reason},
    });
    match out.message.extra.get_mut("diagnostics") {
        Some(serde_json::Value::Array(list)) => list.push(entry),
        _ => {
            out.message
                .extra
                .insert("diagnostics".into(), serde_json::Value::Array(vec![entry]));
        }
    }
}

fn new_decoder(parser: &dyn StreamParser) -> SseDecoder {
    if parser.wants_raw_lines() {
        SseDecoder::new()
    } else {
        SseDecoder::without_raw()
    }
}

fn drain(emitter: &mut Emitter, out: &mut Output) {
    for event in out.events.drain(..) {
        emitter.push(event);
    }
}

/// Feeds a complete recorded body through the SSE decoder and `parser` — the client's code
/// path without the network. Returns the final message (`stopReason` error on failure) and
/// the number of events produced.
pub(crate) fn parse_recorded_with(
    parser: &mut dyn StreamParser,
    model: &Model,
    body: &[u8],
    chunk_size: usize,
) -> (AssistantMessage, usize) {
    let mut out = Output::new(model);
    let mut decoder = new_decoder(parser);
    let mut events = 0usize;
    let mut result: Result<(), Halt> = Ok(());
    for chunk in body.chunks(chunk_size.max(1)) {
        result = decoder.feed(chunk, &mut |event| deliver(&mut *parser, event, &mut out));
        events += out.events.len();
        out.events.clear();
        if result.is_err() {
            break;
        }
    }
    if result.is_ok() {
        result = decoder.finish(&mut |event| deliver(&mut *parser, event, &mut out));
    }
    let finished = match result {
        Ok(()) | Err(Halt::Stop) => parser.finish(&mut out).map_err(|failure| failure.0),
        Err(Halt::Fail(m)) => Err(m),
    };
    events += out.events.len();
    if let Err(message) = finished {
        out.message.stop_reason = StopReason::Error;
        out.message.error_message = Some(message);
    }
    (out.message, events)
}

/// Hands one event to the parser. A payload that fails only because it holds `\uXXXX`
/// escapes of unpaired UTF-16 surrogates (JavaScript's `JSON.parse` accepts them, serde_json
/// does not) is handed over again with each replaced by U+FFFD (DECISIONS §9.19). Every parser
/// parses an event's JSON before it changes anything, so the retry starts from the same state;
/// the scan runs only on the failure path.
fn deliver(
    parser: &mut dyn StreamParser,
    event: SseEvent<'_>,
    out: &mut Output,
) -> Result<(), Halt> {
    match parser.on_event(event, out) {
        Err(Halt::Fail(message)) => match crate::json::replace_lone_surrogates(event.data) {
            Some(fixed) => parser.on_event(
                SseEvent {
                    data: &fixed,
                    ..event
                },
                out,
            ),
            None => Err(Halt::Fail(message)),
        },
        other => other,
    }
}
