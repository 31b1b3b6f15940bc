//! The context as every built-in provider consumes it: system messages collapsed into one
//! prompt plus the current tool set, or — for models that accept system messages
//! mid-conversation — a leading prompt with the later system messages kept in place
//! (DECISIONS §26.20).

use serde_json::Value;

use crate::types::{ContentBlock, Context, Message, Model, SystemMessage, Tool};

/// The context as every built-in provider consumes it: one rendered system prompt, the current
/// tools, and the conversation (system messages removed, transform applied).
#[derive(Debug, Clone)]
pub struct Transcript {
    pub system_prompt: String,
    /// The tools in force after every system message.
    pub tools: Vec<Tool>,
    pub messages: Vec<Message>,
    /// Later system messages stay in `messages`, in place (the model's
    /// `compat.supportsMidConvoSystemMessages`, on APIs that carry them).
    pub in_place: bool,
    /// The leading system message's tools (`tools` of the context); what native tool changes
    /// anchor the request-level tool list on. Empty when `in_place` is false.
    pub initial_tools: Vec<Tool>,
    /// What GitHub Copilot's per-request headers are derived from, read off the context as
    /// given (before transforms), as pi does (DECISIONS §26.13).
    pub(crate) copilot: CopilotFacts,
}

/// Facts of the untransformed context behind Copilot's `X-Initiator` and
/// `Copilot-Vision-Request` headers.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CopilotFacts {
    /// The last message of the transcript as pi sends it is the user's, or the transcript is
    /// empty (`X-Initiator: user`).
    pub initiated_by_user: bool,
    /// A user message or tool result carries an image.
    pub has_images: bool,
}

impl CopilotFacts {
    /// pi reads the last message of the transcript it sends: with system messages in place
    /// that may be a later system message (`agent`); collapsed, the leading system message
    /// is last only when nothing else is there. `has_head` says a leading system message
    /// exists (a prompt, tools or any system message).
    fn of(messages: &[Message], in_place: bool, has_head: bool) -> Self {
        let has_image = |content: &crate::types::Content| match content {
            crate::types::Content::Blocks(blocks) => blocks
                .iter()
                .any(|b| matches!(b, crate::types::ContentBlock::Image(_))),
            crate::types::Content::Text(_) => false,
        };
        let last = if in_place {
            messages.last()
        } else {
            messages
                .iter()
                .rev()
                .find(|m| !matches!(m, Message::System(_)))
        };
        Self {
            initiated_by_user: match last {
                Some(m) => matches!(m, Message::User(_)),
                None => !has_head,
            },
            has_images: messages.iter().any(|m| match m {
                Message::User(u) => has_image(&u.content),
                Message::ToolResult(r) => has_image(&r.content),
                _ => false,
            }),
        }
    }

    /// Whether a leading system message exists for `context`.
    fn has_head(context: &Context) -> bool {
        context
            .system_prompt
            .as_ref()
            .is_some_and(|p| !p.is_empty())
            || context.tools.as_ref().is_some_and(|t| !t.is_empty())
            || context
                .messages
                .iter()
                .any(|m| matches!(m, Message::System(_)))
    }
}

impl Transcript {
    /// Collapses `systemPrompt`, `tools` and every system message: contents are joined with
    /// blank lines, named sections are patched (`null` deletes) and rendered after the content,
    /// tool changes are replayed (removals, then additions, by name).
    pub fn from_context(model: &Model, context: &Context) -> Self {
        if keeps_system_messages(model) {
            return Self::in_place(model, context);
        }
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
            apply_tool_changes(&mut tools, system);
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
            messages: transformed_once(messages, model, context),
            in_place: false,
            initial_tools: Vec::new(),
            copilot: CopilotFacts::of(&context.messages, false, CopilotFacts::has_head(context)),
        }
    }

    /// pi's `resolveTranscript` for models that accept later system messages: the leading
    /// system message is `systemPrompt` + `tools` (or, when both are empty, a system message
    /// that opens the conversation); every later one stays where it is.
    fn in_place(model: &Model, context: &Context) -> Self {
        let prompt = context.system_prompt.as_deref().unwrap_or("");
        let context_tools = context.tools.as_deref().unwrap_or(&[]);
        let mut rest: &[Message] = &context.messages;
        let (system_prompt, initial_tools) = if !prompt.is_empty() || !context_tools.is_empty() {
            (prompt.to_string(), context_tools.to_vec())
        } else if let Some(Message::System(first)) = rest.first() {
            rest = &rest[1..];
            (
                system_message_text(first),
                first.tools_added.clone().unwrap_or_default(),
            )
        } else {
            (String::new(), Vec::new())
        };
        let mut tools = initial_tools.clone();
        for message in rest {
            if let Message::System(system) = message {
                apply_tool_changes(&mut tools, system);
            }
        }
        Self {
            system_prompt,
            tools,
            messages: transformed_once(rest.to_vec(), model, context),
            in_place: true,
            initial_tools,
            copilot: CopilotFacts::of(&context.messages, true, CopilotFacts::has_head(context)),
        }
    }
}

