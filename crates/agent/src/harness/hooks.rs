//! Harness hooks (pi's `on(type, handler)`): callbacks that may change what happens, as opposed
//! to subscribers, which only observe. Several hooks may be registered; for hooks with results
//! they run in registration order and the **last** `Some` wins, except
//! `before_provider_request`, where each hook edits the options the previous one left
//! (DECISIONS §20.9).

use arbor_ai::stream::SimpleStreamOptions;
use arbor_ai::{ImageContent, Model};

use crate::agent::{
    AgentError, ToolCallDecision, ToolCallRequest, ToolCallResult, ToolResultPatch,
};
use crate::message::AgentMessage;
use crate::session::entry::SessionEntry;

/// What a hook returns: `Ok(None)` = no opinion.
pub type HookResult<T> = Result<Option<T>, AgentError>;

/// `before_agent_start`: the prompt about to be sent.
#[derive(Debug, Clone)]
pub struct BeforeAgentStart<'a> {
    /// The prompt text.
    pub prompt: &'a str,
    /// Images sent with the prompt.
    pub images: &'a [ImageContent],
    /// The system prompt the run would use.
    pub system_prompt: &'a str,
}

/// `before_agent_start`'s answer: messages appended after the prompt, and a system prompt used
/// for the first request of this run only.
#[derive(Debug, Clone, Default)]
pub struct BeforeAgentStartResult {
    /// Messages appended after the prompt.
    pub messages: Vec<AgentMessage>,
    /// The system prompt of this run's first request (`None`: unchanged).
    pub system_prompt: Option<String>,
}

/// `session_before_tree`: what `navigate_tree` is about to do.
#[derive(Debug, Clone)]
pub struct TreePreparation {
    /// Where the leaf is going (`None`: before the first entry).
    pub target_id: Option<String>,
    /// Where the leaf is now.
    pub old_leaf_id: Option<String>,
    /// The deepest entry both positions share.
    pub common_ancestor_id: Option<String>,
    /// The abandoned branch, oldest first (what a summary would cover).
    pub entries_to_summarize: Vec<SessionEntry>,
    /// The caller asked for a summary (`NavigateOptions::summarize`).
    pub user_wants_summary: bool,
    /// The caller's extra focus for the summary (`NavigateOptions::custom_instructions`).
    pub custom_instructions: Option<String>,
    /// Whether `custom_instructions` replace the default instruction instead of adding to it.
    pub replace_instructions: bool,
    /// The caller's label (handed to hooks, not applied).
    pub label: Option<String>,
}

/// A summary a hook supplies instead of the generated one.
#[derive(Debug, Clone, Default)]
pub struct HookSummary {
    /// The summary text.
    pub summary: String,
    /// Details stored with the entry.
    pub details: Option<serde_json::Value>,
    /// What producing it cost, if a model did.
    pub usage: Option<arbor_ai::Usage>,
}

/// `session_before_tree`'s answer.
#[derive(Debug, Clone, Default)]
pub struct BeforeTreeResult {
    /// Stop the navigation (`{cancelled: true}`).
    pub cancel: bool,
    /// Used whenever present, even without `summarize`.
    pub summary: Option<HookSummary>,
    /// Replaces the caller's extra focus for a generated summary (`None`: keep the caller's).
    pub custom_instructions: Option<String>,
    /// Replaces the caller's `replace_instructions` (`None`: keep the caller's).
    pub replace_instructions: Option<bool>,
}

/// `session_before_compact`'s answer.
#[derive(Debug, Clone, Default)]
pub struct BeforeCompactResult {
    /// Stop with `compaction` "Compaction cancelled".
    pub cancel: bool,
    /// A compaction to write instead of generating one (`fromHook: true`).
    pub compaction: Option<crate::session::CompactionDraft>,
}

/// `session_before_compact`: the path about to be compacted.
#[derive(Debug, Clone)]
pub struct BeforeCompact<'a> {
    /// The path about to be compacted, root first.
    pub branch_entries: &'a [SessionEntry],
    /// The caller's extra instructions for the summary.
    pub custom_instructions: Option<&'a str>,
}

/// One registered set of hooks; implement only what you need.
#[async_trait::async_trait]
pub trait HarnessHook: Send + Sync {
    /// `before_agent_start`: runs once per `prompt`, before anything is sent; may add messages
    /// after the prompt and change the system prompt of the run's first request.
    async fn before_agent_start(
        &self,
        _event: &BeforeAgentStart<'_>,
    ) -> HookResult<BeforeAgentStartResult> {
        Ok(None)
    }

    /// `context`: replaces the agent messages of one request.
    async fn context(&self, _messages: &[AgentMessage]) -> HookResult<Vec<AgentMessage>> {
        Ok(None)
    }

    /// `tool_call`: may block a call.
    async fn tool_call(&self, _request: ToolCallRequest<'_>) -> HookResult<ToolCallDecision> {
        Ok(None)
    }

    /// `tool_result`: may patch a result.
    async fn tool_result(&self, _result: ToolCallResult<'_>) -> HookResult<ToolResultPatch> {
        Ok(None)
    }

    /// `before_provider_request`: edits the provider options (chained).
    async fn before_provider_request(
        &self,
        _model: &Model,
        _options: &mut SimpleStreamOptions,
    ) -> Result<(), AgentError> {
        Ok(())
    }

    /// `agent_end`: the run is over (normally, by error or by abort), its messages are
    /// persisted and the harness is about to go idle. For work the last request would
    /// otherwise have triggered, e.g. a checkpoint after a tool batch that was aborted.
    /// An error becomes the run's error.
    async fn agent_end(&self, _messages: &[AgentMessage]) -> Result<(), AgentError> {
        Ok(())
    }

    /// `session_before_compact`: runs in every `compact()` (also those the prompt policy
    /// starts) before the summary is requested; may cancel it or supply the compaction to
    /// write.
    async fn session_before_compact(
        &self,
        _event: &BeforeCompact<'_>,
    ) -> HookResult<BeforeCompactResult> {
        Ok(None)
    }

    /// `session_before_tree`: runs before `navigate_tree` moves the leaf; may cancel, supply
    /// the summary, or change the summary instructions.
    async fn session_before_tree(
        &self,
        _preparation: &TreePreparation,
    ) -> HookResult<BeforeTreeResult> {
        Ok(None)
    }
}
