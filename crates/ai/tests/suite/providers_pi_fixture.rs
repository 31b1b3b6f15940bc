//! The Chat Completions body builder against 40 request bodies pi 1.6.0 really sent
//! (`testdata/pi-streams/openai-completions-requests-sample.pi-1.6.0.jsonl`).
//!
//! Each recorded body is read back into Arbor messages (system prompt, tools, user / assistant /
//! tool messages, as pi's session held them), the request is rebuilt with the same model and
//! options, and the rebuilt body must equal pi's byte-for-byte structure.

use arbor_ai::providers::build_request;
use arbor_ai::{
    AssistantMessage, Content, ContentBlock, Context, Message, StopReason, StreamOptions, Tool,
    ToolCall, ToolResultMessage, UserMessage,
};
use arbor_test_support::fixtures::testdata_dir;
use serde_json::Value;

use super::providers_common::{model, text_block};

/// pi's session messages reconstructed from one request body.
fn context_from_body(body: &Value) -> Context {
    let mut ctx = Context::default();
    let mut names: Vec<(String, String)> = Vec::new();
    for (i, m) in body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .enumerate()
    {
        let ts = 1_700_000_000_000 + i as i64;
        match m["role"].as_str().expect("role") {
            "system" => {
                ctx.system_prompt = Some(m["content"].as_str().expect("system text").into())
            }
            "user" => {
                let content = match &m["content"] {
                    Value::String(s) => Content::Text(s.clone()),
                    Value::Array(parts) => Content::Blocks(
                        parts
                            .iter()
                            .map(|p| text_block(p["text"].as_str().expect("text part")))
                            .collect(),
                    ),
                    other => panic!("user content {other}"),
                };
                ctx.messages.push(Message::User(UserMessage {
                    content,
                    timestamp: ts.into(),
                    ..UserMessage::default()
                }));
            }
            "assistant" => {
                let mut content = Vec::new();
                if let Some(text) = m["content"].as_str() {
                    content.push(text_block(text));
                }
                for call in m["tool_calls"].as_array().into_iter().flatten() {
                    let id = call["id"].as_str().expect("id").to_string();
                    let name = call["function"]["name"].as_str().expect("name").to_string();
                    let args: Value =
                        serde_json::from_str(call["function"]["arguments"].as_str().expect("args"))
                            .expect("arguments JSON");
                    names.push((id.clone(), name.clone()));
                    content.push(ContentBlock::ToolCall(ToolCall::new(id, name, args)));
                }
                let stop_reason = if m.get("tool_calls").is_some() {
                    StopReason::ToolUse
                } else {
                    StopReason::Stop
                };
                ctx.messages.push(Message::Assistant(AssistantMessage {
                    content,
                    api: "openai-completions".into(),
                    provider: "mock".into(),
                    model: "mock-model".into(),
                    stop_reason,
                    timestamp: ts.into(),
                    ..AssistantMessage::default()
                }));
            }
            "tool" => {
                let id = m["tool_call_id"]
                    .as_str()
                    .expect("tool_call_id")
                    .to_string();
                let name = names
                    .iter()
                    .find(|(i, _)| *i == id)
                    .map(|(_, n)| n.clone())
                    .expect("tool call for result");
                ctx.messages.push(Message::ToolResult(ToolResultMessage {
                    tool_call_id: id,
                    tool_name: name,
                    content: Content::Blocks(vec![text_block(
                        m["content"].as_str().expect("text"),
                    )]),
                    timestamp: ts.into(),
                    ..ToolResultMessage::default()
                }));
            }
            other => panic!("unexpected role {other}"),
        }
    }
    ctx.tools = Some(
        body["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| Tool {
                name: t["function"]["name"].as_str().expect("name").into(),
                description: t["function"]["description"]
                    .as_str()
                    .expect("description")
                    .into(),
                parameters: t["function"]["parameters"].clone(),
                extra: Default::default(),
            })
            .collect(),
    );
    ctx
}

#[test]
fn rebuilt_bodies_equal_pis_recorded_bodies() {
    let path = testdata_dir().join("pi-streams/openai-completions-requests-sample.pi-1.6.0.jsonl");
    let text = std::fs::read_to_string(&path).expect("fixture");
    let mut checked = 0;
    for (line_no, line) in text.lines().enumerate() {
        let record: Value = serde_json::from_str(line).expect("record JSON");
        let recorded = &record["body"];
        assert_eq!(record["path"], "/v1/chat/completions");
        let mut m = model(
            "openai-completions",
            "mock",
            "mock-model",
            "http://127.0.0.1:8765/v1",
        );
        m.reasoning = false;
        m.input = vec!["text".into()];
        let options = {
            let mut o = StreamOptions::default();
            o.api_key = Some("test-key".into());
            o.max_tokens = recorded["max_completion_tokens"].as_u64();
            o
        };
        let request = build_request(&m, &context_from_body(recorded), &options).expect("request");
        assert!(request.url.ends_with("/v1/chat/completions"));
        assert_eq!(
            serde_json::to_string(&request.body).unwrap(),
            serde_json::to_string(recorded).unwrap(),
            "line {}: rebuilt body differs from pi's",
            line_no + 1
        );
        checked += 1;
    }
    assert_eq!(checked, 40);
}
