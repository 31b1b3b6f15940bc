//! Command hooks on the harness's hook points (DECISIONS §33.10–§33.12). Each event is sent
//! as JSON to every matching hook in order (user hooks, then the project's); the reply shapes
//! are in USAGE.md. A hook that fails is reported through the notice sink and counts as no
//! opinion: it never fails the turn.

use std::path::PathBuf;
use std::sync::Arc;

use arbor_agent::agent::{ToolCallDecision, ToolCallRequest, ToolCallResult, ToolResultPatch};
use arbor_agent::harness::{
    BeforeAgentStart, BeforeAgentStartResult, BeforeCompact, BeforeCompactResult, BeforeTreeResult,
    HarnessHook, HookResult, TreePreparation,
};
use arbor_agent::message::{AgentMessage, CustomMessage};
use arbor_ai::{Content, ContentBlock};
use serde_json::{json, Map, Value};

use super::config::{Hook, HookEvent, HookSet};
use super::runner;

type NoticeSink = Arc<dyn Fn(String) + Send + Sync>;

/// The configured hooks of a run, as a [`HarnessHook`].
pub struct CommandHooks {
    set: HookSet,
    cwd: PathBuf,
    session_id: String,
    notice: NoticeSink,
    /// Turns true once the `session_start` hooks are done: the first prompt waits for it, so
    /// a hook preparing the session finishes before the model runs.
    started: tokio::sync::watch::Sender<bool>,
}

impl CommandHooks {
    pub fn new(
        set: HookSet,
        cwd: PathBuf,
        session_id: String,
        notice: impl Fn(String) + Send + Sync + 'static,
    ) -> Self {
        CommandHooks {
            set,
            cwd,
            session_id,
            notice: Arc::new(notice),
            started: tokio::sync::watch::channel(false).0,
        }
    }

    fn event(&self, event: HookEvent, mut fields: Map<String, Value>) -> Value {
        fields.insert("type".into(), json!(event.name()));
        fields.insert("sessionId".into(), json!(self.session_id));
        fields.insert("cwd".into(), json!(self.cwd.display().to_string()));
        Value::Object(fields)
    }

    /// Runs one hook; a failure is reported and becomes `None`.
    async fn ask(&self, hook: &Hook, event: &Value) -> Option<Map<String, Value>> {
        match runner::run(hook, event, &self.cwd).await {
            Ok(Some(Value::Object(m))) => Some(m),
            Ok(_) => None,
            Err(e) => {
                (self.notice)(format!("Warning: {e}"));
                None
            }
        }
    }

    /// `session_start`: every hook once, in the background of the caller (its reply is not
    /// used).
    pub async fn session_start(&self, session_file: Option<String>) {
        let event = self.event(
            HookEvent::SessionStart,
            obj(json!({"sessionFile": session_file})),
        );
        for hook in self.set.for_event(HookEvent::SessionStart) {
            self.ask(hook, &event).await;
        }
        self.started.send_replace(true);
    }

    /// Waits for the `session_start` hooks (each is bounded by its own timeout).
    async fn wait_started(&self) {
        if !self.has(HookEvent::SessionStart) {
            return;
        }
        let budget: std::time::Duration = self
            .set
            .for_event(HookEvent::SessionStart)
            .map(|h| h.timeout)
            .sum();
        let mut rx = self.started.subscribe();
        let _ = tokio::time::timeout(
            budget + std::time::Duration::from_secs(1),
            rx.wait_for(|done| *done),
        )
        .await;
    }

    pub fn has(&self, event: HookEvent) -> bool {
        self.set.for_event(event).next().is_some()
    }
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// A reply's `content`: a string, or an array of text/image blocks (pi's block JSON).
fn reply_content(v: &Value) -> Option<Vec<ContentBlock>> {
    match v {
        Value::String(s) => Some(vec![ContentBlock::text(s.clone())]),
        Value::Array(_) => serde_json::from_value(v.clone()).ok(),
        _ => None,
    }
}

#[async_trait::async_trait]
impl HarnessHook for CommandHooks {
    async fn before_agent_start(
        &self,
        event: &BeforeAgentStart<'_>,
    ) -> HookResult<BeforeAgentStartResult> {
        self.wait_started().await;
        if !self.has(HookEvent::Input) {
            return Ok(None);
        }
        let payload = self.event(
            HookEvent::Input,
            obj(json!({"text": event.prompt, "imageCount": event.images.len()})),
        );
        let mut result: Option<BeforeAgentStartResult> = None;
        for hook in self.set.for_event(HookEvent::Input) {
            let Some(reply) = self.ask(hook, &payload).await else {
                continue;
            };
            let r = result.get_or_insert_with(Default::default);
            if let Some(p) = reply.get("systemPrompt").and_then(Value::as_str) {
                r.system_prompt = Some(p.to_owned());
            }
            if let Some(text) = reply.get("message").and_then(Value::as_str) {
                r.messages.push(AgentMessage::Custom(CustomMessage {
                    custom_type: "hook".to_owned(),
                    content: Content::Text(text.to_owned()),
                    display: true,
                    details: Some(json!({"command": hook.command})),
                    timestamp: arbor_ai::time::now_ms().into(),
                    extra: Default::default(),
                }));
            }
        }
        Ok(result)
    }

