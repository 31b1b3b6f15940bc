//! Anthropic message threads (DECISIONS §26.23, §26.40): the server keeps a session's conversation, so
//! a later request of the session sends only what is new, `thread: {type: "continue",
//! previous_message_id}`, without `system` and `tools`.
//!
//! Per session the provider layer remembers where the next request can continue: how many
//! messages of the last full request plus its reply the server holds, a hash of them with the
//! settings a `continue` cannot change, and the reply's id. A request continues only when it
//! extends exactly that prefix; each reply is continued at most once. A rejection about the
//! thread is resent once in full (a new thread, or no thread at all when the endpoint cannot
//! use them, which also turns threads off for the session). At most [`MAX_SESSIONS`] sessions
//! are remembered; the least recently updated is forgotten first (its next request opens a new
//! thread, which costs nothing but the cache of the old one).

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hasher;
use std::sync::Mutex;

use serde_json::{json, Value};

use super::convert::thread_reply;
use crate::providers::keys::PreparedRequest;
use crate::types::{AssistantMessage, Model};

/// Sessions remembered at most (as pi).
const MAX_SESSIONS: usize = 10_000;

/// `error.details.error_code`s of rejected `continue`s that a new thread fixes: the thread
/// expired, another request continued it, or a fixed setting changed.
const NEW_THREAD_ERRORS: [&str; 4] = [
    "thread_not_found",
    "thread_already_continued",
    "thread_continue_in_flight",
    "thread_fingerprint_mismatch",
];

/// The `error_code` of a request the endpoint cannot thread.
const UNSUPPORTED: &str = "thread_unsupported_request";

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// The endpoint rejected threads: requests go out without `thread`.
    Off,
    /// The next request may continue after `reply_id` when its messages start with the
    /// `count` messages hashed as `hash` (settings included).
    Continue {
        count: usize,
        hash: u64,
        reply_id: String,
    },
}

/// Sessions in update order (for the bound).
#[derive(Default)]
struct Table {
    entries: HashMap<String, (u64, State)>,
    order: BTreeMap<u64, String>,
    next: u64,
}

impl Table {
    fn set(&mut self, session: &str, state: State) {
        if let Some((seq, _)) = self.entries.remove(session) {
            self.order.remove(&seq);
        }
        let seq = self.next;
        self.next += 1;
        self.order.insert(seq, session.to_string());
        self.entries.insert(session.to_string(), (seq, state));
        if self.entries.len() > MAX_SESSIONS {
            if let Some((_, oldest)) = self.order.pop_first() {
                self.entries.remove(&oldest);
            }
        }
    }

    fn remove(&mut self, session: &str) {
        if let Some((seq, _)) = self.entries.remove(session) {
            self.order.remove(&seq);
        }
    }

    fn get(&self, session: &str) -> Option<&State> {
        self.entries.get(session).map(|(_, state)| state)
    }
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

fn with_table<R>(f: impl FnOnce(&mut Table) -> R) -> Option<R> {
    let mut guard = TABLE.lock().ok()?;
    Some(f(guard.get_or_insert_with(Table::default)))
}

/// The session whose requests may use threads, and how the reply is converted for the next
/// request's prefix.
#[derive(Debug, Clone)]
pub(crate) struct ThreadSession {
    pub session: String,
    pub oauth: bool,
}

/// Why a thread request was rejected in a way a full resend fixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// The thread cannot be continued: resend as a new thread.
    NewThread,
    /// The endpoint cannot use threads: resend without, and stop threading the session.
    Unsupported,
}

/// `full` (the complete request, built with `thread: {type: "create"}`) without `thread`.
pub(crate) fn unthreaded(full: &PreparedRequest) -> PreparedRequest {
    let mut request = full.clone();
    if let Some(body) = request.body.as_object_mut() {
        body.shift_remove("thread");
    }
    request
}

