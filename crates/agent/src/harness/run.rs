//! `prompt`: one agent run under the harness (DECISIONS §20.5, §20.8, §20.13).
//!
//! The harness is the loop's [`LoopHooks`]: it persists every `message_end` before subscribers
//! see it, flushes pending writes and makes a save point at every `turn_end`, rebuilds the
//! context from the session before every later request, and drains its queues.

use std::sync::Mutex;

use arbor_ai::stream::SimpleStreamOptions;
use arbor_ai::transform::transform_messages;
use arbor_ai::{
    AssistantMessage, ContentBlock, ImageContent, Message, MessageList, Model, StopReason, Usage,
};
use tokio_util::sync::CancellationToken;

use crate::agent::{
    run_agent_loop, AgentError, AgentEvent, AgentLoopConfig, ErrorCode, LoopHooks, NextTurn,
    ToolCallDecision, ToolCallRequest, ToolCallResult, ToolResultPatch, ToolSet,
};
use crate::context::convert::convert_one;
use crate::message::AgentMessage;

use super::handle::AgentHarness;
use super::hooks::{BeforeAgentStart, BeforeAgentStartResult};
use super::queues::user_message;
use super::state::Phase;
use super::system_prompt::SystemPromptInput;

/// The loop's host for one run.
pub(super) struct RunHooks<'a> {
    pub(super) harness: &'a AgentHarness,
    /// The last assistant message persisted in this run (what `prompt` returns).
    pub(super) last_assistant: Mutex<Option<AssistantMessage>>,
}

impl AgentHarness {
    /// Sends a prompt (text plus images) and runs the agent until it stops. Returns the last
    /// assistant message of the run (an `error`/`aborted` one included). Requires idle.
    pub async fn prompt(
        &self,
        text: &str,
        images: &[ImageContent],
    ) -> Result<AssistantMessage, AgentError> {
        let cancel = self.begin(Phase::Turn, "AgentHarness is busy")?;
        let result = self.execute_turn(text, images, cancel).await;
        // Error paths flush too: nothing the caller set is lost.
        let flushed = self.flush_pending().await;
        self.finish();
        let message = result?;
        flushed?;
        Ok(message)
    }

    /// Runs the agent again from the session's context, adding no message: the retry of a
    /// failed answer the policy has hidden (DECISIONS §29.1). No `before_agent_start` hook runs
    /// (what it added the first time is stored). Returns the run's last assistant message.
    /// Requires idle.
    pub(super) async fn rerun(&self) -> Result<AssistantMessage, AgentError> {
        let cancel = self.begin(Phase::Turn, "AgentHarness is busy")?;
        let result = self.run_loop(Vec::new(), None, cancel).await;
        let flushed = self.flush_pending().await;
        self.finish();
        let message = result?;
        flushed?;
        Ok(message)
    }

    /// The system prompt the next turn sends unless a hook replaces it; the RPC and JSON modes
    /// show it as pi's `role: "system"` message.
    pub fn system_prompt_text(&self) -> String {
        self.loop_config(None).system_prompt.unwrap_or_default()
    }

    /// The current loop configuration (model, tools, system prompt of this turn).
    pub(super) fn loop_config(&self, system_prompt_override: Option<String>) -> AgentLoopConfig {
        let s = self.state();
        let tools = if s.extension_tools.is_empty() {
            s.active.clone()
        } else {
            let mut all = s.active.tools().to_vec();
            for t in &s.extension_tools {
                if !all.iter().any(|a| a.name() == t.name()) {
                    all.push(t.clone());
                }
            }
            ToolSet::new(all)
        };
        let system_prompt = system_prompt_override.unwrap_or_else(|| {
            s.system_prompt.render(&SystemPromptInput {
                model: &s.model,
                thinking_level: s.thinking_level,
                active_tools: tools.tools(),
            })
        });
        AgentLoopConfig {
            provider: self.inner.provider.clone(),
            model: s.model.clone(),
            thinking_level: s.thinking_level,
            system_prompt: Some(system_prompt),
            tools,
            stream_options: s.stream_options.clone(),
            thinking_budgets: s.thinking_budgets,
            tool_execution: s.tool_execution,
        }
    }

