//! The transcript widget rendered through ratatui's `TestBackend`: every message kind, live
//! streaming, the two toggles, narrow and colourless terminals, and incremental layout.

use arbor_agent::agent::AgentEvent;
use arbor_agent::agent::ToolOutput;
use arbor_agent::message::AgentMessage;
use arbor_ai::types::{AssistantMessage, StopReason, ToolCall};
use arbor_ai::AssistantMessageEvent as Ev;
use arbor_coding_agent::tui::theme::Theme;
use arbor_coding_agent::tui::transcript::{NoticeKind, TranscriptView};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;
use serde_json::{json, Value};

use super::fixture;

fn msg(v: Value) -> AgentMessage {
    serde_json::from_value(v).expect("a valid agent message")
}

fn assistant(content: Value) -> AgentMessage {
    msg(json!({
        "role": "assistant", "content": content, "api": "faux", "provider": "faux",
        "model": "faux-1", "stopReason": "stop", "timestamp": 1
    }))
}

fn tool_result(id: &str, name: &str, text: &str, is_error: bool, details: Value) -> AgentMessage {
    let mut v = json!({
        "role": "toolResult", "toolCallId": id, "toolName": name,
        "content": [{"type": "text", "text": text}], "isError": is_error, "timestamp": 1
    });
    if !details.is_null() {
        v["details"] = details;
    }
    msg(v)
}

fn draw(t: &mut TranscriptView, width: u16, height: u16) -> Buffer {
    let mut term = Terminal::new(TestBackend::new(width, height)).unwrap();
    term.draw(|f| t.render(f.area(), f.buffer_mut())).unwrap();
    term.backend().buffer().clone()
}

/// The frame's text, trailing spaces and trailing empty rows removed.
fn text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut rows: Vec<String> = (0..area.height)
        .map(|y| {
            let mut row = String::new();
            for x in 0..area.width {
                row.push_str(buf[(x, y)].symbol());
            }
            row.trim_end().to_owned()
        })
        .collect();
    while rows.last().is_some_and(String::is_empty) {
        rows.pop();
    }
    rows.join("\n")
}

fn frame(t: &mut TranscriptView, width: u16, height: u16) -> String {
    text(&draw(t, width, height))
}

const MARKDOWN: &str = "## Plan\n\nI will **fix** the `parse` bug, see [the docs](https://example.com/docs) and <https://example.com>.\n\n1. Read the file\n2. Change it\n   - keep *tests* green\n   - nested ~~old~~ item\n3. Run tests\n\n> Quoted advice that is long enough to wrap onto the next line of the terminal window.\n\n```rust\nfn main() {\n\tprintln!(\"hi\");\n}\n```\n\n---\n\n| Tool | Lines |\n|------|-------|\n| read | 12 |\n| bash | 3 |\n";

