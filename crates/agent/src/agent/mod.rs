//! The agent loop: one run = turns until the model stops calling tools (DECISIONS §20).
//! Provider access comes in as an `Arc<dyn ApiProvider>` from the caller; the loop knows
//! nothing of sessions (the harness persists what the loop emits).
//!
//! Where things are: `run` (a run and its turns, streaming one response), `loop_hooks` (the
//! host interface [`LoopHooks`]), `tool_execution` (a batch of tool calls), `tool` (the tool
//! contract [`AgentTool`]), `validate` (argument coercion and schema checks, [`ToolSet`]),
//! `event` ([`AgentEvent`]) and `error` ([`AgentError`]).

mod error;
mod event;
mod loop_hooks;
mod run;
mod tool;
mod tool_execution;
mod typed_tool;
mod validate;

pub use error::{AgentError, AgentHarnessError, ErrorCode};
pub use event::{AgentEvent, ChangeSource, ModelInfo, RetryOperation};
pub use loop_hooks::{
    LoopHooks, NextTurn, ToolCallDecision, ToolCallRequest, ToolCallResult, ToolResultPatch,
};
pub use run::{
    check_continuable, run_agent_loop, run_agent_loop_continue, AgentLoopConfig, REQUEST_ABORTED,
};
/// The token [`ToolInvocation::cancel`] is (re-exported so tools need no `tokio-util`).
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    llm_tool, AgentTool, ToolError, ToolExecutionMode, ToolInvocation, ToolOutput, ToolProgress,
    ToolRef, CANCEL_REPORT_LIMIT,
};
pub use tool_execution::{OPERATION_ABORTED, TOOL_BLOCKED};
pub use typed_tool::{schema_for, Typed, TypedTool};
pub use validate::ToolSet;
