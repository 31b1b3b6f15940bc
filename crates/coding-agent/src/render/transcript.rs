//! The readable transcript of a projected context: what the model would be sent, one section per
//! message, with tool calls, tool results and summaries spelled out.
//!
//! By default bulky parts are shortened (thinking to one line, tool results to a few lines, tool
//! arguments to a few hundred characters) so a long session stays skimmable; `full` prints all.

use std::fmt::Write as _;

use arbor_agent::message::AgentMessage;
use arbor_ai::types::{Content, ContentBlock, Message, StopReason};

use super::text::{preview, size_note};

/// The derived state shown above the messages.
#[derive(Debug, Clone, Default)]
pub struct TranscriptHeader {
    pub session_id: String,
    pub location: String,
    pub leaf_id: Option<String>,
    /// `provider/model`.
    pub model: Option<String>,
    pub thinking_level: String,
    /// `None`: no restriction recorded (all tools).
    pub active_tools: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct TranscriptOptions {
    /// Print thinking, tool results and tool arguments in full.
    pub full: bool,
}

const TOOL_RESULT_LINES: usize = 20;
const TOOL_RESULT_CHARS: usize = 2000;
const TOOL_ARGS_CHARS: usize = 400;
const THINKING_PREVIEW: usize = 80;

/// Renders the header and every model-visible message.
pub fn render(
    header: &TranscriptHeader,
    messages: &[AgentMessage],
    opts: TranscriptOptions,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "session {}  ({})", header.session_id, header.location);
    let tools = match &header.active_tools {
        None => "all".to_string(),
        Some(names) if names.is_empty() => "none".to_string(),
        Some(names) => names.join(", "),
    };
    let _ = writeln!(
        out,
        "leaf {} · model {} · thinking {} · tools {}",
        header.leaf_id.as_deref().unwrap_or("(none)"),
        header.model.as_deref().unwrap_or("(none)"),
        header.thinking_level,
        tools
    );
    let visible: Vec<&AgentMessage> = messages.iter().filter(|m| is_model_visible(m)).collect();
    let _ = writeln!(
        out,
        "{} message{}",
        visible.len(),
        if visible.len() == 1 { "" } else { "s" }
    );
    for (i, message) in visible.iter().enumerate() {
        out.push('\n');
        render_message(&mut out, i + 1, message, opts);
    }
    out
}

/// `convert_to_llm` drops `!!` bash executions and roles it does not know.
fn is_model_visible(message: &AgentMessage) -> bool {
    match message {
        AgentMessage::BashExecution(b) => b.exclude_from_context != Some(true),
        AgentMessage::Other(_) => false,
        _ => true,
    }
}

