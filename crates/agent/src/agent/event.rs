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

/// Why a `model_update` / `tools_update` was sent: the `source` field of both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeSource {
    /// A caller changed the setting (`set_model`, `set_tools`, ...); an entry records it.
    Set,
    /// The harness adopted the setting stored on the branch it moved to (navigation or resume,
    /// DECISIONS §20.6); nothing is written.
    Restore,
}

/// Which summary request a retry event belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryOperation {
    /// The summary request of `compact()`.
    Compaction,
    /// The summary request of `navigate_tree` with a summary.
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
    /// A run of the loop began (a `prompt` or a continuation); the first event of a run,
    /// followed at once by the first `turn_start`.
    AgentStart,
    /// The run is over. Under a harness the harness is idle again when this is delivered, and
    /// `settled` follows.
    AgentEnd {
        /// The messages this run added (prompts included).
        messages: Vec<AgentMessage>,
    },
    /// One model request and its tool calls begin.
    TurnStart,
    /// The turn's reply and tool results are in. A harness flushes pending writes and makes a
    /// durability point right after delivering this (then sends `save_point`).
    TurnEnd {
        /// The assistant reply of the turn (a failure reply when the turn failed).
        message: AgentMessage,
        /// The results of the reply's tool calls, in call order; empty without tool calls.
        #[serde(rename = "toolResults")]
        tool_results: Vec<ToolResultMessage>,
    },
    /// A message enters the conversation: a prompt or queued message, the reply as it starts
    /// streaming (or whole, when the provider failed before streaming), a tool result.
    MessageStart {
        /// The message; for a streamed reply, its (mostly empty) state when streaming began.
        message: AgentMessage,
    },
    /// One streaming delta of the reply. Carries the provider event only, not the partial
    /// message (DECISIONS §20.2).
    MessageUpdate {
        /// The delta; fold these with [`arbor_ai::MessageAccumulator`] to get the partial.
        #[serde(rename = "assistantMessageEvent")]
        assistant_message_event: AssistantMessageEvent,
    },
    /// A message is complete. Under a harness it is already appended to the session.
    MessageEnd {
        /// The final message.
        message: AgentMessage,
    },
    /// A tool call is about to be handled; sent for every call, also those then refused
    /// (unknown tool, invalid arguments, blocked).
    ToolExecutionStart {
        /// The call's id from the reply; pairs this with its update, end and result.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        /// The tool name the model asked for (may name no tool).
        #[serde(rename = "toolName")]
        tool_name: String,
        /// The arguments as the model sent them, before coercion and validation.
        args: Value,
    },
    /// A running tool reported progress through its update callback.
    ToolExecutionUpdate {
        /// The call's id from the reply.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        /// The tool's name.
        #[serde(rename = "toolName")]
        tool_name: String,
        /// The arguments as the model sent them.
        args: Value,
        /// The output so far, as the tool chose to report it; not merged into the result.
        #[serde(rename = "partialResult")]
        partial_result: ToolOutput,
    },
    /// A tool call is settled: ran, failed, was refused or aborted. Its tool result message
    /// comes later (`message_start`/`message_end`, in call order once the batch is done).
    ToolExecutionEnd {
        /// The call's id from the reply.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        /// The tool name the model asked for.
        #[serde(rename = "toolName")]
        tool_name: String,
        /// The final result, after `after_tool_call` patches; its content is what the model
        /// reads.
        result: ToolOutput,
        /// Whether the result reports a failure to the model.
        #[serde(rename = "isError")]
        is_error: bool,
        /// How long the tool ran; `None` for a call settled without running (unknown tool,
        /// invalid arguments, blocked, aborted before it started), as in pi-agent-core
        /// (DECISIONS §31.14).
        #[serde(rename = "durationMs", skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },

    // ---- harness notifications ----------------------------------------------------------
    /// A queue changed (message queued, taken, cleared, aborted); carries all three whole.
    QueueUpdate {
        /// Steering messages still waiting, oldest first.
        steer: Vec<AgentMessage>,
        /// Follow-up messages still waiting, oldest first.
        #[serde(rename = "followUp")]
        follow_up: Vec<AgentMessage>,
        /// Messages waiting for the next `prompt`, oldest first.
        #[serde(rename = "nextTurn")]
        next_turn: Vec<AgentMessage>,
    },
    /// The storage made its durability point at a turn end (DECISIONS §20.5): the turn is
    /// flushed to stable storage as far as the storage's `save_point` policy goes.
    SavePoint {
        /// Whether writes queued while busy (settings, appended messages) were flushed here.
        #[serde(rename = "hadPendingMutations")]
        had_pending_mutations: bool,
    },
    /// `abort()` finished: the harness is idle and the queues it dropped are listed.
    Abort {
        /// The steering messages dropped, oldest first.
        #[serde(rename = "clearedSteer")]
        cleared_steer: Vec<AgentMessage>,
        /// The follow-up messages dropped, oldest first.
        #[serde(rename = "clearedFollowUp")]
        cleared_follow_up: Vec<AgentMessage>,
    },
    /// Sent right after `agent_end`: the harness does no more work on its own for this run.
    Settled {
        /// How many next-turn messages wait for the next `prompt`.
        #[serde(rename = "nextTurnCount")]
        next_turn_count: usize,
    },
    /// `compact()` wrote its `compaction` entry (sent before `compaction_end`).
    SessionCompact {
        /// The entry as stored.
        #[serde(rename = "compactionEntry")]
        compaction_entry: SessionEntry,
        /// Whether a `session_before_compact` hook supplied the summary.
        #[serde(rename = "fromHook")]
        from_hook: bool,
    },
    /// `navigate_tree` moved the leaf (and saved).
    SessionTree {
        /// The leaf now; `None` at the root (before the first entry).
        #[serde(rename = "newLeafId")]
        new_leaf_id: Option<String>,
        /// The leaf before the move; `None` if the session was at its root.
        #[serde(rename = "oldLeafId")]
        old_leaf_id: Option<String>,
        /// The `branch_summary` entry written for the branch left, if one was.
        #[serde(rename = "summaryEntry", skip_serializing_if = "Option::is_none")]
        summary_entry: Option<SessionEntry>,
        /// With a summary, whether a hook supplied it; `None` (omitted) without a summary.
        #[serde(rename = "fromHook", skip_serializing_if = "Option::is_none")]
        from_hook: Option<bool>,
    },
    /// A summary request failed retryably and will be sent again after a delay (only with
    /// [`crate::harness::HarnessOptions::summary_retry`] set).
    RetryScheduled {
        /// Which summary is being retried.
        operation: RetryOperation,
        /// The retry about to be made: 1 for the first retry.
        attempt: u32,
        /// The most retries allowed (the policy's `max_retries`).
        #[serde(rename = "maxAttempts")]
        max_attempts: u32,
        /// The wait before the attempt, in milliseconds.
        #[serde(rename = "delayMs")]
        delay_ms: u64,
        /// Why the previous attempt failed.
        #[serde(rename = "errorMessage")]
        error_message: String,
    },
    /// A retried summary request is being sent (after its delay).
    RetryAttemptStart {
        /// Which summary is being retried.
        operation: RetryOperation,
    },
    /// A summary that needed retries is done, successfully or not.
    RetryFinished {
        /// Which summary was retried.
        operation: RetryOperation,
    },
    /// The model used for later requests changed.
    ModelUpdate {
        /// The model now in use.
        model: ModelInfo,
        /// The model before the change (always present in what this crate sends; optional in
        /// pi's shape).
        #[serde(rename = "previousModel")]
        previous_model: Option<ModelInfo>,
        /// Whether a caller set it or navigation restored it.
        source: ChangeSource,
    },
    /// The thinking level changed (set by a caller or restored from the branch).
    ThinkingLevelUpdate {
        /// The level now, as pi spells it (`off`, `minimal`, `low`, `medium`, `high`, `xhigh`,
        /// `max`).
        level: String,
        /// The level before the change.
        #[serde(rename = "previousLevel")]
        previous_level: String,
    },
    /// A compaction began (manual here; the app also reports automatic ones).
    CompactionStart(CompactionStartEvent),
    /// A compaction ended: with its result, or aborted, or failed (also "nothing to compact").
    CompactionEnd(CompactionEndEvent),
    /// The tool set or the active tools changed.
    ToolsUpdate {
        /// Every tool the harness holds, in order.
        #[serde(rename = "toolNames")]
        tool_names: Vec<String>,
        /// The tools held before the change.
        #[serde(rename = "previousToolNames")]
        previous_tool_names: Vec<String>,
        /// The tools the model may call now.
        #[serde(rename = "activeToolNames")]
        active_tool_names: Vec<String>,
        /// The tools the model could call before.
        #[serde(rename = "previousActiveToolNames")]
        previous_active_tool_names: Vec<String>,
        /// Whether a caller set them or navigation restored them.
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
