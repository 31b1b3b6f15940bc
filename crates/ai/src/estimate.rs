//! The pre-request prompt-size estimate (pi-ai's `estimateContextTokens`, used to keep
//! `max_tokens` inside the context window): the newest trustworthy reported usage plus
//! character-based estimates of every message after it, or estimates of everything.
//!
//! It runs before every request, and a request carries the whole transcript, so the request
//! list keeps one [`EstimatePoint`] per message, folded as messages are appended
//! ([`crate::MessageList`]): the estimate then reads the last point and the point of the
//! anchoring reply, and measures nothing (DECISIONS §20.20). A list built in one piece has no
//! points and is measured in full, as pi does.

use crate::types::{Content, ContentBlock, Context, Message, StopReason, SystemMessage};
use crate::work::{self, Work};

const CHARS_PER_TOKEN: f64 = 3.5;
const IMAGE_CHARS: usize = 4800;

pub(crate) fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

pub(crate) fn tokens_for_chars(chars: usize) -> u64 {
    (chars as f64 / CHARS_PER_TOKEN).ceil() as u64
}

/// Characters of user/tool-result content: text blocks by length, every other block as an image.
fn content_chars(content: &Content) -> usize {
    match content {
        Content::Text(s) => utf16_len(s),
        Content::Blocks(blocks) => blocks
            .iter()
            .map(|b| match b {
                ContentBlock::Text(t) => utf16_len(&t.text),
                _ => IMAGE_CHARS,
            })
            .sum(),
    }
}

/// A system message rendered as a whole prompt: its text blocks joined by `\n`, then its
/// non-null sections, blank parts skipped, joined by blank lines (what pi estimates).
fn system_message_chars(system: &SystemMessage) -> usize {
    let mut parts: Vec<String> = vec![system.content.joined_text("\n")];
    for value in system.sections.iter().flat_map(|s| s.values()) {
        if let Some(text) = value.as_str() {
            parts.push(text.to_string());
        }
    }
    let parts: Vec<&str> = parts
        .iter()
        .map(String::as_str)
        .filter(|p| !p.is_empty())
        .collect();
    utf16_len(&parts.join("\n\n"))
}

/// Estimated tokens of one message.
fn message_tokens(message: &Message) -> u64 {
    match message {
        Message::User(u) => tokens_for_chars(content_chars(&u.content)),
        Message::ToolResult(r) => tokens_for_chars(content_chars(&r.content)),
        Message::System(s) => {
            let mut tokens = tokens_for_chars(system_message_chars(s));
            if let Some(tools) = s.tools_added.as_ref().filter(|t| !t.is_empty()) {
                tokens +=
                    tokens_for_chars(utf16_len(&serde_json::to_string(tools).unwrap_or_default()));
            }
            if let Some(tools) = s.tools_removed.as_ref().filter(|t| !t.is_empty()) {
                tokens +=
                    tokens_for_chars(utf16_len(&serde_json::to_string(tools).unwrap_or_default()));
            }
            tokens
        }
        Message::Assistant(a) => tokens_for_chars(
            a.content
                .iter()
                .map(|b| match b {
                    ContentBlock::Text(t) => utf16_len(&t.text),
                    ContentBlock::Thinking(t) => utf16_len(&t.thinking),
                    ContentBlock::ToolCall(c) => {
                        utf16_len(&c.name) + utf16_len(&c.arguments.to_string())
                    }
                    _ => 0,
                })
                .sum(),
        ),
    }
}

/// The estimate's state after a prefix of the messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EstimatePoint {
    /// The newest timestamp so far.
    latest_ts: i64,
    /// The newest trustworthy usage so far: (message index, total tokens). A reply's usage is
    /// trusted when it is not older than any message before it (a summary written later than
    /// the replies it keeps makes them stale), it did not fail, and it reports tokens.
    usage: Option<(usize, u64)>,
    /// Estimated tokens of the prefix.
    tokens: u64,
}

impl EstimatePoint {
    /// The state before any message.
    const START: EstimatePoint = EstimatePoint {
        latest_ts: i64::MIN,
        usage: None,
        tokens: 0,
    };

