//! The one wait MCP puts on a turn: a prompt starts once every enabled server has connected
//! or failed, or after the start timeout, whichever is first (pi waits up to 10 s for
//! servers whose tools are declared to the model). Start-up itself never waits
//! (DECISIONS §33.5).

use std::time::Duration;

use arbor_agent::harness::{BeforeAgentStart, BeforeAgentStartResult, HarnessHook, HookResult};

use super::McpManager;

/// Holds a prompt until the servers still starting are done, at most `timeout`.
pub struct PromptGate {
    pub manager: McpManager,
    pub timeout: Duration,
}

#[async_trait::async_trait]
impl HarnessHook for PromptGate {
    async fn before_agent_start(
        &self,
        _event: &BeforeAgentStart<'_>,
    ) -> HookResult<BeforeAgentStartResult> {
        self.manager.wait_started(self.timeout).await;
        Ok(None)
    }
}