fn render_message(out: &mut String, n: usize, message: &AgentMessage, opts: TranscriptOptions) {
    match message {
        AgentMessage::Llm(Message::User(m)) => {
            let _ = writeln!(out, "### {n}. user");
            render_content(out, &m.content, opts, None);
        }
        AgentMessage::Llm(Message::System(m)) => {
            let _ = writeln!(out, "### {n}. system");
            let sections = m.sections.as_ref().filter(|s| !s.is_empty());
            if !(m.content.is_empty() && sections.is_some()) {
                render_content(out, &m.content, opts, None);
            }
            for (name, value) in sections.into_iter().flatten() {
                let text = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_string);
                if opts.full {
                    let _ = writeln!(out, "[section {name}]");
                    write_text(out, &text, None);
                } else {
                    let _ = writeln!(
                        out,
                        "[section {name}: {} ({})]",
                        preview(&text, THINKING_PREVIEW),
                        size_note(&text)
                    );
                }
            }
            if let Some(added) = &m.tools_added {
                let names: Vec<&str> = added.iter().map(|t| t.name.as_str()).collect();
                let _ = writeln!(out, "[tools added: {}]", names.join(", "));
            }
            if let Some(removed) = &m.tools_removed {
                let names: Vec<String> = removed
                    .iter()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                    .collect();
                let _ = writeln!(out, "[tools removed: {}]", names.join(", "));
            }
        }
        AgentMessage::Llm(Message::Assistant(m)) => {
            let mut head = format!("### {n}. assistant ({}/{}", m.provider, m.model);
            if m.stop_reason != StopReason::Stop {
                let _ = write!(head, ", stop: {}", m.stop_reason.as_str());
            }
            head.push(')');
            let _ = writeln!(out, "{head}");
            if let Some(err) = &m.error_message {
                let _ = writeln!(out, "[error: {}]", preview(err, 200));
            }
            render_blocks(out, &m.content, opts, None);
        }
        AgentMessage::Llm(Message::ToolResult(m)) => {
            let _ = writeln!(
                out,
                "### {n}. tool result {} [{}]{}",
                m.tool_name,
                m.tool_call_id,
                if m.is_error { " (error)" } else { "" }
            );
            let limit = (!opts.full).then_some(TOOL_RESULT_LINES);
            render_content(out, &m.content, opts, limit);
        }
        AgentMessage::Custom(m) => {
            let _ = writeln!(out, "### {n}. custom {} (sent as user)", m.custom_type);
            render_content(out, &m.content, opts, None);
        }
        AgentMessage::BashExecution(m) => {
            let status = match (m.cancelled, m.exit_code) {
                (true, _) => "cancelled".to_string(),
                (false, Some(code)) => format!("exit {code}"),
                (false, None) => "no exit code".to_string(),
            };
            let _ = writeln!(out, "### {n}. bash execution ({status}, sent as user)");
            let _ = writeln!(out, "$ {}", m.command);
            let limit = (!opts.full).then_some(TOOL_RESULT_LINES);
            write_text(out, &m.output, limit);
            if m.truncated {
                let _ = writeln!(
                    out,
                    "[output truncated{}]",
                    m.full_output_path
                        .as_deref()
                        .map(|p| format!("; full output in {p}"))
                        .unwrap_or_default()
                );
            }
        }
        AgentMessage::BranchSummary(m) => {
            let _ = writeln!(
                out,
                "### {n}. branch summary (from {}, sent as user)",
                m.from_id
            );
            write_text(out, &m.summary, None);
        }
        AgentMessage::CompactionSummary(m) => {
            let _ = writeln!(
                out,
                "### {n}. compaction summary ({} tokens before, sent as user)",
                m.tokens_before
            );
            write_text(out, &m.summary, None);
        }
        AgentMessage::Other(map) => {
            let role = map.get("role").and_then(|v| v.as_str()).unwrap_or("?");
            let _ = writeln!(out, "### {n}. {role} (unknown role)");
        }
    }
}

fn render_content(
    out: &mut String,
    content: &Content,
    opts: TranscriptOptions,
    limit: Option<usize>,
) {
    match content {
        Content::Text(s) => write_text(out, s, limit),
        Content::Blocks(blocks) => render_blocks(out, blocks, opts, limit),
    }
}

fn render_blocks(
    out: &mut String,
    blocks: &[ContentBlock],
    opts: TranscriptOptions,
    limit: Option<usize>,
) {
    if blocks.is_empty() {
        let _ = writeln!(out, "(empty)");
    }
    for block in blocks {
        match block {
            ContentBlock::Text(t) => write_text(out, &t.text, limit),
            ContentBlock::Thinking(t) => {
                if t.redacted == Some(true) {
                    let _ = writeln!(out, "[thinking: redacted]");
                } else if opts.full {
                    let _ = writeln!(out, "[thinking]");
                    write_text(out, &t.thinking, None);
                    let _ = writeln!(out, "[/thinking]");
                } else {
                    let _ = writeln!(
                        out,
                        "[thinking: {} ({})]",
                        preview(&t.thinking, THINKING_PREVIEW),
                        size_note(&t.thinking)
                    );
                }
            }
            ContentBlock::Image(img) => {
                // Base64 is 4 chars per 3 bytes.
                let bytes = img.data.len() / 4 * 3;
                let _ = writeln!(out, "[image {}, ~{}]", img.mime_type, human_bytes(bytes));
            }
            ContentBlock::ToolCall(call) => {
                let args = serde_json::to_string(&call.arguments).unwrap_or_default();
                let args = if opts.full {
                    args
                } else {
                    preview_raw(&args, TOOL_ARGS_CHARS)
                };
                let _ = writeln!(out, "→ {} [{}] {}", call.name, call.id, args);
                if let Some(err) = &call.arguments_error {
                    let _ = writeln!(out, "  [arguments error: {}]", preview(err, 200));
                }
            }
            ContentBlock::Unknown(map) => {
                let ty = map.get("type").and_then(|v| v.as_str()).unwrap_or("?");
                let _ = writeln!(out, "[{ty} block]");
            }
        }
    }
}