/// Where an addition-only transport puts tools (pi's `resolveTranscriptTools` in its
/// "additions" mode, DECISIONS §26.52): such a transport can announce new tools in place but
/// cannot remove or redefine one, so the request-level list is the tool set after the last
/// later system message that removes a tool or declares a name again, and only the system
/// messages after it announce their additions where they are.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AnchoredAdditions {
    /// The request-level tool list.
    pub request_tools: Vec<Tool>,
    /// How many of the later system messages (in `Transcript::messages` order) are folded into
    /// `request_tools`; each one after them announces its `toolsAdded` in place.
    pub folded: usize,
}

impl Transcript {
    /// The split of tools between the request-level list and in-place announcements for a
    /// transport that can only add tools mid-conversation. Collapsed transcripts have no
    /// later system messages: every tool is request-level.
    pub(crate) fn anchored_additions(&self) -> AnchoredAdditions {
        let later: Vec<&SystemMessage> = self
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::System(s) => Some(s),
                _ => None,
            })
            .collect();
        if !self.in_place {
            return AnchoredAdditions {
                request_tools: self.tools.clone(),
                folded: later.len(),
            };
        }
        // A name declared before counts as declared again even after its removal (pi: a
        // model may ignore a removed tool that a later announcement brings back).
        let mut declared: Vec<&str> = self.initial_tools.iter().map(|t| t.name.as_str()).collect();
        let mut folded = 0;
        for (index, system) in later.iter().enumerate() {
            if system.tools_removed.as_ref().is_some_and(|r| !r.is_empty()) {
                folded = index + 1;
            }
            for tool in system.tools_added.iter().flatten() {
                if declared.contains(&tool.name.as_str()) {
                    folded = index + 1;
                } else {
                    declared.push(&tool.name);
                }
            }
        }
        let mut request_tools = self.initial_tools.clone();
        for system in &later[..folded] {
            apply_tool_changes(&mut request_tools, system);
        }
        AnchoredAdditions {
            request_tools,
            folded,
        }
    }
}

/// Whether `model` gets later system messages in place: its `compat` says the API accepts
/// them, and the API is one whose request format carries them (Google's does not).
fn keeps_system_messages(model: &Model) -> bool {
    matches!(
        model.api.as_str(),
        "anthropic-messages" | "openai-responses" | "openai-completions"
    ) && super::compat_bool(model, "supportsMidConvoSystemMessages") == Some(true)
}

/// pi's `getCurrentTools` step for one system message: removals by name, then additions
/// (a redefinition keeps its position, DECISIONS §26.11).
fn apply_tool_changes(tools: &mut Vec<Tool>, system: &SystemMessage) {
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

/// A system message as a complete prompt: its text, then the text of each section it sets.
pub(crate) fn system_message_text(system: &SystemMessage) -> String {
    let mut parts = vec![system.content.joined_text("\n")];
    parts.extend(
        system
            .sections
            .iter()
            .flatten()
            .filter_map(|(_, v)| v.as_str().map(str::to_string)),
    );
    parts.retain(|p| !p.is_empty());
    parts.join("\n\n")
}

/// A later system message as sent in place: its text, then each section change framed by
/// name so the model can relate it to the leading prompt (pi's wording).
pub(crate) fn system_update_text(system: &SystemMessage) -> String {
    let mut parts = Vec::new();
    let text = system.content.joined_text("\n");
    if !text.is_empty() {
        parts.push(text);
    }
    for (name, value) in system.sections.iter().flatten() {
        parts.push(match value.as_str() {
            Some(text) => format!("Updated system prompt section \"{name}\":\n\n{text}"),
            None => format!("Removed system prompt section \"{name}\"."),
        });
    }
    parts.join("\n\n")
}

/// The history transform runs here, in the provider, once per request (DECISIONS §10.8): a
/// context whose list is marked as transformed for `model` (the harness's incremental
/// transform, the agent loop's) is taken as it is.
fn transformed_once(messages: Vec<Message>, model: &Model, context: &Context) -> Vec<Message> {
    if context.messages.is_transformed_for(model) {
        messages
    } else {
        prepare_messages(messages, model)
    }
}

/// Messages as the provider should see them: foreign thinking dropped, tool-call ids
/// normalized for `model.api`, orphaned calls answered (see [`crate::transform`]).
pub(crate) fn prepare_messages(messages: Vec<Message>, model: &Model) -> Vec<Message> {
    crate::transform::transform_messages(&messages, model)
}

/// The text of a tool result's content as every API sends it: its text blocks joined by
/// newlines (images and other blocks left out).
pub(crate) fn tool_result_text<'a>(blocks: impl IntoIterator<Item = &'a ContentBlock>) -> String {
    let texts: Vec<&str> = blocks
        .into_iter()
        .filter_map(ContentBlock::as_text)
        .collect();
    texts.join("\n")
}
