//! `AgentHarness`: the runtime around the agent loop (compaction-and-harness.md §C) — one
//! session, one phase at a time (`idle | turn | compaction | branch_summary`), queues for
//! steering, follow-ups and the next turn, settings that are written as entries (at once when
//! idle, as pending writes when busy), persistence of every message at `message_end` before
//! subscribers see it, one save point per turn, tree navigation and compaction.
//!
//! The harness holds no terminal or provider-HTTP details: the caller hands it an
//! `Arc<dyn ApiProvider>` and the models it may use.

mod compact;
pub mod hooks;
mod navigate;
pub mod pending;
mod prompt_policy;
mod request;
mod run;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use arbor_ai::stream::{ApiProvider, StreamOptions, ThinkingBudgets};
use arbor_ai::{Content, ContentBlock, ImageContent, Message, Model, ThinkingLevel, UserMessage};
use serde::Serialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::agent::{
    AgentError, AgentEvent, ChangeSource, ErrorCode, ModelInfo, ToolExecutionMode, ToolRef, ToolSet,
};
use crate::context::projection::ModelRef;
use crate::message::AgentMessage;
use crate::session::Session;

pub use compact::{COMPACTION_CANCELLED, NOTHING_TO_COMPACT};
pub use hooks::{
    BeforeAgentStart, BeforeAgentStartResult, BeforeCompact, BeforeCompactResult, BeforeTreeResult,
    HarnessHook, HookResult, HookSummary, TreePreparation,
};
pub use navigate::{NavigateOptions, NavigateResult};
pub use pending::PendingWrite;
pub use prompt_policy::{
    PolicyControl, PolicyObserver, PromptPolicy, PromptPolicyError, PromptRetry, RETRY_CANCELLED,
};

/// pi's default system prompt when none is given.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are a helpful assistant.";

/// What the harness is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Idle,
    Turn,
    Compaction,
    BranchSummary,
}

/// How many queued messages one poll takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueMode {
    All,
    #[default]
    OneAtATime,
}

/// What a system-prompt callback sees (per turn).
pub struct SystemPromptInput<'a> {
    pub model: &'a Model,
    pub thinking_level: ThinkingLevel,
    pub active_tools: &'a [ToolRef],
}

type PromptFn = dyn Fn(&SystemPromptInput<'_>) -> String + Send + Sync;

/// The system prompt: fixed, or computed for every turn. Never stored as an entry.
#[derive(Clone)]
pub enum SystemPrompt {
    Text(String),
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
    pub fn callback(f: impl Fn(&SystemPromptInput<'_>) -> String + Send + Sync + 'static) -> Self {
        SystemPrompt::Callback(Arc::new(f))
    }

    fn render(&self, input: &SystemPromptInput<'_>) -> String {
        match self {
            SystemPrompt::Text(t) => t.clone(),
            SystemPrompt::Callback(f) => f(input),
        }
    }
}

/// Construction options.
#[derive(Clone, Default)]
pub struct HarnessOptions {
    /// The model (for [`AgentHarness::resume`]: the fallback when the session names none or an
    /// unknown one).
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
    /// Settings of [`AgentHarness::compact`].
    pub compaction: crate::compaction::CompactionSettings,
    /// Retries of a compaction or branch-summary request that fails transiently (with
    /// `retry_*` events). `None`: a failed summary is reported at once (DECISIONS §20.12).
    pub summary_retry: Option<arbor_ai::retry::RetryPolicy>,
}

/// Maps a stored provider/model id to a usable model.
pub type ModelResolver = Arc<dyn Fn(&ModelRef) -> Option<Model> + Send + Sync>;

/// What [`AgentHarness::resume`] could not restore from the session and replaced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResumeReport {
    /// The stored model the resolver did not know (the fallback model is used).
    pub unknown_model: Option<ModelRef>,
    /// A stored thinking level this version does not know (the fallback level is used).
    pub unknown_thinking_level: Option<String>,
    /// Stored active tool names that no given tool has (dropped).
    pub unknown_tools: Vec<String>,
}

/// `abort()`'s result: the steering and follow-up messages that were dropped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AbortResult {
    pub cleared_steer: Vec<AgentMessage>,
    pub cleared_follow_up: Vec<AgentMessage>,
}

/// Handle of a subscription, for [`AgentHarness::unsubscribe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscriptionId(u64);

type Listener = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