    async fn tool_call(&self, request: ToolCallRequest<'_>) -> HookResult<ToolCallDecision> {
        let name = request.call.name.as_str();
        let hooks: Vec<&Hook> = self
            .set
            .for_event(HookEvent::ToolCall)
            .filter(|h| h.matches(name))
            .collect();
        if hooks.is_empty() {
            return Ok(None);
        }
        let mut input = request.args.clone();
        let mut changed = false;
        for hook in hooks {
            let payload = self.event(
                HookEvent::ToolCall,
                obj(json!({"toolName": name, "toolCallId": request.call.id, "input": input})),
            );
            let Some(reply) = self.ask(hook, &payload).await else {
                continue;
            };
            if reply.get("block").and_then(Value::as_bool) == Some(true) {
                return Ok(Some(ToolCallDecision {
                    block: true,
                    reason: reply
                        .get("reason")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    terminate: false,
                    arguments: None,
                }));
            }
            match reply.get("input") {
                Some(v @ Value::Object(_)) => {
                    input = v.clone();
                    changed = true;
                }
                Some(_) => (self.notice)(format!(
                    "Warning: hook `{}` (tool_call): \"input\" must be an object; ignored",
                    hook.command
                )),
                None => {}
            }
        }
        Ok(changed.then(|| ToolCallDecision {
            arguments: Some(input),
            ..Default::default()
        }))
    }

    async fn tool_result(&self, result: ToolCallResult<'_>) -> HookResult<ToolResultPatch> {
        let name = result.call.name.as_str();
        let hooks: Vec<&Hook> = self
            .set
            .for_event(HookEvent::ToolResult)
            .filter(|h| h.matches(name))
            .collect();
        if hooks.is_empty() {
            return Ok(None);
        }
        let mut content = result.output.content.clone();
        let mut is_error = result.is_error;
        let mut patch: Option<ToolResultPatch> = None;
        for hook in hooks {
            let payload = self.event(
                HookEvent::ToolResult,
                obj(json!({
                    "toolName": name,
                    "toolCallId": result.call.id,
                    "input": result.args,
                    "content": content,
                    "details": result.output.details,
                    "isError": is_error,
                })),
            );
            let Some(reply) = self.ask(hook, &payload).await else {
                continue;
            };
            let p = patch.get_or_insert_with(Default::default);
            if let Some(v) = reply.get("content") {
                match reply_content(v) {
                    Some(c) => {
                        content = c.clone();
                        p.content = Some(c);
                    }
                    None => (self.notice)(format!(
                        "Warning: hook `{}` (tool_result): \"content\" must be a string or an array of text/image blocks; ignored",
                        hook.command
                    )),
                }
            }
            if let Some(e) = reply.get("isError").and_then(Value::as_bool) {
                is_error = e;
                p.is_error = Some(e);
            }
        }
        Ok(patch)
    }

    async fn agent_end(
        &self,
        messages: &[AgentMessage],
    ) -> Result<(), arbor_agent::agent::AgentError> {
        if !self.has(HookEvent::AgentEnd) {
            return Ok(());
        }
        let payload = self.event(
            HookEvent::AgentEnd,
            obj(json!({"messageCount": messages.len()})),
        );
        for hook in self.set.for_event(HookEvent::AgentEnd) {
            self.ask(hook, &payload).await;
        }
        Ok(())
    }

    async fn session_before_compact(
        &self,
        event: &BeforeCompact<'_>,
    ) -> HookResult<BeforeCompactResult> {
        if !self.has(HookEvent::SessionBeforeCompact) {
            return Ok(None);
        }
        let payload = self.event(
            HookEvent::SessionBeforeCompact,
            obj(json!({
                "branchEntryCount": event.branch_entries.len(),
                "customInstructions": event.custom_instructions,
            })),
        );
        for hook in self.set.for_event(HookEvent::SessionBeforeCompact) {
            if let Some(reply) = self.ask(hook, &payload).await {
                if reply.get("cancel").and_then(Value::as_bool) == Some(true) {
                    return Ok(Some(BeforeCompactResult {
                        cancel: true,
                        compaction: None,
                    }));
                }
            }
        }
        Ok(None)
    }

    async fn session_before_tree(
        &self,
        preparation: &TreePreparation,
    ) -> HookResult<BeforeTreeResult> {
        if !self.has(HookEvent::SessionBeforeTree) {
            return Ok(None);
        }
        let payload = self.event(
            HookEvent::SessionBeforeTree,
            obj(json!({
                "targetId": preparation.target_id,
                "oldLeafId": preparation.old_leaf_id,
                "commonAncestorId": preparation.common_ancestor_id,
                "entriesToSummarize": preparation.entries_to_summarize.len(),
                "userWantsSummary": preparation.user_wants_summary,
            })),
        );
        for hook in self.set.for_event(HookEvent::SessionBeforeTree) {
            if let Some(reply) = self.ask(hook, &payload).await {
                if reply.get("cancel").and_then(Value::as_bool) == Some(true) {
                    return Ok(Some(BeforeTreeResult {
                        cancel: true,
                        ..Default::default()
                    }));
                }
            }
        }
        Ok(None)
    }
}
