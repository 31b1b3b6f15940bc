//! pi features the parity run found missing (issue 11 items 7 and 12): constrained sampling
//! with strict tool schemas (DECISIONS §26.12) and per-provider headers and fields (§26.13).

use arbor_ai::providers::build_request;
use arbor_ai::{AiError, Context, Message, Model, StreamOptions, Tool};
use serde_json::{json, Map, Value};

use super::providers_common::{model, user};

fn strict_tool(name: &str, strict: &str, parameters: Value) -> Tool {
    let mut extra = Map::new();
    extra.insert(
        "constrainedSampling".into(),
        json!({"type": "json_schema", "strict": strict}),
    );
    Tool {
        name: name.into(),
        description: "d".into(),
        parameters,
        extra: extra.into(),
    }
}

fn with_compat(mut m: Model, compat: Value) -> Model {
    m.compat = Some(compat);
    m
}

fn context(tools: Vec<Tool>) -> Context {
    Context {
        system_prompt: None,
        messages: vec![user("hi")].into(),
        tools: Some(tools),
    }
}

fn opts() -> StreamOptions {
    StreamOptions::default().with_api_key("k".into())
}

fn optional_path() -> Value {
    json!({"type": "object",
        "properties": {"path": {"type": "string"}, "n": {"type": ["integer", "null"]},
                       "o": {"type": "object", "properties": {"x": {"type": "string"}}}},
        "required": ["path"]})
}

/// The strict form: every property required, optional ones nullable, no extra properties,
/// nested objects too.
fn strict_optional_path() -> Value {
    json!({"type": "object",
        "properties": {"path": {"type": "string"}, "n": {"type": ["integer", "null"]},
                       "o": {"anyOf": [{"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
                                        "required": ["x"], "additionalProperties": false},
                                       {"type": "null"}]}},
        "required": ["path", "n", "o"], "additionalProperties": false})
}

#[test]
fn chat_completions_sends_strict_tools_where_the_compat_allows() {
    let m = with_compat(
        model(
            "openai-completions",
            "openai",
            "gpt-test",
            "https://api.openai.com/v1",
        ),
        json!({"supportsStrictMode": true}),
    );
    let plain = Tool {
        name: "plain".into(),
        description: "d".into(),
        parameters: json!({"type": "object", "properties": {}}),
        extra: Default::default(),
    };
    let ctx = context(vec![strict_tool("read", "prefer", optional_path()), plain]);
    let body = build_request(&m, &ctx, &opts()).unwrap().body;
    assert_eq!(body["tools"][0]["function"]["strict"], json!(true));
    assert_eq!(
        body["tools"][0]["function"]["parameters"],
        strict_optional_path()
    );
    assert_eq!(body["tools"][1]["function"]["strict"], json!(false));
}

#[test]
fn a_prefer_tool_without_a_strict_form_is_sent_as_it_is() {
    let m = with_compat(
        model(
            "openai-responses",
            "openai",
            "gpt-test",
            "https://api.openai.com/v1",
        ),
        json!({"supportsStrictMode": true}),
    );
    let schema = json!({"type": "object", "properties": {"p": {"$ref": "#/$defs/x"}}});
    let body = build_request(
        &m,
        &context(vec![strict_tool("t", "prefer", schema.clone())]),
        &opts(),
    )
    .unwrap()
    .body;
    assert_eq!(body["tools"][0]["strict"], json!(false));
    assert_eq!(body["tools"][0]["parameters"], schema);
}

#[test]
fn a_require_tool_refuses_the_request_with_pis_reason() {
    let anthropic = with_compat(
        model(
            "anthropic-messages",
            "anthropic",
            "claude-test-4",
            "https://api.anthropic.com",
        ),
        json!({"supportsStrictTools": true}),
    );
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}});
    let err = build_request(
        &anthropic,
        &context(vec![strict_tool("count", "require", schema.clone())]),
        &opts(),
    )
    .unwrap_err();
    let AiError::InvalidRequest(text) = err else {
        panic!("{err:?}")
    };
    assert_eq!(
        text,
        "Tool \"count\" requires JSON-schema constrained sampling, but minimum: 0 is unsupported."
    );
    // Chat Completions has no such keyword rule, but this server takes no strict tools.
    let chat = model(
        "openai-completions",
        "local",
        "m",
        "http://localhost:8080/v1",
    );
    let err = build_request(
        &chat,
        &context(vec![strict_tool("count", "require", schema)]),
        &opts(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Tool \"count\" requires JSON-schema constrained sampling, but strict tools are unsupported."
    );
}

