//! One agent run (DECISIONS §20): stream an assistant response, run its
//! tool calls, repeat while the model calls tools or messages are queued.
//!
//! The loop owns no state beyond one run and persists nothing: every event goes through
//! [`LoopHooks::emit`] (the harness persists `message_end` there before subscribers see it), and
//! the context can be replaced between turns through [`LoopHooks::prepare_next_turn`].

use std::sync::Arc;

use arbor_ai::stream::{ApiProvider, SimpleStreamOptions, StreamOptions, ThinkingBudgets};
use arbor_ai::time::now_ms;
use arbor_ai::transform::transform_messages;
use arbor_ai::{
    AssistantMessage, AssistantMessageEvent, Context, Message, MessageAccumulator, Model,
    StopReason, ThinkingLevel, ToolCall, Usage,
};
use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::context::convert::convert_one;
use crate::message::AgentMessage;

use super::error::{AgentError, ErrorCode};
use super::event::AgentEvent;
use super::loop_hooks::{LoopHooks, NextTurn};
use super::tool::{llm_tool, ToolExecutionMode};
use super::validate::ToolSet;

/// `errorMessage` of an assistant message the loop ends itself on abort (pi-ai's wording).
pub const REQUEST_ABORTED: &str = "Request was aborted";

/// What one run needs besides the messages.
#[derive(Clone)]
pub struct AgentLoopConfig {
    /// Streams the assistant; the caller picks it (never a global registry).
    pub provider: Arc<dyn ApiProvider>,
    /// The model of the first request.
    pub model: Model,
    /// `Off` sends no reasoning option.
    pub thinking_level: ThinkingLevel,
    /// The system prompt.
    pub system_prompt: Option<String>,
    /// The tools the model may call.
    pub tools: ToolSet,
    /// Base provider options (`cancel` is replaced by the run's token).
    pub stream_options: StreamOptions,
    /// Token budgets per thinking level.
    pub thinking_budgets: ThinkingBudgets,
    /// `Sequential` forces every batch to run one call at a time.
    pub tool_execution: ToolExecutionMode,
}

impl std::fmt::Debug for AgentLoopConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentLoopConfig")
            .field("model", &self.model.id)
            .field("thinking_level", &self.thinking_level)
            .field("tools", &self.tools)
            .field("tool_execution", &self.tool_execution)
            .finish_non_exhaustive()
    }
}

/// The messages of one run as the loop sees them: a shared base (the context it was started
/// with, or the one a host handed in [`NextTurn`]) plus what this run added since.
pub(super) struct RunContext {
    base: Arc<Vec<AgentMessage>>,
    added: Vec<AgentMessage>,
}

impl RunContext {
    fn push(&mut self, m: AgentMessage) {
        self.added.push(m);
    }

    fn iter(&self) -> impl Iterator<Item = &AgentMessage> {
        self.base.iter().chain(self.added.iter())
    }

    fn len(&self) -> usize {
        self.base.len() + self.added.len()
    }
}

/// One run in progress: its settings (replaceable between turns), its host, its cancellation
/// and its messages.
pub(super) struct RunState<'h> {
    pub(super) config: AgentLoopConfig,
    pub(super) hooks: &'h dyn LoopHooks,
    pub(super) cancel: CancellationToken,
    transcript: RunContext,
    new_messages: Vec<AgentMessage>,
}

