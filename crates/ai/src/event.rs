//! The streaming event protocol shared by every provider client.
//!
//! pi hands each event the same live, mutated `partial` message. Cloning the message into every
//! delta would make streaming quadratic, so Rust events carry only what changed;
//! [`MessageAccumulator`] rebuilds the live partial for consumers that want it (UIs, JSON mode).
//!
//! Contract (checked by the provider tests): `start` comes only after the response headers
//! arrived; blocks are announced by `*_start`, grown by `*_delta`, closed by `*_end`, each with
//! the block's index in the message content; exactly one terminal `done` or `error` ends the
//! stream. Failures after the stream was returned are `error` events, never panics.

use std::pin::Pin;

use futures::Stream;
use serde::{Deserialize, Serialize};

use crate::types::{
    AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall,
};

/// An event of one streamed assistant response.
// Messages are built and matched far more often than moved; boxing would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AssistantMessageEvent {
    /// Headers arrived; `partial` is the empty message being built (api, provider, model set).
    Start {
        #[serde(with = "tagged_assistant")]
        /// The empty message being built.
        partial: AssistantMessage,
    },
    /// A text block starts.
    TextStart {
        #[serde(rename = "contentIndex")]
        /// Index of the block in the message content.
        content_index: usize,
    },
    /// More text of a text block.
    TextDelta {
        #[serde(rename = "contentIndex")]
        /// Index of the block in the message content.
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// A text block is complete; `content` is its whole text.
    TextEnd {
        #[serde(rename = "contentIndex")]
        /// Index of the block in the message content.
        content_index: usize,
        /// The block's complete text.
        content: String,
    },
    /// A thinking block starts.
    ThinkingStart {
        #[serde(rename = "contentIndex")]
        /// Index of the block in the message content.
        content_index: usize,
    },
    /// More reasoning text of a thinking block.
    ThinkingDelta {
        #[serde(rename = "contentIndex")]
        /// Index of the block in the message content.
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// A thinking block is complete; `content` is its whole text.
    ThinkingEnd {
        #[serde(rename = "contentIndex")]
        /// Index of the block in the message content.
        content_index: usize,
        /// The block's complete text.
        content: String,
    },
    /// A tool call starts.
    #[serde(rename = "toolcall_start")]
    ToolcallStart {
        #[serde(rename = "contentIndex")]
        /// Index of the block in the message content.
        content_index: usize,
        /// The call's id and tool name, known when it starts. Not part of pi-ai's event (not
        /// serialized); pi's RPC and JSON modes add them to `toolcall_start`.
        #[serde(skip_serializing, default)]
        id: String,
        #[serde(skip_serializing, default)]
        /// The called tool's name (see `id`).
        tool_name: String,
    },
    /// `delta` is a raw fragment of the arguments' JSON text.
    #[serde(rename = "toolcall_delta")]
    ToolcallDelta {
        #[serde(rename = "contentIndex")]
        /// Index of the block in the message content.
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// The final, strictly parsed (not schema-validated) tool call.
    #[serde(rename = "toolcall_end")]
    ToolcallEnd {
        #[serde(rename = "contentIndex")]
        /// Index of the block in the message content.
        content_index: usize,
        #[serde(rename = "toolCall", with = "tagged_tool_call")]
        /// The complete call.
        tool_call: ToolCall,
    },
    /// Success: `reason` is `stop`, `length`, `toolUse` or `deferred`.
    Done {
        /// Why the response ended.
        reason: StopReason,
        #[serde(with = "tagged_assistant")]
        /// The final message.
        message: AssistantMessage,
    },
    /// Failure: `reason` is `error` or `aborted`; `error` holds the partial content and
    /// `errorMessage`.
    Error {
        /// `error` or `aborted`.
        reason: StopReason,
        #[serde(with = "tagged_assistant")]
        /// The message as far as it got, with `errorMessage`.
        error: AssistantMessage,
    },
}

/// Event payloads are written as pi writes them: a tool call with its `type: "toolCall"` and a
/// message with its `role: "assistant"` (consumers of JSON/RPC output dispatch on those tags).
/// Reading accepts them with or without the tag.
fn untagged<'de, D: serde::Deserializer<'de>, T: serde::de::DeserializeOwned>(
    d: D,
    key: &str,
) -> Result<T, D::Error> {
    let mut map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
    map.remove(key);
    serde_json::from_value(serde_json::Value::Object(map)).map_err(serde::de::Error::custom)
}

mod tagged_tool_call {
    use super::*;

    pub fn serialize<S: serde::Serializer>(inner: &ToolCall, s: S) -> Result<S::Ok, S::Error> {
        crate::json::TypeTagged {
            tag: "toolCall",
            inner,
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ToolCall, D::Error> {
        untagged(d, "type")
    }
}

mod tagged_assistant {
    use super::*;

    pub fn serialize<S: serde::Serializer>(
        inner: &AssistantMessage,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        crate::json::RoleTagged {
            role: "assistant",
            inner,
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<AssistantMessage, D::Error> {
        untagged(d, "role")
    }
}

impl AssistantMessageEvent {
    /// Whether this is the stream's last event (`done` or `error`).
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            AssistantMessageEvent::Done { .. } | AssistantMessageEvent::Error { .. }
        )
    }

    /// The event's `type` name as pi writes it.
    pub fn type_name(&self) -> &'static str {
        match self {
            AssistantMessageEvent::Start { .. } => "start",
            AssistantMessageEvent::TextStart { .. } => "text_start",
            AssistantMessageEvent::TextDelta { .. } => "text_delta",
            AssistantMessageEvent::TextEnd { .. } => "text_end",
            AssistantMessageEvent::ThinkingStart { .. } => "thinking_start",
            AssistantMessageEvent::ThinkingDelta { .. } => "thinking_delta",
            AssistantMessageEvent::ThinkingEnd { .. } => "thinking_end",
            AssistantMessageEvent::ToolcallStart { .. } => "toolcall_start",
            AssistantMessageEvent::ToolcallDelta { .. } => "toolcall_delta",
            AssistantMessageEvent::ToolcallEnd { .. } => "toolcall_end",
            AssistantMessageEvent::Done { .. } => "done",
            AssistantMessageEvent::Error { .. } => "error",
        }
    }

    /// The final message of a terminal event.
    pub fn final_message(&self) -> Option<&AssistantMessage> {
        match self {
            AssistantMessageEvent::Done { message, .. } => Some(message),
            AssistantMessageEvent::Error { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// The stream every provider returns.
pub type AssistantMessageEventStream = Pin<Box<dyn Stream<Item = AssistantMessageEvent> + Send>>;

/// Rebuilds pi's live `partial` message from events.
///
/// Tool-call arguments stay as the raw JSON text seen so far (available through
/// [`MessageAccumulator::tool_arguments_text`]) until `toolcall_end` supplies the parsed call.
#[derive(Debug, Default, Clone)]
pub struct MessageAccumulator {
    partial: AssistantMessage,
    arguments_text: Vec<(usize, String)>,
    finished: bool,
}

impl MessageAccumulator {
    /// An accumulator before any event.
    pub fn new() -> Self {
        Self::default()
    }

    /// The message as built so far (the final message once a terminal event was applied).
    pub fn partial(&self) -> &AssistantMessage {
        &self.partial
    }

    /// Whether a terminal event was applied.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Best-effort parse of the arguments streamed so far for the tool call at `content_index`
    /// (what pi keeps in the live partial's `arguments`), computed on demand so that a long
    /// argument stream is not re-parsed on every delta.
    pub fn tool_arguments_partial(&self, content_index: usize) -> Option<serde_json::Value> {
        self.tool_arguments_text(content_index)
            .map(crate::json_stream::parse_partial_json)
    }

    /// Raw argument JSON streamed so far for the tool call at `content_index`.
    pub fn tool_arguments_text(&self, content_index: usize) -> Option<&str> {
        self.arguments_text
            .iter()
            .find(|(i, _)| *i == content_index)
            .map(|(_, s)| s.as_str())
    }

    /// The block at `index`, created with `make` when the stream reaches a new index.
    fn slot(&mut self, index: usize, make: impl FnOnce() -> ContentBlock) -> &mut ContentBlock {
        let content = &mut self.partial.content;
        while content.len() < index {
            // Only a misbehaving provider skips an index; keep positions stable regardless.
            content.push(ContentBlock::text(""));
        }
        if content.len() == index {
            content.push(make());
        }
        &mut content[index]
    }

    /// Starts a block: whatever stood at `index` is replaced.
    fn start_block(&mut self, index: usize, block: ContentBlock) {
        *self.slot(index, || ContentBlock::text("")) = block;
    }

    /// Applies one event. Events after a terminal one are ignored.
    pub fn apply(&mut self, event: &AssistantMessageEvent) {
        if self.finished {
            return;
        }
        match event {
            AssistantMessageEvent::Start { partial } => self.partial = partial.clone(),
            AssistantMessageEvent::TextStart { content_index } => {
                self.start_block(*content_index, ContentBlock::text(""));
            }
            AssistantMessageEvent::TextDelta {
                content_index,
                delta,
            } => {
                if let ContentBlock::Text(t) = self.slot(*content_index, || ContentBlock::text(""))
                {
                    t.text.push_str(delta);
                }
            }
            AssistantMessageEvent::TextEnd {
                content_index,
                content,
            } => match self.slot(*content_index, || ContentBlock::text("")) {
                ContentBlock::Text(t) => t.text.clone_from(content),
                other => {
                    *other = ContentBlock::Text(TextContent {
                        text: content.clone(),
                        ..TextContent::default()
                    })
                }
            },
            AssistantMessageEvent::ThinkingStart { content_index } => {
                self.start_block(*content_index, thinking_block());
            }
            AssistantMessageEvent::ThinkingDelta {
                content_index,
                delta,
            } => {
                if let ContentBlock::Thinking(t) = self.slot(*content_index, thinking_block) {
                    t.thinking.push_str(delta);
                }
            }
            AssistantMessageEvent::ThinkingEnd {
                content_index,
                content,
            } => {
                if let ContentBlock::Thinking(t) = self.slot(*content_index, thinking_block) {
                    t.thinking.clone_from(content);
                }
            }
            AssistantMessageEvent::ToolcallStart { content_index, .. } => {
                self.start_block(*content_index, pending_tool_call());
                self.arguments_text.retain(|(i, _)| i != content_index);
                self.arguments_text.push((*content_index, String::new()));
            }
            AssistantMessageEvent::ToolcallDelta {
                content_index,
                delta,
            } => {
                self.slot(*content_index, pending_tool_call);
                match self
                    .arguments_text
                    .iter_mut()
                    .find(|(i, _)| i == content_index)
                {
                    Some((_, text)) => text.push_str(delta),
                    None => self.arguments_text.push((*content_index, delta.clone())),
                }
            }
            AssistantMessageEvent::ToolcallEnd {
                content_index,
                tool_call,
            } => {
                *self.slot(*content_index, pending_tool_call) =
                    ContentBlock::ToolCall(tool_call.clone());
            }
            AssistantMessageEvent::Done { message, .. }
            | AssistantMessageEvent::Error { error: message, .. } => {
                self.partial = message.clone();
                self.finished = true;
            }
        }
    }
}

fn thinking_block() -> ContentBlock {
    ContentBlock::Thinking(ThinkingContent::default())
}

fn pending_tool_call() -> ContentBlock {
    ContentBlock::ToolCall(ToolCall::new(
        "",
        "",
        serde_json::Value::Object(Default::default()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accumulator_rebuilds_partial_tool_arguments() {
        let mut acc = MessageAccumulator::new();
        acc.apply(&AssistantMessageEvent::Start {
            partial: AssistantMessage::default(),
        });
        acc.apply(&AssistantMessageEvent::TextStart { content_index: 0 });
        acc.apply(&AssistantMessageEvent::TextDelta {
            content_index: 0,
            delta: "Hel".into(),
        });
        acc.apply(&AssistantMessageEvent::TextDelta {
            content_index: 0,
            delta: "lo".into(),
        });
        acc.apply(&AssistantMessageEvent::ToolcallStart {
            content_index: 1,
            id: String::new(),
            tool_name: String::new(),
        });
        acc.apply(&AssistantMessageEvent::ToolcallDelta {
            content_index: 1,
            delta: r#"{"path": "src/ma"#.into(),
        });
        assert_eq!(acc.partial().text(), "Hello");
        assert_eq!(
            acc.tool_arguments_partial(1),
            Some(serde_json::json!({"path": "src/ma"}))
        );
        let call = ToolCall::new("c1", "read", serde_json::json!({"path": "src/main.rs"}));
        acc.apply(&AssistantMessageEvent::ToolcallEnd {
            content_index: 1,
            tool_call: call.clone(),
        });
        assert_eq!(acc.partial().tool_calls().next(), Some(&call));
        assert!(!acc.is_finished());
        let mut done = acc.partial().clone();
        done.stop_reason = StopReason::ToolUse;
        acc.apply(&AssistantMessageEvent::Done {
            reason: StopReason::ToolUse,
            message: done.clone(),
        });
        assert!(acc.is_finished());
        acc.apply(&AssistantMessageEvent::TextStart { content_index: 2 });
        assert_eq!(
            acc.partial(),
            &done,
            "events after the terminal one are ignored"
        );
    }
}
