//! `convert_to_llm`: turns the agent-level messages of a projected context into the plain
//! provider-neutral messages a model sees (DECISIONS §3.6).

use arbor_ai::{Content, ContentBlock, Message, UserMessage};

use crate::message::{AgentMessage, BashExecutionMessage};

/// Wraps a compaction summary when it is shown to the model (pi's text, byte for byte).
pub const COMPACTION_SUMMARY_PREFIX: &str =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
/// Closes [`COMPACTION_SUMMARY_PREFIX`]; note the leading newline.
pub const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
/// Wraps a branch summary when it is shown to the model (pi's text, byte for byte).
pub const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
/// Closes [`BRANCH_SUMMARY_PREFIX`]; unlike the compaction suffix it has no leading newline.
pub const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

/// The model-visible messages: LLM roles pass through unchanged, harness roles become user
/// messages, `bashExecution` marked `excludeFromContext` and unknown roles are dropped.
pub fn convert_to_llm(messages: &[AgentMessage]) -> Vec<Message> {
    messages.iter().filter_map(convert_one).collect()
}

/// Converts a single agent message; `None` when it has no model-visible form. The owned
/// [`convert_into`] does the work: a model message is cloned either way, and the other kinds
/// are rare and small.
pub fn convert_one(message: &AgentMessage) -> Option<Message> {
    convert_into(message.clone())
}

/// [`convert_one`] consuming the message: nothing is cloned, so a caller that projects entry by
/// entry (the streamed `session context --json`, DECISIONS §25.101) pays for each string once.
pub fn convert_into(message: AgentMessage) -> Option<Message> {
    arbor_ai::work::add(arbor_ai::work::Work::Converted, 1);
    match message {
        AgentMessage::Llm(m) => Some(m),
        AgentMessage::Custom(c) => {
            let timestamp = c.timestamp.get();
            let content = match c.content {
                Content::Text(t) => Content::Blocks(vec![text_block(t)]),
                blocks => blocks,
            };
            Some(user(content, timestamp))
        }
        AgentMessage::BranchSummary(b) => Some(user_text(
            format!(
                "{BRANCH_SUMMARY_PREFIX}{}{BRANCH_SUMMARY_SUFFIX}",
                b.summary
            ),
            b.timestamp.get(),
        )),
        AgentMessage::CompactionSummary(c) => Some(user_text(
            format!(
                "{COMPACTION_SUMMARY_PREFIX}{}{COMPACTION_SUMMARY_SUFFIX}",
                c.summary
            ),
            c.timestamp.get(),
        )),
        AgentMessage::BashExecution(b) => {
            if b.exclude_from_context == Some(true) {
                None
            } else {
                Some(user_text(bash_execution_text(&b), b.timestamp.get()))
            }
        }
        AgentMessage::Other(_) => None,
    }
}

/// How a shell command the user ran (`!cmd`) reads to the model.
pub fn bash_execution_text(b: &BashExecutionMessage) -> String {
    let mut text = format!("Ran `{}`\n", b.command);
    if b.output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str("```\n");
        text.push_str(&b.output);
        text.push_str("\n```");
    }
    if b.cancelled {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = b.exit_code.filter(|c| *c != 0) {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if b.truncated {
        if let Some(path) = &b.full_output_path {
            text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
        }
    }
    text
}

pub(crate) fn text_block(text: String) -> ContentBlock {
    ContentBlock::text(text)
}

fn user(content: Content, timestamp: i64) -> Message {
    Message::User(UserMessage {
        content,
        timestamp: timestamp.into(),
        extra: Default::default(),
    })
}

fn user_text(text: String, timestamp: i64) -> Message {
    user(Content::Blocks(vec![text_block(text)]), timestamp)
}