/// Runs the agent on `context` + `prompts`; returns the messages the run added (prompts
/// included). Emits `agent_start`, `turn_start`, the prompts' message events, then the turns.
///
/// The bare loop, without a harness or a session: the host is a [`LoopHooks`] that only
/// receives events, and nothing is persisted. A failed request is not an `Err`: it ends the run
/// with an assistant message whose `stop_reason` is `Error`; `Err` means a hook failed.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use arbor_agent::agent::{
///     run_agent_loop, AgentError, AgentEvent, AgentLoopConfig, CancellationToken, LoopHooks,
///     ToolExecutionMode, ToolSet,
/// };
/// use arbor_agent::harness::user_message;
/// use arbor_ai::faux::{FauxProvider, FauxResponse};
/// use arbor_ai::ThinkingLevel;
///
/// /// Keeps the `type` of every event but the streaming deltas.
/// #[derive(Default)]
/// struct Recorder(Mutex<Vec<&'static str>>);
///
/// #[arbor_agent::async_trait]
/// impl LoopHooks for Recorder {
///     async fn emit(&self, event: AgentEvent) -> Result<(), AgentError> {
///         if !matches!(event, AgentEvent::MessageUpdate { .. }) {
///             let mut seen = self.0.lock().map_err(|_| AgentError::hook("recorder poisoned"))?;
///             seen.push(event.type_name());
///         }
///         Ok(())
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let faux = FauxProvider::new();
/// faux.push(FauxResponse::text("Hello to you."));
/// let config = AgentLoopConfig {
///     provider: Arc::new(faux.clone()),
///     model: faux.model(),
///     thinking_level: ThinkingLevel::Off,
///     system_prompt: Some("Answer briefly.".into()),
///     tools: ToolSet::new(Vec::new()),
///     stream_options: Default::default(),
///     thinking_budgets: Default::default(),
///     tool_execution: ToolExecutionMode::Parallel,
/// };
/// let recorder = Recorder::default();
/// let prompt = user_message("Hello", &[]);
/// let added = run_agent_loop(
///     vec![prompt],
///     Arc::new(Vec::new()), // no earlier context
///     config,
///     &recorder,
///     CancellationToken::new(),
/// )
/// .await?;
///
/// assert_eq!(added.len(), 2); // the prompt and the reply
/// assert_eq!(added[1].role(), "assistant");
/// let seen = recorder.0.lock().map_err(|_| "poisoned")?.clone();
/// assert_eq!(
///     seen,
///     [
///         "agent_start", "turn_start",
///         "message_start", "message_end", // the prompt
///         "message_start", "message_end", // the reply
///         "turn_end", "agent_end",
///     ]
/// );
/// # Ok(())
/// # }
/// ```
pub async fn run_agent_loop(
    prompts: Vec<AgentMessage>,
    context: Arc<Vec<AgentMessage>>,
    config: AgentLoopConfig,
    hooks: &dyn LoopHooks,
    cancel: CancellationToken,
) -> Result<Vec<AgentMessage>, AgentError> {
    let mut state = RunState {
        config,
        hooks,
        cancel,
        transcript: RunContext {
            base: context,
            added: Vec::new(),
        },
        new_messages: Vec::new(),
    };
    hooks.emit(AgentEvent::AgentStart).await?;
    hooks.emit(AgentEvent::TurnStart).await?;
    for p in prompts {
        state.add_message(p).await?;
    }
    state.run().await?;
    Ok(state.new_messages)
}

/// Continues from a context whose last message is not an assistant message (e.g. after a
/// crash between a tool result and the next request).
pub async fn run_agent_loop_continue(
    context: Arc<Vec<AgentMessage>>,
    config: AgentLoopConfig,
    hooks: &dyn LoopHooks,
    cancel: CancellationToken,
) -> Result<Vec<AgentMessage>, AgentError> {
    check_continuable(&context)?;
    run_agent_loop(Vec::new(), context, config, hooks, cancel).await
}

/// Whether a run can continue from `context` (its last message is not an assistant message);
/// pi's error otherwise.
pub fn check_continuable(context: &[AgentMessage]) -> Result<(), AgentError> {
    match context.last() {
        None => Err(AgentError::new(
            ErrorCode::InvalidState,
            "Cannot continue: no messages in context",
        )),
        Some(m) if m.role() == "assistant" => Err(AgentError::new(
            ErrorCode::InvalidState,
            "Cannot continue from message role: assistant",
        )),
        Some(_) => Ok(()),
    }
}

