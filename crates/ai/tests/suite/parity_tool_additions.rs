//! Tool additions announced in place by addition-only transports: Responses client tool
//! search (`compat.supportsToolSearch`, DECISIONS §26.50) and Chat Completions tool messages
//! (`compat.supportsMidConvoToolAdditions`, §26.51). The request-level tool list stops at the
//! last later system message that removes a tool or declares a name again (§26.52).
//!
//! `tests/data/parity/tool_additions.jsonl` holds hand-written contexts with the bodies pi-ai
//! 1.6.0's `streamSimple` sent for them (recorded with `xtask/parity/driver.mjs`).

use arbor_ai::providers::build_request;
use arbor_ai::{Context, Message, Model, SimpleStreamOptions, StreamOptions, Tool};
use serde_json::{json, Value};

use super::providers_common::{model, user};

fn with_compat(mut m: Model, compat: Value) -> Model {
    m.compat = Some(compat);
    m
}

fn tool(name: &str) -> Tool {
    Tool {
        name: name.into(),
        description: format!("{name} tool"),
        parameters: json!({"type": "object", "properties": {"p": {"type": "string"}}, "required": ["p"]}),
        extra: Default::default(),
    }
}

fn system(value: Value) -> Message {
    let mut value = value;
    value["role"] = json!("system");
    value["timestamp"] = json!(1_700_000_000_500_i64);
    serde_json::from_value(value).unwrap()
}

