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
    /// Everything queued.
    All,
    /// The oldest queued message.
    #[default]
    OneAtATime,
}

/// Construction options. Non-exhaustive (DECISIONS §20.41): start from
/// [`HarnessOptions::new`] (or `default()`) and chain the `with_*` setters, or assign the public
/// fields.
///
/// ```
/// use arbor_agent::harness::{HarnessOptions, SystemPrompt};
///
/// let options = HarnessOptions::new(arbor_ai::Model::default())
///     .with_system_prompt(SystemPrompt::Text("You count words.".into()));
/// assert!(options.tools.is_empty());
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct HarnessOptions {
    /// The model (for [`AgentHarness::resume`](super::AgentHarness::resume): the fallback when
    /// the session names none or an unknown one).
    pub model: Model,
    /// The thinking level (`None`: the model's default, off).
    pub thinking_level: Option<ThinkingLevel>,
    /// The tools the model may call.
    pub tools: Vec<ToolRef>,
    /// Default: every tool.
    pub active_tool_names: Option<Vec<String>>,
    /// The system prompt of every request.
    pub system_prompt: SystemPrompt,
    /// Options of every model request (key, headers, limits, ...).
    pub stream_options: StreamOptions,
    /// Token budgets per thinking level, for APIs that take a budget.
    pub thinking_budgets: ThinkingBudgets,
    /// How many queued steering messages one poll takes.
    pub steering_mode: QueueMode,
    /// How many queued follow-up messages one poll takes.
    pub follow_up_mode: QueueMode,
    /// Whether tool calls of one message may run in parallel (a tool can still ask for
    /// sequential execution).
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

impl std::fmt::Debug for HarnessOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HarnessOptions")
            .field(
                "model",
                &format_args!("{}/{}", self.model.provider, self.model.id),
            )
            .field("thinking_level", &self.thinking_level)
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("active_tool_names", &self.active_tool_names)
            .field("system_prompt", &self.system_prompt)
            .field("steering_mode", &self.steering_mode)
            .field("follow_up_mode", &self.follow_up_mode)
            .field("tool_execution", &self.tool_execution)
            .field("models", &self.models.as_ref().map(|_| "resolver"))
            .field("compaction", &self.compaction)
            .field("summary_retry", &self.summary_retry)
            .finish_non_exhaustive()
    }
}

impl HarnessOptions {
    /// Options for `model`, everything else at its default.
    pub fn new(model: Model) -> Self {
        HarnessOptions {
            model,
            ..HarnessOptions::default()
        }
    }
    /// Sets [`HarnessOptions::model`].
    pub fn with_model(mut self, model: Model) -> Self {
        self.model = model;
        self
    }
    /// Sets [`HarnessOptions::thinking_level`].
    pub fn with_thinking_level(mut self, level: ThinkingLevel) -> Self {
        self.thinking_level = Some(level);
        self
    }
    /// Replaces [`HarnessOptions::tools`].
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = ToolRef>) -> Self {
        self.tools = tools.into_iter().collect();
        self
    }
    /// Adds one tool.
    pub fn with_tool(mut self, tool: ToolRef) -> Self {
        self.tools.push(tool);
        self
    }
    /// Sets [`HarnessOptions::active_tool_names`].
    pub fn with_active_tool_names(mut self, names: Option<Vec<String>>) -> Self {
        self.active_tool_names = names;
        self
    }
    /// Sets [`HarnessOptions::system_prompt`].
    pub fn with_system_prompt(mut self, prompt: SystemPrompt) -> Self {
        self.system_prompt = prompt;
        self
    }
    /// Sets [`HarnessOptions::stream_options`].
    pub fn with_stream_options(mut self, options: StreamOptions) -> Self {
        self.stream_options = options;
        self
    }
    /// Sets [`HarnessOptions::thinking_budgets`].
    pub fn with_thinking_budgets(mut self, budgets: ThinkingBudgets) -> Self {
        self.thinking_budgets = budgets;
        self
    }
    /// Sets [`HarnessOptions::steering_mode`].
    pub fn with_steering_mode(mut self, mode: QueueMode) -> Self {
        self.steering_mode = mode;
        self
    }
    /// Sets [`HarnessOptions::follow_up_mode`].
    pub fn with_follow_up_mode(mut self, mode: QueueMode) -> Self {
        self.follow_up_mode = mode;
        self
    }
    /// Sets [`HarnessOptions::tool_execution`].
    pub fn with_tool_execution(mut self, mode: ToolExecutionMode) -> Self {
        self.tool_execution = mode;
        self
    }
    /// Sets [`HarnessOptions::models`].
    pub fn with_models(mut self, models: ModelResolver) -> Self {
        self.models = Some(models);
        self
    }
    /// Sets [`HarnessOptions::compaction`].
    pub fn with_compaction(mut self, settings: CompactionSettings) -> Self {
        self.compaction = settings;
        self
    }
    /// Sets [`HarnessOptions::summary_retry`].
    pub fn with_summary_retry(mut self, policy: arbor_ai::retry::RetryPolicy) -> Self {
        self.summary_retry = Some(policy);
        self
    }
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
