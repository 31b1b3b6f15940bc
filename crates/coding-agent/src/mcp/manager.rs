//! The MCP servers of one run: each enabled server is started in the background, all at once,
//! and never on the start-up path (DECISIONS §33.5). A server's tools reach the harness when it
//! connects; a server that exits is reported and started again (up to
//! [`MAX_RESTARTS`] times in a row, and on the next call after that); `/mcp` reads the
//! states and switches servers on and off. Every process group a server started is killed when
//! the manager shuts down or is dropped (DECISIONS §33.6).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use arbor_agent::agent::ToolRef;
use rmcp::service::{Peer, RoleClient};
use serde_json::{Map, Value};
use tokio::sync::watch;

use super::config::{canonical_name, Diagnostic, LoadedConfig, ServerConfig};
use super::connection::{self, Connection, RemoteTool};
use super::names::tool_names;
use super::tool::{McpTool, ToolCaller};
use super::McpError;

/// How often a server that keeps exiting is restarted before Arbor waits for the next call.
pub const MAX_RESTARTS: u32 = 3;

/// Default bound on a server's start (spawn, handshake, tool list) and on how long a prompt
/// waits for servers still starting (pi waits up to 10 s for servers with direct tools).
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(10);

/// A server's state as `/mcp` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    Disabled,
    Connecting,
    Connected,
    /// Start failed or the server exited; the text says why (with its stderr tail).
    Failed(String),
}

impl ServerState {
    pub fn label(&self) -> &'static str {
        match self {
            ServerState::Disabled => "disabled",
            ServerState::Connecting => "connecting",
            ServerState::Connected => "connected",
            ServerState::Failed(_) => "failed",
        }
    }
}

/// One server's status for display.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    pub name: String,
    pub source: PathBuf,
    pub state: ServerState,
    /// `(model-facing name, server's name)`.
    pub tools: Vec<(String, String)>,
    pub pid: Option<u32>,
    pub stderr: String,
}

struct Slot {
    key: String,
    config: ServerConfig,
    state: ServerState,
    /// Bumped on every (re)connect and disconnect: a task from an older generation changes
    /// nothing.
    generation: u64,
    restarts: u32,
    peer: Option<Peer<RoleClient>>,
    connection: Option<Connection>,
    tools: Vec<RemoteTool>,
    pid: Option<u32>,
    stderr: connection::StderrTail,
}

type ToolsSink = Arc<dyn Fn(Vec<ToolRef>) + Send + Sync>;
type NoticeSink = Arc<dyn Fn(String) + Send + Sync>;

struct Inner {
    cwd: PathBuf,
    start_timeout: Duration,
    diagnostics: Vec<Diagnostic>,
    slots: Mutex<Vec<Slot>>,
    version: watch::Sender<u64>,
    on_tools: Mutex<Option<ToolsSink>>,
    on_notice: Mutex<Option<NoticeSink>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The servers of one run. Cheap to clone.
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager")
            .field("servers", &lock(&self.inner.slots).len())
            .finish()
    }
}

impl McpManager {
    /// A manager over a loaded configuration. Starts nothing; see [`McpManager::start_all`].
    pub fn new(config: LoadedConfig, cwd: PathBuf, start_timeout: Duration) -> Self {
        let slots = config
            .servers
            .into_iter()
            .map(|c| Slot {
                key: canonical_name(&c.name),
                state: if c.enabled {
                    ServerState::Connecting
                } else {
                    ServerState::Disabled
                },
                config: c,
                generation: 0,
                restarts: 0,
                peer: None,
                connection: None,
                tools: Vec::new(),
                pid: None,
                stderr: Default::default(),
            })
            .collect();
        let (version, _) = watch::channel(0);
        McpManager {
            inner: Arc::new(Inner {
                cwd,
                start_timeout,
                diagnostics: config.diagnostics,
                slots: Mutex::new(slots),
                version,
                on_tools: Mutex::new(None),
                on_notice: Mutex::new(None),
            }),
        }
    }

