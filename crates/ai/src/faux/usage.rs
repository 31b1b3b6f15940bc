//! The usage estimate of a faux reply: the prompt rendered as text (≈ 4 characters per token)
//! with a simulated prompt cache per session.

use std::collections::HashMap;

use crate::types::{Content, ContentBlock, Context, Message, Usage};

use super::script::FauxStreamOptions;

/// Length in UTF-16 code units, the unit pi's estimates count.
fn js_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Usage estimate: ⌈chars/4⌉ of the rendered prompt as input and of the reply as output;
/// with a session and caching on, the prompt is split into read (common prefix with the
/// session's previous prompt) and written parts, and `input` is 0.
pub(super) fn estimate_usage(
    prompt_cache: &mut HashMap<String, Vec<String>>,
    prompt: &[String],
    output_text: &str,
    options: &FauxStreamOptions,
) -> Usage {
    let prompt_tokens = joined_len(prompt, prompt.len()).div_ceil(4) as u64;
    let output = js_len(output_text).div_ceil(4) as u64;
    let mut usage = Usage::zero();
    usage.input = prompt_tokens;
    usage.output = output;
    if let (Some(session), true) = (&options.session_id, options.cache) {
        match prompt_cache.get(session) {
            Some(previous) => {
                let cached = common_prompt_prefix_len(previous, prompt).div_ceil(4) as u64;
                usage.cache_read = cached;
                usage.cache_write = prompt_tokens.saturating_sub(cached);
            }
            None => usage.cache_write = prompt_tokens,
        }
        usage.input = 0;
        prompt_cache.insert(session.clone(), prompt.to_vec());
    }
    usage.total_tokens = Some(usage.input + usage.output + usage.cache_read + usage.cache_write);
    usage
}

/// Length of the first `count` parts joined with blank lines.
fn joined_len(parts: &[String], count: usize) -> usize {
    let separators = count.saturating_sub(1) * 2;
    separators + parts[..count].iter().map(|p| js_len(p)).sum::<usize>()
}

/// Common prefix length of two joined prompts: equal leading parts whole, then characters.
fn common_prompt_prefix_len(previous: &[String], current: &[String]) -> usize {
    let mut index = 0;
    while index < previous.len() && index < current.len() && previous[index] == current[index] {
        index += 1;
    }
    let rest = |parts: &[String]| -> Vec<u16> {
        if index == parts.len() {
            return Vec::new();
        }
        let mut s = String::new();
        if index > 0 {
            s.push_str("\n\n");
        }
        s.push_str(&parts[index..].join("\n\n"));
        s.encode_utf16().collect()
    };
    let (a, b) = (rest(previous), rest(current));
    let common = a.iter().zip(b.iter()).take_while(|(x, y)| x == y).count();
    joined_len(previous, index) + common
}

/// One text per message (`role:text`), as the usage estimate sees the prompt. A system prompt
/// and tools form a leading system message, like pi's transcript normalisation.
pub(super) fn render_prompt(context: &Context) -> Vec<String> {
    let mut out = Vec::with_capacity(context.messages.len() + 1);
    let prompt = context.system_prompt.clone().unwrap_or_default();
    let tools = context.tools.as_deref().unwrap_or_default();
    if !prompt.is_empty() || !tools.is_empty() {
        let mut parts = Vec::new();
        if !prompt.is_empty() {
            parts.push(prompt);
        }
        for tool in tools {
            parts.push(format!(
                "tool+:{}",
                serde_json::to_string(tool).unwrap_or_default()
            ));
        }
        out.push(format!("system:{}", parts.join("\n")));
    }
    for message in &context.messages {
        out.push(match message {
            Message::System(s) => {
                let mut parts = vec![s.content.joined_text("\n")];
                for text in s.sections.iter().flat_map(|m| m.values()) {
                    if let Some(t) = text.as_str() {
                        parts.push(t.to_string());
                    }
                }
                let mut text: Vec<String> = vec![parts
                    .into_iter()
                    .filter(|p| !p.is_empty())
                    .collect::<Vec<_>>()
                    .join("\n\n")];
                for removed in s.tools_removed.iter().flatten() {
                    text.push(format!("tool-:{removed}"));
                }
                for added in s.tools_added.iter().flatten() {
                    text.push(format!(
                        "tool+:{}",
                        serde_json::to_string(added).unwrap_or_default()
                    ));
                }
                let text: Vec<String> = text.into_iter().filter(|p| !p.is_empty()).collect();
                format!("system:{}", text.join("\n"))
            }
            Message::User(u) => format!("user:{}", user_text(&u.content)),
            Message::Assistant(a) => format!("assistant:{}", assistant_text(&a.content)),
            Message::ToolResult(r) => {
                let mut parts = vec![r.tool_name.clone()];
                match &r.content {
                    Content::Text(t) => parts.push(t.clone()),
                    Content::Blocks(blocks) => {
                        parts.extend(blocks.iter().map(user_text_block));
                    }
                }
                format!("toolResult:{}", parts.join("\n"))
            }
        });
    }
    out
}

fn user_text(content: &Content) -> String {
    match content {
        Content::Text(t) => t.clone(),
        Content::Blocks(blocks) => blocks
            .iter()
            .map(user_text_block)
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn user_text_block(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!("[image:{}:{}]", i.mime_type, js_len(&i.data)),
        other => assistant_text(std::slice::from_ref(other)),
    }
}

/// Assistant content as the estimate sees it: text, thinking, `name:args` per tool call.
pub(super) fn assistant_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Thinking(t) => t.thinking.clone(),
            ContentBlock::ToolCall(tc) => format!(
                "{}:{}",
                tc.name,
                serde_json::to_string(&tc.arguments).unwrap_or_default()
            ),
            ContentBlock::Image(i) => format!("[image:{}:{}]", i.mime_type, js_len(&i.data)),
            ContentBlock::Unknown(_) => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}
