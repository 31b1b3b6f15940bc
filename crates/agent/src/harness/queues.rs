//! The message queues: steering (taken after the current tool batch), follow-ups (taken when
//! the agent would stop) and next-turn messages (sent before the next `prompt`), their
//! delivery modes, and `abort`, which drops the first two and cancels what runs.

use std::collections::VecDeque;

use arbor_ai::{Content, ContentBlock, ImageContent, Message, UserMessage};

use crate::agent::{AgentError, AgentEvent, ErrorCode};
use crate::message::AgentMessage;

use super::handle::AgentHarness;
use super::options::QueueMode;
use super::state::{Phase, State};

/// `abort()`'s result: the steering and follow-up messages that were dropped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AbortResult {
    /// The steering messages that were queued and are now dropped.
    pub cleared_steer: Vec<AgentMessage>,
    /// The follow-up messages that were queued and are now dropped.
    pub cleared_follow_up: Vec<AgentMessage>,
}

/// A user message with text and images (the shape of prompts, steering and follow-ups).
pub fn user_message(text: &str, images: &[ImageContent]) -> AgentMessage {
    let mut blocks = Vec::with_capacity(1 + images.len());
    blocks.push(ContentBlock::text(text));
    blocks.extend(images.iter().cloned().map(ContentBlock::Image));
    AgentMessage::Llm(Message::User(UserMessage {
        content: Content::Blocks(blocks),
        timestamp: arbor_ai::time::now_ms().into(),
        extra: Default::default(),
    }))
}

impl AgentHarness {
    /// Copies of the steering, follow-up and next-turn queues.
    pub fn queues(&self) -> (Vec<AgentMessage>, Vec<AgentMessage>, Vec<AgentMessage>) {
        let s = self.state();
        (
            s.steer.iter().cloned().collect(),
            s.follow_up.iter().cloned().collect(),
            s.next_turn.iter().cloned().collect(),
        )
    }

    /// The `queue_update` event of the queues as they are now.
    pub(super) fn queue_update(&self) -> AgentEvent {
        let (steer, follow_up, next_turn) = self.queues();
        AgentEvent::QueueUpdate {
            steer,
            follow_up,
            next_turn,
        }
    }

    /// Queues a message for the running operation (taken after the current tool batch).
    pub fn steer(&self, text: &str, images: &[ImageContent]) -> Result<(), AgentError> {
        self.enqueue(text, images, |s| &mut s.steer, "Cannot steer while idle")
    }

    /// Queues a message for when the agent would stop.
    pub fn follow_up(&self, text: &str, images: &[ImageContent]) -> Result<(), AgentError> {
        self.enqueue(
            text,
            images,
            |s| &mut s.follow_up,
            "Cannot follow up while idle",
        )
    }

    /// Queues a message sent before the next `prompt` (always allowed).
    pub fn next_turn(&self, text: &str, images: &[ImageContent]) {
        self.state().next_turn.push_back(user_message(text, images));
        let ev = self.queue_update();
        self.deliver(&ev);
    }

    fn enqueue(
        &self,
        text: &str,
        images: &[ImageContent],
        queue: impl Fn(&mut State) -> &mut VecDeque<AgentMessage>,
        idle_text: &str,
    ) -> Result<(), AgentError> {
        {
            let mut s = self.state();
            if s.phase == Phase::Idle {
                return Err(AgentError::new(ErrorCode::InvalidState, idle_text));
            }
            queue(&mut s).push_back(user_message(text, images));
        }
        let ev = self.queue_update();
        self.deliver(&ev);
        Ok(())
    }

    /// Takes queued messages per `mode`; emits `queue_update` when something was taken.
    pub(super) fn drain(&self, steering: bool) -> Vec<AgentMessage> {
        let taken: Vec<AgentMessage> = {
            let mut s = self.state();
            let mode = if steering {
                s.steering_mode
            } else {
                s.follow_up_mode
            };
            let q = if steering {
                &mut s.steer
            } else {
                &mut s.follow_up
            };
            match mode {
                QueueMode::All => q.drain(..).collect(),
                QueueMode::OneAtATime => q.pop_front().into_iter().collect(),
            }
        };
        if !taken.is_empty() {
            let ev = self.queue_update();
            self.deliver(&ev);
        }
        taken
    }

    /// Drops the steering and follow-up queues, cancels the running turn, compaction or branch
    /// summary, waits until idle, then emits `abort`. Never fails when idle.
    pub async fn abort(&self) -> AbortResult {
        let (cleared_steer, cleared_follow_up, cancel) = {
            let mut s = self.state();
            (
                s.steer.drain(..).collect::<Vec<_>>(),
                s.follow_up.drain(..).collect::<Vec<_>>(),
                s.cancel.clone(),
            )
        };
        if let Some(c) = cancel {
            c.cancel();
        }
        let ev = self.queue_update();
        self.deliver(&ev);
        self.wait_for_idle().await;
        self.deliver(&AgentEvent::Abort {
            cleared_steer: cleared_steer.clone(),
            cleared_follow_up: cleared_follow_up.clone(),
        });
        AbortResult {
            cleared_steer,
            cleared_follow_up,
        }
    }

    /// The steering and follow-up delivery modes.
    pub fn queue_modes(&self) -> (QueueMode, QueueMode) {
        let s = self.state();
        (s.steering_mode, s.follow_up_mode)
    }

    /// Empties the steering and follow-up queues (the run goes on) and returns what they held;
    /// emits `queue_update`.
    pub fn clear_queues(&self) -> (Vec<AgentMessage>, Vec<AgentMessage>) {
        let taken = {
            let mut s = self.state();
            (
                s.steer.drain(..).collect::<Vec<_>>(),
                s.follow_up.drain(..).collect::<Vec<_>>(),
            )
        };
        let ev = self.queue_update();
        self.deliver(&ev);
        taken
    }

    /// How many queued steering messages the next poll takes.
    pub fn set_steering_mode(&self, mode: QueueMode) {
        self.state().steering_mode = mode;
    }

    /// How many queued follow-up messages the next poll takes.
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        self.state().follow_up_mode = mode;
    }
}