fn assistant(model: &Model, text: &str) -> Message {
    serde_json::from_value(
        json!({"role": "assistant", "content": [{"type": "text", "text": text}],
        "api": model.api, "provider": model.provider, "model": model.id,
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop", "timestamp": 1_700_000_000_600_i64}),
    )
    .unwrap()
}

fn opts() -> StreamOptions {
    StreamOptions::default().with_api_key("k".into())
}

fn responses(compat: Value) -> Model {
    with_compat(
        model(
            "openai-responses",
            "openai",
            "gpt-test",
            "https://api.openai.com/v1",
        ),
        compat,
    )
}

fn kimi(compat: Value) -> Model {
    with_compat(
        model(
            "openai-completions",
            "moonshotai",
            "kimi-test",
            "https://api.moonshot.ai/v1",
        ),
        compat,
    )
}

/// One tool at the start, one added after the first user turn, two after the second.
fn growing_context(m: &Model) -> Context {
    Context {
        system_prompt: Some("Base prompt.".into()),
        messages: vec![
            user("first"),
            system(json!({"content": "More tools.", "toolsAdded": [tool("grep")]})),
            assistant(m, "one"),
            user("second"),
            system(json!({"content": "", "toolsAdded": [tool("lsp"), tool("web")]})),
        ]
        .into(),
        tools: Some(vec![tool("read")]),
    }
}

/// Additions before and after a removal and a redeclaration (of `bash`).
fn folding_context() -> Context {
    Context {
        system_prompt: Some("Base prompt.".into()),
        messages: vec![
            user("first"),
            system(json!({"content": "", "toolsAdded": [tool("grep")]})),
            system(json!({"content": "No read.", "toolsRemoved": [{"name": "read"}]})),
            user("second"),
            system(json!({"content": "", "toolsAdded": [tool("web")]})),
            system(json!({"content": "bash again", "toolsAdded": [tool("bash")]})),
            user("third"),
            system(json!({"content": "", "toolsAdded": [tool("lsp")]})),
        ]
        .into(),
        tools: Some(vec![tool("read"), tool("bash")]),
    }
}

fn names(tools: &Value) -> Vec<&str> {
    tools
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| {
                    t["name"]
                        .as_str()
                        .or_else(|| t["function"]["name"].as_str())
                        .unwrap()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn function_tool(name: &str, deferred: bool) -> Value {
    let mut t = json!({"type": "function", "name": name, "description": format!("{name} tool"),
        "parameters": {"type": "object", "properties": {"p": {"type": "string"}}, "required": ["p"]}});
    if deferred {
        t["defer_loading"] = json!(true);
    }
    t
}

#[test]
fn responses_announces_later_additions_as_a_completed_client_tool_search() {
    let m = responses(json!({"supportsMidConvoSystemMessages": true, "supportsToolSearch": true}));
    let body = build_request(&m, &growing_context(&m), &opts())
        .unwrap()
        .body;
    // The request-level list keeps the initial tools: it never changes as tools are added.
    assert_eq!(body["tools"], json!([function_tool("read", false)]));
    let input = body["input"].as_array().unwrap();
    // Before the system message's text, a search "for" the added names and its output; the
    // call id hashes the message's position (msg 1) and the names, as pi's does.
    assert_eq!(
        input[2],
        json!({"type": "tool_search_call", "call_id": "pi_tool_load_ijj94ivq5hji",
            "execution": "client", "status": "completed",
            "arguments": {"query": "grep", "limit": 1}})
    );
    assert_eq!(
        input[3],
        json!({"type": "tool_search_output", "call_id": "pi_tool_load_ijj94ivq5hji",
            "execution": "client", "status": "completed",
            "tools": [function_tool("grep", true)]})
    );
    assert_eq!(
        input[4],
        json!({"role": "developer", "content": "More tools."})
    );
    // msg 4 (user, assistant and the first system message count); an empty system message
    // renders nothing but its tool search.
    assert_eq!(input[7]["call_id"], json!("pi_tool_load_1blip5sb34a38"));
    assert_eq!(
        input[7]["arguments"],
        json!({"query": "lsp web", "limit": 2})
    );
    assert_eq!(input[8]["type"], json!("tool_search_output"));
    assert_eq!(input.len(), 9);
    insta::assert_json_snapshot!("tool_additions_responses_tool_search", body["input"]);
}

#[test]
fn responses_folds_tools_up_to_the_last_removal_or_redeclaration() {
    let m = responses(json!({"supportsMidConvoSystemMessages": true, "supportsToolSearch": true}));
    let body = build_request(&m, &folding_context(), &opts()).unwrap().body;
    // read, bash; + grep; - read; + web; bash redefined in place: a search cannot remove or
    // redefine, so everything up to the redeclaration is request-level.
    assert_eq!(names(&body["tools"]), ["bash", "grep", "web"]);
    let searches: Vec<&Value> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "tool_search_call")
        .collect();
    assert_eq!(searches.len(), 1);
    assert_eq!(
        searches[0]["arguments"],
        json!({"query": "lsp", "limit": 1})
    );
}

#[test]
fn responses_tool_search_yields_to_additional_tools_and_needs_in_place_system_messages() {
    let both = responses(json!({"supportsMidConvoSystemMessages": true,
        "supportsToolSearch": true, "supportsAdditionalTools": true}));
    let body = build_request(&both, &growing_context(&both), &opts())
        .unwrap()
        .body;
    let kinds: Vec<&str> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["type"].as_str())
        .collect();
    assert!(body.get("tools").is_none());
    assert_eq!(
        kinds,
        [
            "additional_tools",
            "additional_tools",
            "message",
            "additional_tools"
        ]
    );

    // Collapsed: the current tool set at the top, nothing in the input.
    let collapsed = responses(json!({"supportsToolSearch": true}));
    let body = build_request(&collapsed, &growing_context(&collapsed), &opts())
        .unwrap()
        .body;
    assert_eq!(names(&body["tools"]), ["read", "grep", "lsp", "web"]);
    assert!(body["input"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["type"] != "tool_search_call"));
}

#[test]
fn chat_completions_announces_later_additions_in_tool_messages() {
    let m = kimi(json!({"supportsMidConvoSystemMessages": true,
        "supportsMidConvoToolAdditions": true}));
    let body = build_request(&m, &growing_context(&m), &opts())
        .unwrap()
        .body;
    let function = |name: &str| {
        json!({"type": "function", "function": {"name": name, "description": format!("{name} tool"),
            "parameters": {"type": "object", "properties": {"p": {"type": "string"}}, "required": ["p"]}}})
    };
    assert_eq!(body["tools"], json!([function("read")]));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "Base prompt."},
            {"role": "user", "content": "first"},
            {"role": "system", "tools": [function("grep")]},
            {"role": "system", "content": "More tools."},
            {"role": "assistant", "content": "one"},
            {"role": "user", "content": "second"},
            {"role": "system", "tools": [function("lsp"), function("web")]},
        ])
    );
    insta::assert_json_snapshot!("tool_additions_completions_tool_messages", body);
}