/// One message of every kind along an active path.
fn every_kind() -> Vec<AgentMessage> {
    let diff = "  1 fn parse() {\n- 2     old();\n+ 2     new();\n  3 }";
    let long_output: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    vec![
        msg(json!({"role": "user", "content": [
            {"type": "text", "text": "Please fix the parser bug in src/parse.rs"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"}
        ], "timestamp": 1})),
        assistant(json!([
            {"type": "thinking", "thinking": "The user wants a fix.\nLet me read the file first."},
            {"type": "text", "text": MARKDOWN},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "src/parse.rs", "offset": 10, "limit": 20}},
            {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "cargo test --quiet"}},
            {"type": "toolCall", "id": "c3", "name": "edit", "arguments": {"path": "src/parse.rs", "edits": [{"oldText": "old();", "newText": "new();"}]}},
            {"type": "toolCall", "id": "c4", "name": "write", "arguments": {"path": "notes.md", "content": "a\nb\n"}},
            {"type": "toolCall", "id": "c5", "name": "grep", "arguments": {"pattern": "fn parse", "path": "src", "glob": "*.rs"}},
            {"type": "toolCall", "id": "c6", "name": "lookup", "arguments": {"query": "ratatui"}}
        ])),
        tool_result("c1", "read", &long_output, false, Value::Null),
        tool_result(
            "c2",
            "bash",
            "test parse ... FAILED\n\nCommand exited with code 101",
            true,
            Value::Null,
        ),
        tool_result(
            "c3",
            "edit",
            "Successfully replaced 1 block(s) in src/parse.rs.",
            false,
            json!({"diff": diff, "firstChangedLine": 2}),
        ),
        tool_result(
            "c4",
            "write",
            "Successfully wrote to notes.md",
            false,
            Value::Null,
        ),
        tool_result("c5", "grep", "parse.rs:1: fn parse() {", false, Value::Null),
        tool_result("c6", "lookup", "found 3 crates", false, Value::Null),
        msg(
            json!({"role": "bashExecution", "command": "git status --short", "output": " M src/parse.rs\n", "exitCode": 0, "timestamp": 1}),
        ),
        msg(
            json!({"role": "bashExecution", "command": "false", "output": "", "exitCode": 1, "excludeFromContext": true, "timestamp": 1}),
        ),
        msg(
            json!({"role": "custom", "customType": "reminder", "content": "Remember to run **clippy**.", "display": true, "timestamp": 1}),
        ),
        msg(
            json!({"role": "custom", "customType": "hidden-state", "content": "never drawn", "display": false, "timestamp": 1}),
        ),
        msg(
            json!({"role": "compactionSummary", "summary": "## Goal\nFix the parser.", "tokensBefore": 123456, "timestamp": 1}),
        ),
        msg(
            json!({"role": "branchSummary", "summary": "Tried a regex approach; abandoned.", "fromId": "abc123", "timestamp": 1}),
        ),
        msg(
            json!({"role": "assistant", "content": [], "api": "faux", "provider": "faux", "model": "faux-1",
            "stopReason": "error", "errorMessage": "429 rate limited", "timestamp": 1}),
        ),
        msg(
            json!({"role": "assistant", "content": [{"type": "text", "text": "Partial ans"}], "api": "faux", "provider": "faux",
            "model": "faux-1", "stopReason": "aborted", "timestamp": 1}),
        ),
        msg(json!({"role": "futureRole", "payload": 1})),
    ]
}

fn every_kind_transcript(theme: Theme) -> TranscriptView {
    let mut t = TranscriptView::new(theme);
    t.load(&every_kind());
    t.push_notice(NoticeKind::Info, "Resumed session 4f2a");
    t.push_notice(NoticeKind::Warning, "Context is 91% full");
    t.push_notice(NoticeKind::Error, "Could not reach the provider");
    t
}

#[test]
fn every_message_kind_collapsed() {
    let mut t = every_kind_transcript(Theme::colored());
    insta::assert_snapshot!(frame(&mut t, 80, 200));
}

#[test]
fn every_message_kind_expanded_with_thinking() {
    let mut t = every_kind_transcript(Theme::colored());
    t.toggle_tools();
    t.toggle_thinking();
    insta::assert_snapshot!(frame(&mut t, 80, 220));
}

#[test]
fn every_message_kind_at_60_columns() {
    let mut t = every_kind_transcript(Theme::colored());
    insta::assert_snapshot!(frame(&mut t, 60, 220));
}

#[test]
fn styles_in_colour_and_without() {
    // The edit diff and some markdown, cell by cell with styles.
    let messages = vec![
        assistant(json!([
            {"type": "text", "text": "# Done\nUse `cargo` *now*."},
            {"type": "toolCall", "id": "e", "name": "edit", "arguments": {"path": "a.rs"}}
        ])),
        tool_result(
            "e",
            "edit",
            "ok",
            false,
            json!({"diff": "- 1 old\n+ 1 new"}),
        ),
    ];
    let mut colour = TranscriptView::new(Theme::colored());
    colour.load(&messages);
    insta::assert_debug_snapshot!("styles_colour", draw(&mut colour, 30, 7));
    let mut mono = TranscriptView::new(Theme::monochrome());
    mono.load(&messages);
    insta::assert_debug_snapshot!("styles_no_color", draw(&mut mono, 30, 7));
}

