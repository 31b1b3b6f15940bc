//! The names most programs with a harness use: `use arbor_agent::prelude::*;`. Includes
//! [`arbor_session::prelude`], the tool traits and the [`async_trait`](macro@async_trait) attribute their
//! implementations need.

pub use crate::agent::{
    AgentError, AgentEvent, AgentTool, ToolError, ToolInvocation, ToolOutput, ToolRef, TypedTool,
};
pub use crate::harness::{AgentHarness, HarnessOptions, NavigateOptions, SystemPrompt};
pub use arbor_session::prelude::*;
pub use async_trait::async_trait;
