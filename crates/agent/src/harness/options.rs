//! What a harness is built from ([`HarnessOptions`]) and what [`AgentHarness::resume`] reports
//! it could not restore.
//!
//! [`AgentHarness::resume`]: super::AgentHarness::resume

use std::sync::Arc;

use arbor_ai::stream::{StreamOptions, ThinkingBudgets};
use arbor_ai::{Model, ThinkingLevel};

use crate::agent::{ToolExecutionMode, ToolRef};
use crate::compaction::CompactionSettings;
use crate::context::projection::ModelRef;

use super::system_prompt::SystemPrompt;

/// How many queued messages one poll takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueMode {
    All,
    #[default]
    OneAtATime,
}

/// Construction options.
#[derive(Clone, Default)]
pub struct HarnessOptions {
    /// The model (for [`AgentHarness::resume`](super::AgentHarness::resume): the fallback when
    /// the session names none or an unknown one).
    pub model: Model,
    pub thinking_level: Option<ThinkingLevel>,
    pub tools: Vec<ToolRef>,
    /// Default: every tool.
    pub active_tool_names: Option<Vec<String>>,
    pub system_prompt: SystemPrompt,
    pub stream_options: StreamOptions,
    pub thinking_budgets: ThinkingBudgets,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    pub tool_execution: ToolExecutionMode,
    /// Maps a stored provider/model id to a model (resuming, navigation). `None`: only
    /// `model` is known.
    pub models: Option<ModelResolver>,
    /// Settings of [`AgentHarness::compact`](super::AgentHarness::compact).
    pub compaction: CompactionSettings,
    /// Retries of a compaction or branch-summary request that fails transiently (with
    /// `retry_*` events). `None`: a failed summary is reported at once (DECISIONS §20.12).
    pub summary_retry: Option<arbor_ai::retry::RetryPolicy>,
}

/// Maps a stored provider/model id to a usable model.
pub type ModelResolver = Arc<dyn Fn(&ModelRef) -> Option<Model> + Send + Sync>;

/// What [`AgentHarness::resume`](super::AgentHarness::resume) could not restore from the
/// session and replaced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResumeReport {
    /// The stored model the resolver did not know (the fallback model is used).
    pub unknown_model: Option<ModelRef>,
    /// A stored thinking level this version does not know (the fallback level is used).
    pub unknown_thinking_level: Option<String>,
    /// Stored active tool names that no given tool has (dropped).
    pub unknown_tools: Vec<String>,
}