#[test]
fn monochrome_frames_carry_no_colour() {
    let mut t = every_kind_transcript(Theme::monochrome());
    t.toggle_tools();
    let buf = draw(&mut t, 80, 200);
    for cell in buf.content() {
        assert_eq!(
            cell.fg,
            ratatui::style::Color::Reset,
            "cell {:?}",
            cell.symbol()
        );
        assert_eq!(
            cell.bg,
            ratatui::style::Color::Reset,
            "cell {:?}",
            cell.symbol()
        );
    }
    // Inline code keeps its backticks when colour cannot mark it.
    assert!(text(&buf).contains("`parse`"));
}

fn start_assistant() -> AgentEvent {
    AgentEvent::MessageStart {
        message: AgentMessage::Llm(arbor_ai::types::Message::Assistant(AssistantMessage {
            api: "faux".into(),
            provider: "faux".into(),
            model: "faux-1".into(),
            stop_reason: StopReason::Pending,
            ..AssistantMessage::default()
        })),
    }
}

fn delta(i: usize, s: &str) -> AgentEvent {
    AgentEvent::MessageUpdate {
        assistant_message_event: Ev::TextDelta {
            content_index: i,
            delta: s.to_owned(),
        },
    }
}

fn update(e: Ev) -> AgentEvent {
    AgentEvent::MessageUpdate {
        assistant_message_event: e,
    }
}

#[test]
fn streaming_assistant_mid_delta_and_live_bash() {
    let mut t = TranscriptView::new(Theme::colored());
    let user = msg(json!({"role": "user", "content": "List the files", "timestamp": 1}));
    t.apply(&AgentEvent::AgentStart);
    t.apply(&AgentEvent::MessageStart {
        message: user.clone(),
    });
    t.apply(&AgentEvent::MessageEnd { message: user });
    t.apply(&start_assistant());
    t.apply(&update(Ev::ThinkingStart { content_index: 0 }));
    t.apply(&update(Ev::ThinkingDelta {
        content_index: 0,
        delta: "ls will do".into(),
    }));
    t.apply(&update(Ev::TextStart { content_index: 1 }));
    for piece in ["Here are ", "the **files", "** in the `src` fo"] {
        t.apply(&delta(1, piece));
    }
    let mid = frame(&mut t, 60, 12);
    t.apply(&update(Ev::ToolcallStart {
        content_index: 2,
        id: String::new(),
        tool_name: String::new(),
    }));
    t.apply(&update(Ev::ToolcallDelta {
        content_index: 2,
        delta: "{\"command\":".into(),
    }));
    let preparing = frame(&mut t, 60, 12);
    let call = ToolCall::new("b1", "bash", json!({"command": "ls -1 src"}));
    t.apply(&update(Ev::ToolcallEnd {
        content_index: 2,
        tool_call: call,
    }));
    t.apply(&AgentEvent::ToolExecutionStart {
        tool_call_id: "b1".into(),
        tool_name: "bash".into(),
        args: json!({"command": "ls -1 src"}),
    });
    for partial in ["main.rs\n", "main.rs\nlib.rs\n"] {
        t.apply(&AgentEvent::ToolExecutionUpdate {
            tool_call_id: "b1".into(),
            tool_name: "bash".into(),
            args: json!({"command": "ls -1 src"}),
            partial_result: ToolOutput::text(partial),
        });
    }
    let running = frame(&mut t, 60, 12);
    t.apply(&AgentEvent::ToolExecutionEnd {
        tool_call_id: "b1".into(),
        tool_name: "bash".into(),
        result: ToolOutput::text("main.rs\nlib.rs\ntui.rs"),
        is_error: false,
        duration_ms: None,
    });
    let done = frame(&mut t, 60, 12);
    insta::assert_snapshot!(format!(
        "--- mid delta\n{mid}\n--- tool call streaming\n{preparing}\n--- bash running\n{running}\n--- bash done\n{done}"
    ));
}

#[test]
fn message_end_replaces_the_streamed_text_with_the_final_message() {
    let mut t = TranscriptView::new(Theme::colored());
    t.apply(&start_assistant());
    t.apply(&update(Ev::TextStart { content_index: 0 }));
    t.apply(&delta(0, "draf"));
    assert!(frame(&mut t, 40, 5).contains("draf"));
    let final_msg = assistant(json!([
        {"type": "text", "text": "final answer"},
        {"type": "toolCall", "id": "r", "name": "read", "arguments": {"path": "x.rs"}}
    ]));
    t.apply(&AgentEvent::MessageEnd { message: final_msg });
    let f = frame(&mut t, 40, 6);
    assert!(f.contains("final answer"), "{f}");
    assert!(!f.contains("draf"), "{f}");
    // The call the stream never announced still gets its item.
    assert!(f.contains("◌ read x.rs"), "{f}");
}