    /// The state after `message`, the message at `index`, following `prev` (`None`: first).
    pub(crate) fn after(prev: Option<&EstimatePoint>, index: usize, message: &Message) -> Self {
        let prev = prev.copied().unwrap_or(Self::START);
        let mut usage = prev.usage;
        if let Message::Assistant(a) = message {
            let u = &a.usage;
            let total = match u.total_tokens {
                Some(t) if t > 0 => t,
                _ => u.input + u.output + u.cache_read + u.cache_write,
            };
            if a.timestamp.get() >= prev.latest_ts
                && !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted)
                && total > 0
            {
                usage = Some((index, total));
            }
        }
        EstimatePoint {
            latest_ts: prev.latest_ts.max(message.timestamp()),
            usage,
            tokens: prev.tokens + message_tokens(message),
        }
    }
}

/// Appends the points of `messages`, which sit at `first_index` onward in their list, to
/// `points` (the points of what comes before them). Counted as estimated.
pub(crate) fn fold_points(
    points: &mut Vec<EstimatePoint>,
    messages: &[Message],
    first_index: usize,
) {
    work::add(Work::Estimated, messages.len());
    points.reserve(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let next = EstimatePoint::after(points.last(), first_index + i, m);
        points.push(next);
    }
}

/// Tokens of the system prompt and tools (counted only when no usage anchors the estimate).
fn system_tokens(context: &Context) -> u64 {
    let prompt = context.system_prompt.as_deref().unwrap_or("");
    let mut tokens = tokens_for_chars(utf16_len(prompt));
    if let Some(tools) = context.tools.as_ref().filter(|t| !t.is_empty()) {
        tokens += tokens_for_chars(utf16_len(&serde_json::to_string(tools).unwrap_or_default()));
    }
    tokens
}

/// Estimated prompt size of a request: the last trustworthy reported usage plus estimates of
/// what follows it, or estimates of everything (the system prompt and tools included).
///
/// O(1) on a list whose points were folded as it grew; one pass over the messages otherwise.
pub fn estimate_context_tokens(context: &Context) -> u64 {
    let messages = &context.messages;
    let folded;
    let points = match messages.points() {
        Some(p) => p,
        None => {
            let mut p = Vec::new();
            fold_points(&mut p, messages, 0);
            folded = p;
            &folded
        }
    };
    let Some(last) = points.last() else {
        return system_tokens(context);
    };
    match last.usage {
        Some((index, total)) => total + (last.tokens - points[index].tokens),
        None => system_tokens(context) + last.tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{AssistantMessage, UserMessage};
    use crate::MessageList;

    fn user(text: &str, ts: i64) -> Message {
        Message::User(UserMessage {
            content: Content::Text(text.into()),
            timestamp: ts.into(),
            extra: Default::default(),
        })
    }

    fn reply(text: &str, ts: i64, input: u64) -> Message {
        let mut a = AssistantMessage {
            content: vec![ContentBlock::text(text)],
            stop_reason: StopReason::Stop,
            timestamp: ts.into(),
            ..AssistantMessage::default()
        };
        a.usage.input = input;
        Message::Assistant(a)
    }

    /// The same messages estimated from a list built in one piece (a full pass) and from one
    /// grown message by message (folded points), under every truncation.
    #[test]
    fn folded_points_agree_with_a_full_pass() {
        let all = vec![
            user("hello there", 10),
            reply("hi", 11, 100),
            user("a longer question about something", 12),
            reply("stale", 5, 900),
            user("x", 13),
            reply("fine", 20, 300),
            user("trailing text after the last usage", 21),
        ];
        for keep in 0..=all.len() {
            let whole = Context {
                messages: MessageList::from(all[..keep].to_vec()),
                ..Context::default()
            };
            let mut grown = MessageList::default();
            for m in &all {
                grown.push(m.clone());
            }
            grown.truncate(keep);
            assert_eq!(grown.points().is_some(), keep > 0);
            let grown = Context {
                messages: grown,
                ..Context::default()
            };
            assert_eq!(
                estimate_context_tokens(&whole),
                estimate_context_tokens(&grown),
                "first {keep} messages"
            );
        }
    }

    #[test]
    fn a_stale_usage_is_not_trusted() {
        // The reply at ts 5 follows a message of ts 12: its usage is ignored, the one before
        // anchors the estimate.
        let ctx = Context {
            messages: MessageList::from(vec![
                user("q", 10),
                reply("hi", 11, 100),
                user("abcd", 12),
                reply("late", 5, 900),
            ]),
            ..Context::default()
        };
        // 100 + ceil(4/3.5) + ceil(4/3.5)
        assert_eq!(estimate_context_tokens(&ctx), 104);
    }
}