    async fn execute_turn(
        &self,
        text: &str,
        images: &[ImageContent],
        cancel: CancellationToken,
    ) -> Result<AssistantMessage, AgentError> {
        let prompt = user_message(text, images);
        let queued: Vec<AgentMessage> = self.state().next_turn.drain(..).collect();
        if !queued.is_empty() {
            let ev = self.queue_update();
            self.deliver(&ev);
        }
        let mut messages = queued;
        messages.push(prompt);

        let base_prompt = self.loop_config(None).system_prompt.unwrap_or_default();
        let mut override_prompt = None;
        let event = BeforeAgentStart {
            prompt: text,
            images,
            system_prompt: &base_prompt,
        };
        let mut extra: Option<BeforeAgentStartResult> = None;
        for hook in self.hooks() {
            if let Some(r) = hook.before_agent_start(&event).await? {
                extra = Some(r);
            }
        }
        if let Some(r) = extra {
            messages.extend(r.messages);
            override_prompt = r.system_prompt;
        }

        self.run_loop(messages, override_prompt, cancel).await
    }

    /// Runs the loop with `messages` added first; returns the run's last assistant message.
    async fn run_loop(
        &self,
        messages: Vec<AgentMessage>,
        override_prompt: Option<String>,
        cancel: CancellationToken,
    ) -> Result<AssistantMessage, AgentError> {
        let config = self.loop_config(override_prompt);
        let failure_model = config.model.clone();
        let hooks = RunHooks {
            harness: self,
            last_assistant: Mutex::new(None),
        };
        // The loop gets no transcript of its own: every request's messages come from the
        // session through `request_messages` (the loop holding the session's list would make
        // every append copy it).
        let run = run_agent_loop(
            messages,
            std::sync::Arc::default(),
            config,
            &hooks,
            cancel.clone(),
        )
        .await;
        if let Err(error) = run {
            hooks
                .report_failure(&failure_model, &cancel, &error)
                .await?;
        }
        let last = hooks
            .last_assistant
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        last.ok_or_else(|| {
            AgentError::new(
                ErrorCode::InvalidState,
                "AgentHarness prompt completed without an assistant message",
            )
        })
    }

    /// Flushes pending writes, makes a durability point and reports it (turn end).
    async fn save_point(&self) -> Result<(), AgentError> {
        let had = self.flush_pending().await?;
        self.inner.session.storage().save_point().await?;
        self.deliver(&AgentEvent::SavePoint {
            had_pending_mutations: had,
        });
        Ok(())
    }
}

