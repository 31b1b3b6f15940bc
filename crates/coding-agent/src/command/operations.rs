//! The operations both clients perform (RPC commands and the TUI's keys and slash commands),
//! written once: each returns a typed result or a [`CommandError`], and each client maps it to
//! its own output (an RPC reply, a TUI notice). What differs between clients stays with them:
//! the TUI's refusal of thinking levels for a model without reasoning, the path an export is
//! resolved against, which pool a model cycles through.

use std::path::{Path, PathBuf};

use arbor_agent::context::projection::ContextOptions;
use arbor_agent::harness::{AgentHarness, ALREADY_COMPACTED, NOTHING_TO_COMPACT};
use arbor_agent::message::AgentMessage;
use arbor_agent::session::{Session, SessionEntry};
use arbor_ai::models::ModelRegistry;
use arbor_ai::{Message, Model, StopReason, ThinkingLevel};

use super::error::CommandError;
use super::models::next_level;

/// Switches the run to the registry's `provider`/`id` model (`set_model`, the TUI's `/model`
/// and Ctrl+P); returns the model now in use.
pub async fn switch_model(
    registry: &ModelRegistry,
    harness: &AgentHarness,
    provider: &str,
    id: &str,
) -> Result<Model, CommandError> {
    let model = registry
        .get(provider, id)
        .cloned()
        .ok_or_else(|| CommandError::ModelNotFound {
            provider: provider.to_owned(),
            id: id.to_owned(),
        })?;
    harness.set_model(model.clone()).await?;
    Ok(model)
}

/// A thinking level named by a client (`set_thinking_level`, the TUI's `/thinking <level>`).
pub fn parse_thinking_level(text: &str) -> Result<ThinkingLevel, CommandError> {
    ThinkingLevel::parse(text).ok_or_else(|| CommandError::InvalidThinkingLevel(text.to_owned()))
}

/// Moves the run to the model's next thinking level (`cycle_thinking_level`, Shift+Tab);
/// `Ok(None)`: the model has a single level, nothing changed.
pub async fn cycle_thinking_level(
    harness: &AgentHarness,
) -> Result<Option<ThinkingLevel>, CommandError> {
    let Some(next) = next_level(&harness.model(), harness.thinking_level()) else {
        return Ok(None);
    };
    harness.set_thinking_level(next).await?;
    Ok(Some(next))
}

/// Compacts the active path now (`compact`, the TUI's `/compact`); returns the `compaction`
/// entry written. Finding nothing to compact (or the leaf already compacted) is
/// [`CommandError::NothingToCompact`], apart from the failures of a summary that ran.
pub async fn compact(
    harness: &AgentHarness,
    custom_instructions: Option<&str>,
) -> Result<SessionEntry, CommandError> {
    harness
        .compact(custom_instructions)
        .await
        .map_err(|e| match e.message() {
            NOTHING_TO_COMPACT | ALREADY_COMPACTED => CommandError::NothingToCompact(e),
            _ => CommandError::Agent(e),
        })
}

/// Which assistant message [`last_assistant_text`] answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssistantText {
    /// The last reply that ended normally or has text, trimmed; blank is none
    /// (`get_last_assistant_text`, as pi answers it: an aborted or failed turn without text is
    /// skipped, DECISIONS §31.6).
    Last,
    /// The last assistant message that has text (the TUI's `/copy`).
    LastNonEmpty,
}

/// The text of the context's last assistant message, as `which` says; `None`: there is none.
pub async fn last_assistant_text(
    session: &Session,
    which: AssistantText,
) -> Result<Option<String>, CommandError> {
    let ctx = session.build_context(&ContextOptions::default()).await?;
    let found = ctx.messages.iter().rev().find_map(|m| match m {
        AgentMessage::Llm(Message::Assistant(a)) => {
            let text = a.text();
            let keep = match which {
                AssistantText::Last => a.stop_reason == StopReason::Stop || !text.trim().is_empty(),
                AssistantText::LastNonEmpty => !text.is_empty(),
            };
            keep.then_some(text)
        }
        _ => None,
    });
    Ok(match which {
        AssistantText::Last => found.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()),
        AssistantText::LastNonEmpty => found,
    })
}

/// Writes the stored session as HTML (`export_html`, the TUI's `/export`) to `out`, already
/// resolved by the client (default: beside the session file); refuses an in-memory session.
pub async fn export_html(
    session_file: Option<&Path>,
    out: Option<&Path>,
) -> Result<PathBuf, CommandError> {
    let Some(file) = session_file else {
        return Err(CommandError::NotStored { what: "export" });
    };
    Ok(crate::export::export(file, out).await?)
}
