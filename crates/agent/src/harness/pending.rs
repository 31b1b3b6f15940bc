//! Pending session writes: mutations made while the harness is busy are queued and written at
//! the next flush point (turn end, before the next request, agent end, error paths), so a turn
//! lands in the log as a unit (pi's `pendingSessionWrites`; DECISIONS §20.5).

use crate::message::AgentMessage;
use crate::session::Session;
use crate::SessionError;

/// An entry to write later (an entry shape minus id, parent and timestamp).
#[derive(Debug, Clone, PartialEq)]
pub enum PendingWrite {
    /// A `message` entry (`AgentHarness::append_message` while busy).
    Message(Box<AgentMessage>),
    /// A `model_change` entry.
    ModelChange {
        /// The provider name, as the entry's `provider`.
        provider: String,
        /// The model id, as the entry's `modelId`.
        model_id: String,
    },
    /// A `thinking_level_change` entry with the level as pi spells it (`off`, `low`, ...).
    ThinkingLevelChange(String),
    /// An `active_tools_change` entry: the names the model may call, in order.
    ActiveToolsChange(Vec<String>),
}

impl PendingWrite {
    /// Writes this entry now.
    pub async fn write(&self, session: &Session) -> Result<String, SessionError> {
        match self {
            PendingWrite::Message(m) => session.append_message((**m).clone()).await,
            PendingWrite::ModelChange { provider, model_id } => {
                session.append_model_change(provider, model_id).await
            }
            PendingWrite::ThinkingLevelChange(level) => {
                session.append_thinking_level_change(level).await
            }
            PendingWrite::ActiveToolsChange(names) => {
                session.append_active_tools_change(names).await
            }
        }
    }
}
