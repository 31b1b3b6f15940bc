//! The agent loop: one run = turns until the model stops calling tools (compaction-and-harness.md
//! §D). Provider access comes in as an `Arc<dyn ApiProvider>` from the caller; the loop knows
//! nothing of sessions (the harness persists what the loop emits).

pub mod error;
pub mod event;
pub mod run;
pub mod tool;
pub mod validate;

pub use error::{AgentError, AgentHarnessError, ErrorCode};
pub use event::{AgentEvent, ChangeSource, ModelInfo, RetryOperation};
pub use run::{
    check_continuable, run_agent_loop, run_agent_loop_continue, AgentLoopConfig, LoopHooks,
    NextTurn, ToolCallDecision, ToolCallRequest, ToolCallResult, ToolResultPatch,
    OPERATION_ABORTED, REQUEST_ABORTED, TOOL_BLOCKED,
};
pub use tool::{
    llm_tool, AgentTool, ToolError, ToolExecutionMode, ToolInvocation, ToolOutput, ToolProgress,
    ToolRef,
};
pub use validate::ToolSet;