struct State {
    phase: Phase,
    model: Model,
    thinking_level: ThinkingLevel,
    tools: Vec<ToolRef>,
    active_tool_names: Vec<String>,
    active: ToolSet,
    system_prompt: SystemPrompt,
    stream_options: StreamOptions,
    thinking_budgets: ThinkingBudgets,
    steering_mode: QueueMode,
    follow_up_mode: QueueMode,
    tool_execution: ToolExecutionMode,
    steer: VecDeque<AgentMessage>,
    follow_up: VecDeque<AgentMessage>,
    next_turn: VecDeque<AgentMessage>,
    pending: VecDeque<PendingWrite>,
    /// Cancels the running turn, compaction or branch summary.
    cancel: Option<CancellationToken>,
    models: Option<ModelResolver>,
    compaction: crate::compaction::CompactionSettings,
    summary_retry: Option<arbor_ai::retry::RetryPolicy>,
    /// Request messages kept across turns (DECISIONS §20.13).
    request_cache: request::RequestCache,
}

struct Inner {
    session: Arc<Session>,
    provider: Arc<dyn ApiProvider>,
    state: Mutex<State>,
    listeners: RwLock<Vec<(u64, Listener)>>,
    next_listener: Mutex<u64>,
    hooks: RwLock<Vec<Arc<dyn HarnessHook>>>,
    /// `true` while no operation runs (for `wait_for_idle`).
    idle: watch::Sender<bool>,
    /// Serializes flushes so pending writes keep their order.
    flush_lock: tokio::sync::Mutex<()>,
}

/// The agent runtime over one session. Cheap to clone (shared handle): steer or abort from
/// another task while `prompt` runs.
#[derive(Clone)]
pub struct AgentHarness {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AgentHarness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state();
        f.debug_struct("AgentHarness")
            .field("phase", &s.phase)
            .field("model", &s.model.id)
            .field("thinking_level", &s.thinking_level)
            .finish_non_exhaustive()
    }
}

fn names_of(tools: &[ToolRef]) -> Vec<String> {
    tools.iter().map(|t| t.name().to_string()).collect()
}

fn duplicates(names: &[String]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut dups = Vec::new();
    for n in names {
        if !seen.insert(n.as_str()) && !dups.contains(n) {
            dups.push(n.clone());
        }
    }
    dups
}

fn check_tools(tools: &[ToolRef]) -> Result<(), AgentError> {
    let dups = duplicates(&names_of(tools));
    if dups.is_empty() {
        Ok(())
    } else {
        Err(AgentError::new(
            ErrorCode::InvalidArgument,
            format!("Duplicate tool name(s): {}", dups.join(", ")),
        ))
    }
}

fn check_active(tools: &[ToolRef], active: &[String]) -> Result<(), AgentError> {
    let dups = duplicates(active);
    if !dups.is_empty() {
        return Err(AgentError::new(
            ErrorCode::InvalidArgument,
            format!("Duplicate active tool name(s): {}", dups.join(", ")),
        ));
    }
    let unknown: Vec<&str> = active
        .iter()
        .filter(|n| !tools.iter().any(|t| t.name() == n.as_str()))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(AgentError::new(
            ErrorCode::InvalidArgument,
            format!("Unknown tool(s): {}", unknown.join(", ")),
        ));
    }
    Ok(())
}

fn active_set(tools: &[ToolRef], active: &[String]) -> ToolSet {
    ToolSet::new(
        active
            .iter()
            .filter_map(|n| tools.iter().find(|t| t.name() == n.as_str()).cloned())
            .collect(),
    )
}

/// A user message with text and images (the shape of prompts, steering and follow-ups).
pub fn user_message(text: &str, images: &[ImageContent]) -> AgentMessage {
    let mut blocks = Vec::with_capacity(1 + images.len());
    blocks.push(ContentBlock::text(text));
    blocks.extend(images.iter().cloned().map(ContentBlock::Image));
    AgentMessage::Llm(Message::User(UserMessage {
        content: Content::Blocks(blocks),
        timestamp: arbor_ai::time::now_ms().into(),
        extra: Default::default(),
    }))
}