/// Writes text, ending with a newline. With `limit` (shortened mode) it stops after that many
/// lines or [`TOOL_RESULT_CHARS`] characters, whichever comes first (one huge line counts too),
/// and says how much was left out.
fn write_text(out: &mut String, text: &str, limit: Option<usize>) {
    let text = text.trim_end_matches('\n');
    if text.is_empty() {
        let _ = writeln!(out, "(empty)");
        return;
    }
    let Some(max_lines) = limit else {
        out.push_str(text);
        out.push('\n');
        return;
    };
    // Byte offset after `max_lines` lines, then capped at TOOL_RESULT_CHARS characters.
    let line_cut = text
        .match_indices('\n')
        .nth(max_lines.saturating_sub(1))
        .map_or(text.len(), |(i, _)| i);
    let char_cut = text
        .char_indices()
        .nth(TOOL_RESULT_CHARS)
        .map_or(text.len(), |(i, _)| i);
    let cut = line_cut.min(char_cut);
    out.push_str(&text[..cut]);
    out.push('\n');
    if cut < text.len() {
        let rest = &text[cut..];
        let lines = rest.trim_start_matches('\n').lines().count();
        let lines = plural(lines, "line");
        if cut == line_cut {
            let _ = writeln!(out, "[… {lines} more]");
        } else {
            let chars = plural(rest.chars().count(), "char");
            let _ = writeln!(out, "[… {chars} more, in {lines}]");
        }
    }
}

/// `24 B`, `3.5 KB`, `12.0 MB`.
fn human_bytes(n: usize) -> String {
    const KB: usize = 1024;
    if n < KB {
        format!("{n} B")
    } else if n < KB * KB {
        format!("{}.{} KB", n / KB, n % KB * 10 / KB)
    } else {
        format!("{}.{} MB", n / (KB * KB), n % (KB * KB) * 10 / (KB * KB))
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Cuts a single-line string at `max` characters (no whitespace squeezing: JSON stays exact).
fn preview_raw(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((cut, _)) => format!("{}… ({} chars)", &s[..cut], s.chars().count()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shortened(text: &str) -> String {
        let mut out = String::new();
        write_text(&mut out, text, Some(3));
        out
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(human_bytes(24), "24 B");
        assert_eq!(human_bytes(3 * 1024 + 512), "3.5 KB");
        assert_eq!(human_bytes(12 * 1024 * 1024), "12.0 MB");
    }

    #[test]
    fn long_outputs_are_cut_by_lines_or_characters() {
        assert_eq!(shortened("a\nb\nc\n"), "a\nb\nc\n");
        assert_eq!(shortened("a\nb\nc\nd\ne"), "a\nb\nc\n[… 2 lines more]\n");
        let long = "x".repeat(TOOL_RESULT_CHARS + 5);
        assert_eq!(
            shortened(&long),
            format!(
                "{}\n[… 5 chars more, in 1 line]\n",
                "x".repeat(TOOL_RESULT_CHARS)
            )
        );
        let mut full = String::new();
        write_text(&mut full, &long, None);
        assert_eq!(full.len(), long.len() + 1);
    }
}
