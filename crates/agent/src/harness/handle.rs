//! [`AgentHarness`], the shared handle: construction (new or resumed from a session), what it
//! reports about itself, its subscribers and the bookkeeping of the phase it is in. The
//! operations live beside it, one file per concern (queues, settings, `prompt`, compaction,
//! navigation).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use arbor_ai::stream::ApiProvider;
use arbor_ai::{Model, ThinkingLevel};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::agent::{AgentError, AgentEvent, ErrorCode};
use crate::context::projection::{DerivedState, ModelRef};
use crate::session::Session;

use super::active_tools::{active_set, check_active, check_tools, names_of};
use super::hooks::HarnessHook;
use super::options::{HarnessOptions, ResumeReport};
use super::request::RequestCache;
use super::state::{Phase, State};
use super::subscribers::{Subscribers, SubscriptionId};

/// What the clones of one handle share.
pub(super) struct Inner {
    pub(super) session: Arc<Session>,
    pub(super) provider: Arc<dyn ApiProvider>,
    pub(super) state: Mutex<State>,
    pub(super) subscribers: Subscribers,
    /// `true` while no operation runs (for `wait_for_idle`).
    pub(super) idle: watch::Sender<bool>,
    /// Serializes flushes so pending writes keep their order.
    pub(super) flush_lock: tokio::sync::Mutex<()>,
}

/// The agent runtime over one session. Cheap to clone (shared handle): steer or abort from
/// another task while `prompt` runs.
///
/// One operation at a time ([`Phase`]): `prompt`, `compact` and `navigate_tree` on a busy
/// harness fail with [`ErrorCode::Busy`] and change nothing. Every message is in the session
/// before subscribers see its `message_end`, so a file-backed session can be reopened and
/// resumed at any point:
///
/// ```
/// use std::sync::Arc;
/// use arbor_agent::agent::ErrorCode;
/// use arbor_agent::compaction::CompactionSettings;
/// use arbor_agent::harness::ALREADY_COMPACTED;
/// use arbor_agent::prelude::*;
/// use arbor_ai::faux::{FauxProvider, FauxResponse};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let file = dir.path().join("chat.jsonl");
/// let repo = JsonlRepository::flat(dir.path());
/// let storage = repo.create_at(&file, CreateOptions::new("/work/project")).await?;
///
/// let faux = FauxProvider::new();
/// faux.push(FauxResponse::text("Hello."));
/// faux.push(FauxResponse::text("Still here."));
/// faux.push(FauxResponse::text("## Goal\nGreetings were exchanged."));
///
/// // Keep only the last exchange (about 7 tokens) verbatim, so even this short session has
/// // something to compact.
/// let compaction = CompactionSettings {
///     keep_recent_tokens: 5,
///     ..CompactionSettings::default()
/// };
/// let options = HarnessOptions::new(faux.model()).with_compaction(compaction);
/// let session = Arc::new(Session::new(Arc::new(storage)));
/// let harness = AgentHarness::new(session, Arc::new(faux.clone()), options.clone())?;
/// harness.prompt("Hi", &[]).await?;
/// harness.prompt("Are you there?", &[]).await?;
/// let entry = harness.compact(None).await?;
/// assert!(matches!(entry.kind, EntryKind::Compaction(_)));
///
/// // Nothing new to summarize: an error with a stable code, and nothing written.
/// let again = harness.compact(None).await.err().ok_or("compacted twice")?;
/// assert_eq!(again.code(), ErrorCode::Compaction);
/// assert_eq!(again.message(), ALREADY_COMPACTED);
/// drop(harness);
///
/// // Later: reopen the file and go on from its leaf; the context starts at the summary.
/// let storage = repo.open(&file.display().to_string()).await?;
/// let session = Arc::new(Session::new(Arc::new(storage)));
/// let (harness, report) = AgentHarness::resume(session, Arc::new(faux.clone()), options).await?;
/// assert!(report.unknown_model.is_none());
/// let context = harness.session().build_context(&ContextOptions::default()).await?;
/// let roles: Vec<&str> = context.messages.iter().map(|m| m.role()).collect();
/// assert_eq!(roles, ["compactionSummary", "user", "assistant"]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct AgentHarness {
    pub(super) inner: Arc<Inner>,
}