/// Items of `n` turns: user, assistant with thinking and a call, its result.
fn turns(n: usize) -> Vec<AgentMessage> {
    let mut out = Vec::new();
    for i in 0..n {
        out.push(msg(
            json!({"role": "user", "content": format!("question {i}"), "timestamp": 1}),
        ));
        out.push(assistant(json!([
            {"type": "thinking", "thinking": "hmm"},
            {"type": "text", "text": format!("answer **{i}** with `code`")},
            {"type": "toolCall", "id": format!("t{i}"), "name": "read", "arguments": {"path": "f.rs"}}
        ])));
        out.push(tool_result(
            &format!("t{i}"),
            "read",
            "a\nb\nc\nd\ne\nf\ng",
            false,
            Value::Null,
        ));
    }
    out
}

#[test]
fn a_delta_lays_out_only_the_streaming_item() {
    let mut t = TranscriptView::new(Theme::colored());
    t.load(&turns(200));
    frame(&mut t, 80, 30);
    let first = t.layout_count();
    // Lazy from the bottom (DECISIONS §23.100): only the items of two screens at the end.
    assert!(
        (2..=60).contains(&first),
        "the first frame lays out the bottom items only: {first}"
    );
    assert_eq!(t.laid_out_items() as u64, first);
    frame(&mut t, 80, 30);
    assert_eq!(
        t.layout_count(),
        first,
        "an unchanged frame lays out nothing"
    );

    t.apply(&start_assistant());
    t.apply(&update(Ev::TextStart { content_index: 0 }));
    frame(&mut t, 80, 30);
    let before = t.layout_count();
    for (n, piece) in ["one ", "two ", "three"].iter().enumerate() {
        t.apply(&delta(0, piece));
        frame(&mut t, 80, 30);
        assert_eq!(t.layout_count(), before + n as u64 + 1, "delta {n}");
    }

    // A tool update touches only its call.
    let call = ToolCall::new("live", "bash", json!({"command": "make"}));
    t.apply(&update(Ev::ToolcallEnd {
        content_index: 1,
        tool_call: call,
    }));
    frame(&mut t, 80, 30);
    let before = t.layout_count();
    t.apply(&AgentEvent::ToolExecutionUpdate {
        tool_call_id: "live".into(),
        tool_name: "bash".into(),
        args: json!({}),
        partial_result: ToolOutput::text("building"),
    });
    frame(&mut t, 80, 30);
    assert_eq!(t.layout_count(), before + 1);

    // Ctrl+T re-lays out only the items with thinking near the view; Ctrl+O only the
    // collapsible ones there; the rest wait until they scroll into view.
    let before = t.layout_count();
    t.toggle_thinking();
    frame(&mut t, 80, 30);
    let thinking = t.layout_count() - before;
    assert!((1..=20).contains(&thinking), "{thinking}");
    let before = t.layout_count();
    t.toggle_tools();
    frame(&mut t, 80, 30);
    let tools = t.layout_count() - before;
    assert!((1..=21).contains(&tools), "{tools}");
    // Scrolling to the top lays out the items there, not the whole transcript.
    let before = t.layout_count();
    t.scroll_to_top();
    let top = frame(&mut t, 80, 30);
    assert!(top.lines().nth(1).unwrap().contains("question 0"), "{top}");
    assert!(t.layout_count() - before <= 30);
    assert!(t.laid_out_items() < 200);
}

