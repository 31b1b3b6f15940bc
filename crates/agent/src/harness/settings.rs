//! Settings that are written as entries — model, thinking level, active tools — and messages
//! appended from outside a run: written at once when idle (then a durability point), queued as
//! pending writes when busy and flushed at the next flush point, so a turn lands in the log as
//! a unit. Also the settings that are never stored (system prompt, stream options) and the
//! restore of stored settings after navigation (DECISIONS §20.6).

use arbor_ai::stream::StreamOptions;
use arbor_ai::{Model, ThinkingLevel};

use crate::agent::{AgentError, AgentEvent, ChangeSource, ModelInfo, ToolRef};
use crate::context::projection::ContextOptions;
use crate::message::AgentMessage;

use super::active_tools::{active_set, check_active, check_tools, duplicates, names_of};
use super::handle::AgentHarness;
use super::pending::PendingWrite;
use super::state::Phase;
use super::system_prompt::SystemPrompt;

impl AgentHarness {
    /// Writes waiting for the next flush point.
    pub fn pending_writes(&self) -> Vec<PendingWrite> {
        self.state().pending.iter().cloned().collect()
    }

    /// Writes `write` now when idle (then a durability point), else queues it. Returns whether
    /// it was queued.
    pub(super) async fn write_or_queue(&self, write: PendingWrite) -> Result<bool, AgentError> {
        {
            let mut s = self.state();
            if s.phase != Phase::Idle {
                s.pending.push_back(write);
                return Ok(true);
            }
        }
        write.write(&self.inner.session).await?;
        self.inner.session.storage().save_point().await?;
        Ok(false)
    }

    /// Appends a message to the session (queued while busy).
    pub async fn append_message(&self, message: AgentMessage) -> Result<(), AgentError> {
        self.write_or_queue(PendingWrite::Message(Box::new(message)))
            .await?;
        Ok(())
    }

    /// Switches the model from the next request on; records a `model_change`.
    pub async fn set_model(&self, model: Model) -> Result<(), AgentError> {
        let write = PendingWrite::ModelChange {
            provider: model.provider.clone(),
            model_id: model.id.clone(),
        };
        self.write_or_queue(write).await?;
        let previous = {
            let mut s = self.state();
            std::mem::replace(&mut s.model, model.clone())
        };
        self.deliver(&AgentEvent::ModelUpdate {
            model: ModelInfo::from(&model),
            previous_model: Some(ModelInfo::from(&previous)),
            source: ChangeSource::Set,
        });
        Ok(())
    }

    /// Sets the thinking level, written as a `thinking_level_change` entry (at once when idle, at the next flush point when busy).
    pub async fn set_thinking_level(&self, level: ThinkingLevel) -> Result<(), AgentError> {
        self.write_or_queue(PendingWrite::ThinkingLevelChange(
            level.as_str().to_string(),
        ))
        .await?;
        let previous = std::mem::replace(&mut self.state().thinking_level, level);
        self.deliver(&AgentEvent::ThinkingLevelUpdate {
            level: level.as_str().to_string(),
            previous_level: previous.as_str().to_string(),
        });
        Ok(())
    }

    /// Replaces the tool set (active = `active` or every tool); records `active_tools_change`.
    pub async fn set_tools(
        &self,
        tools: Vec<ToolRef>,
        active: Option<Vec<String>>,
    ) -> Result<(), AgentError> {
        check_tools(&tools)?;
        let active = active.unwrap_or_else(|| names_of(&tools));
        check_active(&tools, &active)?;
        self.apply_tools(Some(tools), active).await
    }

    /// Changes which of the tools the model may call; records `active_tools_change`.
    pub async fn set_active_tools(&self, names: Vec<String>) -> Result<(), AgentError> {
        {
            let s = self.state();
            check_active(&s.tools, &names)?;
        }
        self.apply_tools(None, names).await
    }

