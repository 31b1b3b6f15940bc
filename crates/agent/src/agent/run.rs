//! One agent run (compaction-and-harness.md §D.1–§D.4): stream an assistant response, run its
//! tool calls, repeat while the model calls tools or messages are queued.
//!
//! The loop owns no state beyond one run and persists nothing: every event goes through
//! [`LoopHooks::emit`] (the harness persists `message_end` there before subscribers see it), and
//! the context can be replaced between turns through [`LoopHooks::prepare_next_turn`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arbor_ai::stream::{ApiProvider, SimpleStreamOptions, StreamOptions, ThinkingBudgets};
use arbor_ai::time::now_ms;
use arbor_ai::transform::transform_messages;
use arbor_ai::{
    AssistantMessage, AssistantMessageEvent, Content, ContentBlock, Context, Message,
    MessageAccumulator, Model, StopReason, ThinkingLevel, ToolCall, ToolResultMessage, Usage,
};
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::context::convert::convert_one;
use crate::message::AgentMessage;

use super::error::AgentError;
use super::event::AgentEvent;
use super::tool::{llm_tool, ToolExecutionMode, ToolInvocation, ToolOutput, ToolProgress, ToolRef};
use super::validate::ToolSet;

/// Error text of an aborted call or a request never sent because the run was aborted.
pub const OPERATION_ABORTED: &str = "Operation aborted";
/// `errorMessage` of an assistant message the loop ends itself on abort (pi-ai's wording).
pub const REQUEST_ABORTED: &str = "Request was aborted";
/// Result text of a call blocked by `before_tool_call` without a reason.
pub const TOOL_BLOCKED: &str = "Tool execution was blocked";

/// What one run needs besides the messages.
#[derive(Clone)]
pub struct AgentLoopConfig {
    /// Streams the assistant; the caller picks it (never a global registry).
    pub provider: Arc<dyn ApiProvider>,
    pub model: Model,
    /// `Off` sends no reasoning option.
    pub thinking_level: ThinkingLevel,
    pub system_prompt: Option<String>,
    pub tools: ToolSet,
    /// Base provider options (`cancel` is replaced by the run's token).
    pub stream_options: StreamOptions,
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

/// Replacements for the next turn (anything `None` stays as it was).
#[derive(Default)]
pub struct NextTurn {
    /// The whole context (the harness hands the session's projection).
    pub context: Option<Arc<Vec<AgentMessage>>>,
    pub model: Option<Model>,
    pub thinking_level: Option<ThinkingLevel>,
    pub tools: Option<ToolSet>,
    pub system_prompt: Option<Option<String>>,
}

/// A tool call about to run (`before_tool_call`).
#[derive(Debug, Clone, Copy)]
pub struct ToolCallRequest<'a> {
    pub assistant: &'a AssistantMessage,
    pub call: &'a ToolCall,
    /// Validated and coerced arguments.
    pub args: &'a Value,
}

/// `before_tool_call`'s answer: `block` skips the call with `reason` as its error result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCallDecision {
    pub block: bool,
    pub reason: Option<String>,
    /// With `block`: this result asks the agent to stop after the batch.
    pub terminate: bool,
}

/// A finished tool call (`after_tool_call`).
#[derive(Debug, Clone, Copy)]
pub struct ToolCallResult<'a> {
    pub call: &'a ToolCall,
    pub args: &'a Value,
    pub output: &'a ToolOutput,
    pub is_error: bool,
}

/// `after_tool_call`'s patch: each present field replaces the result's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolResultPatch {
    pub content: Option<Vec<ContentBlock>>,
    pub details: Option<Value>,
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

/// The context as the loop sees it: a shared base plus what this run added since.
struct Transcript {
    base: Arc<Vec<AgentMessage>>,
    added: Vec<AgentMessage>,
}

impl Transcript {
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

struct RunState<'h> {
    config: AgentLoopConfig,
    hooks: &'h dyn LoopHooks,
    cancel: CancellationToken,
    transcript: Transcript,
    new_messages: Vec<AgentMessage>,
}