#[test]
fn scrolling_stops_following_and_resumes_at_the_bottom() {
    let mut t = TranscriptView::new(Theme::colored());
    t.load(&turns(50));
    t.apply(&start_assistant());
    t.apply(&update(Ev::TextStart { content_index: 0 }));
    t.apply(&delta(0, "streaming tail"));
    let bottom = frame(&mut t, 60, 10);
    assert!(bottom.contains("streaming tail"), "{bottom}");
    assert!(t.follows_bottom());

    t.scroll_page_up();
    assert!(!t.follows_bottom());
    let scrolled = frame(&mut t, 60, 10);
    assert_ne!(scrolled, bottom);
    assert!(scrolled.ends_with(" ↓ 9 more rows"), "{scrolled}");
    // New output does not move a scrolled view; the hint counts it.
    t.apply(&delta(0, "\n\nmore\n\nand more"));
    let grown = frame(&mut t, 60, 10);
    let above_hint = |f: &str| f.lines().take(9).collect::<Vec<_>>().join("\n");
    assert_eq!(above_hint(&grown), above_hint(&scrolled));
    assert!(grown.ends_with(" ↓ 13 more rows"), "{grown}");

    t.scroll_up(3);
    t.scroll_down(3);
    assert_eq!(frame(&mut t, 60, 10), grown);
    t.scroll_page_down();
    t.scroll_page_down();
    assert!(t.follows_bottom());
    assert!(frame(&mut t, 60, 10).contains("and more"));

    t.scroll_to_top();
    let top = frame(&mut t, 60, 10);
    assert!(top.lines().nth(1).unwrap().contains("question 0"), "{top}");
    t.scroll_to_bottom();
    assert!(t.follows_bottom());
}

#[test]
fn clear_empties_the_view() {
    let mut t = every_kind_transcript(Theme::colored());
    frame(&mut t, 80, 20);
    t.clear();
    assert!(t.is_empty());
    assert_eq!(frame(&mut t, 80, 20), "");
    assert_eq!(t.total_rows(), 0);
}

#[tokio::test]
async fn a_resumed_pi_session_with_summaries() {
    let path = fixture(
        "pi-sessions",
        "v3-generated-branches-labels-branchsummary-compaction.pi-1.6.0.jsonl",
    );
    let projected = arbor_coding_agent::store::context_json(&path, None)
        .await
        .unwrap();
    let mut t = TranscriptView::new(Theme::colored());
    t.load(projected.context.messages.iter());
    t.toggle_tools();
    insta::assert_snapshot!(frame(&mut t, 100, 200));
}

/// The events of pi's own RPC log (`  ev {...}` lines) as harness events, plus the messages
/// each run reported at its `agent_end`. The capture cuts lines at about 400 characters; cut
/// lines do not parse and are skipped.
fn pi_rpc_events(name: &str) -> (Vec<AgentEvent>, Vec<AgentMessage>) {
    let text = std::fs::read_to_string(fixture("pi-streams", name)).unwrap();
    let mut events = Vec::new();
    let mut finished = Vec::new();
    let output = |v: &Value| -> ToolOutput { serde_json::from_value(v.clone()).unwrap() };
    for line in text.lines() {
        let Some(json) = line.strip_prefix("  ev ") else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<Value>(json) else {
            continue;
        };
        let s = |k: &str| v[k].as_str().unwrap().to_owned();
        let event = match v["type"].as_str().unwrap() {
            "agent_start" => AgentEvent::AgentStart,
            "turn_start" => AgentEvent::TurnStart,
            "message_start" => AgentEvent::MessageStart {
                message: msg(v["message"].clone()),
            },
            "message_end" => AgentEvent::MessageEnd {
                message: msg(v["message"].clone()),
            },
            "message_update" => AgentEvent::MessageUpdate {
                assistant_message_event: serde_json::from_value(v["assistantMessageEvent"].clone())
                    .unwrap(),
            },
            "tool_execution_start" => AgentEvent::ToolExecutionStart {
                tool_call_id: s("toolCallId"),
                tool_name: s("toolName"),
                args: v["args"].clone(),
            },
            "tool_execution_update" => AgentEvent::ToolExecutionUpdate {
                tool_call_id: s("toolCallId"),
                tool_name: s("toolName"),
                args: v["args"].clone(),
                partial_result: output(&v["partialResult"]),
            },
            "tool_execution_end" => AgentEvent::ToolExecutionEnd {
                tool_call_id: s("toolCallId"),
                tool_name: s("toolName"),
                result: output(&v["result"]),
                is_error: v["isError"].as_bool().unwrap(),
                duration_ms: v["durationMs"].as_u64(),
            },
            "agent_end" => {
                let messages: Vec<AgentMessage> =
                    serde_json::from_value(v["messages"].clone()).unwrap();
                finished.extend(messages.iter().cloned());
                AgentEvent::AgentEnd { messages }
            }
            // Turn ends and settling change nothing the transcript draws.
            _ => continue,
        };
        events.push(event);
    }
    (events, finished)
}

