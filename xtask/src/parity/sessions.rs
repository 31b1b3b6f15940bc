//! `sessions N [SEED]`: multi-request sessions on Anthropic models with message threads
//! (DECISIONS §26.40). Each case is a session of 2–3 turns: every turn appends the previous
//! reply (each side its own) and a new user message or tool result, and the scripted server
//! answers with message ids, sometimes from another model (a fallback, not continued) or
//! after a thread rejection (`thread_not_found`, `thread_unsupported_request`, an unknown
//! `thread` field, or an error that is not about the thread). pi and Arbor must send the same
//! sequence of request bodies (the second and later ones are `continue`s or resends) and end
//! each turn alike (stop reason, diagnostics' kinds and reasons).

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

/// One reply of the scripted server.
#[derive(Clone)]
pub struct SessionReply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

impl SessionReply {
    pub fn to_json(&self) -> Value {
        json!({"status": self.status, "headers": {"content-type": self.content_type}, "body": self.body})
    }
}

/// One turn: what is appended to the context before it (after the previous reply), an
/// optional new system prompt, and the replies its requests get, in order.
pub struct Turn {
    pub append: Vec<Value>,
    pub system_prompt: Option<String>,
    pub replies: Vec<SessionReply>,
}

pub struct SessionCase {
    pub id: String,
    pub model: Value,
    pub context: Value,
    pub options: Value,
    pub turns: Vec<Turn>,
}

impl SessionCase {
    /// The case as the node driver reads it (replies queued across turns).
    pub fn to_driver_json(&self) -> Value {
        let replies: Vec<Value> = self
            .turns
            .iter()
            .flat_map(|t| t.replies.iter().map(SessionReply::to_json))
            .collect();
        let turns: Vec<Value> = self
            .turns
            .iter()
            .map(|t| json!({"append": t.append, "systemPrompt": t.system_prompt}))
            .collect();
        json!({"id": self.id, "model": self.model, "context": self.context,
            "options": self.options, "turns": turns, "replies": replies})
    }
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| {
            format!(
                "event: {}\ndata: {e}\n\n",
                e["type"].as_str().unwrap_or("message")
            )
        })
        .collect()
}

/// A clean streamed reply: text, or a call of `read` with id `call_id`.
fn answer(id: &str, model_id: &str, call_id: Option<&str>) -> SessionReply {
    let start = json!({"type": "message_start", "message": {"id": id, "type": "message",
        "role": "assistant", "model": model_id, "content": [], "stop_reason": null,
        "usage": {"input_tokens": 20, "output_tokens": 1}}});
    let (block, delta, stop_reason) = match call_id {
        Some(call) => (
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": call, "name": "read", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"path\":\"a.txt\"}"}}),
            "tool_use",
        ),
        None => (
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!("reply {id}")}}),
            "end_turn",
        ),
    };
    SessionReply {
        status: 200,
        content_type: "text/event-stream",
        body: sse(&[
            start,
            block,
            delta,
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 5}}),
            json!({"type": "message_stop"}),
        ]),
    }
}

fn error_reply(status: u16, code: Option<&str>, message: &str) -> SessionReply {
    let mut error = json!({"type": "invalid_request_error", "message": message});
    if let Some(code) = code {
        error["details"] = json!({"error_code": code});
    }
    SessionReply {
        status,
        content_type: "application/json",
        body: json!({"type": "error", "error": error}).to_string(),
    }
}

fn user(text: &str, at: i64) -> Value {
    json!({"role": "user", "content": text, "timestamp": at})
}

fn tool_result(call_id: &str, at: i64) -> Value {
    json!({"role": "toolResult", "toolCallId": call_id, "toolName": "read",
        "content": [{"type": "text", "text": "file contents"}], "isError": false, "timestamp": at})
}

