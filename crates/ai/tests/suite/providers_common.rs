//! Shared helpers of the provider tests: models pointing at the mock server, contexts, a
//! compact event rendering for snapshots, and the event-contract checker.

use arbor_ai::{
    AssistantMessage, AssistantMessageEvent, AssistantMessageEventStream, Content, ContentBlock,
    Context, ImageContent, Message, MessageAccumulator, Model, ModelCost, StopReason, TextContent,
    ThinkingContent, Tool, ToolCall, ToolResultMessage, UserMessage,
};
use arbor_test_support::{MockResponse, MockServer, RecordedRequest};
use futures::StreamExt;
use serde_json::{json, Value};

pub fn model(api: &str, provider: &str, id: &str, base_url: &str) -> Model {
    Model {
        id: id.into(),
        name: id.into(),
        api: api.into(),
        provider: provider.into(),
        base_url: base_url.into(),
        reasoning: true,
        input: vec!["text".into(), "image".into()],
        cost: ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
            tiers: None,
        },
        context_window: 200_000,
        max_tokens: 8192,
        ..Model::default()
    }
}

pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string", "description": "File path"}},
                "required": ["path"]
            }),
            extra: Default::default(),
        },
        Tool {
            name: "bash".into(),
            description: "Run a command".into(),
            parameters: json!({
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"]
            }),
            extra: Default::default(),
        },
    ]
}

pub fn user(text: &str) -> Message {
    Message::user(text, 1_700_000_000_000)
}

/// A one-turn context: system prompt, tools, one user message.
pub fn simple_context() -> Context {
    Context {
        system_prompt: Some("You are a careful assistant.".into()),
        messages: vec![user("Read é.txt and summarise it.")].into(),
        tools: Some(tools()),
    }
}

pub fn text_block(text: &str) -> ContentBlock {
    ContentBlock::Text(TextContent {
        text: text.into(),
        ..TextContent::default()
    })
}

/// A multi-turn history produced by `model` itself (so signatures are replayed): user →
/// assistant(thinking + text + tool call) → tool result (text + image) → user.
pub fn history_context(model: &Model, thinking_signature: &str, tool_call_id: &str) -> Context {
    let assistant = AssistantMessage {
        content: vec![
            ContentBlock::Thinking(ThinkingContent {
                thinking: "The user wants the file.".into(),
                thinking_signature: Some(thinking_signature.into()),
                ..ThinkingContent::default()
            }),
            text_block("Let me read it."),
            ContentBlock::ToolCall(ToolCall::new(
                tool_call_id,
                "read",
                json!({"path": "é.txt"}),
            )),
        ],
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        stop_reason: StopReason::ToolUse,
        timestamp: 1_700_000_000_100.into(),
        ..AssistantMessage::default()
    };
    let result = ToolResultMessage {
        tool_call_id: tool_call_id.into(),
        tool_name: "read".into(),
        content: Content::Blocks(vec![
            text_block("héllo wörld"),
            ContentBlock::Image(ImageContent {
                data: "iVBORw0KGgo=".into(),
                mime_type: "image/png".into(),
                ..ImageContent::default()
            }),
        ]),
        is_error: false,
        timestamp: 1_700_000_000_200.into(),
        ..ToolResultMessage::default()
    };
    Context {
        system_prompt: Some("You are a careful assistant.".into()),
        messages: vec![
            Message::User(UserMessage {
                content: Content::Blocks(vec![text_block("Read é.txt")]),
                timestamp: 1_700_000_000_000.into(),
                ..UserMessage::default()
            }),
            Message::Assistant(assistant),
            Message::ToolResult(result),
            user("Thanks. Now summarise."),
        ]
        .into(),
        tools: Some(tools()),
    }
}

/// Drains a stream and checks the event contract (DECISIONS §9.20) on it ([`check_contract`]), so no
/// provider test can read a stream without the contract being checked.
pub async fn collect(mut stream: AssistantMessageEventStream) -> Vec<AssistantMessageEvent> {
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    check_contract(&events);
    events
}

/// Starts a mock server answering once with `response`.
pub async fn server_with(response: MockResponse) -> MockServer {
    let server = MockServer::start().await.expect("mock server");
    server.push(response);
    server
}