#[test]
fn anthropic_strict_tools_keep_only_the_allowed_root_keys() {
    let m = with_compat(
        model(
            "anthropic-messages",
            "anthropic",
            "claude-test-4",
            "https://api.anthropic.com",
        ),
        json!({"supportsStrictTools": true}),
    );
    let body = build_request(
        &m,
        &context(vec![strict_tool("read", "require", optional_path())]),
        &opts(),
    )
    .unwrap()
    .body;
    assert_eq!(body["tools"][0]["strict"], json!(true));
    assert_eq!(body["tools"][0]["input_schema"], strict_optional_path());
}

#[test]
fn gemini_3_validates_strict_tools() {
    let ctx = context(vec![strict_tool("read", "prefer", optional_path())]);
    let g3 = model(
        "google-generative-ai",
        "google",
        "gemini-3-pro-preview",
        "https://g/v1beta",
    );
    let body = build_request(&g3, &ctx, &opts()).unwrap().body;
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "VALIDATED"}})
    );
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"],
        strict_optional_path()
    );
    let g25 = model(
        "google-generative-ai",
        "google",
        "gemini-2.5-flash",
        "https://g/v1beta",
    );
    let body = build_request(&g25, &ctx, &opts()).unwrap().body;
    assert!(body.get("toolConfig").is_none());
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"],
        optional_path()
    );
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[test]
fn copilot_headers_follow_the_conversation() {
    let m = model(
        "openai-completions",
        "github-copilot",
        "gpt-4.1",
        "https://api.githubcopilot.com",
    );
    let request = build_request(&m, &context(vec![]), &opts()).unwrap();
    assert_eq!(header(&request.headers, "X-Initiator"), Some("user"));
    assert_eq!(
        header(&request.headers, "Openai-Intent"),
        Some("conversation-edits")
    );
    assert_eq!(header(&request.headers, "Copilot-Vision-Request"), None);

    // A tool result with an image as the last message: agent-initiated, vision.
    let mut ctx = super::providers_common::history_context(&m, "sig", "call_1");
    ctx.messages.pop();
    let request = build_request(&m, &ctx, &opts()).unwrap();
    assert_eq!(header(&request.headers, "X-Initiator"), Some("agent"));
    assert_eq!(
        header(&request.headers, "Copilot-Vision-Request"),
        Some("true")
    );

    // Anthropic on Copilot: the token is a bearer token.
    let a = model(
        "anthropic-messages",
        "github-copilot",
        "claude-sonnet-4.5",
        "https://api.githubcopilot.com",
    );
    let request = build_request(&a, &context(vec![]), &opts()).unwrap();
    assert_eq!(header(&request.headers, "authorization"), Some("Bearer k"));
    assert_eq!(header(&request.headers, "x-api-key"), None);
    assert_eq!(header(&request.headers, "X-Initiator"), Some("user"));
}

#[test]
fn opencode_gets_the_session_header_and_zai_tool_stream() {
    let m = model(
        "openai-completions",
        "my-proxy",
        "glm-4.6",
        "https://opencode.ai/zen/v1",
    );
    let options = opts().with_session_id("s-1".into());
    let request = build_request(&m, &context(vec![]), &options).unwrap();
    assert_eq!(header(&request.headers, "x-opencode-session"), Some("s-1"));
    let other = model(
        "openai-completions",
        "my-proxy",
        "glm-4.6",
        "https://api.z.ai/v1",
    );
    let request = build_request(&other, &context(vec![]), &options).unwrap();
    assert_eq!(header(&request.headers, "x-opencode-session"), None);

    let tool = Tool {
        name: "t".into(),
        description: "d".into(),
        parameters: json!({"type": "object", "properties": {}}),
        extra: Default::default(),
    };
    let zai = with_compat(other, json!({"zaiToolStream": true}));
    let body = build_request(&zai, &context(vec![tool]), &opts())
        .unwrap()
        .body;
    assert_eq!(body["tool_stream"], json!(true));
    let body = build_request(
        &zai,
        &Context {
            messages: vec![Message::user("x", 1)].into(),
            ..Context::default()
        },
        &opts(),
    )
    .unwrap()
    .body;
    assert!(body.get("tool_stream").is_none(), "only with tools");
}