impl AgentHarness {
    /// A harness over `session` with the given model and settings. Writes nothing.
    pub fn new(
        session: Arc<Session>,
        provider: Arc<dyn ApiProvider>,
        options: HarnessOptions,
    ) -> Result<Self, AgentError> {
        check_tools(&options.tools)?;
        let active_names = options
            .active_tool_names
            .clone()
            .unwrap_or_else(|| names_of(&options.tools));
        check_active(&options.tools, &active_names)?;
        let active = active_set(&options.tools, &active_names);
        let (idle, _) = watch::channel(true);
        let state = State {
            phase: Phase::Idle,
            model: options.model,
            thinking_level: options.thinking_level.unwrap_or(ThinkingLevel::Off),
            tools: options.tools,
            active_tool_names: active_names,
            active,
            system_prompt: options.system_prompt,
            stream_options: options.stream_options,
            thinking_budgets: options.thinking_budgets,
            steering_mode: options.steering_mode,
            follow_up_mode: options.follow_up_mode,
            tool_execution: options.tool_execution,
            steer: VecDeque::new(),
            follow_up: VecDeque::new(),
            next_turn: VecDeque::new(),
            pending: VecDeque::new(),
            cancel: None,
            models: options.models,
            compaction: options.compaction,
            summary_retry: options.summary_retry,
            request_cache: request::RequestCache::default(),
        };
        Ok(AgentHarness {
            inner: Arc::new(Inner {
                session,
                provider,
                state: Mutex::new(state),
                listeners: RwLock::new(Vec::new()),
                next_listener: Mutex::new(0),
                hooks: RwLock::new(Vec::new()),
                idle,
                flush_lock: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// A harness continuing a reopened session from its leaf: model, thinking level and active
    /// tools come from the session's derived state (seed 001 §16). `options.models` maps the
    /// stored provider/model id to a model; when it does not know it, `options.model` is used
    /// and the report says so (nothing stored: `options.model`, no report). Writes nothing.
    pub async fn resume(
        session: Arc<Session>,
        provider: Arc<dyn ApiProvider>,
        mut options: HarnessOptions,
    ) -> Result<(Self, ResumeReport), AgentError> {
        // Only the derived settings: storages with an index answer them without reading the
        // path, and the context itself is built on the first turn (or by a UI warming it up
        // after its first frame), so resuming a large session does not read all of it.
        let derived = session.storage().derived_settings(None).await?;
        let ctx = crate::context::projection::DerivedState {
            model: derived.model.map(
                |(provider, model_id)| crate::context::projection::ModelRef { provider, model_id },
            ),
            thinking_level: derived.thinking_level.unwrap_or_else(|| "off".to_owned()),
            active_tool_names: derived.active_tool_names,
        };
        let mut report = ResumeReport::default();
        if let Some(stored) = &ctx.model {
            let known = (stored.provider == options.model.provider
                && stored.model_id == options.model.id)
                .then(|| options.model.clone());
            match known.or_else(|| options.models.as_ref().and_then(|r| r(stored))) {
                Some(m) => options.model = m,
                None => report.unknown_model = Some(stored.clone()),
            }
        }
        match ThinkingLevel::parse(&ctx.thinking_level) {
            Some(level) => options.thinking_level = Some(level),
            None => report.unknown_thinking_level = Some(ctx.thinking_level.clone()),
        }
        if let Some(stored) = &ctx.active_tool_names {
            let (known, unknown): (Vec<String>, Vec<String>) = stored
                .iter()
                .cloned()
                .partition(|n| options.tools.iter().any(|t| t.name() == n.as_str()));
            let mut deduped = Vec::with_capacity(known.len());
            for n in known {
                if !deduped.contains(&n) {
                    deduped.push(n);
                }
            }
            options.active_tool_names = Some(deduped);
            report.unknown_tools = unknown;
        }
        drop(ctx);
        Ok((AgentHarness::new(session, provider, options)?, report))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a listener panicked while we held it; the state itself
        // is updated field by field and stays consistent.
        self.inner
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    // ---- getters -------------------------------------------------------------------------

    pub fn session(&self) -> &Arc<Session> {
        &self.inner.session
    }

    pub fn phase(&self) -> Phase {
        self.state().phase
    }

    pub fn model(&self) -> Model {
        self.state().model.clone()
    }

    pub fn thinking_level(&self) -> ThinkingLevel {
        self.state().thinking_level
    }

    pub fn tool_names(&self) -> Vec<String> {
        names_of(&self.state().tools)
    }

    pub fn active_tool_names(&self) -> Vec<String> {
        self.state().active_tool_names.clone()
    }

    /// Copies of the steering, follow-up and next-turn queues.
    pub fn queues(&self) -> (Vec<AgentMessage>, Vec<AgentMessage>, Vec<AgentMessage>) {
        let s = self.state();
        (
            s.steer.iter().cloned().collect(),
            s.follow_up.iter().cloned().collect(),
            s.next_turn.iter().cloned().collect(),
        )
    }

    /// Writes waiting for the next flush point.
    pub fn pending_writes(&self) -> Vec<PendingWrite> {
        self.state().pending.iter().cloned().collect()
    }

    // ---- subscribers and hooks -----------------------------------------------------------

    /// Registers an observer of every event (loop events and harness notifications), called
    /// in order on the task that produced the event. Keep it quick; forward to a channel for
    /// slow work.
    pub fn subscribe(
        &self,
        listener: impl Fn(&AgentEvent) + Send + Sync + 'static,
    ) -> SubscriptionId {
        let id = {
            let mut n = self
                .inner
                .next_listener
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *n += 1;
            *n
        };
        self.inner
            .listeners
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push((id, Arc::new(listener)));
        SubscriptionId(id)
    }

    pub fn unsubscribe(&self, id: SubscriptionId) {
        self.inner
            .listeners
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(i, _)| *i != id.0);
    }

    /// Registers hooks (run after those registered earlier).
    pub fn add_hook(&self, hook: Arc<dyn HarnessHook>) {
        self.inner
            .hooks
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(hook);
    }

    fn hooks(&self) -> Vec<Arc<dyn HarnessHook>> {
        self.inner
            .hooks
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn deliver(&self, event: &AgentEvent) {
        let listeners: Vec<Listener> = self
            .inner
            .listeners
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(_, l)| l.clone())
            .collect();
        for l in listeners {
            l(event);
        }
    }

    fn queue_update(&self) -> AgentEvent {
        let (steer, follow_up, next_turn) = self.queues();
        AgentEvent::QueueUpdate {
            steer,
            follow_up,
            next_turn,
        }
    }

    // ---- operations: phase bookkeeping -----------------------------------------------------

    /// Enters `phase` from idle, or fails with pi's busy error for that operation.
    fn begin(&self, phase: Phase, busy_text: &str) -> Result<CancellationToken, AgentError> {
        let mut s = self.state();
        if s.phase != Phase::Idle {
            return Err(AgentError::new(ErrorCode::Busy, busy_text));
        }
        s.phase = phase;
        let token = CancellationToken::new();
        s.cancel = Some(token.clone());
        drop(s);
        self.inner.idle.send_replace(false);
        Ok(token)
    }

    fn finish(&self) {
        {
            let mut s = self.state();
            s.phase = Phase::Idle;
            s.cancel = None;
        }
        self.inner.idle.send_replace(true);
    }

    /// Resolves once no operation (turn, compaction, branch summary) is running.
    pub async fn wait_for_idle(&self) {
        let mut rx = self.inner.idle.subscribe();
        // The sender lives as long as `self`, so this cannot fail while we wait.
        let _ = rx.wait_for(|idle| *idle).await;
    }

    // ---- queues ----------------------------------------------------------------------------

    /// Queues a message for the running operation (taken after the current tool batch).
    pub fn steer(&self, text: &str, images: &[ImageContent]) -> Result<(), AgentError> {
        self.enqueue(text, images, |s| &mut s.steer, "Cannot steer while idle")
    }

    /// Queues a message for when the agent would stop.
    pub fn follow_up(&self, text: &str, images: &[ImageContent]) -> Result<(), AgentError> {
        self.enqueue(
            text,
            images,
            |s| &mut s.follow_up,
            "Cannot follow up while idle",
        )
    }

    /// Queues a message sent before the next `prompt` (always allowed).
    pub fn next_turn(&self, text: &str, images: &[ImageContent]) {
        self.state().next_turn.push_back(user_message(text, images));
        let ev = self.queue_update();
        self.deliver(&ev);
    }

    fn enqueue(
        &self,
        text: &str,
        images: &[ImageContent],
        queue: impl Fn(&mut State) -> &mut VecDeque<AgentMessage>,
        idle_text: &str,
    ) -> Result<(), AgentError> {
        {
            let mut s = self.state();
            if s.phase == Phase::Idle {
                return Err(AgentError::new(ErrorCode::InvalidState, idle_text));
            }
            queue(&mut s).push_back(user_message(text, images));
        }
        let ev = self.queue_update();
        self.deliver(&ev);
        Ok(())
    }

    /// Takes queued messages per `mode`; emits `queue_update` when something was taken.
    fn drain(&self, steering: bool) -> Vec<AgentMessage> {
        let taken: Vec<AgentMessage> = {
            let mut s = self.state();
            let mode = if steering {
                s.steering_mode
            } else {
                s.follow_up_mode
            };
            let q = if steering {
                &mut s.steer
            } else {
                &mut s.follow_up
            };
            match mode {
                QueueMode::All => q.drain(..).collect(),
                QueueMode::OneAtATime => q.pop_front().into_iter().collect(),
            }
        };
        if !taken.is_empty() {
            let ev = self.queue_update();
            self.deliver(&ev);
        }
        taken
    }

    /// Drops the steering and follow-up queues, cancels the running turn, compaction or branch
    /// summary, waits until idle, then emits `abort`. Never fails when idle.
    pub async fn abort(&self) -> AbortResult {
        let (cleared_steer, cleared_follow_up, cancel) = {
            let mut s = self.state();
            (
                s.steer.drain(..).collect::<Vec<_>>(),
                s.follow_up.drain(..).collect::<Vec<_>>(),
                s.cancel.clone(),
            )
        };
        if let Some(c) = cancel {
            c.cancel();
        }
        let ev = self.queue_update();
        self.deliver(&ev);
        self.wait_for_idle().await;
        self.deliver(&AgentEvent::Abort {
            cleared_steer: cleared_steer.clone(),
            cleared_follow_up: cleared_follow_up.clone(),
        });
        AbortResult {
            cleared_steer,
            cleared_follow_up,
        }
    }

    // ---- settings: write now when idle, queue when busy -------------------------------------

    /// Writes `write` now when idle (then a durability point), else queues it. Returns whether
    /// it was queued.
    async fn write_or_queue(&self, write: PendingWrite) -> Result<bool, AgentError> {
        {
            let mut s = self.state();
            if s.phase != Phase::Idle {
                s.pending.push_back(write);
                return Ok(true);
            }
        }
        write.write(&self.inner.session).await?;
        self.inner.session.storage().save_point().await?;
        Ok(false)
    }

    /// Appends a message to the session (queued while busy).
    pub async fn append_message(&self, message: AgentMessage) -> Result<(), AgentError> {
        self.write_or_queue(PendingWrite::Message(Box::new(message)))
            .await?;
        Ok(())
    }

    /// Switches the model from the next request on; records a `model_change`.
    pub async fn set_model(&self, model: Model) -> Result<(), AgentError> {
        let write = PendingWrite::ModelChange {
            provider: model.provider.clone(),
            model_id: model.id.clone(),
        };
        self.write_or_queue(write).await?;
        let previous = {
            let mut s = self.state();
            std::mem::replace(&mut s.model, model.clone())
        };
        self.deliver(&AgentEvent::ModelUpdate {
            model: ModelInfo::from(&model),
            previous_model: Some(ModelInfo::from(&previous)),
            source: ChangeSource::Set,
        });
        Ok(())
    }

    pub async fn set_thinking_level(&self, level: ThinkingLevel) -> Result<(), AgentError> {
        self.write_or_queue(PendingWrite::ThinkingLevelChange(
            level.as_str().to_string(),
        ))
        .await?;
        let previous = std::mem::replace(&mut self.state().thinking_level, level);
        self.deliver(&AgentEvent::ThinkingLevelUpdate {
            level: level.as_str().to_string(),
            previous_level: previous.as_str().to_string(),
        });
        Ok(())
    }

    /// Replaces the tool set (active = `active` or every tool); records `active_tools_change`.
    pub async fn set_tools(
        &self,
        tools: Vec<ToolRef>,
        active: Option<Vec<String>>,
    ) -> Result<(), AgentError> {
        check_tools(&tools)?;
        let active = active.unwrap_or_else(|| names_of(&tools));
        check_active(&tools, &active)?;
        self.apply_tools(Some(tools), active).await
    }

    /// Changes which of the tools the model may call; records `active_tools_change`.
    pub async fn set_active_tools(&self, names: Vec<String>) -> Result<(), AgentError> {
        {
            let s = self.state();
            check_active(&s.tools, &names)?;
        }
        self.apply_tools(None, names).await
    }

    async fn apply_tools(
        &self,
        tools: Option<Vec<ToolRef>>,
        active: Vec<String>,
    ) -> Result<(), AgentError> {
        self.write_or_queue(PendingWrite::ActiveToolsChange(active.clone()))
            .await?;
        let ev = {
            let mut s = self.state();
            let previous_tool_names = names_of(&s.tools);
            let previous_active = std::mem::replace(&mut s.active_tool_names, active.clone());
            if let Some(t) = tools {
                s.tools = t;
            }
            s.active = active_set(&s.tools, &active);
            AgentEvent::ToolsUpdate {
                tool_names: names_of(&s.tools),
                previous_tool_names,
                active_tool_names: active,
                previous_active_tool_names: previous_active,
                source: ChangeSource::Set,
            }
        };
        self.deliver(&ev);
        Ok(())
    }

    /// Replaces the system prompt (used from the next request; never stored).
    pub fn set_system_prompt(&self, prompt: SystemPrompt) {
        self.state().system_prompt = prompt;
    }

    /// The steering and follow-up delivery modes.
    pub fn queue_modes(&self) -> (QueueMode, QueueMode) {
        let s = self.state();
        (s.steering_mode, s.follow_up_mode)
    }

    /// Empties the steering and follow-up queues (the run goes on) and returns what they held;
    /// emits `queue_update`.
    pub fn clear_queues(&self) -> (Vec<AgentMessage>, Vec<AgentMessage>) {
        let taken = {
            let mut s = self.state();
            (
                s.steer.drain(..).collect::<Vec<_>>(),
                s.follow_up.drain(..).collect::<Vec<_>>(),
            )
        };
        let ev = self.queue_update();
        self.deliver(&ev);
        taken
    }

    pub fn set_steering_mode(&self, mode: QueueMode) {
        self.state().steering_mode = mode;
    }

    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        self.state().follow_up_mode = mode;
    }

    pub fn set_stream_options(&self, options: StreamOptions) {
        self.state().stream_options = options;
    }

    /// Writes every pending write in order (each removed only once written). Returns whether
    /// there was anything to write.
    async fn flush_pending(&self) -> Result<bool, AgentError> {
        let _order = self.inner.flush_lock.lock().await;
        let mut wrote = false;
        loop {
            let next = self.state().pending.front().cloned();
            let Some(write) = next else {
                return Ok(wrote);
            };
            write.write(&self.inner.session).await?;
            self.state().pending.pop_front();
            wrote = true;
        }
    }

    /// Adopts the derived settings of the current leaf without writing entries (after
    /// navigation: DECISIONS §20.6), emitting `model_update` / `thinking_level_update` /
    /// `tools_update` with `source: "restore"` for what changed.
    async fn restore_settings(&self) -> Result<(), AgentError> {
        let ctx = self
            .inner
            .session
            .build_context(&crate::context::projection::ContextOptions::default())
            .await?;
        let mut events = Vec::new();
        {
            let mut s = self.state();
            let resolve = s.models.clone();
            if let (Some(stored), Some(resolve)) = (&ctx.model, resolve) {
                if stored.provider != s.model.provider || stored.model_id != s.model.id {
                    if let Some(m) = resolve(stored) {
                        let previous = std::mem::replace(&mut s.model, m.clone());
                        events.push(AgentEvent::ModelUpdate {
                            model: ModelInfo::from(&m),
                            previous_model: Some(ModelInfo::from(&previous)),
                            source: ChangeSource::Restore,
                        });
                    }
                }
            }
            if let Some(level) = ThinkingLevel::parse(&ctx.thinking_level) {
                if level != s.thinking_level {
                    let previous = std::mem::replace(&mut s.thinking_level, level);
                    events.push(AgentEvent::ThinkingLevelUpdate {
                        level: level.as_str().to_string(),
                        previous_level: previous.as_str().to_string(),
                    });
                }
            }
            if let Some(stored) = &ctx.active_tool_names {
                let known: Vec<String> = stored
                    .iter()
                    .filter(|n| s.tools.iter().any(|t| t.name() == n.as_str()))
                    .cloned()
                    .collect();
                if known != s.active_tool_names && duplicates(&known).is_empty() {
                    let previous = std::mem::replace(&mut s.active_tool_names, known.clone());
                    s.active = active_set(&s.tools, &known);
                    events.push(AgentEvent::ToolsUpdate {
                        tool_names: names_of(&s.tools),
                        previous_tool_names: names_of(&s.tools),
                        active_tool_names: known,
                        previous_active_tool_names: previous,
                        source: ChangeSource::Restore,
                    });
                }
            }
        }
        for ev in &events {
            self.deliver(ev);
        }
        Ok(())
    }
}
