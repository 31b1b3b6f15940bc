//! The context as every built-in provider consumes it: system messages collapsed into one
//! prompt plus the current tool set.

use serde_json::Value;

use crate::types::{Context, Message, Model, Tool};

/// The context as every built-in provider consumes it: one rendered system prompt, the current
/// tools, and the conversation (system messages removed, transform applied).
#[derive(Debug, Clone)]
pub struct Transcript {
    pub system_prompt: String,
    pub tools: Vec<Tool>,
    pub messages: Vec<Message>,
    /// What GitHub Copilot's per-request headers are derived from, read off the context as
    /// given (before transforms), as pi does (DECISIONS §26.13).
    pub(crate) copilot: CopilotFacts,
}

/// Facts of the untransformed context behind Copilot's `X-Initiator` and
/// `Copilot-Vision-Request` headers.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CopilotFacts {
    /// The last message other than system messages is the user's, or there is none.
    pub last_non_system_is_user: bool,
    /// A user message or tool result carries an image.
    pub has_images: bool,
}

impl CopilotFacts {
    fn of(messages: &[Message]) -> Self {
        let is_user = |m: Option<&Message>| matches!(m, Some(Message::User(_)) | None);
        let has_image = |content: &crate::types::Content| match content {
            crate::types::Content::Blocks(blocks) => blocks
                .iter()
                .any(|b| matches!(b, crate::types::ContentBlock::Image(_))),
            crate::types::Content::Text(_) => false,
        };
        Self {
            last_non_system_is_user: is_user(
                messages
                    .iter()
                    .rev()
                    .find(|m| !matches!(m, Message::System(_))),
            ),
            has_images: messages.iter().any(|m| match m {
                Message::User(u) => has_image(&u.content),
                Message::ToolResult(r) => has_image(&r.content),
                _ => false,
            }),
        }
    }
}

impl Transcript {
    /// Collapses `systemPrompt`, `tools` and every system message: contents are joined with
    /// blank lines, named sections are patched (`null` deletes) and rendered after the content,
    /// tool changes are replayed (removals, then additions, by name).
    pub fn from_context(model: &Model, context: &Context) -> Self {
        let mut contents: Vec<String> = Vec::new();
        if let Some(prompt) = context.system_prompt.as_ref().filter(|p| !p.is_empty()) {
            contents.push(prompt.clone());
        }
        let mut sections: Vec<(String, String)> = Vec::new();
        let mut tools: Vec<Tool> = context.tools.clone().unwrap_or_default();
        let mut messages = Vec::with_capacity(context.messages.len());
        for message in &context.messages {
            let Message::System(system) = message else {
                messages.push(message.clone());
                continue;
            };
            let text = system.content.joined_text("\n");
            if !text.is_empty() {
                contents.push(text);
            }
            // Sections and tools behave like insertion-ordered maps (pi's `Map`): an update keeps
            // the entry's position, a deletion followed by a re-add moves it to the end. A stable
            // tool order keeps the prompt cache warm (DECISIONS §26.11).
            if let Some(patch) = &system.sections {
                for (name, value) in patch {
                    match value.as_str() {
                        None => sections.retain(|(n, _)| n != name),
                        Some(text) => match sections.iter_mut().find(|(n, _)| n == name) {
                            Some(slot) => slot.1 = text.to_string(),
                            None => sections.push((name.clone(), text.to_string())),
                        },
                    }
                }
            }
            for removed in system.tools_removed.iter().flatten() {
                if let Some(name) = removed.get("name").and_then(Value::as_str) {
                    tools.retain(|t| t.name != name);
                }
            }
            for added in system.tools_added.iter().flatten() {
                match tools.iter_mut().find(|t| t.name == added.name) {
                    Some(slot) => *slot = added.clone(),
                    None => tools.push(added.clone()),
                }
            }
        }
        let mut parts = contents;
        parts.extend(
            sections
                .into_iter()
                .map(|(_, v)| v)
                .filter(|s| !s.is_empty()),
        );
        Self {
            system_prompt: parts.join("\n\n"),
            tools,
            messages: prepare_messages(messages, model),
            copilot: CopilotFacts::of(&context.messages),
        }
    }
}

/// Messages as the provider should see them: foreign thinking dropped, tool-call ids
/// normalized for `model.api`, orphaned calls answered (see [`crate::transform`]).
pub(crate) fn prepare_messages(messages: Vec<Message>, model: &Model) -> Vec<Message> {
    crate::transform::transform_messages(&messages, model)
}