/// `full` opening a new thread.
pub(crate) fn create(full: &PreparedRequest) -> PreparedRequest {
    let mut request = full.clone();
    if let Some(body) = request.body.as_object_mut() {
        body.insert("thread".into(), json!({"type": "create"}));
    }
    request
}

/// What to send for `full` in `session`, and whether it carries a thread: a `continue` when
/// the request extends the remembered prefix (the memory is then spent), nothing when the
/// session's threads are off, else a new thread.
pub(crate) fn prepare(
    model: &Model,
    session: &str,
    full: &PreparedRequest,
) -> (PreparedRequest, bool) {
    let messages = full
        .body
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let state = with_table(|t| t.get(session).cloned()).flatten();
    match state {
        Some(State::Off) => (unthreaded(full), false),
        Some(State::Continue {
            count,
            hash,
            reply_id,
        }) if messages.len() > count && prefix_hash(model, full, &messages[..count]) == hash => {
            with_table(|t| t.remove(session));
            let mut request = full.clone();
            if let Some(body) = request.body.as_object_mut() {
                body.shift_remove("system");
                body.shift_remove("tools");
                body.insert("messages".into(), Value::Array(messages[count..].to_vec()));
                body.insert(
                    "thread".into(),
                    json!({"type": "continue", "previous_message_id": reply_id}),
                );
            }
            (request, true)
        }
        _ => (create(full), true),
    }
}

/// Whether an HTTP error answering a thread request is about the thread, with the reason
/// recorded in the diagnostic (the `error_code`, else the status). Without a code, a 400
/// whose message names `thread` means the endpoint does not know the field.
pub(crate) fn rejection(status: u16, body: &str, message: &str) -> Option<(Rejection, String)> {
    let code = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        v.pointer("/error/details/error_code")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let kind = match code.as_deref() {
        Some(code) if NEW_THREAD_ERRORS.contains(&code) => Rejection::NewThread,
        Some(UNSUPPORTED) => Rejection::Unsupported,
        None if status == 400 && message.contains("thread") => Rejection::Unsupported,
        _ => return None,
    };
    Some((kind, code.unwrap_or_else(|| status.to_string())))
}

/// Turns threads off for `session` (its endpoint rejected them).
pub(crate) fn turn_off(session: &str) {
    with_table(|t| t.set(session, State::Off));
}

/// Remembers where `session` can continue after `reply`, the clean answer to the thread
/// request built from `full`. Replies of a fallback model (`responseModel`) are not stored by
/// the server, and replies without an id cannot be named, so neither is remembered.
pub(crate) fn record(
    model: &Model,
    thread: &ThreadSession,
    full: &PreparedRequest,
    reply: &AssistantMessage,
) {
    let Some(reply_id) = reply.response_id.clone() else {
        return;
    };
    if reply.response_model.is_some() {
        return;
    }
    let Ok(converted) = thread_reply(model, reply, thread.oauth) else {
        return;
    };
    let mut prefix: Vec<Value> = full
        .body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    prefix.extend(converted);
    let hash = prefix_hash(model, full, &prefix);
    with_table(|t| {
        t.set(
            &thread.session,
            State::Continue {
                count: prefix.len(),
                hash,
                reply_id,
            },
        )
    });
}

/// Hash of what a `continue` builds on: the endpoint, the fields a `continue` keeps from the
/// thread (`system`, `tools`, cache markers included) or may not change (`thinking`,
/// `output_config`, `tool_choice`, the betas, `fallbacks`), and the messages the server holds,
/// normalized so messages that mean the same to the API hash the same (no cache markers;
/// string content as one text block, the form the newest message takes to carry a marker).
fn prefix_hash(model: &Model, full: &PreparedRequest, messages: &[Value]) -> u64 {
    let field = |name: &str| full.body.get(name).cloned().unwrap_or(Value::Null);
    let betas = full
        .header("anthropic-beta")
        .map_or(Value::Null, |b| json!(b));
    let settings = json!([
        model.provider,
        model.base_url,
        field("model"),
        field("system"),
        field("tools"),
        field("thinking"),
        field("output_config"),
        field("tool_choice"),
        betas,
        field("fallbacks"),
    ]);
    let conversation = Value::Array(messages.iter().map(normalized).collect());
    let mut hasher = DefaultHasher::new();
    hasher.write(settings.to_string().as_bytes());
    hasher.write_u8(0);
    hasher.write(conversation.to_string().as_bytes());
    hasher.finish()
}