    async fn apply_tools(
        &self,
        tools: Option<Vec<ToolRef>>,
        active: Vec<String>,
    ) -> Result<(), AgentError> {
        self.write_or_queue(PendingWrite::ActiveToolsChange(active.clone()))
            .await?;
        let ev = {
            let mut s = self.state();
            let previous_tool_names = names_of(&s.tools);
            let previous_active = std::mem::replace(&mut s.active_tool_names, active.clone());
            if let Some(t) = tools {
                s.tools = t;
            }
            s.active = active_set(&s.tools, &active);
            AgentEvent::ToolsUpdate {
                tool_names: names_of(&s.tools),
                previous_tool_names,
                active_tool_names: active,
                previous_active_tool_names: previous_active,
                source: ChangeSource::Set,
            }
        };
        self.deliver(&ev);
        Ok(())
    }

    /// Replaces the tools a host offers beside the recorded set (MCP servers' tools), from the
    /// next request on. Never stored: they follow the host's connections, not the session.
    pub fn set_extension_tools(&self, tools: Vec<ToolRef>) {
        self.state().extension_tools = tools;
    }

    /// Replaces the system prompt (used from the next request; never stored).
    pub fn set_system_prompt(&self, prompt: SystemPrompt) {
        self.state().system_prompt = prompt;
    }

    /// Replaces the options of later model requests.
    pub fn set_stream_options(&self, options: StreamOptions) {
        self.state().stream_options = options;
    }

    /// Writes every pending write in order (each removed only once written). Returns whether
    /// there was anything to write.
    pub(super) async fn flush_pending(&self) -> Result<bool, AgentError> {
        let _order = self.inner.flush_lock.lock().await;
        let mut wrote = false;
        loop {
            let next = self.state().pending.front().cloned();
            let Some(write) = next else {
                return Ok(wrote);
            };
            write.write(&self.inner.session).await?;
            self.state().pending.pop_front();
            wrote = true;
        }
    }

    /// Adopts the derived settings of the current leaf without writing entries (after
    /// navigation: DECISIONS §20.6), emitting `model_update` / `thinking_level_update` /
    /// `tools_update` with `source: "restore"` for what changed.
    pub(super) async fn restore_settings(&self) -> Result<(), AgentError> {
        let ctx = self
            .inner
            .session
            .build_context(&ContextOptions::default())
            .await?;
        let mut events = Vec::new();
        {
            let mut s = self.state();
            let resolve = s.models.clone();
            if let (Some(stored), Some(resolve)) = (&ctx.model, resolve) {
                if stored.provider != s.model.provider || stored.model_id != s.model.id {
                    if let Some(m) = resolve(stored) {
                        let previous = std::mem::replace(&mut s.model, m.clone());
                        events.push(AgentEvent::ModelUpdate {
                            model: ModelInfo::from(&m),
                            previous_model: Some(ModelInfo::from(&previous)),
                            source: ChangeSource::Restore,
                        });
                    }
                }
            }
            if let Some(level) = ThinkingLevel::parse(&ctx.thinking_level) {
                if level != s.thinking_level {
                    let previous = std::mem::replace(&mut s.thinking_level, level);
                    events.push(AgentEvent::ThinkingLevelUpdate {
                        level: level.as_str().to_string(),
                        previous_level: previous.as_str().to_string(),
                    });
                }
            }
            if let Some(stored) = &ctx.active_tool_names {
                let known: Vec<String> = stored
                    .iter()
                    .filter(|n| s.tools.iter().any(|t| t.name() == n.as_str()))
                    .cloned()
                    .collect();
                if known != s.active_tool_names && duplicates(&known).is_empty() {
                    let previous = std::mem::replace(&mut s.active_tool_names, known.clone());
                    s.active = active_set(&s.tools, &known);
                    events.push(AgentEvent::ToolsUpdate {
                        tool_names: names_of(&s.tools),
                        previous_tool_names: names_of(&s.tools),
                        active_tool_names: known,
                        previous_active_tool_names: previous,
                        source: ChangeSource::Restore,
                    });
                }
            }
        }
        for ev in &events {
            self.deliver(ev);
        }
        Ok(())
    }
}
