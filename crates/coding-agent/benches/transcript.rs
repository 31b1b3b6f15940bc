//! The interactive transcript on a 5,000-message session: the first frame (every item laid
//! out), a frame with nothing changed, one streamed text delta plus its frame (what a keystroke
//! or a token costs while a response streams), Ctrl+T, and a resize.
//!
//! `cargo bench -p arbor-coding-agent --bench transcript -- --warm-up-time 1 --measurement-time 3`
//!
//! The messages are the real ones of `v3-migrated-from-v1-large-session` (user prompts,
//! markdown answers, thinking, tool calls and results, edit diffs) repeated to 5,000.

#![allow(clippy::expect_used)]

use arbor_agent::agent::AgentEvent;
use arbor_agent::message::AgentMessage;
use arbor_ai::types::{AssistantMessage, Message, StopReason};
use arbor_ai::AssistantMessageEvent as Ev;
use arbor_coding_agent::tui::theme::Theme;
use arbor_coding_agent::tui::transcript::TranscriptView;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

const MESSAGES: usize = 5_000;

fn messages() -> Vec<AgentMessage> {
    let path = arbor_test_support::fixtures::fixture(
        "pi-sessions",
        "v3-migrated-from-v1-large-session.pi-1.6.0.jsonl",
    );
    let text = std::fs::read_to_string(&path).expect("the fixture session");
    let mut base = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        if v["type"] == "message" {
            let m: AgentMessage = serde_json::from_value(v["message"].clone()).expect("a message");
            if !matches!(m, AgentMessage::Llm(Message::System(_))) {
                base.push(m);
            }
        }
    }
    base.iter().cycle().take(MESSAGES).cloned().collect()
}

fn streaming(t: &mut TranscriptView) {
    t.apply(&AgentEvent::MessageStart {
        message: AgentMessage::Llm(Message::Assistant(AssistantMessage {
            stop_reason: StopReason::Pending,
            ..AssistantMessage::default()
        })),
    });
    t.apply(&AgentEvent::MessageUpdate {
        assistant_message_event: Ev::TextStart { content_index: 0 },
    });
    // A typical answer so far: a few paragraphs, a list and a code block.
    let so_far = "Here is what I found.\n\n- the parser drops **trailing** input\n- `lex` is fine\n\n```rust\nfn parse(s: &str) -> Ast {\n    todo()\n}\n```\n\nNext I will ".repeat(4);
    t.apply(&AgentEvent::MessageUpdate {
        assistant_message_event: Ev::TextDelta {
            content_index: 0,
            delta: so_far,
        },
    });
}

fn bench(c: &mut Criterion) {
    let messages = messages();
    let area = Rect::new(0, 0, 120, 40);
    let mut buf = Buffer::empty(area);
    let mut g = c.benchmark_group("transcript_5000");

    g.bench_function("first_frame", |b| {
        b.iter_batched(
            || TranscriptView::new(Theme::colored()),
            |mut t| {
                t.load(&messages);
                t.render(area, &mut buf);
                t
            },
            BatchSize::LargeInput,
        );
    });

    let mut ready = TranscriptView::new(Theme::colored());
    ready.load(&messages);
    streaming(&mut ready);
    ready.render(area, &mut buf);

    g.bench_function("frame_unchanged", |b| {
        let mut t = ready.clone();
        b.iter(|| t.render(area, &mut buf));
    });

    g.bench_function("text_delta_and_frame", |b| {
        b.iter_batched(
            || ready.clone(),
            |mut t| {
                t.apply(&AgentEvent::MessageUpdate {
                    assistant_message_event: Ev::TextDelta {
                        content_index: 0,
                        delta: "check the tokenizer ".to_owned(),
                    },
                });
                t.render(area, &mut buf);
                t
            },
            BatchSize::LargeInput,
        );
    });

    g.bench_function("toggle_thinking_and_frame", |b| {
        b.iter_batched(
            || ready.clone(),
            |mut t| {
                t.toggle_thinking();
                t.render(area, &mut buf);
                t
            },
            BatchSize::LargeInput,
        );
    });

    g.bench_function("resize_frame", |b| {
        let narrow = Rect::new(0, 0, 100, 40);
        let mut nbuf = Buffer::empty(narrow);
        b.iter_batched(
            || ready.clone(),
            |mut t| {
                t.render(narrow, &mut nbuf);
                t
            },
            BatchSize::LargeInput,
        );
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
