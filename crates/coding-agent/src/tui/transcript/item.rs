//! What the transcript shows, one item per visible thing: the UI's own model, built from
//! harness data (agent messages and events) and holding only what it draws.

use arbor_agent::agent::ToolOutput;
use arbor_agent::message::AgentMessage;
use arbor_ai::types::{AssistantMessage, Content, ContentBlock, Message, StopReason, ToolCall};
use ratatui::text::Line;
use serde_json::Value;

/// How loud a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    Info,
    Warning,
    Error,
}

/// A part of an assistant message the transcript draws itself (tool calls become their own
/// items right after the message).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    Text(String),
    Thinking { text: String, redacted: bool },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AssistantView {
    /// `(content index, part)`: deltas address blocks by their index in the message.
    pub parts: Vec<(usize, Part)>,
    pub stop: StopReason,
    pub error: Option<String>,
    pub streaming: bool,
}

impl AssistantView {
    pub(crate) fn from_message(m: &AssistantMessage, streaming: bool) -> Self {
        let parts = m
            .content
            .iter()
            .enumerate()
            .filter_map(|(i, b)| match b {
                ContentBlock::Text(t) => Some((i, Part::Text(t.text.clone()))),
                ContentBlock::Thinking(t) => Some((
                    i,
                    Part::Thinking {
                        text: t.thinking.clone(),
                        redacted: t.redacted == Some(true),
                    },
                )),
                _ => None,
            })
            .collect();
        AssistantView {
            parts,
            stop: m.stop_reason,
            error: m.error_message.clone(),
            streaming,
        }
    }

    pub(crate) fn has_thinking(&self) -> bool {
        self.parts
            .iter()
            .any(|(_, p)| matches!(p, Part::Thinking { .. }))
    }
}

/// Where a tool call is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolState {
    /// The model is still streaming the call's arguments.
    Streaming,
    /// Called, no result yet.
    Pending,
    Running,
    Done,
    Failed,
}

/// A tool's visible output: text, one label per image, and the edit diff from `details.diff`.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ToolOutputView {
    pub text: String,
    /// [`crate::tui::image_label::label`] of each image block.
    pub images: Vec<String>,
    pub diff: Option<String>,
}