/// Runs the agent on `context` + `prompts`; returns the messages the run added (prompts
/// included). Emits `agent_start`, `turn_start`, the prompts' message events, then the turns.
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
        transcript: Transcript {
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
            super::error::ErrorCode::InvalidState,
            "Cannot continue: no messages in context",
        )),
        Some(m) if m.role() == "assistant" => Err(AgentError::new(
            super::error::ErrorCode::InvalidState,
            "Cannot continue from message role: assistant",
        )),
        Some(_) => Ok(()),
    }
}

/// One call after preparation.
enum Prepared {
    /// Settled without running (unknown tool, invalid arguments, blocked, aborted).
    Immediate(Finalized),
    Ready {
        tool: ToolRef,
        args: Value,
    },
}

struct Finalized {
    output: ToolOutput,
    is_error: bool,
    terminate: bool,
}

fn error_output(text: impl Into<String>) -> ToolOutput {
    ToolOutput::text(text)
}

fn immediate(text: impl Into<String>) -> Prepared {
    Prepared::Immediate(Finalized {
        output: error_output(text),
        is_error: true,
        terminate: false,
    })
}

impl RunState<'_> {
    async fn add_message(&mut self, m: AgentMessage) -> Result<(), AgentError> {
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
            self.transcript = Transcript {
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
                // Transformed here: the provider takes the list as it is (DECISIONS §10.6).
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

    fn aborted_message(&self, partial: Option<AssistantMessage>) -> AssistantMessage {
        let mut m = partial.unwrap_or_else(|| AssistantMessage {
            content: Vec::new(),
            api: self.config.model.api.clone(),
            provider: self.config.model.provider.clone(),
            model: self.config.model.id.clone(),
            usage: Usage::default().into(),
            stop_reason: StopReason::Aborted,
            error_message: None,
            timestamp: now_ms().into(),
            response_id: None,
            response_model: None,
            duration_ms: None,
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
            let m = self.aborted_message(None);
            return self.finish_stream(m, false).await;
        }
        let context = self.request_context().await?;
        let mut options = SimpleStreamOptions {
            base: self.config.stream_options.clone(),
            reasoning: (self.config.thinking_level != ThinkingLevel::Off)
                .then_some(self.config.thinking_level),
            thinking_budgets: self.config.thinking_budgets,
        };
        self.hooks
            .before_request(&self.config.model, &mut options)
            .await?;
        options.base.cancel = Some(self.cancel.clone());
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
                    break self.aborted_message(partial);
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
        message: AssistantMessage,
        started: bool,
    ) -> Result<AssistantMessage, AgentError> {
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

    async fn fail_truncated(
        &mut self,
        calls: &[ToolCall],
    ) -> Result<Vec<ToolResultMessage>, AgentError> {
        let mut out = Vec::with_capacity(calls.len());
        for call in calls {
            self.emit_start(call).await?;
            let fin = Finalized {
                output: error_output(format!(
                    "Tool call \"{}\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.",
                    call.name
                )),
                is_error: true,
                terminate: false,
            };
            self.emit_end(call, &fin).await?;
            out.push(self.emit_result(call, fin).await?);
        }
        Ok(out)
    }

    async fn emit_start(&self, call: &ToolCall) -> Result<(), AgentError> {
        self.hooks
            .emit(AgentEvent::ToolExecutionStart {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                args: call.arguments.clone(),
            })
            .await
    }

    async fn emit_end(&self, call: &ToolCall, fin: &Finalized) -> Result<(), AgentError> {
        self.hooks
            .emit(AgentEvent::ToolExecutionEnd {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                result: fin.output.clone(),
                is_error: fin.is_error,
            })
            .await
    }

    async fn emit_result(
        &mut self,
        call: &ToolCall,
        fin: Finalized,
    ) -> Result<ToolResultMessage, AgentError> {
        let msg = ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: Content::Blocks(fin.output.content),
            details: fin.output.details,
            is_error: fin.is_error,
            timestamp: now_ms().into(),
            extra: Default::default(),
        };
        self.add_message(AgentMessage::Llm(Message::ToolResult(msg.clone())))
            .await?;
        Ok(msg)
    }

    async fn prepare(&self, assistant: &AssistantMessage, call: &ToolCall) -> Prepared {
        if self.cancel.is_cancelled() {
            return immediate(OPERATION_ABORTED);
        }
        let Some(tool) = self.config.tools.get(&call.name).cloned() else {
            return immediate(format!("Tool {} not found", call.name));
        };
        let args = match self.config.tools.validate(&tool, call) {
            Ok(a) => a,
            Err(e) => return immediate(e.message().to_owned()),
        };
        let decision = self
            .hooks
            .before_tool_call(ToolCallRequest {
                assistant,
                call,
                args: &args,
            })
            .await;
        if self.cancel.is_cancelled() {
            return immediate(OPERATION_ABORTED);
        }
        match decision {
            Err(e) => immediate(e.message().to_string()),
            Ok(Some(d)) if d.block => Prepared::Immediate(Finalized {
                output: error_output(
                    d.reason
                        .filter(|r| !r.is_empty())
                        .unwrap_or_else(|| TOOL_BLOCKED.to_string()),
                ),
                is_error: true,
                terminate: d.terminate,
            }),
            Ok(_) => Prepared::Ready { tool, args },
        }
    }

    async fn finalize(
        &self,
        call: &ToolCall,
        args: &Value,
        output: ToolOutput,
        is_error: bool,
    ) -> Finalized {
        let patch = self
            .hooks
            .after_tool_call(ToolCallResult {
                call,
                args,
                output: &output,
                is_error,
            })
            .await;
        match patch {
            Err(e) => Finalized {
                output: error_output(e.message().to_string()),
                is_error: true,
                terminate: false,
            },
            Ok(None) => Finalized {
                output,
                is_error,
                terminate: false,
            },
            Ok(Some(p)) => Finalized {
                output: ToolOutput {
                    content: p.content.unwrap_or(output.content),
                    details: p.details.or(output.details),
                },
                is_error: p.is_error.unwrap_or(is_error),
                terminate: p.terminate.unwrap_or(false),
            },
        }
    }

    /// Runs one assistant message's calls; returns the results in source order and whether
    /// the batch asks the agent to stop.
    async fn execute_batch(
        &mut self,
        assistant: &AssistantMessage,
        calls: &[ToolCall],
    ) -> Result<(Vec<ToolResultMessage>, bool), AgentError> {
        let sequential = self.config.tool_execution == ToolExecutionMode::Sequential
            || calls.iter().any(|c| {
                self.config
                    .tools
                    .get(&c.name)
                    .is_some_and(|t| t.execution_mode() == ToolExecutionMode::Sequential)
            });
        let mut finals: Vec<Option<Finalized>> = Vec::with_capacity(calls.len());
        let mut out = Vec::with_capacity(calls.len());
        if sequential {
            for call in calls {
                self.emit_start(call).await?;
                let fin = match self.prepare(assistant, call).await {
                    Prepared::Immediate(f) => {
                        self.emit_end(call, &f).await?;
                        f
                    }
                    Prepared::Ready { tool, args } => {
                        // `execute_all` emits the end event.
                        let mut done = self.execute_all(vec![(0, call, tool, args)]).await?;
                        match done.pop() {
                            Some((_, f)) => f,
                            None => {
                                let f = Finalized {
                                    output: error_output(OPERATION_ABORTED),
                                    is_error: true,
                                    terminate: false,
                                };
                                self.emit_end(call, &f).await?;
                                f
                            }
                        }
                    }
                };
                let terminate = fin.terminate;
                out.push(self.emit_result(call, fin).await?);
                finals.push(Some(Finalized {
                    output: ToolOutput::default(),
                    is_error: false,
                    terminate,
                }));
            }
        } else {
            let mut ready = Vec::new();
            for (i, call) in calls.iter().enumerate() {
                self.emit_start(call).await?;
                match self.prepare(assistant, call).await {
                    Prepared::Immediate(f) => {
                        self.emit_end(call, &f).await?;
                        finals.push(Some(f));
                    }
                    Prepared::Ready { tool, args } => {
                        finals.push(None);
                        ready.push((i, call, tool, args));
                    }
                }
            }
            for (i, f) in self.execute_all(ready).await? {
                finals[i] = Some(f);
            }
            let mut terminates = Vec::with_capacity(calls.len());
            for (call, fin) in calls.iter().zip(finals.drain(..)) {
                let fin = fin.unwrap_or_else(|| Finalized {
                    output: error_output(OPERATION_ABORTED),
                    is_error: true,
                    terminate: false,
                });
                terminates.push(fin.terminate);
                out.push(self.emit_result(call, fin).await?);
            }
            let terminate = !terminates.is_empty() && terminates.iter().all(|t| *t);
            return Ok((out, terminate));
        }
        let terminate = !finals.is_empty()
            && finals
                .iter()
                .all(|f| f.as_ref().is_some_and(|f| f.terminate));
        Ok((out, terminate))
    }

    /// Executes prepared calls concurrently, emitting `tool_execution_update` while they run
    /// and `tool_execution_end` as each finishes (completion order). Returns (index, result).
    async fn execute_all(
        &self,
        ready: Vec<(usize, &ToolCall, ToolRef, Value)>,
    ) -> Result<Vec<(usize, Finalized)>, AgentError> {
        let (tx, mut rx) = mpsc::unbounded_channel::<(usize, ToolOutput)>();
        let slots: Vec<&ToolCall> = ready.iter().map(|r| r.1).collect();
        let mut running = FuturesUnordered::new();
        for (slot, (index, call, tool, args)) in ready.into_iter().enumerate() {
            let done = Arc::new(AtomicBool::new(false));
            let tx = tx.clone();
            let flag = done.clone();
            let progress = ToolProgress::from_fn(move |out| {
                // Updates after the call returned are ignored (pi's rule).
                if !flag.load(Ordering::Acquire) {
                    let _ = tx.send((slot, out));
                }
            });
            let invocation = ToolInvocation {
                call_id: call.id.clone(),
                arguments: args.clone(),
                cancel: self.cancel.child_token(),
                progress,
            };
            let cancel = self.cancel.clone();
            running.push(async move {
                let (output, is_error) = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => (error_output(OPERATION_ABORTED), true),
                    r = tool.execute(invocation) => match r {
                        Ok(o) => (o, false),
                        Err(e) => (ToolOutput {
                            content: vec![ContentBlock::text(e.message())],
                            details: e.details().cloned(),
                        }, true),
                    },
                };
                done.store(true, Ordering::Release);
                (index, call, args, output, is_error)
            });
        }
        drop(tx);
        let mut results = Vec::new();
        while !running.is_empty() {
            tokio::select! {
                biased;
                Some((slot, out)) = rx.recv() => self.emit_update(slots[slot], out).await?,
                Some((index, call, args, output, is_error)) = running.next() => {
                    // Updates sent before the call returned come before its end.
                    while let Ok((slot, out)) = rx.try_recv() {
                        self.emit_update(slots[slot], out).await?;
                    }
                    let fin = self.finalize(call, &args, output, is_error).await;
                    self.emit_end(call, &fin).await?;
                    results.push((index, fin));
                }
            }
        }
        Ok(results)
    }

    async fn emit_update(&self, call: &ToolCall, out: ToolOutput) -> Result<(), AgentError> {
        self.hooks
            .emit(AgentEvent::ToolExecutionUpdate {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                args: call.arguments.clone(),
                partial_result: out,
            })
            .await
    }
}