impl RunHooks<'_> {
    /// The loop failed (a write, a hook): end the run the normal way with a failure message.
    pub(super) async fn report_failure(
        &self,
        model: &Model,
        cancel: &CancellationToken,
        error: &AgentError,
    ) -> Result<(), AgentError> {
        let message = AssistantMessage {
            content: vec![ContentBlock::text("")],
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            usage: Usage::default().into(),
            stop_reason: if cancel.is_cancelled() {
                StopReason::Aborted
            } else {
                StopReason::Error
            },
            error_message: Some(error.message().to_string()),
            timestamp: arbor_ai::time::now_ms().into(),
            response_id: None,
            response_model: None,
            duration_ms: None,
            extra: Default::default(),
        };
        let wrapped = AgentMessage::Llm(Message::Assistant(message));
        let sequence = [
            AgentEvent::MessageStart {
                message: wrapped.clone(),
            },
            AgentEvent::MessageEnd {
                message: wrapped.clone(),
            },
            AgentEvent::TurnEnd {
                message: wrapped.clone(),
                tool_results: Vec::new(),
            },
            AgentEvent::AgentEnd {
                messages: vec![wrapped],
            },
        ];
        for ev in sequence {
            if let Err(second) = self.emit(ev).await {
                return Err(AgentError::new(
                    ErrorCode::Unknown,
                    "Agent run failed and failure reporting failed",
                )
                .with_source(second));
            }
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl LoopHooks for RunHooks<'_> {
    async fn emit(&self, event: AgentEvent) -> Result<(), AgentError> {
        let h = self.harness;
        match &event {
            AgentEvent::MessageEnd { message } => {
                // Persist first: a subscriber never sees a message the log does not hold.
                h.inner.session.append_message(message.clone()).await?;
                if let AgentMessage::Llm(Message::Assistant(a)) = message {
                    *self
                        .last_assistant
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(a.clone());
                }
                h.deliver(&event);
            }
            AgentEvent::TurnEnd { .. } => {
                h.deliver(&event);
                h.save_point().await?;
            }
            AgentEvent::AgentEnd { messages } => {
                for hook in h.hooks() {
                    hook.agent_end(messages).await?;
                }
                if h.flush_pending().await? {
                    h.inner.session.storage().save_point().await?;
                }
                h.state().phase = Phase::Idle;
                h.deliver(&event);
                let next_turn_count = h.state().next_turn.len();
                h.deliver(&AgentEvent::Settled { next_turn_count });
            }
            _ => h.deliver(&event),
        }
        Ok(())
    }

    async fn transform_context(
        &self,
        messages: &[AgentMessage],
    ) -> Result<Option<Vec<AgentMessage>>, AgentError> {
        let mut result = None;
        for hook in self.harness.hooks() {
            if let Some(r) = hook.context(messages).await? {
                result = Some(r);
            }
        }
        Ok(result)
    }

    async fn request_messages(&self, model: &Model) -> Result<Option<MessageList>, AgentError> {
        let h = self.harness;
        let (ctx, generation) = h.inner.session.build_context_tracked().await?;
        if let Some(replaced) = self.transform_context(&ctx.messages).await? {
            // A hook rewrote the context: nothing cached applies to it.
            let llm: Vec<Message> = replaced.iter().filter_map(convert_one).collect();
            let llm = crate::context::OrphanRepair::repair(llm);
            let mut list: MessageList = transform_messages(&llm, model).into();
            list.mark_transformed_for(model);
            return Ok(Some(list));
        }
        let list = h
            .state()
            .request_cache
            .messages(&ctx.messages, generation, model);
        Ok(Some(list))
    }

    async fn before_request(
        &self,
        model: &Model,
        options: &mut SimpleStreamOptions,
    ) -> Result<(), AgentError> {
        for hook in self.harness.hooks() {
            hook.before_provider_request(model, options).await?;
        }
        Ok(())
    }

    async fn before_tool_call(
        &self,
        request: ToolCallRequest<'_>,
    ) -> Result<Option<ToolCallDecision>, AgentError> {
        let mut result = None;
        for hook in self.harness.hooks() {
            if let Some(r) = hook.tool_call(request).await? {
                result = Some(r);
            }
        }
        Ok(result)
    }

    async fn after_tool_call(
        &self,
        result: ToolCallResult<'_>,
    ) -> Result<Option<ToolResultPatch>, AgentError> {
        let mut patch = None;
        for hook in self.harness.hooks() {
            if let Some(p) = hook.tool_result(result).await? {
                patch = Some(p);
            }
        }
        Ok(patch)
    }

    async fn steering_messages(&self) -> Result<Vec<AgentMessage>, AgentError> {
        Ok(self.harness.drain(true))
    }

    async fn follow_up_messages(&self) -> Result<Vec<AgentMessage>, AgentError> {
        Ok(self.harness.drain(false))
    }

    async fn prepare_next_turn(&self) -> Result<Option<NextTurn>, AgentError> {
        let h = self.harness;
        h.flush_pending().await?;
        let config = h.loop_config(None);
        Ok(Some(NextTurn {
            // `request_messages` reads the session at request time.
            context: None,
            model: Some(config.model),
            thinking_level: Some(config.thinking_level),
            tools: Some(config.tools),
            system_prompt: Some(config.system_prompt),
        }))
    }
}
