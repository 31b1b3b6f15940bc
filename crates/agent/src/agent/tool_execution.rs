//! Running the tool calls of one assistant message: look the tool up, validate its arguments,
//! ask `before_tool_call`, execute (concurrently unless a tool or the config says
//! sequential), let `after_tool_call` patch the result, and record each result as a message
//! in source order. Every call gets its start, update and end events, whatever happens.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arbor_ai::time::now_ms;
use arbor_ai::{AssistantMessage, Content, ContentBlock, Message, ToolCall, ToolResultMessage};
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::message::AgentMessage;

use super::error::AgentError;
use super::event::AgentEvent;
use super::loop_hooks::{ToolCallDecision, ToolCallRequest, ToolCallResult};
use super::run::RunState;
use super::tool::{ToolExecutionMode, ToolInvocation, ToolOutput, ToolProgress, ToolRef};

/// Error text of an aborted call or a request never sent because the run was aborted.
pub const OPERATION_ABORTED: &str = "Operation aborted";
/// Result text of a call blocked by `before_tool_call` without a reason.
pub const TOOL_BLOCKED: &str = "Tool execution was blocked";

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
    /// How long the tool ran; `None` when it never ran.
    duration_ms: Option<u64>,
}

/// An error result as pi writes one: the text and empty `details`.
fn error_output(text: impl Into<String>) -> ToolOutput {
    ToolOutput {
        details: Some(Value::Object(Default::default())),
        ..ToolOutput::text(text)
    }
}

/// A call settled without running: an error result and no duration.
fn settled_error(text: impl Into<String>) -> Finalized {
    Finalized {
        output: error_output(text),
        is_error: true,
        terminate: false,
        duration_ms: None,
    }
}

fn immediate(text: impl Into<String>) -> Prepared {
    Prepared::Immediate(settled_error(text))
}

impl RunState<'_> {
    /// Fails every call of a response cut at the output limit (its arguments may be cut).
    pub(super) async fn fail_truncated(
        &mut self,
        calls: &[ToolCall],
    ) -> Result<Vec<ToolResultMessage>, AgentError> {
        let mut out = Vec::with_capacity(calls.len());
        for call in calls {
            self.emit_start(call).await?;
            let fin = settled_error(format!(
                "Tool call \"{}\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.",
                call.name
            ));
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
                duration_ms: fin.duration_ms,
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
            duration_ms: fin
                .duration_ms
                .map(|ms| arbor_ai::json::Num::new(ms as f64)),
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
                terminate: d.terminate,
                ..settled_error(
                    d.reason
                        .filter(|r| !r.is_empty())
                        .unwrap_or_else(|| TOOL_BLOCKED.to_string()),
                )
            }),
            Ok(Some(ToolCallDecision {
                arguments: Some(changed),
                ..
            })) => Prepared::Ready {
                tool,
                args: changed,
            },
            Ok(_) => Prepared::Ready { tool, args },
        }
    }

    async fn finalize(
        &self,
        call: &ToolCall,
        args: &Value,
        output: ToolOutput,
        is_error: bool,
        duration_ms: u64,
    ) -> Finalized {
        let duration_ms = Some(duration_ms);
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
                duration_ms,
                ..settled_error(e.message().to_string())
            },
            Ok(None) => Finalized {
                output,
                is_error,
                terminate: false,
                duration_ms,
            },
            Ok(Some(p)) => {
                // Structured content no longer matches content the hook replaced (pi's rule).
                let structured_content = match p.content {
                    Some(_) => None,
                    None => output.structured_content,
                };
                Finalized {
                    output: ToolOutput {
                        content: p.content.unwrap_or(output.content),
                        details: p.details.or(output.details),
                        structured_content,
                        is_error: output.is_error,
                    },
                    is_error: p.is_error.unwrap_or(is_error),
                    terminate: p.terminate.unwrap_or(false),
                    duration_ms,
                }
            }
        }
    }

    /// Runs one assistant message's calls; returns the results in source order and whether
    /// the batch asks the agent to stop.
    pub(super) async fn execute_batch(
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
                                let f = settled_error(OPERATION_ABORTED);
                                self.emit_end(call, &f).await?;
                                f
                            }
                        }
                    }
                };
                let terminate = fin.terminate;
                out.push(self.emit_result(call, fin).await?);
                finals.push(Some(Finalized {
                    terminate,
                    ..settled_error(String::new())
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
                let fin = fin.unwrap_or_else(|| settled_error(OPERATION_ABORTED));
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
                let started = std::time::Instant::now();
                let reports = tool.reports_cancellation();
                let run = tool.execute(invocation);
                tokio::pin!(run);
                let finished = |r: Result<ToolOutput, super::tool::ToolError>| match r {
                    Ok(o) => {
                        let failed = o.is_error;
                        (o, failed)
                    }
                    Err(e) => (ToolOutput {
                        content: vec![ContentBlock::text(e.message())],
                        details: Some(
                            e.details()
                                .cloned()
                                .unwrap_or_else(|| Value::Object(Default::default())),
                        ),
                        ..ToolOutput::default()
                    }, true),
                };
                let (output, is_error) = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => {
                        // A tool that answers its own cancellation says what happened (a
                        // process group killed, a file already replaced); others are dropped.
                        let answer = if reports {
                            tokio::time::timeout(super::tool::CANCEL_REPORT_LIMIT, &mut run).await.ok()
                        } else {
                            None
                        };
                        answer.map_or_else(|| (error_output(OPERATION_ABORTED), true), finished)
                    }
                    r = &mut run => finished(r),
                };
                done.store(true, Ordering::Release);
                let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                (index, call, args, output, is_error, ms)
            });
        }
        drop(tx);
        let mut results = Vec::new();
        while !running.is_empty() {
            tokio::select! {
                biased;
                Some((slot, out)) = rx.recv() => self.emit_update(slots[slot], out).await?,
                Some((index, call, args, output, is_error, ms)) = running.next() => {
                    // Updates sent before the call returned come before its end.
                    while let Ok((slot, out)) = rx.try_recv() {
                        self.emit_update(slots[slot], out).await?;
                    }
                    let fin = self.finalize(call, &args, output, is_error, ms).await;
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
