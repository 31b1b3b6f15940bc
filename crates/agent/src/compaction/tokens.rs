//! Token accounting: the reference's chars/4 estimate and the context size anchored on the
//! last provider-reported usage (DECISIONS §6.2, §20.20).
//!
//! Lengths are JavaScript string lengths (UTF-16 code units, DECISIONS §6.2c) so thresholds and
//! cut points land where pi's do.

use std::collections::HashMap;

use arbor_ai::{
    AssistantMessage, Content, ContentBlock, Message, StopReason, SystemMessage, Usage,
};
use serde::Serialize;
use serde_json::Value;

use crate::compaction::js::{stringify_len, utf16_len};
use crate::compaction::settings::CompactionSettings;
use crate::message::AgentMessage;

/// Characters an image counts as (1,200 tokens).
pub const ESTIMATED_IMAGE_CHARS: usize = 4_800;

/// Context tokens of one usage record: `totalTokens` when non-zero, else the sum of its parts.
pub fn calculate_context_tokens(usage: &Usage) -> u64 {
    match usage.total_tokens {
        Some(t) if t > 0 => t,
        _ => usage.input + usage.output + usage.cache_read + usage.cache_write,
    }
}

/// The usage of an assistant message that may anchor an estimate: not aborted, not an error,
/// not all zero.
pub fn valid_usage(message: &AgentMessage) -> Option<&Usage> {
    match message {
        AgentMessage::Llm(Message::Assistant(a)) => assistant_usage(a),
        _ => None,
    }
}

fn assistant_usage(a: &AssistantMessage) -> Option<&Usage> {
    if matches!(a.stop_reason, StopReason::Aborted | StopReason::Error) {
        return None;
    }
    (calculate_context_tokens(&a.usage) > 0).then_some(&a.usage)
}

fn content_chars(content: &Content) -> usize {
    match content {
        Content::Text(s) => utf16_len(s),
        Content::Blocks(blocks) => blocks.iter().map(block_chars_user_side).sum(),
    }
}

fn block_chars_user_side(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text(t) => utf16_len(&t.text),
        ContentBlock::Image(_) => ESTIMATED_IMAGE_CHARS,
        _ => 0,
    }
}

fn system_chars(s: &SystemMessage) -> usize {
    let mut chars = content_chars(&s.content);
    if let Some(sections) = &s.sections {
        chars += sections
            .values()
            .filter_map(Value::as_str)
            .map(utf16_len)
            .sum::<usize>();
    }
    if let Some(tools) = &s.tools_added {
        chars += serde_json::to_value(tools).map_or(0, |v| stringify_len(&v));
    }
    chars
}

fn ceil_quarter(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// Estimated tokens of one message: `ceil(chars / 4)`. Images count 4,800 characters; tool
/// calls their name plus `JSON.stringify(arguments)`; unknown roles nothing.
pub fn estimate_tokens(message: &AgentMessage) -> u64 {
    let chars = match message {
        AgentMessage::Llm(Message::User(u)) => content_chars(&u.content),
        AgentMessage::Llm(Message::ToolResult(t)) => content_chars(&t.content),
        AgentMessage::Llm(Message::System(s)) => system_chars(s),
        AgentMessage::Llm(Message::Assistant(a)) => a
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::Text(t) => utf16_len(&t.text),
                ContentBlock::Thinking(t) => utf16_len(&t.thinking),
                ContentBlock::ToolCall(c) => utf16_len(&c.name) + stringify_len(&c.arguments),
                _ => 0,
            })
            .sum(),
        AgentMessage::Custom(c) => content_chars(&c.content),
        AgentMessage::BashExecution(b) => utf16_len(&b.command) + utf16_len(&b.output),
        AgentMessage::BranchSummary(b) => utf16_len(&b.summary),
        AgentMessage::CompactionSummary(c) => utf16_len(&c.summary),
        AgentMessage::Other(_) => 0,
    };
    ceil_quarter(chars)
}

