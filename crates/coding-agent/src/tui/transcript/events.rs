//! Live agent events applied to the transcript. Each event touches at most the items it names
//! (the streaming message, one tool call), so a delta re-lays out one item (DECISIONS §23.41);
//! which event does what: DECISIONS §23.52.

use arbor_agent::agent::AgentEvent;
use arbor_agent::message::AgentMessage;
use arbor_agent::session::entry::EntryKind;
use arbor_ai::types::{Message, StopReason};
use arbor_ai::AssistantMessageEvent as Ev;

use super::item::{
    body_of, AssistantView, Body, NoticeKind, Part, ToolOutputView, ToolState, ToolView,
};
use super::{Streaming, TranscriptView};

pub(super) fn apply(t: &mut TranscriptView, event: &AgentEvent) {
    match event {
        AgentEvent::MessageStart { message } => message_start(t, message),
        AgentEvent::MessageUpdate {
            assistant_message_event,
        } => message_update(t, assistant_message_event),
        AgentEvent::MessageEnd { message } => message_end(t, message),
        AgentEvent::ToolExecutionStart {
            tool_call_id,
            tool_name,
            args,
        } => {
            let i = t.tool_item(tool_call_id, tool_name);
            if let Some(Body::Tool(v)) = t.items.get_mut(i).map(|it| &mut it.body) {
                v.args.clone_from(args);
                v.state = ToolState::Running;
            }
            t.touch(i);
        }
        AgentEvent::ToolExecutionUpdate {
            tool_call_id,
            tool_name,
            partial_result,
            ..
        } => {
            let i = t.tool_item(tool_call_id, tool_name);
            if let Some(Body::Tool(v)) = t.items.get_mut(i).map(|it| &mut it.body) {
                v.output = Some(ToolOutputView::from_output(partial_result));
                v.state = ToolState::Running;
            }
            t.touch(i);
        }
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            tool_name,
            result,
            is_error,
            ..
        } => t.finish_tool(
            tool_call_id,
            tool_name,
            ToolOutputView::from_output(result),
            *is_error,
        ),
        AgentEvent::AgentEnd { .. } => {
            if let Some(s) = t.streaming.take() {
                if let Some(Body::Assistant(a)) = t.items.get_mut(s.item).map(|it| &mut it.body) {
                    a.streaming = false;
                }
                t.touch(s.item);
            }
            t.open = None;
        }
        AgentEvent::SessionCompact {
            compaction_entry, ..
        } => {
            if let EntryKind::Compaction(c) = &compaction_entry.kind {
                t.push(Body::Compaction {
                    summary: c.summary.clone(),
                    tokens_before: c.tokens_before,
                });
            }
        }
        // Every compaction that started ends with one line (DECISIONS §23.174).
        AgentEvent::CompactionEnd(end) => {
            if end.aborted {
                t.push_notice(NoticeKind::Warning, "Compaction aborted");
            } else if let Some(e) = end.error.as_deref().filter(|e| {
                [
                    arbor_agent::harness::NOTHING_TO_COMPACT,
                    arbor_agent::harness::ALREADY_COMPACTED,
                ]
                .contains(e)
            }) {
                // Nothing to do is not a failure (DECISIONS §23.174).
                t.push_notice(NoticeKind::Info, e);
            } else if let Some(e) = &end.error {
                t.push_notice(
                    NoticeKind::Error,
                    format!("Compaction failed: {}", crate::notices::bare(e)),
                );
            } else if let Some(r) = &end.result {
                t.push_notice(
                    NoticeKind::Info,
                    format!(
                        "Compacted the session: {} tokens summarized, about {} left",
                        super::layout::thousands(r.tokens_before),
                        super::layout::thousands(r.estimated_tokens_after)
                    ),
                );
            }
        }
        AgentEvent::RetryScheduled {
            operation,
            attempt,
            max_attempts,
            delay_ms,
            error_message,
        } => {
            let what = match operation {
                arbor_agent::agent::RetryOperation::Compaction => "compaction",
                arbor_agent::agent::RetryOperation::BranchSummary => "branch summary",
            };
            t.push_notice(
                NoticeKind::Warning,
                format!(
                    "Retrying {what} (attempt {attempt}/{max_attempts}) in {:.1}s: {error_message}",
                    *delay_ms as f64 / 1000.0
                ),
            );
        }
        // The rest is footer and navigation state, or shown through the events above: after
        // `session_tree` the app reloads the new path with `load`.
        _ => {}
    }
}

fn message_start(t: &mut TranscriptView, message: &AgentMessage) {
    match message {
        AgentMessage::Llm(Message::Assistant(a)) => {
            let item = t.push(Body::Assistant(AssistantView::from_message(a, true)));
            t.streaming = Some(Streaming {
                item,
                tools: Vec::new(),
            });
        }
        AgentMessage::Llm(Message::ToolResult(_)) => t.push_message(message),
        other => {
            if let Some(body) = body_of(other) {
                let i = t.push(body);
                t.open = Some(i);
            }
        }
    }
}

