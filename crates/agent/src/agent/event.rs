//! Events of the agent loop and the harness, serialized with pi's JSON names (`type` tag,
//! camelCase fields) so the app's JSON and RPC modes can print them as they are.
//!
//! One deliberate difference (DECISIONS §20.2): `message_update` carries the provider event
//! only, not a copy of the growing partial message — copying the partial into every delta
//! would make streaming quadratic. Consumers that want the partial fold the events with
//! [`arbor_ai::MessageAccumulator`].

use arbor_ai::{AssistantMessageEvent, ToolResultMessage};
use serde::Serialize;
use serde_json::Value;

use crate::compaction::{CompactionEndEvent, CompactionStartEvent};
use crate::message::AgentMessage;
use crate::session::entry::SessionEntry;

use super::tool::ToolOutput;

/// Where a model / tools change came from (`restore` exists in pi's types but is never sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeSource {
    Set,
    Restore,
}

/// Which summary request a retry event belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryOperation {
    Compaction,
    BranchSummary,
}

/// `model` / `previousModel` of `model_update`: the provider and id pi prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    /// The provider name.
    pub provider: String,
    /// The model id.
    pub id: String,
    /// The API the model speaks.
    pub api: String,
}

impl From<&arbor_ai::Model> for ModelInfo {
    fn from(m: &arbor_ai::Model) -> Self {
        ModelInfo {
            provider: m.provider.clone(),
            id: m.id.clone(),
            api: m.api.clone(),
        }
    }
}

/// Every event a subscriber sees: the loop's events and the harness's own notifications, with
/// pi's names (DECISIONS §20.2). Hook-style events are not here; they go to hooks only.
// Messages are built and matched far more often than moved; boxing would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    // ---- agent loop -------------------------------------------------------------------
    AgentStart,
    AgentEnd {
        /// The messages this run added (prompts included).
        messages: Vec<AgentMessage>,
    },
    TurnStart,
    TurnEnd {
        message: AgentMessage,
        #[serde(rename = "toolResults")]
        tool_results: Vec<ToolResultMessage>,
    },
    MessageStart {
        message: AgentMessage,
    },
    MessageUpdate {
        #[serde(rename = "assistantMessageEvent")]
        assistant_message_event: AssistantMessageEvent,
    },
    MessageEnd {
        message: AgentMessage,
    },
    ToolExecutionStart {
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        #[serde(rename = "toolName")]
        tool_name: String,
        args: Value,
    },
    ToolExecutionUpdate {
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        #[serde(rename = "toolName")]
        tool_name: String,
        args: Value,
        #[serde(rename = "partialResult")]
        partial_result: ToolOutput,
    },
    ToolExecutionEnd {
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        #[serde(rename = "toolName")]
        tool_name: String,
        result: ToolOutput,
        #[serde(rename = "isError")]
        is_error: bool,
        /// How long the tool ran; `None` for a call settled without running (unknown tool,
        /// invalid arguments, blocked, aborted before it started), as in pi-agent-core
        /// (DECISIONS §31.14).
        #[serde(rename = "durationMs", skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },

    // ---- harness notifications ----------------------------------------------------------
    QueueUpdate {
        steer: Vec<AgentMessage>,
        #[serde(rename = "followUp")]
        follow_up: Vec<AgentMessage>,
        #[serde(rename = "nextTurn")]
        next_turn: Vec<AgentMessage>,
    },
    SavePoint {
        #[serde(rename = "hadPendingMutations")]
        had_pending_mutations: bool,
    },
    Abort {
        #[serde(rename = "clearedSteer")]
        cleared_steer: Vec<AgentMessage>,
        #[serde(rename = "clearedFollowUp")]
        cleared_follow_up: Vec<AgentMessage>,
    },
    Settled {
        #[serde(rename = "nextTurnCount")]
        next_turn_count: usize,
    },
    SessionCompact {
        #[serde(rename = "compactionEntry")]
        compaction_entry: SessionEntry,
        #[serde(rename = "fromHook")]
        from_hook: bool,
    },
    SessionTree {
        #[serde(rename = "newLeafId")]
        new_leaf_id: Option<String>,
        #[serde(rename = "oldLeafId")]
        old_leaf_id: Option<String>,
        #[serde(rename = "summaryEntry", skip_serializing_if = "Option::is_none")]
        summary_entry: Option<SessionEntry>,
        #[serde(rename = "fromHook", skip_serializing_if = "Option::is_none")]
        from_hook: Option<bool>,
    },
    RetryScheduled {
        operation: RetryOperation,
        attempt: u32,
        #[serde(rename = "maxAttempts")]
        max_attempts: u32,
        #[serde(rename = "delayMs")]
        delay_ms: u64,
        #[serde(rename = "errorMessage")]
        error_message: String,
    },
    RetryAttemptStart {
        operation: RetryOperation,
    },
    RetryFinished {
        operation: RetryOperation,
    },
    ModelUpdate {
        model: ModelInfo,
        #[serde(rename = "previousModel")]
        previous_model: Option<ModelInfo>,
        source: ChangeSource,
    },
    ThinkingLevelUpdate {
        level: String,
        #[serde(rename = "previousLevel")]
        previous_level: String,
    },
    /// A compaction began (manual here; the app also reports automatic ones).
    CompactionStart(CompactionStartEvent),
    CompactionEnd(CompactionEndEvent),
    ToolsUpdate {
        #[serde(rename = "toolNames")]
        tool_names: Vec<String>,
        #[serde(rename = "previousToolNames")]
        previous_tool_names: Vec<String>,
        #[serde(rename = "activeToolNames")]
        active_tool_names: Vec<String>,
        #[serde(rename = "previousActiveToolNames")]
        previous_active_tool_names: Vec<String>,
        source: ChangeSource,
    },
}

impl AgentEvent {
    /// The event's `type` name as pi writes it.
    pub fn type_name(&self) -> &'static str {
        match self {
            AgentEvent::AgentStart => "agent_start",
            AgentEvent::AgentEnd { .. } => "agent_end",
            AgentEvent::TurnStart => "turn_start",
            AgentEvent::TurnEnd { .. } => "turn_end",
            AgentEvent::MessageStart { .. } => "message_start",
            AgentEvent::MessageUpdate { .. } => "message_update",
            AgentEvent::MessageEnd { .. } => "message_end",
            AgentEvent::ToolExecutionStart { .. } => "tool_execution_start",
            AgentEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            AgentEvent::ToolExecutionEnd { .. } => "tool_execution_end",
            AgentEvent::QueueUpdate { .. } => "queue_update",
            AgentEvent::SavePoint { .. } => "save_point",
            AgentEvent::Abort { .. } => "abort",
            AgentEvent::Settled { .. } => "settled",
            AgentEvent::SessionCompact { .. } => "session_compact",
            AgentEvent::SessionTree { .. } => "session_tree",
            AgentEvent::RetryScheduled { .. } => "retry_scheduled",
            AgentEvent::RetryAttemptStart { .. } => "retry_attempt_start",
            AgentEvent::RetryFinished { .. } => "retry_finished",
            AgentEvent::ModelUpdate { .. } => "model_update",
            AgentEvent::ThinkingLevelUpdate { .. } => "thinking_level_update",
            AgentEvent::ToolsUpdate { .. } => "tools_update",
            AgentEvent::CompactionStart(_) => "compaction_start",
            AgentEvent::CompactionEnd(_) => "compaction_end",
        }
    }
}