/// One line per event, for snapshots.
pub fn render(events: &[AssistantMessageEvent]) -> String {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let mut out = String::new();
    for event in events {
        let line = match event {
            AssistantMessageEvent::Start { .. } => "start".to_string(),
            AssistantMessageEvent::TextStart { content_index } => {
                format!("text_start[{content_index}]")
            }
            AssistantMessageEvent::TextDelta {
                content_index,
                delta,
            } => {
                format!("text_delta[{content_index}] {}", q(delta))
            }
            AssistantMessageEvent::TextEnd {
                content_index,
                content,
            } => {
                format!("text_end[{content_index}] {}", q(content))
            }
            AssistantMessageEvent::ThinkingStart { content_index } => {
                format!("thinking_start[{content_index}]")
            }
            AssistantMessageEvent::ThinkingDelta {
                content_index,
                delta,
            } => {
                format!("thinking_delta[{content_index}] {}", q(delta))
            }
            AssistantMessageEvent::ThinkingEnd {
                content_index,
                content,
            } => {
                format!("thinking_end[{content_index}] {}", q(content))
            }
            AssistantMessageEvent::ToolcallStart { content_index, .. } => {
                format!("toolcall_start[{content_index}]")
            }
            AssistantMessageEvent::ToolcallDelta {
                content_index,
                delta,
            } => {
                format!("toolcall_delta[{content_index}] {}", q(delta))
            }
            AssistantMessageEvent::ToolcallEnd {
                content_index,
                tool_call,
            } => format!(
                "toolcall_end[{content_index}] {} {} {}{}",
                tool_call.id,
                tool_call.name,
                tool_call.arguments,
                tool_call
                    .arguments_error
                    .as_deref()
                    .map(|e| format!(" argumentsError={}", q(e)))
                    .unwrap_or_default()
            ),
            AssistantMessageEvent::Done { reason, .. } => format!("done {}", reason.as_str()),
            AssistantMessageEvent::Error { reason, error } => format!(
                "error {}: {}",
                reason.as_str(),
                error.error_message.as_deref().unwrap_or("<none>")
            ),
            // A kind added after these snapshots: its pi name, so a snapshot shows it.
            other => other.type_name().to_string(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The final message with run-dependent fields (timestamp, durationMs, generated ids) fixed.
pub fn stable(message: &AssistantMessage) -> Value {
    let mut m = message.clone();
    m.timestamp = 0.into();
    assert!(m.duration_ms.is_some(), "final message carries durationMs");
    m.duration_ms = None;
    serde_json::to_value(&m).expect("serialize")
}

pub fn final_message(events: &[AssistantMessageEvent]) -> &AssistantMessage {
    events
        .last()
        .and_then(AssistantMessageEvent::final_message)
        .expect("terminal event")
}

/// Checks the event contract (DECISIONS §9.20) and returns the final message.
pub fn check_contract(events: &[AssistantMessageEvent]) -> AssistantMessage {
    assert!(!events.is_empty(), "no events");
    let terminals = events.iter().filter(|e| e.is_terminal()).count();
    assert_eq!(
        terminals,
        1,
        "exactly one terminal event:\n{}",
        render(events)
    );
    assert!(
        events
            .last()
            .is_some_and(AssistantMessageEvent::is_terminal),
        "terminal last"
    );
    let last = final_message(events).clone();
    match events.last() {
        Some(AssistantMessageEvent::Done { reason, message }) => {
            assert!(matches!(
                reason,
                StopReason::Stop | StopReason::Length | StopReason::ToolUse
            ));
            assert_eq!(*reason, message.stop_reason);
            assert!(message.error_message.is_none());
        }
        Some(AssistantMessageEvent::Error { reason, error }) => {
            assert!(matches!(reason, StopReason::Error | StopReason::Aborted));
            assert_eq!(*reason, error.stop_reason);
            assert!(error
                .error_message
                .as_deref()
                .is_some_and(|m| !m.is_empty()));
        }
        _ => unreachable!(),
    }
    if events.len() == 1 {
        // A lone error: request setup failed before any response.
        assert!(last.content.is_empty());
        return last;
    }
    assert!(
        matches!(events[0], AssistantMessageEvent::Start { .. }),
        "start first"
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, AssistantMessageEvent::Start { .. }))
            .count(),
        1
    );
    // Per index: start, then deltas, then end.
    let mut state: Vec<u8> = Vec::new(); // 0 unseen, 1 open, 2 closed
    for event in &events[1..events.len() - 1] {
        let (index, phase) = match event {
            AssistantMessageEvent::TextStart { content_index }
            | AssistantMessageEvent::ThinkingStart { content_index }
            | AssistantMessageEvent::ToolcallStart { content_index, .. } => (*content_index, 0),
            AssistantMessageEvent::TextDelta { content_index, .. }
            | AssistantMessageEvent::ThinkingDelta { content_index, .. }
            | AssistantMessageEvent::ToolcallDelta { content_index, .. } => (*content_index, 1),
            AssistantMessageEvent::TextEnd { content_index, .. }
            | AssistantMessageEvent::ThinkingEnd { content_index, .. }
            | AssistantMessageEvent::ToolcallEnd { content_index, .. } => (*content_index, 2),
            other => panic!("unexpected mid-stream event {other:?}"),
        };
        if state.len() <= index {
            state.resize(index + 1, 0);
        }
        match phase {
            0 => {
                assert_eq!(state[index], 0, "block {index} started twice");
                assert_eq!(
                    index,
                    state.iter().filter(|s| **s > 0).count(),
                    "indices in order"
                );
                state[index] = 1;
            }
            1 => assert_eq!(state[index], 1, "delta outside open block {index}"),
            _ => {
                assert_eq!(state[index], 1, "end of block {index} that is not open");
                state[index] = 2;
            }
        }
    }
    if matches!(events.last(), Some(AssistantMessageEvent::Done { .. })) {
        assert!(
            state.iter().all(|s| *s == 2),
            "all blocks closed before done"
        );
        assert_eq!(state.len(), last.content.len());
        // Rebuilding the partial from the events yields the final content.
        let mut acc = MessageAccumulator::new();
        for event in &events[..events.len() - 1] {
            acc.apply(event);
        }
        assert_eq!(
            without_signatures(&acc.partial().content),
            without_signatures(&last.content),
            "accumulated content = final content"
        );
    }
    last
}

pub fn body_of(request: &RecordedRequest) -> Value {
    let body = request.json();
    assert!(body.is_object(), "request body is JSON");
    body
}

/// Content without provider replay metadata (which events do not carry).
fn without_signatures(content: &[ContentBlock]) -> Vec<ContentBlock> {
    content
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => text_block(&t.text),
            ContentBlock::Thinking(t) => ContentBlock::Thinking(ThinkingContent {
                thinking: t.thinking.clone(),
                ..ThinkingContent::default()
            }),
            other => other.clone(),
        })
        .collect()
}