/// A reference to a harness that does not keep it alive: for callbacks the harness itself
/// holds (through a hook), which would otherwise keep it, its session and the session's
/// storage alive for ever.
#[derive(Clone)]
pub struct WeakAgentHarness {
    inner: Weak<Inner>,
}

impl std::fmt::Debug for WeakAgentHarness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeakAgentHarness").finish_non_exhaustive()
    }
}

impl WeakAgentHarness {
    /// The harness, while anything else still holds it.
    pub fn upgrade(&self) -> Option<AgentHarness> {
        self.inner.upgrade().map(|inner| AgentHarness { inner })
    }
}

impl AgentHarness {
    /// See [`WeakAgentHarness`].
    pub fn downgrade(&self) -> WeakAgentHarness {
        WeakAgentHarness {
            inner: Arc::downgrade(&self.inner),
        }
    }
}

impl std::fmt::Debug for AgentHarness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state();
        f.debug_struct("AgentHarness")
            .field("phase", &s.phase)
            .field("model", &s.model.id)
            .field("thinking_level", &s.thinking_level)
            .finish_non_exhaustive()
    }
}

impl AgentHarness {
    /// A harness over `session` with the given model and settings. Writes nothing.
    pub fn new(
        session: Arc<Session>,
        provider: Arc<dyn ApiProvider>,
        options: HarnessOptions,
    ) -> Result<Self, AgentError> {
        check_tools(&options.tools)?;
        let active_names = options
            .active_tool_names
            .clone()
            .unwrap_or_else(|| names_of(&options.tools));
        check_active(&options.tools, &active_names)?;
        let active = active_set(&options.tools, &active_names);
        let (idle, _) = watch::channel(true);
        let state = State {
            phase: Phase::Idle,
            model: options.model,
            thinking_level: options.thinking_level.unwrap_or(ThinkingLevel::Off),
            tools: options.tools,
            active_tool_names: active_names,
            active,
            extension_tools: Vec::new(),
            system_prompt: options.system_prompt,
            stream_options: options.stream_options,
            thinking_budgets: options.thinking_budgets,
            steering_mode: options.steering_mode,
            follow_up_mode: options.follow_up_mode,
            tool_execution: options.tool_execution,
            steer: VecDeque::new(),
            follow_up: VecDeque::new(),
            next_turn: VecDeque::new(),
            pending: VecDeque::new(),
            cancel: None,
            models: options.models,
            compaction: options.compaction,
            summary_retry: options.summary_retry,
            request_cache: RequestCache::default(),
        };
        Ok(AgentHarness {
            inner: Arc::new(Inner {
                session,
                provider,
                state: Mutex::new(state),
                subscribers: Subscribers::default(),
                idle,
                flush_lock: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// A harness continuing a reopened session from its leaf: model, thinking level and active
    /// tools come from the session's derived state. `options.models` maps the
    /// stored provider/model id to a model; when it does not know it, `options.model` is used
    /// and the report says so (nothing stored: `options.model`, no report). Writes nothing.
    pub async fn resume(
        session: Arc<Session>,
        provider: Arc<dyn ApiProvider>,
        mut options: HarnessOptions,
    ) -> Result<(Self, ResumeReport), AgentError> {
        // Only the derived settings: storages with an index answer them without reading the
        // path, and the context itself is built on the first turn (or by a UI warming it up
        // after its first frame), so resuming a large session does not read all of it.
        let derived = session.storage().derived_settings(None).await?;
        let settings = DerivedState {
            model: derived
                .model
                .map(|(provider, model_id)| ModelRef { provider, model_id }),
            thinking_level: derived.thinking_level.unwrap_or_else(|| "off".to_owned()),
            active_tool_names: derived.active_tool_names,
        };
        let mut report = ResumeReport::default();
        if let Some(stored) = &settings.model {
            let known = (stored.provider == options.model.provider
                && stored.model_id == options.model.id)
                .then(|| options.model.clone());
            match known.or_else(|| options.models.as_ref().and_then(|r| r(stored))) {
                Some(m) => options.model = m,
                None => report.unknown_model = Some(stored.clone()),
            }
        }
        match ThinkingLevel::parse(&settings.thinking_level) {
            Some(level) => options.thinking_level = Some(level),
            None => report.unknown_thinking_level = Some(settings.thinking_level.clone()),
        }
        if let Some(stored) = &settings.active_tool_names {
            let (known, unknown): (Vec<String>, Vec<String>) = stored
                .iter()
                .cloned()
                .partition(|n| options.tools.iter().any(|t| t.name() == n.as_str()));
            let mut deduped = Vec::with_capacity(known.len());
            for n in known {
                if !deduped.contains(&n) {
                    deduped.push(n);
                }
            }
            options.active_tool_names = Some(deduped);
            report.unknown_tools = unknown;
        }
        drop(settings);
        Ok((AgentHarness::new(session, provider, options)?, report))
    }

    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a listener panicked while we held it; the state itself
        // is updated field by field and stays consistent.
        self.inner
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    // ---- getters -------------------------------------------------------------------------

    /// The session this harness runs (also for reading its tree or context).
    pub fn session(&self) -> &Arc<Session> {
        &self.inner.session
    }

    /// What the harness is doing now.
    pub fn phase(&self) -> Phase {
        self.state().phase
    }

    /// The model of the next request.
    pub fn model(&self) -> Model {
        self.state().model.clone()
    }

    /// The thinking level of the next request.
    pub fn thinking_level(&self) -> ThinkingLevel {
        self.state().thinking_level
    }

    /// The names of every tool given.
    pub fn tool_names(&self) -> Vec<String> {
        names_of(&self.state().tools)
    }

    /// The names of the tools the model may call now.
    pub fn active_tool_names(&self) -> Vec<String> {
        self.state().active_tool_names.clone()
    }

    // ---- subscribers and hooks -----------------------------------------------------------

    /// Registers an observer of every event (loop events and harness notifications), called
    /// in order on the task that produced the event. Keep it quick; forward to a channel for
    /// slow work.
    pub fn subscribe(
        &self,
        listener: impl Fn(&AgentEvent) + Send + Sync + 'static,
    ) -> SubscriptionId {
        self.inner.subscribers.subscribe(Arc::new(listener))
    }

    /// Removes a subscriber; an unknown id is ignored.
    pub fn unsubscribe(&self, id: SubscriptionId) {
        self.inner.subscribers.unsubscribe(id);
    }

    /// Registers hooks (run after those registered earlier).
    pub fn add_hook(&self, hook: Arc<dyn HarnessHook>) {
        self.inner.subscribers.add_hook(hook);
    }

    pub(super) fn hooks(&self) -> Vec<Arc<dyn HarnessHook>> {
        self.inner.subscribers.hooks()
    }

    pub(super) fn deliver(&self, event: &AgentEvent) {
        self.inner.subscribers.deliver(event);
    }

    // ---- operations: phase bookkeeping -----------------------------------------------------

    /// Enters `phase` from idle, or fails with pi's busy error for that operation.
    pub(super) fn begin(
        &self,
        phase: Phase,
        busy_text: &str,
    ) -> Result<CancellationToken, AgentError> {
        let mut s = self.state();
        if s.phase != Phase::Idle {
            return Err(AgentError::new(ErrorCode::Busy, busy_text));
        }
        s.phase = phase;
        let token = CancellationToken::new();
        s.cancel = Some(token.clone());
        drop(s);
        self.inner.idle.send_replace(false);
        Ok(token)
    }

    pub(super) fn finish(&self) {
        {
            let mut s = self.state();
            s.phase = Phase::Idle;
            s.cancel = None;
        }
        self.inner.idle.send_replace(true);
    }

    /// Resolves once no operation (turn, compaction, branch summary) is running.
    pub async fn wait_for_idle(&self) {
        let mut rx = self.inner.idle.subscribe();
        // The sender lives as long as `self`, so this cannot fail while we wait.
        let _ = rx.wait_for(|idle| *idle).await;
    }
}
