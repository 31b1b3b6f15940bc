//! Chat Completions grammar tools (DECISIONS §26.41): `custom` tools, replayed `custom` calls
//! and streamed custom input.

use arbor_ai::providers::build_request;
use arbor_ai::{stream, AssistantMessageEvent, Context, Message, Model, StreamOptions, Tool};
use arbor_test_support::{sse_data, MockResponse, MockServer};
use serde_json::{json, Map, Value};

use super::providers_common::{collect, model, user};

fn grammar_model(base_url: &str) -> Model {
    let mut m = model("openai-completions", "my-proxy", "gpt-grammar", base_url);
    m.compat = Some(json!({"supportsOpenAIGrammarTools": true}));
    m
}

fn apply_tool() -> Tool {
    let mut extra = Map::new();
    extra.insert(
        "constrainedSampling".into(),
        json!({"type": "grammar", "variants": {"openai_regex": "\\*\\*\\* .+", "openai_lark": "start: /.+/s"}}),
    );
    Tool {
        name: "apply".into(),
        description: "Apply a patch".into(),
        parameters: json!({"type": "object", "properties": {"patch": {"type": "string"}}, "required": ["patch"]}),
        extra: extra.into(),
    }
}

fn read_tool() -> Tool {
    Tool {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        extra: Default::default(),
    }
}

fn options() -> StreamOptions {
    StreamOptions::default().with_api_key("k".into())
}

fn history(m: &Model) -> Vec<Message> {
    let assistant = json!({"role": "assistant", "content": [
            {"type": "toolCall", "id": "call_1", "name": "apply", "arguments": {"patch": "*** Begin\n+x"}},
            {"type": "toolCall", "id": "call_2", "name": "read", "arguments": {"path": "a"}}],
        "api": m.api, "provider": m.provider, "model": m.id,
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "toolUse", "timestamp": 2});
    let result = |id: &str, name: &str| {
        json!({"role": "toolResult", "toolCallId": id, "toolName": name,
            "content": [{"type": "text", "text": "done"}], "isError": false, "timestamp": 3})
    };
    [
        user("patch it"),
        serde_json::from_value(assistant).unwrap(),
        serde_json::from_value(result("call_1", "apply")).unwrap(),
        serde_json::from_value(result("call_2", "read")).unwrap(),
    ]
    .into()
}

#[test]
fn grammar_tools_are_custom_tools_and_their_calls_custom_calls() {
    let m = grammar_model("https://proxy.example/v1");
    let ctx = Context {
        system_prompt: None,
        messages: history(&m).into(),
        tools: Some(vec![apply_tool(), read_tool()]),
    };
    let body = build_request(&m, &ctx, &options()).unwrap().body;
    assert_eq!(
        body["tools"][0],
        json!({"type": "custom", "custom": {"name": "apply", "description": "Apply a patch",
            "format": {"type": "grammar", "grammar": {"syntax": "lark", "definition": "start: /.+/s"}}}})
    );
    assert_eq!(body["tools"][1]["type"], json!("function"));
    assert_eq!(
        body["messages"][1]["tool_calls"],
        json!([
            {"id": "call_1", "type": "custom", "custom": {"name": "apply", "input": "*** Begin\n+x"}},
            {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}
        ])
    );
    insta::assert_json_snapshot!("completions_grammar_request", body);

    // Without the compat flag the grammar tool is a plain function tool.
    let mut plain = m.clone();
    plain.compat = None;
    let body = build_request(&plain, &ctx, &options()).unwrap().body;
    assert_eq!(body["tools"][0]["type"], json!("function"));
    assert_eq!(
        body["messages"][1]["tool_calls"][0]["type"],
        json!("function")
    );
}

#[test]
fn a_grammar_tool_without_one_string_input_is_refused() {
    let m = grammar_model("https://proxy.example/v1");
    let mut tool = apply_tool();
    tool.parameters = json!({"type": "object", "properties": {"patch": {"type": "integer"}}, "required": ["patch"]});
    let ctx = Context {
        system_prompt: None,
        messages: vec![user("x")].into(),
        tools: Some(vec![tool]),
    };
    let err = build_request(&m, &ctx, &options()).unwrap_err().to_string();
    assert!(
        err.contains("Tool \"apply\" cannot use grammar constrained sampling"),
        "{err}"
    );
}

#[tokio::test]
async fn a_streamed_custom_call_becomes_a_tool_call_on_its_input_property() {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-grammar",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let body = format!(
        "{}data: [DONE]\n\n",
        sse_data(&[
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_c", "type": "custom", "custom": {"name": "apply", "input": ""}}]}),
                Value::Null
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "custom": {"input": "*** Begin \"q\""}}]}),
                Value::Null
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "custom": {"input": "\n+ ünï"}}]}),
                Value::Null
            ),
            chunk(json!({}), json!("tool_calls")),
        ])
    );
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::sse().body(body));
    let m = grammar_model(&server.url());
    let ctx = Context {
        system_prompt: None,
        messages: vec![user("patch")].into(),
        tools: Some(vec![apply_tool()]),
    };
    let events = collect(stream(&m, &ctx, options())).await;
    let deltas: String = events
        .iter()
        .filter_map(|e| match e {
            AssistantMessageEvent::ToolcallDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, r#"{"patch":"*** Begin \"q\"\n+ ünï"}"#);
    let Some(AssistantMessageEvent::Done { message, .. }) = events.last() else {
        panic!("expected done, got {:?}", events.last());
    };
    let arbor_ai::ContentBlock::ToolCall(call) = &message.content[0] else {
        panic!("expected a tool call: {:?}", message.content);
    };
    assert_eq!(call.name, "apply");
    assert_eq!(call.id, "call_c");
    assert_eq!(call.arguments, json!({"patch": "*** Begin \"q\"\n+ ünï"}));
}

/// A tool redefined by a later system message is known by its latest definition only (pi's
/// `getDeclaredTools`, DECISIONS §26.56): a grammar tool whose grammar is unusable and that is
/// redefined as a plain tool is not refused and its calls are function calls; a plain tool
/// redefined as a grammar tool gets custom calls. Bodies recorded from pi-ai 1.6.0 for both
/// APIs (`tests/data/parity/redefined_grammar_tools.jsonl`).
#[test]
fn a_redefined_tool_is_known_by_its_latest_definition() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/parity/redefined_grammar_tools.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut compared = 0;
    for line in text.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        let model: Model = serde_json::from_value(case["model"].clone()).unwrap();
        let context: Context = serde_json::from_value(case["context"].clone()).unwrap();
        let options = arbor_ai::SimpleStreamOptions::from_pi_json(&case["options"]).unwrap();
        let request = arbor_ai::providers::simple::build_simple_request(&model, &context, options)
            .unwrap_or_else(|e| panic!("{}: {e}", case["id"]));
        assert_eq!(
            request.body, case["expected"]["body"],
            "{}: body differs from pi's",
            case["id"]
        );
        compared += 1;
    }
    assert_eq!(compared, 4);
}
