//! [`CheckpointHook`]: the recorder wired into `AgentHarness` as a hook (DECISIONS §27.9).
//!
//! Hooks are awaited by the harness, so each capture's entry lands exactly where it belongs:
//! `before_agent_start` runs before the prompt is persisted (the checkpoint sits above the
//! prompt, so "edit this message and retry" finds the code as it was), `tool_call` notes the
//! writing tools of a batch, and `context` — called before every model request, i.e. after the
//! previous batch's results were persisted — captures when that batch may have written, and
//! `agent_end` catches the last batch of a run that never made another request (an abort).
//! A failed capture never fails the turn: it becomes a notice for the app to show.

use std::sync::{Arc, Mutex};

use arbor_agent::agent::{AgentError, ToolCallDecision, ToolCallRequest};
use arbor_agent::harness::{BeforeAgentStart, BeforeAgentStartResult, HarnessHook, HookResult};
use arbor_agent::message::AgentMessage;
use arbor_agent::session::{EntryKind, Session};
use arbor_ai::Message;

use super::recorder::{Recorded, Recorder};

/// Captures workspace checkpoints for one harness's session.
pub struct CheckpointHook {
    recorder: Arc<Recorder>,
    session: Arc<Session>,
    notices: Mutex<Vec<String>>,
}

impl CheckpointHook {
    pub fn new(recorder: Arc<Recorder>, session: Arc<Session>) -> Self {
        CheckpointHook {
            recorder,
            session,
            notices: Mutex::new(Vec::new()),
        }
    }

    pub fn recorder(&self) -> &Arc<Recorder> {
        &self.recorder
    }

    /// Notices since the last call (skipped snapshots, failed captures), for the UI.
    pub fn take_notices(&self) -> Vec<String> {
        self.notices
            .lock()
            .map(|mut n| std::mem::take(&mut *n))
            .unwrap_or_default()
    }

    fn note(&self, result: crate::Result<Option<Recorded>>) {
        let text = match result {
            Ok(Some(Recorded::Skipped { notice })) => notice,
            Ok(_) => return,
            Err(e) => format!("workspace checkpoint failed: {e}"),
        };
        if let Ok(mut n) = self.notices.lock() {
            n.push(text);
        }
    }
}

#[async_trait::async_trait]
impl HarnessHook for CheckpointHook {
    async fn before_agent_start(
        &self,
        _event: &BeforeAgentStart<'_>,
    ) -> HookResult<BeforeAgentStartResult> {
        let result = self.recorder.turn_start(&self.session).await.map(Some);
        self.note(result);
        Ok(None)
    }

    async fn tool_call(&self, request: ToolCallRequest<'_>) -> HookResult<ToolCallDecision> {
        self.recorder.tool_started(&request.call.name);
        Ok(None)
    }

    async fn context(&self, _messages: &[AgentMessage]) -> HookResult<Vec<AgentMessage>> {
        let result = self.recorder.tool_batch_end(&self.session).await;
        self.note(result);
        Ok(None)
    }

    /// A batch that was aborted (or ended the run) gets no next request: capture here what
    /// it may have written (DECISIONS §27.15). After a normal run the flag is already clear.
    async fn agent_end(&self, _messages: &[AgentMessage]) -> Result<(), AgentError> {
        let result = self.recorder.tool_batch_end(&self.session).await;
        self.note(result);
        Ok(())
    }
}

/// Where the leaf goes when navigating to `target` (as `navigate_tree` moves it): a user or
/// custom message's parent (its text goes back to the editor), any other entry itself. The
/// code to restore is the state of this new leaf.
pub async fn navigation_leaf(
    session: &Session,
    target: Option<&str>,
) -> crate::Result<Option<String>> {
    let Some(id) = target else {
        return Ok(None);
    };
    let entry = session
        .get_entry(id)
        .await?
        .ok_or_else(|| crate::CliError::NotFound(format!("entry {id} not found in the session")))?;
    let to_parent = match &entry.kind {
        EntryKind::Message(m) => matches!(m.message.as_llm(), Some(Message::User(_))),
        EntryKind::CustomMessage(_) => true,
        _ => false,
    };
    Ok(if to_parent {
        entry.parent_id
    } else {
        Some(entry.id)
    })
}