#[test]
fn pis_tool_event_stream_renders_every_call() {
    // The capture lost every assistant `message_end` and `agent_end` (cut lines), so this also
    // shows that a stream whose messages never end still draws every call and result.
    let (events, finished) = pi_rpc_events("rpc-tools-transcript.pi-1.6.0.log");
    assert!(finished.is_empty());
    let mut live = TranscriptView::new(Theme::colored());
    for e in &events {
        live.apply(e);
    }
    let live_frame = frame(&mut live, 100, 400);
    let calls = live_frame.matches("\n● ").count() + live_frame.matches("\n✗ ").count();
    assert_eq!(calls, 21, "{live_frame}");
    insta::assert_snapshot!(live_frame);
}

#[test]
fn a_reused_tool_call_id_names_the_newest_call() {
    // Some providers number calls per turn, so `call_0` comes back every turn.
    let turn = |n: u32, path: &str| {
        vec![
            assistant(
                json!([{"type": "toolCall", "id": "call_0", "name": "read", "arguments": {"path": path}}]),
            ),
            tool_result(
                "call_0",
                "read",
                &format!("contents {n}"),
                false,
                Value::Null,
            ),
        ]
    };
    let messages: Vec<AgentMessage> = turn(1, "a.rs").into_iter().chain(turn(2, "b.rs")).collect();
    let mut resumed = TranscriptView::new(Theme::colored());
    resumed.load(&messages);
    let f = frame(&mut resumed, 40, 20);
    assert_eq!(
        f, "\n● read a.rs\n  contents 1\n\n● read b.rs\n  contents 2",
        "{f}"
    );

    // The same live: the second call streams under the reused id.
    let mut live = TranscriptView::new(Theme::colored());
    for (n, path) in [(1, "a.rs"), (2, "b.rs")] {
        let call = ToolCall::new("call_0", "read", json!({"path": path}));
        live.apply(&start_assistant());
        live.apply(&update(Ev::ToolcallStart {
            content_index: 0,
            id: String::new(),
            tool_name: String::new(),
        }));
        live.apply(&update(Ev::ToolcallEnd {
            content_index: 0,
            tool_call: call,
        }));
        live.apply(&AgentEvent::MessageEnd {
            message: turn(n, path).remove(0),
        });
        live.apply(&AgentEvent::ToolExecutionEnd {
            tool_call_id: "call_0".into(),
            tool_name: "read".into(),
            result: ToolOutput::text(format!("contents {n}")),
            is_error: false,
            duration_ms: None,
        });
    }
    assert_eq!(frame(&mut live, 40, 20), f);
}

/// A real image file of `w`×`h` in `format`, base64-encoded.
fn image_b64(w: u32, h: u32, format: image::ImageFormat) -> String {
    use base64::Engine;
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 90])
    });
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), format)
        .unwrap();
    base64::engine::general_purpose::STANDARD.encode(out)
}

/// DECISIONS §23.122: each image block is one line naming its type, its dimensions (read
/// from the header) and its size, in user messages and in tool results.
#[test]
fn images_show_their_type_dimensions_and_size() {
    let png = image_b64(1024, 768, image::ImageFormat::Png);
    let jpeg = image_b64(640, 480, image::ImageFormat::Jpeg);
    let messages = vec![
        msg(json!({"role": "user", "content": [
            {"type": "text", "text": "What is wrong in these screenshots?"},
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "image", "data": jpeg, "mimeType": "image/jpeg"}
        ], "timestamp": 1})),
        assistant(json!([
            {"type": "toolCall", "id": "r1", "name": "read", "arguments": {"path": "shot.png"}}
        ])),
        msg(json!({
            "role": "toolResult", "toolCallId": "r1", "toolName": "read",
            "content": [
                {"type": "text", "text": "Read image file [image/png]"},
                {"type": "image", "data": image_b64(32, 16, image::ImageFormat::Png), "mimeType": "image/png"}
            ],
            "isError": false, "timestamp": 1
        })),
        msg(json!({"role": "user", "content": [
            {"type": "image", "data": "bm90IGFuIGltYWdl", "mimeType": "image/webp"}
        ], "timestamp": 1})),
    ];
    let mut t = TranscriptView::new(Theme::monochrome());
    t.load(&messages);
    let shown = frame(&mut t, 80, 30);
    assert!(shown.contains("[image: image/png 1024×768, "), "{shown}");
    assert!(shown.contains("[image: image/jpeg 640×480, "), "{shown}");
    assert!(shown.contains("[image: image/png 32×16, "), "{shown}");
    assert!(
        shown.contains("[image: image/webp, 12 B, unreadable]"),
        "{shown}"
    );
    insta::assert_snapshot!(shown);
}