pub fn session_case(seed: u64, index: usize, catalogue: &[Value]) -> SessionCase {
    let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(104_729).wrapping_add(index as u64 * 31));
    let anthropic: Vec<&Value> = catalogue
        .iter()
        .filter(|m| m["api"] == "anthropic-messages")
        .collect();
    let mut model = anthropic
        .choose(&mut rng)
        .map_or(Value::Null, |m| (*m).clone());
    let model_id = model["id"].as_str().unwrap_or_default().to_string();
    let mut compat = model["compat"].as_object().cloned().unwrap_or_default();
    // Most sessions thread; a few use the model's own default (off away from Anthropic).
    if rng.gen_bool(0.9) {
        compat.insert("supportsMessageThreads".into(), json!(true));
    }
    if rng.gen_bool(0.25) {
        compat.insert("supportsMidConvoEffort".into(), json!(true));
    }
    model["compat"] = Value::Object(compat);
    let id = format!("session-{seed}-{index}");
    let mut options = json!({"apiKey": "sk-parity-test", "sessionId": id});
    match rng.gen_range(0..10) {
        0 => options["cacheRetention"] = json!("none"),
        1 | 2 => options["cacheRetention"] = json!("long"),
        _ => {}
    }
    if model["reasoning"] == true && rng.gen_bool(0.5) {
        options["reasoning"] = json!(["low", "medium", "high"].choose(&mut rng));
    }
    let tools = json!([{"name": "read", "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]);
    let context =
        json!({"systemPrompt": "Be brief.", "messages": [user("start", 1)], "tools": tools});

    let turn_count = rng.gen_range(2..=3);
    let mut turns = Vec::new();
    let mut previous_call: Option<String> = None;
    for t in 0..turn_count {
        let mut append = Vec::new();
        if t > 0 {
            let at = 10 + t as i64;
            match previous_call.take() {
                Some(call) => append.push(tool_result(&call, at)),
                None => append.push(user(&format!("turn {t}"), at)),
            }
        }
        let system_prompt = (t > 0 && rng.gen_bool(0.1)).then(|| "Be verbose.".to_string());
        let mut replies = Vec::new();
        // A rejection first (only a later request can be a `continue`, but a `create` can be
        // refused as unsupported too).
        match rng.gen_range(0..12) {
            0 if t > 0 => replies.push(error_reply(
                404,
                Some("thread_not_found"),
                "thread not found",
            )),
            1 if t > 0 => replies.push(error_reply(
                400,
                Some("thread_fingerprint_mismatch"),
                "thread settings changed",
            )),
            2 => replies.push(error_reply(
                400,
                Some("thread_unsupported_request"),
                "threads are not supported for this request",
            )),
            3 => replies.push(error_reply(
                400,
                None,
                "thread: Extra inputs are not permitted",
            )),
            4 => replies.push(error_reply(400, None, "prompt is too long")),
            _ => {}
        }
        let message_id = format!("msg_{index}_{t}");
        let answered_by = if rng.gen_bool(0.1) {
            "claude-fallback-model".to_string()
        } else {
            model_id.clone()
        };
        let call = rng.gen_bool(0.35).then(|| format!("toolu_{index}_{t}"));
        replies.push(answer(&message_id, &answered_by, call.as_deref()));
        // An error that is not about the thread ends the turn: the answer stays unused.
        if replies
            .first()
            .is_some_and(|r| r.body.contains("prompt is too long"))
        {
            replies.truncate(1);
        } else {
            previous_call = call;
        }
        turns.push(Turn {
            append,
            system_prompt,
            replies,
        });
    }
    SessionCase {
        id,
        model,
        context,
        options,
        turns,
    }
}

/// What a turn's end is compared by: the stop reason, the error text, and the kinds and
/// reasons of its diagnostics (their timestamps differ).
pub fn turn_outcome(message: &Value) -> Value {
    let diagnostics: Vec<Value> = message["diagnostics"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| json!({"type": d["type"], "details": d["details"], "error": d["error"]}))
        .collect();
    json!({"stopReason": message["stopReason"], "errorMessage": message["errorMessage"],
        "responseId": message["responseId"], "responseModel": message["responseModel"],
        "diagnostics": diagnostics})
}