/// How big a context is: the last valid usage plus estimates of what came after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextUsageEstimate {
    /// The estimate: `usage_tokens + trailing_tokens`.
    pub tokens: u64,
    /// What the last assistant message's usage reports.
    pub usage_tokens: u64,
    /// Estimated tokens of the messages after it.
    pub trailing_tokens: u64,
    /// Index of the message whose usage anchors the estimate (`None`: all estimated).
    pub last_usage_index: Option<usize>,
}

/// [`ContextUsageEstimate`] of a message list (newest valid usage + trailing estimates; no
/// usage → every message estimated).
pub fn estimate_context_tokens(messages: &[AgentMessage]) -> ContextUsageEstimate {
    let anchor = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| valid_usage(m).map(|u| (i, u)));
    match anchor {
        None => {
            let t: u64 = messages.iter().map(estimate_tokens).sum();
            ContextUsageEstimate {
                tokens: t,
                usage_tokens: 0,
                trailing_tokens: t,
                last_usage_index: None,
            }
        }
        Some((i, usage)) => {
            let usage_tokens = calculate_context_tokens(usage);
            let trailing: u64 = messages[i + 1..].iter().map(estimate_tokens).sum();
            ContextUsageEstimate {
                tokens: usage_tokens + trailing,
                usage_tokens,
                trailing_tokens: trailing,
                last_usage_index: Some(i),
            }
        }
    }
}

/// Whether a context of `context_tokens` leaves less than the reserve free (strictly greater
/// than `window − reserve`; never when disabled).
pub fn should_compact(
    context_tokens: u64,
    context_window: u64,
    settings: &CompactionSettings,
) -> bool {
    settings.enabled
        && i128::from(context_tokens)
            > i128::from(context_window) - i128::from(settings.reserve_tokens)
}

/// Estimated tokens of the system prompt state after replaying every system message in
/// `messages` (content joined by blank lines, sections patched by name, tools added/removed by
/// name); `None` when there is no system message and no tool.
pub fn current_system_tokens(messages: &[AgentMessage]) -> Option<u64> {
    let mut any = false;
    let mut content_parts: Vec<usize> = Vec::new();
    let mut sections: HashMap<String, usize> = HashMap::new();
    let mut tools: HashMap<String, usize> = HashMap::new();
    for m in messages {
        let AgentMessage::Llm(Message::System(s)) = m else {
            continue;
        };
        any = true;
        let text_len = match &s.content {
            Content::Text(t) => utf16_len(t),
            Content::Blocks(b) => {
                let texts: Vec<usize> = b
                    .iter()
                    .filter_map(|b| b.as_text().map(utf16_len))
                    .collect();
                texts.iter().sum::<usize>() + texts.len().saturating_sub(1)
            }
        };
        if text_len > 0 {
            content_parts.push(text_len);
        }
        if let Some(map) = &s.sections {
            for (name, value) in map {
                match value {
                    Value::Null => {
                        sections.remove(name);
                    }
                    v => {
                        sections.insert(name.clone(), v.as_str().map_or(0, utf16_len));
                    }
                }
            }
        }
        for removed in s.tools_removed.iter().flatten() {
            if let Some(name) = removed.get("name").and_then(Value::as_str) {
                tools.remove(name);
            }
        }
        for tool in s.tools_added.iter().flatten() {
            let len = serde_json::to_value(tool).map_or(0, |v| stringify_len(&v));
            tools.insert(tool.name.clone(), len);
        }
    }
    if !any && tools.is_empty() {
        return None;
    }
    let content = content_parts.iter().sum::<usize>() + 2 * content_parts.len().saturating_sub(1);
    let section_chars: usize = sections.values().sum();
    let tool_chars = if tools.is_empty() {
        0
    } else {
        2 + tools.values().sum::<usize>() + tools.len() - 1
    };
    Some(ceil_quarter(content + section_chars + tool_chars))
}
