//! The system prompt of each request: fixed text or a callback over the turn's model, thinking
//! level and active tools. Never stored as an entry, so it is part of the harness's settings
//! rather than of the session.

use std::sync::Arc;

use arbor_ai::{Model, ThinkingLevel};

use crate::agent::ToolRef;

/// pi's default system prompt when none is given.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are a helpful assistant.";

/// What a system-prompt callback sees (per turn).
pub struct SystemPromptInput<'a> {
    /// The turn's model.
    pub model: &'a Model,
    /// The turn's thinking level.
    pub thinking_level: ThinkingLevel,
    /// The tools the model may call this turn.
    pub active_tools: &'a [ToolRef],
}

impl std::fmt::Debug for SystemPromptInput<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SystemPromptInput")
            .field(
                "model",
                &format_args!("{}/{}", self.model.provider, self.model.id),
            )
            .field("thinking_level", &self.thinking_level)
            .field(
                "active_tools",
                &self
                    .active_tools
                    .iter()
                    .map(|t| t.name())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

type PromptFn = dyn Fn(&SystemPromptInput<'_>) -> String + Send + Sync;

/// The system prompt: fixed, or computed for every turn. Never stored as an entry.
#[derive(Clone)]
pub enum SystemPrompt {
    /// The same text for every request.
    Text(String),
    /// Called before every request with that turn's model, level and tools; build it with
    /// [`SystemPrompt::callback`].
    Callback(Arc<PromptFn>),
}

impl Default for SystemPrompt {
    fn default() -> Self {
        SystemPrompt::Text(DEFAULT_SYSTEM_PROMPT.to_string())
    }
}

impl std::fmt::Debug for SystemPrompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SystemPrompt::Text(t) => f.debug_tuple("Text").field(t).finish(),
            SystemPrompt::Callback(_) => f.write_str("Callback(..)"),
        }
    }
}

impl SystemPrompt {
    /// A prompt computed for every turn by `f`.
    pub fn callback(f: impl Fn(&SystemPromptInput<'_>) -> String + Send + Sync + 'static) -> Self {
        SystemPrompt::Callback(Arc::new(f))
    }

    pub(super) fn render(&self, input: &SystemPromptInput<'_>) -> String {
        match self {
            SystemPrompt::Text(t) => t.clone(),
            SystemPrompt::Callback(f) => f(input),
        }
    }
}
