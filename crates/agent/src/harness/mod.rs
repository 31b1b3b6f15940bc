//! `AgentHarness`: the runtime around the agent loop (DECISIONS §20) — one session, one phase
//! at a time (`idle | turn | compaction | branch_summary`), queues for steering, follow-ups and
//! the next turn, settings that are written as entries (at once when idle, as pending writes
//! when busy), persistence of every message at `message_end` before subscribers see it, one
//! save point per turn, tree navigation and compaction.
//!
//! The harness holds no terminal or provider-HTTP details: the caller hands it an
//! `Arc<dyn ApiProvider>` and the models it may use.
//!
//! Where things are: `handle` (the shared handle, construction, subscribers, phase), `state`
//! (what changes under its lock), `options` and `system_prompt` (what it is built from),
//! `queues`, `settings`, `run` (`prompt`), `compact`, `prompt_policy` and `navigate` (the
//! operations), `request` (request messages kept across turns), `hooks` and `pending`.

mod active_tools;
mod compact;
mod handle;
mod hooks;
mod navigate;
mod options;
mod pending;
mod prompt_policy;
mod queues;
mod request;
mod run;
mod settings;
mod state;
mod subscribers;
mod system_prompt;

pub use compact::{ALREADY_COMPACTED, COMPACTION_CANCELLED, NOTHING_TO_COMPACT};
pub use handle::{AgentHarness, WeakAgentHarness};
pub use hooks::{
    BeforeAgentStart, BeforeAgentStartResult, BeforeCompact, BeforeCompactResult, BeforeTreeResult,
    HarnessHook, HookResult, HookSummary, TreePreparation,
};
pub use navigate::{NavigateOptions, NavigateResult};
pub use options::{HarnessOptions, ModelResolver, QueueMode, ResumeReport};
pub use pending::PendingWrite;
pub use prompt_policy::{
    PolicyControl, PolicyObserver, PromptPolicy, PromptPolicyError, PromptRetry, RETRY_CANCELLED,
};
pub use queues::{user_message, AbortResult};
pub use state::Phase;
pub use subscribers::SubscriptionId;
pub use system_prompt::{SystemPrompt, SystemPromptInput, DEFAULT_SYSTEM_PROMPT};
