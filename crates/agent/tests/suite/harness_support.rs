//! Helpers for the loop and harness suites: a faux provider, a memory (or JSONL) session,
//! scripted tools, an event recorder that renders JSON lines with stable ids and timestamps,
//! and the check that the session projects to what the model was sent next.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbor_agent::agent::{
    AgentEvent, AgentTool, ToolError, ToolExecutionMode, ToolInvocation, ToolOutput, ToolRef,
};
use arbor_agent::context::convert::convert_to_llm;
use arbor_agent::context::ContextOptions;
use arbor_agent::harness::{AgentHarness, HarnessOptions, SystemPrompt};
use arbor_agent::session::{MemoryStorage, Session};
use arbor_ai::faux::{FauxProvider, FauxResponse};
use arbor_ai::transform::transform_messages;
use serde_json::{json, Value};

pub struct Rig {
    pub faux: FauxProvider,
    pub session: Arc<Session>,
    pub harness: AgentHarness,
    pub events: Arc<Mutex<Vec<Value>>>,
}

pub fn faux() -> FauxProvider {
    FauxProvider::builder().seed(7).build()
}

pub fn tools() -> Vec<ToolRef> {
    vec![
        Arc::new(EchoTool),
        Arc::new(FailTool),
        Arc::new(SeqTool),
        Arc::new(CountTool),
        Arc::new(HangTool),
    ]
}

pub fn options(faux: &FauxProvider) -> HarnessOptions {
    HarnessOptions::new(faux.model())
        .with_tools(tools())
        .with_system_prompt(SystemPrompt::Text("You are a test agent.".into()))
}

pub fn rig() -> Rig {
    let faux = faux();
    let session = Arc::new(Session::new(Arc::new(MemoryStorage::new("/work/p"))));
    rig_on(faux, session, None)
}

pub fn rig_on(faux: FauxProvider, session: Arc<Session>, opts: Option<HarnessOptions>) -> Rig {
    let opts = opts.unwrap_or_else(|| options(&faux));
    let harness =
        AgentHarness::new(session.clone(), Arc::new(faux.clone()), opts).expect("harness");
    let events = record(&harness);
    Rig {
        faux,
        session,
        harness,
        events,
    }
}

pub fn record(harness: &AgentHarness) -> Arc<Mutex<Vec<Value>>> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    harness.subscribe(move |e: &AgentEvent| {
        sink.lock()
            .unwrap()
            .push(serde_json::to_value(e).expect("event serializes"));
    });
    events
}

impl Rig {
    /// The recorded events as JSON lines: timestamps zeroed, durations dropped, entry ids
    /// renamed `e1, e2, …` by first appearance.
    pub fn event_lines(&self) -> String {
        let events = self.events.lock().unwrap().clone();
        render_lines(&events)
    }

    /// The events, then one line per session entry (type, id, parent, target/from), with the
    /// same id names.
    pub async fn events_and_log(&self) -> String {
        let events = self.events.lock().unwrap().clone();
        let mut ids = HashMap::new();
        let mut out: Vec<String> = events
            .iter()
            .map(|e| {
                let mut e = e.clone();
                normalize(&mut e, &mut ids);
                serde_json::to_string(&e).unwrap()
            })
            .collect();
        out.push("--- entries".to_string());
        for entry in self.session.entries().await.unwrap() {
            let full = serde_json::to_value(&entry).unwrap();
            let mut v =
                json!({"type": full["type"], "id": full["id"], "parentId": full["parentId"]});
            for k in ["targetId", "fromId"] {
                if let Some(x) = full.get(k) {
                    v[k] = x.clone();
                }
            }
            if let Some(role) = full.pointer("/message/role") {
                v["role"] = role.clone();
            }
            normalize(&mut v, &mut ids);
            out.push(serde_json::to_string(&v).unwrap());
        }
        out.join("\n")
    }

    pub fn types(&self) -> Vec<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .map(|e| e["type"].as_str().unwrap().to_string())
            .collect()
    }

    pub fn clear_events(&self) {
        self.events.lock().unwrap().clear();
    }

    /// Sends one more prompt and checks that what the model received equals the session's
    /// projection (converted and transformed for the model) plus that prompt.
    pub async fn assert_next_turn_matches_session(&self) {
        let ctx = self
            .session
            .build_context(&ContextOptions::default())
            .await
            .unwrap();
        let before = convert_to_llm(&ctx.messages);
        drop(ctx);
        self.faux.push(FauxResponse::text("ok"));
        self.harness.prompt("next", &[]).await.unwrap();
        let req = self.faux.last_request().unwrap();
        let mut expected = before;
        expected.push(req.context.messages.last().unwrap().clone());
        let expected = transform_messages(&expected, &req.model);
        assert_eq!(
            serde_json::to_value(&req.context.messages).unwrap(),
            serde_json::to_value(&expected).unwrap(),
            "the model was sent something other than the session's projection"
        );
        assert_eq!(
            req.context.system_prompt.as_deref(),
            Some("You are a test agent.")
        );
    }
}