/// The rows of `t` laid out in full: one frame tall enough for everything.
fn full_rows(t: &TranscriptView, width: u16) -> (Vec<String>, usize) {
    let mut full = t.clone();
    frame(&mut full, width, 30);
    let total = full.total_rows();
    // Twice the estimate: a frame that tall lays out every item (two screens from the bottom).
    let all = frame(&mut full, width, u16::try_from(total * 2).unwrap());
    assert_eq!(full.laid_out_items(), full.len());
    let rows: Vec<String> = all.lines().map(str::to_owned).collect();
    assert!(rows.len() <= full.total_rows());
    (rows, full.total_rows())
}

/// A lazily laid out transcript scrolled page by page from the bottom to the top shows exactly
/// the rows of a full layout at every step (DECISIONS §23.100, ARCHITECTURE "lazy layout").
#[test]
fn lazy_layout_scrolls_to_the_top_through_the_same_rows_as_a_full_layout() {
    let mut t = TranscriptView::new(Theme::colored());
    let mut messages = turns(40);
    messages.insert(
        5,
        msg(json!({"role": "user", "content": MARKDOWN, "timestamp": 1})),
    );
    t.load(&messages);
    let (full, exact) = full_rows(&t, 70);
    let (view, page) = (12usize, 11usize);
    frame(&mut t, 70, view as u16);
    assert!(t.laid_out_items() < t.len() / 2, "{}", t.laid_out_items());
    let mut steps = 0;
    loop {
        t.scroll_page_up();
        let shown = frame(&mut t, 70, view as u16);
        let lines: Vec<&str> = shown.lines().collect();
        let below: usize = lines
            .last()
            .and_then(|l| l.split("↓ ").nth(1))
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        // Rows below the view were laid out on the way up, so the hint is exact.
        let top = exact - below - view;
        for (k, line) in lines.iter().take(view - 1).enumerate() {
            let want = full.get(top + k).map(String::as_str).unwrap_or("");
            assert_eq!(line.trim_end(), want.trim_end(), "step {steps}, row {k}");
        }
        steps += 1;
        if top == 0 {
            break;
        }
        assert!(steps < 1000, "never reached the top");
    }
    assert!(steps >= exact / page - 1);
    // Everything is laid out now, and the row total is exact.
    assert_eq!(t.laid_out_items(), t.len());
    assert_eq!(t.total_rows(), exact);
}

/// Home from the bottom of a lazily laid out transcript shows the first rows; a resize lays
/// out only the view again and draws what a fresh transcript at that width draws.
#[test]
fn lazy_layout_home_and_resize() {
    let mut t = TranscriptView::new(Theme::colored());
    t.load(&turns(100));
    frame(&mut t, 80, 20);
    t.scroll_to_top();
    let top = frame(&mut t, 80, 20);
    let (full, _) = full_rows(&t, 80);
    for (k, line) in top.lines().take(19).enumerate() {
        assert_eq!(line.trim_end(), full[k].trim_end(), "row {k}");
    }
    t.scroll_to_bottom();
    frame(&mut t, 80, 20);
    let before = t.layout_count();
    let narrow = frame(&mut t, 60, 20);
    assert!(
        t.layout_count() - before <= 40,
        "{}",
        t.layout_count() - before
    );
    let mut fresh = TranscriptView::new(Theme::colored());
    fresh.load(&turns(100));
    assert_eq!(narrow, frame(&mut fresh, 60, 20));
}