fn message_end(t: &mut TranscriptView, message: &AgentMessage) {
    match message {
        AgentMessage::Llm(Message::Assistant(a)) => {
            let Some(s) = t.streaming.take() else {
                t.push_message(message);
                return;
            };
            if let Some(item) = t.items.get_mut(s.item) {
                item.body = Body::Assistant(AssistantView::from_message(a, false));
            }
            t.touch(s.item);
            // Calls the stream never finished (or a provider that sent none) get their item now.
            for (content_index, call) in a.content.iter().enumerate().filter_map(|(i, b)| match b {
                arbor_ai::types::ContentBlock::ToolCall(c) => Some((i, c)),
                _ => None,
            }) {
                let streamed = s
                    .tools
                    .iter()
                    .find(|(ci, _)| *ci == content_index)
                    .map(|(_, it)| *it);
                // A call already has an item when it was streamed, or when an earlier event of
                // this message created it (its item then lies after the message's own).
                let known = t.tools.get(&call.id).is_some_and(|&i| i > s.item);
                match streamed {
                    Some(i) => set_call(t, i, call),
                    None if !known => {
                        let i = t.push(Body::Tool(ToolView::from_call(call)));
                        t.tools.insert(call.id.clone(), i);
                    }
                    None => {}
                }
            }
            // A stream that stopped before finishing a call leaves no dangling placeholder.
            if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
                for (_, i) in &s.tools {
                    if let Some(Body::Tool(v)) = t.items.get_mut(*i).map(|it| &mut it.body) {
                        if v.state == ToolState::Streaming {
                            v.state = ToolState::Failed;
                        }
                    }
                    t.touch(*i);
                }
            }
        }
        AgentMessage::Llm(Message::ToolResult(_)) => t.push_message(message),
        other => match (t.open.take(), body_of(other)) {
            (Some(i), Some(body)) => {
                if let Some(item) = t.items.get_mut(i) {
                    item.body = body;
                }
                t.touch(i);
            }
            (None, Some(body)) => {
                t.push(body);
            }
            (_, None) => {}
        },
    }
}

fn set_call(t: &mut TranscriptView, i: usize, call: &arbor_ai::types::ToolCall) {
    if let Some(Body::Tool(v)) = t.items.get_mut(i).map(|it| &mut it.body) {
        v.id.clone_from(&call.id);
        v.name.clone_from(&call.name);
        v.args.clone_from(&call.arguments);
        if v.state == ToolState::Streaming {
            v.state = ToolState::Pending;
        }
    }
    t.tools.insert(call.id.clone(), i);
    t.touch(i);
}

fn message_update(t: &mut TranscriptView, event: &Ev) {
    let Some(s) = &mut t.streaming else {
        return;
    };
    let item = s.item;
    match event {
        Ev::ToolcallStart { content_index, .. } => {
            let i = t.push(Body::Tool(ToolView {
                id: String::new(),
                name: String::new(),
                args: serde_json::Value::Object(Default::default()),
                streamed_bytes: 0,
                state: ToolState::Streaming,
                output: None,
            }));
            if let Some(s) = &mut t.streaming {
                s.tools.push((*content_index, i));
            }
            return;
        }
        Ev::ToolcallDelta {
            content_index,
            delta,
        } => {
            if let Some(&(_, i)) = s.tools.iter().find(|(ci, _)| ci == content_index) {
                if let Some(Body::Tool(v)) = t.items.get_mut(i).map(|it| &mut it.body) {
                    v.streamed_bytes += delta.len();
                }
                t.touch(i);
            }
            return;
        }
        Ev::ToolcallEnd {
            content_index,
            tool_call,
        } => {
            let found = s
                .tools
                .iter()
                .find(|(ci, _)| ci == content_index)
                .map(|(_, i)| *i);
            match found {
                Some(i) => set_call(t, i, tool_call),
                None => {
                    let i = t.push(Body::Tool(ToolView::from_call(tool_call)));
                    t.tools.insert(tool_call.id.clone(), i);
                    if let Some(s) = &mut t.streaming {
                        s.tools.push((*content_index, i));
                    }
                }
            }
            return;
        }
        _ => {}
    }
    let Some(Body::Assistant(a)) = t.items.get_mut(item).map(|it| &mut it.body) else {
        return;
    };
    match event {
        Ev::Start { partial } => *a = AssistantView::from_message(partial, true),
        Ev::TextStart { content_index } => set_part(a, *content_index, Part::Text(String::new())),
        Ev::TextDelta {
            content_index,
            delta,
        } => match part(a, *content_index, || Part::Text(String::new())) {
            Part::Text(s) => s.push_str(delta),
            Part::Thinking { .. } => {}
        },
        Ev::TextEnd {
            content_index,
            content,
        } => set_part(a, *content_index, Part::Text(content.clone())),
        Ev::ThinkingStart { content_index } => set_part(
            a,
            *content_index,
            Part::Thinking {
                text: String::new(),
                redacted: false,
            },
        ),
        Ev::ThinkingDelta {
            content_index,
            delta,
        } => {
            let make = || Part::Thinking {
                text: String::new(),
                redacted: false,
            };
            if let Part::Thinking { text, .. } = part(a, *content_index, make) {
                text.push_str(delta);
            }
        }
        Ev::ThinkingEnd {
            content_index,
            content,
        } => {
            let make = || Part::Thinking {
                text: String::new(),
                redacted: false,
            };
            if let Part::Thinking { text, .. } = part(a, *content_index, make) {
                text.clone_from(content);
            }
        }
        Ev::Done { message, .. } | Ev::Error { error: message, .. } => {
            *a = AssistantView::from_message(message, true);
        }
        // Tool calls are drawn from their own events; kinds a later `arbor-ai` adds
        // (`AssistantMessageEvent` is non-exhaustive) change nothing on screen.
        _ => {}
    }
    t.touch(item);
}

fn part(a: &mut AssistantView, index: usize, make: impl FnOnce() -> Part) -> &mut Part {
    let pos = match a.parts.iter().rposition(|(i, _)| *i == index) {
        Some(p) => p,
        None => {
            a.parts.push((index, make()));
            a.parts.len() - 1
        }
    };
    &mut a.parts[pos].1
}

fn set_part(a: &mut AssistantView, index: usize, value: Part) {
    match a.parts.iter().rposition(|(i, _)| *i == index) {
        Some(p) => a.parts[p].1 = value,
        None => a.parts.push((index, value)),
    }
}
