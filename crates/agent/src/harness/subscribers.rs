//! Who hears a harness: subscribers, which observe every event, and hooks, which may change
//! what happens (DECISIONS §20.9). Both are called in registration order on the task that
//! produced the event; the lists are copied out of their locks first, so a callback may
//! subscribe or register in turn.

use std::sync::{Arc, Mutex, PoisonError, RwLock};

use crate::agent::AgentEvent;

use super::hooks::HarnessHook;

/// Handle of a subscription, for [`AgentHarness::unsubscribe`](super::AgentHarness::unsubscribe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscriptionId(u64);

pub(super) type Listener = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

/// The listeners and hooks of one harness.
#[derive(Default)]
pub(super) struct Subscribers {
    listeners: RwLock<Vec<(u64, Listener)>>,
    next_listener: Mutex<u64>,
    hooks: RwLock<Vec<Arc<dyn HarnessHook>>>,
}

impl Subscribers {
    pub(super) fn subscribe(&self, listener: Listener) -> SubscriptionId {
        let id = {
            let mut n = self
                .next_listener
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            *n += 1;
            *n
        };
        self.listeners
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push((id, listener));
        SubscriptionId(id)
    }

    pub(super) fn unsubscribe(&self, id: SubscriptionId) {
        self.listeners
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(i, _)| *i != id.0);
    }

    pub(super) fn add_hook(&self, hook: Arc<dyn HarnessHook>) {
        self.hooks
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(hook);
    }

    /// The hooks, in registration order.
    pub(super) fn hooks(&self) -> Vec<Arc<dyn HarnessHook>> {
        self.hooks
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Calls every listener with `event`.
    pub(super) fn deliver(&self, event: &AgentEvent) {
        let listeners: Vec<Listener> = self
            .listeners
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(_, l)| l.clone())
            .collect();
        for l in listeners {
            l(event);
        }
    }
}
