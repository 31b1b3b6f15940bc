//! The agent loop: one run = turns until the model stops calling tools (compaction-and-harness.md
//! §D). Provider access comes in as an `Arc<dyn ApiProvider>` from the caller; the loop knows
//! nothing of sessions (the harness persists what the loop emits).

pub mod event;
pub mod tool;

pub use event::{AgentEvent, ChangeSource, ModelInfo, RetryOperation};
pub use tool::{
    llm_tool, AgentTool, ToolError, ToolExecutionMode, ToolInvocation, ToolOutput, ToolProgress,
    ToolRef,
};
