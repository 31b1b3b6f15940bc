//! The loop's view of its host ([`LoopHooks`]): where events go, the hooks around requests and
//! tool calls, the queues it polls, and what may change between turns ([`NextTurn`]). The
//! harness implements it; a bare caller implements `emit` only.

use std::sync::Arc;

use arbor_ai::stream::SimpleStreamOptions;
use arbor_ai::{AssistantMessage, ContentBlock, Model, ThinkingLevel, ToolCall};
use serde_json::Value;

use crate::message::AgentMessage;

use super::error::AgentError;
use super::event::AgentEvent;
use super::tool::ToolOutput;
use super::validate::ToolSet;

/// Replacements for the next turn (anything `None` stays as it was).
#[derive(Debug, Default)]
pub struct NextTurn {
    /// The whole context (the harness hands the session's projection).
    pub context: Option<Arc<Vec<AgentMessage>>>,
    /// Another model.
    pub model: Option<Model>,
    /// Another thinking level.
    pub thinking_level: Option<ThinkingLevel>,
    /// Another tool set.
    pub tools: Option<ToolSet>,
    /// Another system prompt (`Some(None)`: none).
    pub system_prompt: Option<Option<String>>,
}

/// A tool call about to run (`before_tool_call`).
#[derive(Debug, Clone, Copy)]
pub struct ToolCallRequest<'a> {
    /// The message that made the call.
    pub assistant: &'a AssistantMessage,
    /// The call as the model wrote it.
    pub call: &'a ToolCall,
    /// Validated and coerced arguments.
    pub args: &'a Value,
}

/// `before_tool_call`'s answer: `block` skips the call with `reason` as its error result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCallDecision {
    /// Skip the call.
    pub block: bool,
    /// With `block`: the error text the model reads.
    pub reason: Option<String>,
    /// With `block`: this result asks the agent to stop after the batch.
    pub terminate: bool,
    /// Without `block`: the arguments the tool runs with instead (not validated again, as in
    /// pi, where a `tool_call` handler edits `event.input` in place).
    pub arguments: Option<Value>,
}

/// A finished tool call (`after_tool_call`).
#[derive(Debug, Clone, Copy)]
pub struct ToolCallResult<'a> {
    /// The call as the model wrote it (its id, name and raw arguments).
    pub call: &'a ToolCall,
    /// The arguments it ran with.
    pub args: &'a Value,
    /// What it produced.
    pub output: &'a ToolOutput,
    /// The result is an error.
    pub is_error: bool,
}

/// `after_tool_call`'s patch: each present field replaces the result's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolResultPatch {
    /// Replaces the content.
    pub content: Option<Vec<ContentBlock>>,
    /// Replaces the details.
    pub details: Option<Value>,
    /// Replaces the error flag.
    pub is_error: Option<bool>,
    /// `true` on every result of a batch stops the agent after that batch.
    pub terminate: Option<bool>,
}

/// The loop's view of its host: event sink, hooks and queues. Only `emit` is required.
#[async_trait::async_trait]
pub trait LoopHooks: Send + Sync {
    /// Delivers one event. An error ends the run with that error.
    async fn emit(&self, event: AgentEvent) -> Result<(), AgentError>;

    /// Replaces the agent messages sent for one request (`None` = unchanged).
    async fn transform_context(
        &self,
        _messages: &[AgentMessage],
    ) -> Result<Option<Vec<AgentMessage>>, AgentError> {
        Ok(None)
    }

    /// Adjusts the provider options of one request.
    async fn before_request(
        &self,
        _model: &Model,
        _options: &mut SimpleStreamOptions,
    ) -> Result<(), AgentError> {
        Ok(())
    }

    /// May block a call. An error becomes the call's error result.
    async fn before_tool_call(
        &self,
        _request: ToolCallRequest<'_>,
    ) -> Result<Option<ToolCallDecision>, AgentError> {
        Ok(None)
    }

    /// May patch a result. An error turns the result into an error result.
    async fn after_tool_call(
        &self,
        _result: ToolCallResult<'_>,
    ) -> Result<Option<ToolResultPatch>, AgentError> {
        Ok(None)
    }

    /// Messages to inject before the next request (polled at the start and after each turn).
    async fn steering_messages(&self) -> Result<Vec<AgentMessage>, AgentError> {
        Ok(Vec::new())
    }

    /// Messages to continue with when the agent would stop.
    async fn follow_up_messages(&self) -> Result<Vec<AgentMessage>, AgentError> {
        Ok(Vec::new())
    }

    /// Called before every request after the first: new context, model, thinking, tools.
    async fn prepare_next_turn(&self) -> Result<Option<NextTurn>, AgentError> {
        Ok(None)
    }

    /// The model-visible messages of the next request for `model`, when the host keeps them
    /// itself (the harness maintains them incrementally from the session, and runs
    /// `transform_context` there). `None`: the loop converts and transforms its transcript.
    async fn request_messages(
        &self,
        _model: &Model,
    ) -> Result<Option<arbor_ai::MessageList>, AgentError> {
        Ok(None)
    }
}