fn normalized(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| key.as_str() != "cache_control")
                .map(|(key, v)| match v {
                    Value::String(text) if key == "content" => {
                        (key.clone(), json!([{"type": "text", "text": text}]))
                    }
                    other => (key.clone(), normalized(other)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(messages: Value) -> PreparedRequest {
        PreparedRequest {
            url: "https://api.anthropic.com/v1/messages?beta=true".into(),
            headers: vec![("anthropic-beta".into(), "message-threads-2026-08-12".into())],
            body: json!({"model": "m", "messages": messages, "system": [{"type": "text", "text": "s"}],
                "tools": [{"name": "t"}], "stream": true, "thread": {"type": "create"}}),
        }
    }

    fn test_model() -> Model {
        serde_json::from_value(json!({"id": "m", "name": "m", "api": "anthropic-messages",
            "provider": "anthropic", "baseUrl": "https://api.anthropic.com", "reasoning": false,
            "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 1000, "maxTokens": 100}))
        .unwrap_or_else(|e| panic!("model: {e}"))
    }

    #[test]
    fn the_prefix_ignores_cache_markers_and_string_content() {
        let model = test_model();
        let full = request(json!([]));
        let marked = [
            json!({"role": "user", "content": [{"type": "text", "text": "hi",
            "cache_control": {"type": "ephemeral"}}]}),
        ];
        let plain = [json!({"role": "user", "content": "hi"})];
        assert_eq!(
            prefix_hash(&model, &full, &marked),
            prefix_hash(&model, &full, &plain)
        );
        let other = [json!({"role": "user", "content": "ho"})];
        assert_ne!(
            prefix_hash(&model, &full, &plain),
            prefix_hash(&model, &full, &other)
        );
        // A changed system prompt is a different thread.
        let mut changed = full.clone();
        changed.body["system"] = json!([{"type": "text", "text": "t"}]);
        assert_ne!(
            prefix_hash(&model, &full, &plain),
            prefix_hash(&model, &changed, &plain)
        );
    }

    #[test]
    fn rejections_are_classified_by_error_code() {
        let body = |code: &str| {
            format!(
                r#"{{"type":"error","error":{{"type":"invalid_request_error","message":"x","details":{{"error_code":"{code}"}}}}}}"#
            )
        };
        assert_eq!(
            rejection(404, &body("thread_not_found"), "404 x"),
            Some((Rejection::NewThread, "thread_not_found".into()))
        );
        assert_eq!(
            rejection(400, &body("thread_unsupported_request"), "400 x"),
            Some((Rejection::Unsupported, "thread_unsupported_request".into()))
        );
        assert_eq!(rejection(400, &body("other_code"), "400 thread"), None);
        assert_eq!(
            rejection(400, "{}", "400 thread: Extra inputs are not permitted"),
            Some((Rejection::Unsupported, "400".into()))
        );
        assert_eq!(rejection(400, "{}", "400 prompt is too long"), None);
        assert_eq!(rejection(500, "{}", "500 thread"), None);
    }

    #[test]
    fn the_table_forgets_the_least_recently_updated_session() {
        let mut table = Table::default();
        for i in 0..=MAX_SESSIONS {
            table.set(&format!("s{i}"), State::Off);
        }
        assert_eq!(table.entries.len(), MAX_SESSIONS);
        assert!(table.get("s0").is_none());
        // Updating s1 makes s2 the oldest.
        table.set("s1", State::Off);
        table.set("extra", State::Off);
        assert!(table.get("s1").is_some());
        assert!(table.get("s2").is_none());
    }
}