    /// Problems found in the configuration files.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.inner.diagnostics
    }

    /// Where the tool set goes whenever it changes (the harness's extension tools).
    pub fn on_tools(&self, sink: impl Fn(Vec<ToolRef>) + Send + Sync + 'static) {
        *lock(&self.inner.on_tools) = Some(Arc::new(sink));
        self.publish_tools();
    }

    /// Where crash and reconnect notices go (stderr outside the TUI).
    pub fn on_notice(&self, sink: impl Fn(String) + Send + Sync + 'static) {
        *lock(&self.inner.on_notice) = Some(Arc::new(sink));
    }

    fn notice(&self, text: String) {
        let sink = lock(&self.inner.on_notice).clone();
        match sink {
            Some(s) => s(text),
            None => crate::notices::warn(text),
        }
    }

    /// A start or end line of a long operation (connecting): shown where notices are shown
    /// while the TUI runs, left out of stderr (DECISIONS §23.174).
    fn progress(&self, text: String) {
        let sink = lock(&self.inner.on_notice).clone();
        match sink {
            Some(s) => s(text),
            None if crate::notices::redirected() => crate::notices::info(text),
            None => {}
        }
    }

    /// Starts every enabled server in the background (returns at once).
    pub fn start_all(&self) {
        let keys: Vec<String> = lock(&self.inner.slots)
            .iter()
            .filter(|s| s.config.enabled)
            .map(|s| s.key.clone())
            .collect();
        for key in keys {
            self.connect(&key);
        }
    }

    /// The current tools of every connected server.
    pub fn tools(&self) -> Vec<ToolRef> {
        let slots = lock(&self.inner.slots);
        let mut out: Vec<ToolRef> = Vec::new();
        // A server that dropped keeps its tools while it is restarted: a call waits for the
        // new connection instead of finding the tool gone (DECISIONS §33.7).
        for slot in slots.iter().filter(|s| s.config.enabled) {
            let remote: Vec<String> = slot.tools.iter().map(|t| t.name.clone()).collect();
            for (tool, name) in slot
                .tools
                .iter()
                .zip(tool_names(&slot.config.name, &remote))
            {
                out.push(Arc::new(McpTool {
                    manager: Arc::new(self.clone()),
                    server: slot.key.clone(),
                    remote_name: tool.name.clone(),
                    name,
                    description: tool.description.clone(),
                    parameters: tool.input_schema.clone(),
                }));
            }
        }
        out
    }

    fn publish_tools(&self) {
        let sink = lock(&self.inner.on_tools).clone();
        if let Some(sink) = sink {
            sink(self.tools());
        }
        self.inner.version.send_modify(|v| *v += 1);
    }

    /// Every server's state, in configuration order.
    pub fn status(&self) -> Vec<ServerStatus> {
        lock(&self.inner.slots)
            .iter()
            .map(|s| {
                let remote: Vec<String> = s.tools.iter().map(|t| t.name.clone()).collect();
                ServerStatus {
                    name: s.config.name.clone(),
                    source: s.config.source.clone(),
                    state: s.state.clone(),
                    tools: tool_names(&s.config.name, &remote)
                        .into_iter()
                        .zip(remote)
                        .collect(),
                    pid: s.pid,
                    stderr: s.stderr.text(),
                }
            })
            .collect()
    }

    fn find(&self, name: &str) -> Result<String, McpError> {
        let key = canonical_name(name);
        if lock(&self.inner.slots).iter().any(|s| s.key == key) {
            Ok(key)
        } else {
            Err(McpError::UnknownServer {
                server: name.to_owned(),
            })
        }
    }

    /// Waits until no server is starting, or `timeout` passed. True when none is starting.
    pub async fn wait_started(&self, timeout: Duration) -> bool {
        let mut rx = self.inner.version.subscribe();
        let starting = || {
            lock(&self.inner.slots)
                .iter()
                .any(|s| s.state == ServerState::Connecting)
        };
        tokio::time::timeout(timeout, async {
            while starting() {
                if rx.changed().await.is_err() {
                    break;
                }
            }
        })
        .await
        .is_ok()
    }

    /// (Re)starts one server in the background; an open connection is closed first.
    pub fn connect(&self, key: &str) {
        let (config, generation, old) = {
            let mut slots = lock(&self.inner.slots);
            let Some(slot) = slots.iter_mut().find(|s| s.key == key) else {
                return;
            };
            slot.generation += 1;
            slot.state = ServerState::Connecting;
            slot.peer = None;
            let old = slot.connection.take().map(|c| (c, slot.pid.take()));
            (slot.config.clone(), slot.generation, old)
        };
        self.publish_tools();
        self.progress(format!("MCP server \"{}\": connecting…", config.name));
        let this = self.clone();
        let key = key.to_owned();
        tokio::spawn(async move {
            if let Some((old, pid)) = old {
                this.close_connection(old, pid).await;
            }
            let opened = Connection::open(&config, &this.inner.cwd, this.inner.start_timeout).await;
            this.finish_connect(&key, generation, opened);
        });
    }

    fn finish_connect(&self, key: &str, generation: u64, opened: Result<Connection, McpError>) {
        let mut watcher = None;
        let mut stale = None;
        let mut failure = None;
        let mut connected = None;
        {
            let mut slots = lock(&self.inner.slots);
            let Some(slot) = slots.iter_mut().find(|s| s.key == key) else {
                return;
            };
            match opened {
                Ok(conn) if slot.generation != generation => stale = Some(conn),
                Ok(mut conn) => {
                    slot.state = ServerState::Connected;
                    slot.peer = Some(conn.peer());
                    slot.tools = conn.tools.clone();
                    slot.stderr = conn.stderr.clone();
                    slot.pid = conn.pid();
                    watcher = conn.take_child().map(|c| (c, slot.pid));
                    connected = Some(format!(
                        "MCP server \"{}\": connected ({} tools)",
                        slot.config.name,
                        conn.tools.len()
                    ));
                    slot.connection = Some(conn);
                }
                Err(_) if slot.generation != generation => {}
                Err(e) => {
                    slot.state = ServerState::Failed(e.to_string());
                    failure = Some(format!("MCP server \"{}\": {e}", slot.config.name));
                }
            }
        }
        if let Some(conn) = stale {
            let this = self.clone();
            tokio::spawn(async move { this.close_connection(conn, None).await });
            return;
        }
        if let Some(text) = failure {
            self.notice(text);
        }
        if let Some(text) = connected {
            self.progress(text);
        }
        if let Some((child, pid)) = watcher {
            let this = self.clone();
            let key = key.to_owned();
            tokio::spawn(async move { this.watch_exit(key, generation, child, pid).await });
        }
        self.publish_tools();
    }

    /// Waits for a server process to exit; an exit nobody asked for is a crash: reported, and
    /// the server started again.
    async fn watch_exit(
        &self,
        key: String,
        generation: u64,
        mut child: tokio::process::Child,
        pid: Option<u32>,
    ) {
        let status = child.wait().await;
        if let Some(pid) = pid {
            // The leader is gone; whatever it left in its group goes too.
            if let Ok(pgid) = i32::try_from(pid) {
                arbor_tools::process::group::end_detached(pgid);
            }
        }
        let (name, restart) = {
            let mut slots = lock(&self.inner.slots);
            let Some(slot) = slots.iter_mut().find(|s| s.key == key) else {
                return;
            };
            if slot.generation != generation || !slot.config.enabled {
                return;
            }
            let how = match status {
                Ok(s) => s.to_string(),
                Err(e) => e.to_string(),
            };
            let tail = slot.stderr.text();
            let mut message = format!("the server process exited ({how})");
            if !tail.is_empty() {
                message.push_str(&format!("\nstderr:\n{tail}"));
            }
            slot.state = ServerState::Failed(message);
            slot.peer = None;
            slot.pid = None;
            slot.connection = None;
            slot.generation += 1;
            slot.restarts += 1;
            (slot.config.name.clone(), slot.restarts <= MAX_RESTARTS)
        };
        self.publish_tools();
        if restart {
            self.notice(format!(
                "MCP server \"{name}\" exited unexpectedly; reconnecting"
            ));
            tokio::time::sleep(Duration::from_millis(200)).await;
            self.connect(&key);
        } else {
            self.notice(format!(
                "MCP server \"{name}\" keeps exiting; it will be started again on its next call (or /mcp reconnect {name})"
            ));
        }
    }

    async fn close_connection(&self, conn: Connection, pid: Option<u32>) {
        conn.close().await;
        if let Some(pid) = pid {
            if let Ok(pgid) = i32::try_from(pid) {
                arbor_tools::process::group::end(pgid).await;
            }
        }
    }

    /// `/mcp reconnect NAME`.
    pub fn reconnect(&self, name: &str) -> Result<(), McpError> {
        let key = self.find(name)?;
        {
            let mut slots = lock(&self.inner.slots);
            if let Some(slot) = slots.iter_mut().find(|s| s.key == key) {
                slot.config.enabled = true;
                slot.restarts = 0;
            }
        }
        self.connect(&key);
        Ok(())
    }

    /// `/mcp enable|disable NAME` for this run.
    pub async fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), McpError> {
        let key = self.find(name)?;
        if enabled {
            return self.reconnect(name);
        }
        let old = {
            let mut slots = lock(&self.inner.slots);
            let Some(slot) = slots.iter_mut().find(|s| s.key == key) else {
                return Ok(());
            };
            slot.config.enabled = false;
            slot.generation += 1;
            slot.state = ServerState::Disabled;
            slot.peer = None;
            slot.tools.clear();
            slot.connection.take().map(|c| (c, slot.pid.take()))
        };
        self.publish_tools();
        if let Some((conn, pid)) = old {
            self.close_connection(conn, pid).await;
        }
        Ok(())
    }

    /// Calls a tool, starting the server again first when it is down but enabled; bounded by
    /// the start timeout and the entry's `timeout`.
    pub async fn call_tool(
        &self,
        key: &str,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, McpError> {
        let (peer, name, timeout) = self.ready_peer(key).await?;
        match tokio::time::timeout(timeout, connection::call_tool(&peer, tool, arguments)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                if matches!(
                    e,
                    rmcp::service::ServiceError::TransportClosed
                        | rmcp::service::ServiceError::TransportSend(_)
                ) {
                    self.mark_dropped(key, &e.to_string());
                }
                Err(McpError::Call {
                    server: name,
                    tool: tool.to_owned(),
                    message: e.to_string(),
                })
            }
            Err(_) => Err(McpError::Timeout {
                server: name,
                what: "call",
                after: timeout,
            }),
        }
    }

    async fn ready_peer(
        &self,
        key: &str,
    ) -> Result<(Peer<RoleClient>, String, Duration), McpError> {
        let snapshot = |this: &Self| {
            let slots = lock(&this.inner.slots);
            slots.iter().find(|s| s.key == key).map(|s| {
                (
                    s.peer.clone(),
                    s.state.clone(),
                    s.config.name.clone(),
                    s.config.timeout,
                )
            })
        };
        let Some((peer, state, name, timeout)) = snapshot(self) else {
            return Err(McpError::UnknownServer {
                server: key.to_owned(),
            });
        };
        if let Some(peer) = peer.filter(|p| !p.is_transport_closed()) {
            return Ok((peer, name, timeout));
        }
        match state {
            ServerState::Disabled => return Err(McpError::Disabled { server: name }),
            ServerState::Connecting => {}
            _ => {
                {
                    let mut slots = lock(&self.inner.slots);
                    if let Some(s) = slots.iter_mut().find(|s| s.key == key) {
                        s.restarts = 0;
                    }
                }
                self.connect(key);
            }
        }
        self.wait_started(self.inner.start_timeout).await;
        match snapshot(self) {
            Some((Some(peer), _, name, timeout)) => Ok((peer, name, timeout)),
            Some((None, ServerState::Failed(m), name, _)) => Err(McpError::Unavailable {
                server: name,
                message: m,
            }),
            _ => Err(McpError::Unavailable {
                server: name,
                message: "still starting".to_owned(),
            }),
        }
    }

    /// The connection is gone (a stdio server's pipes closed, an HTTP server unreachable):
    /// `/mcp` says so and the next call connects again (DECISIONS §33.7). The tools stay
    /// offered, so that call can happen.
    fn mark_dropped(&self, key: &str, why: &str) {
        {
            let mut slots = lock(&self.inner.slots);
            if let Some(s) = slots.iter_mut().find(|s| s.key == key) {
                s.peer = None;
                if s.state == ServerState::Connected {
                    s.state = ServerState::Failed(format!(
                        "connection lost ({why}); reconnecting on the next call"
                    ));
                }
            }
        }
        self.inner.version.send_modify(|v| *v += 1);
    }

    /// Closes every server and kills their process groups (end of the run).
    pub async fn shutdown(&self) {
        let conns: Vec<(Connection, Option<u32>)> = {
            let mut slots = lock(&self.inner.slots);
            slots
                .iter_mut()
                .filter_map(|s| {
                    s.generation += 1;
                    s.peer = None;
                    s.connection.take().map(|c| (c, s.pid.take()))
                })
                .collect()
        };
        futures::future::join_all(
            conns
                .into_iter()
                .map(|(c, pid)| self.close_connection(c, pid)),
        )
        .await;
        *lock(&self.inner.on_tools) = None;
    }
}

#[async_trait::async_trait]
impl ToolCaller for McpManager {
    async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, McpError> {
        self.call_tool(server, tool, arguments).await
    }
}