impl RunState<'_> {
    /// Emits `message_start`/`message_end` for `m` and adds it to the run.
    pub(super) async fn add_message(&mut self, m: AgentMessage) -> Result<(), AgentError> {
        self.hooks
            .emit(AgentEvent::MessageStart { message: m.clone() })
            .await?;
        self.hooks
            .emit(AgentEvent::MessageEnd { message: m.clone() })
            .await?;
        self.transcript.push(m.clone());
        self.new_messages.push(m);
        Ok(())
    }

    async fn run(&mut self) -> Result<(), AgentError> {
        let mut pending = self.hooks.steering_messages().await?;
        let mut first = true;
        loop {
            let mut more_tool_calls = true;
            while more_tool_calls || !pending.is_empty() {
                if !first {
                    if let Some(next) = self.hooks.prepare_next_turn().await? {
                        self.apply_next_turn(next);
                    }
                    self.hooks.emit(AgentEvent::TurnStart).await?;
                }
                first = false;
                for m in std::mem::take(&mut pending) {
                    self.add_message(m).await?;
                }

                let message = self.stream_assistant().await?;
                let assistant = AgentMessage::Llm(Message::Assistant(message.clone()));
                self.transcript.push(assistant.clone());
                self.new_messages.push(assistant.clone());

                if matches!(message.stop_reason, StopReason::Error | StopReason::Aborted) {
                    self.hooks
                        .emit(AgentEvent::TurnEnd {
                            message: assistant,
                            tool_results: Vec::new(),
                        })
                        .await?;
                    return self.end().await;
                }

                let calls: Vec<ToolCall> = message.tool_calls().cloned().collect();
                let mut results = Vec::new();
                more_tool_calls = false;
                if !calls.is_empty() {
                    let (batch, terminate) = if message.stop_reason == StopReason::Length {
                        (self.fail_truncated(&calls).await?, false)
                    } else {
                        self.execute_batch(&message, &calls).await?
                    };
                    more_tool_calls = !terminate;
                    results = batch;
                }
                self.hooks
                    .emit(AgentEvent::TurnEnd {
                        message: assistant,
                        tool_results: results,
                    })
                    .await?;
                pending = self.hooks.steering_messages().await?;
            }
            let follow_ups = self.hooks.follow_up_messages().await?;
            if follow_ups.is_empty() {
                break;
            }
            pending = follow_ups;
        }
        self.end().await
    }

    async fn end(&mut self) -> Result<(), AgentError> {
        self.hooks
            .emit(AgentEvent::AgentEnd {
                messages: self.new_messages.clone(),
            })
            .await
    }

    fn apply_next_turn(&mut self, next: NextTurn) {
        if let Some(ctx) = next.context {
            self.transcript = RunContext {
                base: ctx,
                added: Vec::new(),
            };
        }
        if let Some(m) = next.model {
            self.config.model = m;
        }
        if let Some(t) = next.thinking_level {
            self.config.thinking_level = t;
        }
        if let Some(t) = next.tools {
            self.config.tools = t;
        }
        if let Some(s) = next.system_prompt {
            self.config.system_prompt = s;
        }
    }

    /// The model-visible context of one request.
    async fn request_context(&self) -> Result<Context, AgentError> {
        let messages = match self.hooks.request_messages(&self.config.model).await? {
            Some(served) => served,
            None => {
                // Transformed here: the provider takes the list as it is (DECISIONS §10.8).
                let mut list: arbor_ai::MessageList = self.convert_transcript().await?.into();
                list.mark_transformed_for(&self.config.model);
                list
            }
        };
        let tools = if self.config.tools.is_empty() {
            None
        } else {
            Some(
                self.config
                    .tools
                    .tools()
                    .iter()
                    .map(|t| llm_tool(t.as_ref()))
                    .collect(),
            )
        };
        Ok(Context {
            system_prompt: self.config.system_prompt.clone(),
            messages,
            tools,
        })
    }

    /// `transform_context`, `convert_to_llm` and `transform_messages` over the whole
    /// transcript (a host without [`LoopHooks::request_messages`]).
    async fn convert_transcript(&self) -> Result<Vec<Message>, AgentError> {
        let converted = if self.transcript.len() > 0 {
            let all: Vec<AgentMessage>;
            let slice: &[AgentMessage] = if self.transcript.added.is_empty() {
                &self.transcript.base
            } else if self.transcript.base.is_empty() {
                &self.transcript.added
            } else {
                all = self.transcript.iter().cloned().collect();
                &all
            };
            match self.hooks.transform_context(slice).await? {
                Some(replaced) => replaced.iter().filter_map(convert_one).collect(),
                None => slice
                    .iter()
                    .filter_map(convert_one)
                    .collect::<Vec<Message>>(),
            }
        } else {
            Vec::new()
        };
        Ok(transform_messages(&converted, &self.config.model))
    }

    /// The message of a request cut by an abort: what had arrived of it, else an empty reply
    /// with pi-ai's initial usage and the time since the request was asked for (`asked`;
    /// `None`: it never was, a zero duration).
    fn aborted_message(
        &self,
        partial: Option<AssistantMessage>,
        asked: Option<std::time::Instant>,
    ) -> AssistantMessage {
        let ms = asked.map_or(0.0, |t| (t.elapsed().as_secs_f64() * 1000.0).round());
        let mut m = partial.unwrap_or_else(|| AssistantMessage {
            content: Vec::new(),
            api: self.config.model.api.clone(),
            provider: self.config.model.provider.clone(),
            model: self.config.model.id.clone(),
            usage: Usage::zero().into(),
            stop_reason: StopReason::Aborted,
            error_message: None,
            timestamp: now_ms().into(),
            response_id: None,
            response_model: None,
            duration_ms: Some(arbor_ai::json::Num::new(ms)),
            extra: Default::default(),
        });
        m.stop_reason = StopReason::Aborted;
        m.error_message = Some(REQUEST_ABORTED.to_string());
        m
    }

    /// Streams one assistant response, emitting its message events; never fails for provider
    /// errors (they arrive as a message with `stopReason` `error`/`aborted`).
    async fn stream_assistant(&mut self) -> Result<AssistantMessage, AgentError> {
        if self.cancel.is_cancelled() {
            // Aborted between turns: end without another request.
            let m = self.aborted_message(None, None);
            return self.finish_stream(m, false).await;
        }
        let context = self.request_context().await?;
        let mut options = SimpleStreamOptions::default()
            .with_base(self.config.stream_options.clone())
            .with_thinking_budgets(self.config.thinking_budgets);
        options.reasoning = (self.config.thinking_level != ThinkingLevel::Off)
            .then_some(self.config.thinking_level);
        self.hooks
            .before_request(&self.config.model, &mut options)
            .await?;
        options.base.cancel = Some(self.cancel.clone());
        let asked = std::time::Instant::now();
        let mut stream = self
            .config
            .provider
            .stream_simple(&self.config.model, &context, options);
        drop(context);
        let mut acc = MessageAccumulator::new();
        let mut started = false;
        let final_message = loop {
            let next = tokio::select! {
                biased;
                e = stream.next() => e,
                _ = self.cancel.cancelled() => {
                    let partial = started.then(|| acc.partial().clone());
                    break self.aborted_message(partial, Some(asked));
                }
            };
            let Some(event) = next else {
                let mut m = acc.partial().clone();
                m.stop_reason = StopReason::Error;
                m.error_message = Some("Provider stream ended without a final event".to_string());
                break m;
            };
            match event {
                AssistantMessageEvent::Done { message, .. }
                | AssistantMessageEvent::Error { error: message, .. } => break message,
                AssistantMessageEvent::Start { ref partial } => {
                    acc.apply(&event);
                    started = true;
                    self.hooks
                        .emit(AgentEvent::MessageStart {
                            message: AgentMessage::Llm(Message::Assistant(partial.clone())),
                        })
                        .await?;
                }
                delta => {
                    acc.apply(&delta);
                    if started {
                        self.hooks
                            .emit(AgentEvent::MessageUpdate {
                                assistant_message_event: delta,
                            })
                            .await?;
                    }
                }
            }
        };
        drop(stream);
        self.finish_stream(final_message, started).await
    }

    async fn finish_stream(
        &mut self,
        mut message: AssistantMessage,
        started: bool,
    ) -> Result<AssistantMessage, AgentError> {
        // The level the request asked for, on the finished message as pi records it.
        message.extra.insert(
            "thinkingLevel".into(),
            Value::from(self.config.thinking_level.as_str()),
        );
        let wrapped = AgentMessage::Llm(Message::Assistant(message.clone()));
        if !started {
            self.hooks
                .emit(AgentEvent::MessageStart {
                    message: wrapped.clone(),
                })
                .await?;
        }
        self.hooks
            .emit(AgentEvent::MessageEnd { message: wrapped })
            .await?;
        Ok(message)
    }
}