pub fn render_lines(events: &[Value]) -> String {
    let mut ids = HashMap::new();
    events
        .iter()
        .map(|e| {
            let mut e = e.clone();
            normalize(&mut e, &mut ids);
            serde_json::to_string(&e).unwrap()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

const ID_KEYS: [&str; 8] = [
    "id",
    "parentId",
    "targetId",
    "fromId",
    "firstKeptEntryId",
    "newLeafId",
    "oldLeafId",
    "leafId",
];

pub fn normalize(v: &mut Value, ids: &mut HashMap<String, String>) {
    match v {
        Value::Object(map) => {
            let is_tool_call = map.get("type").and_then(Value::as_str) == Some("toolCall");
            for (k, val) in map.iter_mut() {
                if k == "timestamp" {
                    *val = json!(0);
                } else if ID_KEYS.contains(&k.as_str()) && !is_tool_call {
                    if let Value::String(s) = val {
                        if s != "root" {
                            let n = ids.len() + 1;
                            let name = ids.entry(s.clone()).or_insert_with(|| format!("e{n}"));
                            *s = name.clone();
                        }
                    }
                } else {
                    normalize(val, ids);
                }
            }
            map.remove("durationMs");
        }
        Value::Array(items) => items.iter_mut().for_each(|i| normalize(i, ids)),
        _ => {}
    }
}

fn schema(v: Value) -> Value {
    v
}

/// `echo {text, delayMs?, updates?}`: waits, reports `updates` partial results, returns text.
pub struct EchoTool;

#[async_trait::async_trait]
impl AgentTool for EchoTool {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Echoes its text"
    }
    fn parameters(&self) -> &Value {
        static S: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        S.get_or_init(|| {
            schema(json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "delayMs": {"type": "integer"},
                    "updates": {"type": "integer"}
                },
                "required": ["text"]
            }))
        })
    }
    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let text = call.arguments["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let updates = call.arguments["updates"].as_u64().unwrap_or(0);
        for i in 0..updates {
            call.progress
                .update(ToolOutput::text(format!("{text} {}/{updates}", i + 1)));
        }
        if let Some(ms) = call.arguments["delayMs"].as_u64() {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        Ok(ToolOutput::text(text).with_details(json!({"echoed": true})))
    }
}

/// `fail {}`: always fails.
pub struct FailTool;

#[async_trait::async_trait]
impl AgentTool for FailTool {
    fn name(&self) -> &str {
        "fail"
    }
    fn description(&self) -> &str {
        "Always fails"
    }
    fn parameters(&self) -> &Value {
        static S: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        S.get_or_init(|| json!({"type": "object", "properties": {}}))
    }
    async fn execute(&self, _call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        Err(ToolError::new("disk on fire").with_details(json!({"errno": 28})))
    }
}

/// `seq {text}`: a tool that asks for sequential execution.
pub struct SeqTool;

#[async_trait::async_trait]
impl AgentTool for SeqTool {
    fn name(&self) -> &str {
        "seq"
    }
    fn description(&self) -> &str {
        "Runs alone"
    }
    fn parameters(&self) -> &Value {
        static S: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        S.get_or_init(|| {
            json!({"type": "object", "properties": {"text": {"type": "string"}, "delayMs": {"type": "integer"}}, "required": ["text"]})
        })
    }
    fn execution_mode(&self) -> ToolExecutionMode {
        ToolExecutionMode::Sequential
    }
    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        if let Some(ms) = call.arguments["delayMs"].as_u64() {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        Ok(ToolOutput::text(format!(
            "seq:{}",
            call.arguments["text"].as_str().unwrap_or_default()
        )))
    }
}

/// `count {n: integer, tags: string[], verbose?: boolean}`: echoes its (coerced) arguments.
pub struct CountTool;

#[async_trait::async_trait]
impl AgentTool for CountTool {
    fn name(&self) -> &str {
        "count"
    }
    fn description(&self) -> &str {
        "Shows its arguments"
    }
    fn parameters(&self) -> &Value {
        static S: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        S.get_or_init(|| {
            json!({
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "minimum": 0},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "verbose": {"type": "boolean"}
                },
                "required": ["n", "tags"],
                "additionalProperties": false
            })
        })
    }
    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(call.arguments.to_string()))
    }
}

/// `hang {}`: never finishes on its own and ignores cancellation.
pub struct HangTool;

#[async_trait::async_trait]
impl AgentTool for HangTool {
    fn name(&self) -> &str {
        "hang"
    }
    fn description(&self) -> &str {
        "Never returns"
    }
    fn parameters(&self) -> &Value {
        static S: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        S.get_or_init(|| json!({"type": "object"}))
    }
    async fn execute(&self, _call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        std::future::pending::<()>().await;
        Ok(ToolOutput::default())
    }
}
