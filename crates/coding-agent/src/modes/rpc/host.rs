//! The RPC session: the app every command acts on (replaced by the session commands), the
//! running prompt, the `bash` commands in flight and the subscription that writes events.
//! [`Call`] is one command's view of it, the [`CommandHost`] the command layer runs against.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use arbor_agent::harness::{Phase, PolicyControl, SubscriptionId};
use arbor_ai::ImageContent;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::cli::AgentArgs;
use crate::command::{CommandError, CommandHost};
use crate::modes::events::PiEvents;
use crate::modes::json::emit_line;
use crate::startup::{App, Restart, SessionChoice};

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(super) struct Rpc {
    /// The flags the process started with; session commands reuse them.
    pub(super) args: AgentArgs,
    pub(super) session_dir: Option<PathBuf>,
    /// The app over the current session (replaced by the session commands).
    pub(super) app: RwLock<Arc<App>>,
    /// The harness subscription that writes events, moved to each new harness.
    pub(super) subscription: Mutex<Option<SubscriptionId>>,
    /// The converter of the current subscription (told when a run starts a conversation).
    pub(super) events: Mutex<Arc<Mutex<PiEvents>>>,
    /// The running prompt, if any.
    pub(super) running: Mutex<Option<tokio::task::JoinHandle<()>>>,
    pub(super) control: Arc<PolicyControl>,
    /// Cancellation of each running `bash` command (`abort_bash` cancels them all).
    pub(super) bash: Mutex<Vec<CancellationToken>>,
    /// Held exclusively while a session command replaces the app and shared by the other
    /// commands, so a command sent after `new_session` (say) acts on the new session.
    /// DECISIONS §22.32.
    pub(super) gate: tokio::sync::RwLock<()>,
}

impl Rpc {
    pub(super) fn app(&self) -> Arc<App> {
        self.app
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Writes the new harness's events to stdout (pi's shapes), dropping the old subscription.
    pub(super) fn attach(&self, app: &App) {
        let conv = Arc::new(Mutex::new(PiEvents::default()));
        *lock(&self.events) = conv.clone();
        let id = app.harness.subscribe(move |e| {
            for l in lock(&conv).convert(e) {
                emit_line(&l);
            }
        });
        *lock(&self.subscription) = Some(id);
    }

    fn busy(&self) -> bool {
        self.app().harness.phase() != Phase::Idle
            || lock(&self.running)
                .as_ref()
                .is_some_and(|h| !h.is_finished())
    }

    /// Stops the run (if any) and waits for it to write its last entries.
    pub(super) async fn stop_run(&self) {
        self.app().harness.abort().await;
        let task = lock(&self.running).take();
        if let Some(t) = task {
            let _ = t.await;
        }
    }

    pub(super) fn cancel_bash(&self) {
        for t in lock(&self.bash).drain(..) {
            t.cancel();
        }
    }

    /// Replaces the session: the run is stopped first, then the app is built again over the
    /// chosen session with the current model and thinking level (a reopened or forked session
    /// restores its own). The old session is closed once nothing holds it. DECISIONS §22.13.
    async fn replace_session(&self, choice: SessionChoice) -> Result<(), CommandError> {
        self.stop_run().await;
        // A running bash command belongs to the old session (its result is recorded there).
        self.cancel_bash();
        let old = self.app();
        let restart = Restart {
            choice,
            model: old.harness.model(),
            thinking: old.harness.thinking_level(),
        };
        let (steering, follow_up) = old.harness.queue_modes();
        // The file already open would only be found locked by ourselves: nothing to switch.
        if let SessionChoice::Open(path) = &restart.choice {
            if old.session_file.as_deref() == Some(path.as_path()) {
                return Ok(());
            }
        }
        // So would the store session already open (named by id or `<server>#<id>`).
        if let SessionChoice::OpenStored(named) = &restart.choice {
            if crate::lookup::names_store_session(named, &old.header.id) {
                return Ok(());
            }
        }
        let app = crate::startup::restart(&self.args, self.session_dir.as_deref(), restart).await?;
        app.harness.set_steering_mode(steering);
        app.harness.set_follow_up_mode(follow_up);
        if let Some(id) = lock(&self.subscription).take() {
            old.harness.unsubscribe(id);
        }
        self.attach(&app);
        *self
            .app
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(app);
        // The new session started its own MCP servers.
        if let Some(mcp) = &old.mcp {
            mcp.shutdown().await;
        }
        Ok(())
    }
}

/// One command being answered: the session and the command's `id` (which tags its `bash`
/// output).
pub(super) struct Call<'a> {
    pub(super) rpc: &'a Rpc,
    pub(super) id: Option<Value>,
}

#[async_trait::async_trait(?Send)]
impl CommandHost for Call<'_> {
    fn app(&self) -> Arc<App> {
        self.rpc.app()
    }

    fn control(&self) -> &PolicyControl {
        &self.rpc.control
    }

    fn busy(&self) -> bool {
        self.rpc.busy()
    }

    fn start_prompt(&self, message: String, images: Vec<ImageContent>) {
        let app = self.rpc.app();
        let harness = app.harness.clone();
        let settings = app.settings.clone();
        let control = self.rpc.control.clone();
        let events = lock(&self.rpc.events).clone();
        let session = app.session.clone();
        let task = tokio::spawn(async move {
            crate::modes::json::announce_system_if_new(&session, &harness, &events).await;
            let observer = crate::modes::json::EventObserver;
            if let Err(e) = crate::policy::prompt_controlled(
                &harness, &settings, &message, &images, &observer, &control,
            )
            .await
            {
                emit_line(
                    &json!({"type": "extension_error", "extensionPath": "", "event": "prompt", "error": e.to_string()}),
                );
            }
        });
        *lock(&self.rpc.running) = Some(task);
    }

    async fn stop_run(&self) {
        self.rpc.stop_run().await;
    }

    fn cancel_bash(&self) {
        self.rpc.cancel_bash();
    }

    fn bash_started(&self) -> CancellationToken {
        let token = CancellationToken::new();
        lock(&self.rpc.bash).push(token.clone());
        token
    }

    fn bash_finished(&self, token: &CancellationToken) {
        token.cancel();
        lock(&self.rpc.bash).retain(|t| !t.is_cancelled());
    }

    fn bash_output(&self) -> arbor_tools::bash::ChunkSink {
        let id = self.id.clone();
        Arc::new(move |delta: &str| {
            let mut v = json!({"type": "bash_execution_update", "delta": delta});
            if let Some(id) = &id {
                v["id"] = id.clone();
            }
            emit_line(&v);
        })
    }

    async fn replace_session(&self, choice: SessionChoice) -> Result<(), CommandError> {
        self.rpc.replace_session(choice).await
    }

    fn notify(&self, event: Value) {
        emit_line(&event);
    }
}