impl ToolOutputView {
    fn from_blocks<'a>(
        blocks: impl IntoIterator<Item = &'a ContentBlock>,
        details: Option<&Value>,
    ) -> Self {
        let mut text = String::new();
        let mut images = Vec::new();
        for b in blocks {
            match b {
                ContentBlock::Text(t) => {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&t.text);
                }
                ContentBlock::Image(i) => images.push(crate::tui::image_label::label(i)),
                _ => {}
            }
        }
        let diff = details
            .and_then(|d| d.get("diff"))
            .and_then(Value::as_str)
            .filter(|d| !d.is_empty())
            .map(str::to_owned);
        ToolOutputView { text, images, diff }
    }

    pub(crate) fn from_output(out: &ToolOutput) -> Self {
        Self::from_blocks(&out.content, out.details.as_ref())
    }

    pub(crate) fn from_content(content: &Content, details: Option<&Value>) -> Self {
        match content {
            Content::Text(s) => ToolOutputView {
                text: s.clone(),
                ..Self::from_blocks([], details)
            },
            Content::Blocks(b) => Self::from_blocks(b, details),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolView {
    pub id: String,
    pub name: String,
    pub args: Value,
    /// Bytes of argument JSON received while the call streams.
    pub streamed_bytes: usize,
    pub state: ToolState,
    pub output: Option<ToolOutputView>,
}

impl ToolView {
    pub(crate) fn from_call(call: &ToolCall) -> Self {
        ToolView {
            id: call.id.clone(),
            name: call.name.clone(),
            args: call.arguments.clone(),
            streamed_bytes: 0,
            state: ToolState::Pending,
            output: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BashView {
    pub command: String,
    pub output: String,
    pub exit_code: Option<i64>,
    pub cancelled: bool,
    pub truncated: bool,
    pub full_output_path: Option<String>,
    pub excluded: bool,
}

/// One thing in the transcript.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Body {
    User {
        text: String,
        /// One label per image block.
        images: Vec<String>,
    },
    Assistant(AssistantView),
    Tool(ToolView),
    Bash(BashView),
    /// `display: false` custom messages are kept (their position matters) but draw nothing.
    Custom {
        kind: String,
        text: String,
        display: bool,
    },
    Notice {
        kind: NoticeKind,
        text: String,
    },
    Compaction {
        summary: String,
        tokens_before: u64,
    },
    BranchSummary {
        summary: String,
    },
    /// A role this version does not know.
    Unknown {
        role: String,
    },
}

impl Body {
    /// Whether Ctrl+T changes how this item looks.
    pub(crate) fn uses_thinking(&self) -> bool {
        matches!(self, Body::Assistant(a) if a.has_thinking())
    }

    /// Whether Ctrl+O changes how this item looks.
    pub(crate) fn uses_tools(&self) -> bool {
        matches!(
            self,
            Body::Tool(_) | Body::Bash(_) | Body::Compaction { .. } | Body::BranchSummary { .. }
        )
    }
}

/// What a cached layout was made for; flags an item does not use are left false, so toggling
/// them keeps its cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LayoutKey {
    pub width: u16,
    pub thinking: bool,
    pub tools: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub body: Body,
    pub cache: Option<(LayoutKey, Vec<Line<'static>>)>,
}

impl Item {
    pub(crate) fn new(body: Body) -> Self {
        Item { body, cache: None }
    }

    pub(crate) fn key(&self, width: u16, thinking: bool, tools: bool) -> LayoutKey {
        LayoutKey {
            width,
            thinking: thinking && self.body.uses_thinking(),
            tools: tools && self.body.uses_tools(),
        }
    }
}

/// Text of user-visible content, with a label per image.
pub(crate) fn content_text(content: &Content) -> (String, Vec<String>) {
    match content {
        Content::Text(s) => (s.clone(), Vec::new()),
        Content::Blocks(blocks) => {
            let mut text = String::new();
            let mut images = Vec::new();
            for b in blocks {
                match b {
                    ContentBlock::Text(t) => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(&t.text);
                    }
                    ContentBlock::Image(i) => images.push(crate::tui::image_label::label(i)),
                    _ => {}
                }
            }
            (text, images)
        }
    }
}

/// The item a non-assistant, non-tool-result message becomes (`None`: nothing to show, e.g.
/// a system prompt).
pub(crate) fn body_of(message: &AgentMessage) -> Option<Body> {
    Some(match message {
        AgentMessage::Llm(Message::User(u)) => {
            let (text, images) = content_text(&u.content);
            Body::User { text, images }
        }
        AgentMessage::Llm(Message::Assistant(a)) => {
            Body::Assistant(AssistantView::from_message(a, false))
        }
        AgentMessage::Llm(Message::ToolResult(_)) | AgentMessage::Llm(Message::System(_)) => {
            return None
        }
        AgentMessage::Custom(c) => Body::Custom {
            kind: c.custom_type.clone(),
            text: content_text(&c.content).0,
            display: c.display,
        },
        AgentMessage::BashExecution(b) => Body::Bash(BashView {
            command: b.command.clone(),
            output: b.output.clone(),
            exit_code: b.exit_code,
            cancelled: b.cancelled,
            truncated: b.truncated,
            full_output_path: b.full_output_path.clone(),
            excluded: b.exclude_from_context == Some(true),
        }),
        AgentMessage::BranchSummary(s) => Body::BranchSummary {
            summary: s.summary.clone(),
        },
        AgentMessage::CompactionSummary(c) => Body::Compaction {
            summary: c.summary.clone(),
            tokens_before: c.tokens_before,
        },
        AgentMessage::Other(map) => Body::Unknown {
            role: map
                .get("role")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        },
    })
}