#[test]
fn chat_completions_folds_and_needs_in_place_system_messages() {
    let m = kimi(json!({"supportsMidConvoSystemMessages": true,
        "supportsMidConvoToolAdditions": true}));
    let body = build_request(&m, &folding_context(), &opts()).unwrap().body;
    assert_eq!(names(&body["tools"]), ["bash", "grep", "web"]);
    let announced: Vec<Vec<&str>> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m.get("tools").is_some())
        .map(|m| names(&m["tools"]))
        .collect();
    assert_eq!(announced, [["lsp"]]);

    // Without system messages in place the flag does nothing: current tools at the top.
    let collapsed = kimi(json!({"supportsMidConvoToolAdditions": true}));
    let body = build_request(&collapsed, &growing_context(&collapsed), &opts())
        .unwrap()
        .body;
    assert_eq!(names(&body["tools"]), ["read", "grep", "lsp", "web"]);
    assert!(body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m.get("tools").is_none()));
}

#[test]
fn chat_completions_with_only_announced_tools_sends_an_empty_list_for_tool_history() {
    // No request-level tools: `requiresToolsWithToolHistory` gets `tools: []`, and the z.ai
    // `tool_stream` switch (which goes with request-level tools) is not sent.
    let m = kimi(json!({"supportsMidConvoSystemMessages": true,
        "supportsMidConvoToolAdditions": true, "requiresToolsWithToolHistory": true,
        "zaiToolStream": true}));
    let call: Message = serde_json::from_value(json!({"role": "assistant",
        "content": [{"type": "toolCall", "id": "call_1", "name": "grep", "arguments": {"p": "x"}}],
        "api": m.api, "provider": m.provider, "model": m.id,
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "toolUse", "timestamp": 1_700_000_000_600_i64}))
    .unwrap();
    let result: Message = serde_json::from_value(json!({"role": "toolResult",
        "toolCallId": "call_1", "toolName": "grep", "content": [{"type": "text", "text": "found"}],
        "isError": false, "timestamp": 1_700_000_000_700_i64}))
    .unwrap();
    let ctx = Context {
        system_prompt: None,
        messages: vec![
            user("first"),
            system(json!({"content": "Search is available.", "toolsAdded": [tool("grep")]})),
            call,
            result,
            user("more"),
        ]
        .into(),
        tools: None,
    };
    let body = build_request(&m, &ctx, &opts()).unwrap().body;
    assert_eq!(body["tools"], json!([]));
    assert!(body.get("tool_stream").is_none());
    assert_eq!(names(&body["messages"][1]["tools"]), ["grep"]);
}

/// Every recorded pi body, compared whole (URL too) with what Arbor builds on the
/// `streamSimple` path.
#[test]
fn recorded_pi_bodies_match() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/parity/tool_additions.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut compared = 0;
    for line in text.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        let model: Model = serde_json::from_value(case["model"].clone()).unwrap();
        let context: Context = serde_json::from_value(case["context"].clone()).unwrap();
        let options = SimpleStreamOptions::from_pi_json(&case["options"]).unwrap();
        let request =
            arbor_ai::providers::simple::build_simple_request(&model, &context, options).unwrap();
        assert_eq!(
            request.body, case["expected"]["body"],
            "{}: body differs from pi's",
            case["id"]
        );
        assert_eq!(request.url, case["expected"]["url"].as_str().unwrap());
        compared += 1;
    }
    assert_eq!(compared, 8);
}
