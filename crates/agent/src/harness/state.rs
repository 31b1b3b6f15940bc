//! The harness's mutable state and the phase it is in. One harness does one thing at a time
//! (`idle | turn | compaction | branch_summary`); everything a setter or a queue call changes
//! lives in [`State`], behind the handle's one mutex.

use std::collections::VecDeque;

use arbor_ai::retry::RetryPolicy;
use arbor_ai::stream::{StreamOptions, ThinkingBudgets};
use arbor_ai::{Model, ThinkingLevel};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::agent::{ToolExecutionMode, ToolRef, ToolSet};
use crate::compaction::CompactionSettings;
use crate::message::AgentMessage;

use super::options::{ModelResolver, QueueMode};
use super::pending::PendingWrite;
use super::request::RequestCache;
use super::system_prompt::SystemPrompt;

/// What the harness is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Nothing runs; every operation may start.
    Idle,
    /// A prompt run (its turns, tool calls and follow-ups) is under way.
    Turn,
    /// `compact()` is preparing or summarizing.
    Compaction,
    /// `navigate_tree` is running, with or without a summary to generate.
    BranchSummary,
}

/// Everything about a harness that changes while it runs, under one lock: what it is doing,
/// the settings of the next request, the queues and the writes waiting for a flush point.
pub(super) struct State {
    pub(super) phase: Phase,
    pub(super) model: Model,
    pub(super) thinking_level: ThinkingLevel,
    pub(super) tools: Vec<ToolRef>,
    pub(super) active_tool_names: Vec<String>,
    pub(super) active: ToolSet,
    /// Tools a host adds beside the recorded set (MCP servers' tools): offered after the
    /// active tools, never written to the session (DECISIONS §33.9).
    pub(super) extension_tools: Vec<ToolRef>,
    pub(super) system_prompt: SystemPrompt,
    pub(super) stream_options: StreamOptions,
    pub(super) thinking_budgets: ThinkingBudgets,
    pub(super) steering_mode: QueueMode,
    pub(super) follow_up_mode: QueueMode,
    pub(super) tool_execution: ToolExecutionMode,
    pub(super) steer: VecDeque<AgentMessage>,
    pub(super) follow_up: VecDeque<AgentMessage>,
    pub(super) next_turn: VecDeque<AgentMessage>,
    pub(super) pending: VecDeque<PendingWrite>,
    /// Cancels the running turn, compaction or branch summary.
    pub(super) cancel: Option<CancellationToken>,
    pub(super) models: Option<ModelResolver>,
    pub(super) compaction: CompactionSettings,
    pub(super) summary_retry: Option<RetryPolicy>,
    /// Request messages kept across turns (DECISIONS §20.13).
    pub(super) request_cache: RequestCache,
}
