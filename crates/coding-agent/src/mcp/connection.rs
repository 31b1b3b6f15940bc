//! One live connection to an MCP server: for a stdio server, the child process Arbor started
//! (in its own process group, so wrappers such as `npx` take their children with them:
//! DECISIONS §33.6), the rmcp client session over its stdin/stdout and the tail of its stderr
//! for diagnostics; for a streamable-HTTP server, the rmcp session over Arbor's HTTP client
//! ([`super::http_client`]).

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, Implementation, InitializeRequestParams,
};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{Map, Value};
use tokio::io::AsyncBufReadExt;
use tokio::process::Child;

use super::config::{ServerConfig, Transport};
use super::http_client::{header_map, McpHttpClient};
use super::McpError;

/// How much of a server's stderr is kept for the report of a failure.
const STDERR_TAIL: usize = 2048;

/// A tool as the server lists it (its JSON, kept whole).
#[derive(Debug, Clone)]
pub struct RemoteTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// The stderr tail of a stdio server, shared with the task that reads it.
#[derive(Debug, Clone, Default)]
pub struct StderrTail(Arc<Mutex<String>>);

impl StderrTail {
    fn push(&self, line: &str) {
        let mut s = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        s.push_str(line);
        s.push('\n');
        if s.len() > STDERR_TAIL {
            let mut cut = s.len() - STDERR_TAIL;
            while !s.is_char_boundary(cut) {
                cut += 1;
            }
            s.drain(..cut);
        }
    }

    pub fn text(&self) -> String {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .trim_end()
            .to_owned()
    }
}

/// A connected server.
pub struct Connection {
    service: RunningService<RoleClient, InitializeRequestParams>,
    child: Option<Child>,
    pub stderr: StderrTail,
    pub tools: Vec<RemoteTool>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("pid", &self.child.as_ref().and_then(Child::id))
            .field("tools", &self.tools.len())
            .finish()
    }
}

fn client_info() -> InitializeRequestParams {
    InitializeRequestParams::new(
        ClientCapabilities::default(),
        Implementation::new("arbor", env!("CARGO_PKG_VERSION")),
    )
}

impl Connection {
    /// Starts the server and completes the MCP handshake and the tool listing, all within
    /// `timeout`. On failure the child is killed before returning.
    pub async fn open(
        config: &ServerConfig,
        cwd: &Path,
        timeout: Duration,
    ) -> Result<Self, McpError> {
        let name = config.name.clone();
        match &config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd: server_cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args)
                    .envs(env.iter().map(|(k, v)| (k, v)))
                    .current_dir(
                        server_cwd
                            .as_ref()
                            .map_or_else(|| cwd.to_path_buf(), |c| cwd.join(c)),
                    )
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .kill_on_drop(true)
                    .process_group(0);
                let mut child = cmd.spawn().map_err(|source| McpError::Spawn {
                    server: name.clone(),
                    command: command.clone(),
                    source,
                })?;
                // Arbor's exit ends the group, however the run ended (DECISIONS §28.3).
                if let Some(pid) = child.id() {
                    arbor_tools::process::registry::track(pid);
                }
                let stderr = StderrTail::default();
                if let Some(err) = child.stderr.take() {
                    let tail = stderr.clone();
                    tokio::spawn(async move {
                        let mut lines = tokio::io::BufReader::new(err).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            tail.push(&line);
                        }
                    });
                }
                let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                    kill_child(&mut child).await;
                    return Err(McpError::Handshake {
                        server: name,
                        message: "the child process has no stdin/stdout".to_owned(),
                    });
                };
                let (service, tools) = match handshake(&name, (stdout, stdin), timeout).await {
                    Ok(v) => v,
                    Err(e) => {
                        kill_child(&mut child).await;
                        return Err(match e {
                            McpError::Handshake { server, message } => McpError::Handshake {
                                server,
                                message: with_stderr(message, &stderr),
                            },
                            other => other,
                        });
                    }
                };
                Ok(Connection {
                    service,
                    child: Some(child),
                    stderr,
                    tools: tools.into_iter().map(remote_tool).collect(),
                })
            }
            Transport::Http { url, headers } => {
                let headers = header_map(headers).map_err(|e| McpError::Handshake {
                    server: name.clone(),
                    message: e.to_string(),
                })?;
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(headers);
                let transport =
                    StreamableHttpClientTransport::with_client(McpHttpClient::shared(), config);
                let (service, tools) = handshake(&name, transport, timeout).await?;
                Ok(Connection {
                    service,
                    child: None,
                    stderr: StderrTail::default(),
                    tools: tools.into_iter().map(remote_tool).collect(),
                })
            }
        }
    }

    /// The client handle for calls (cheap to clone; calls do not hold the connection).
    pub fn peer(&self) -> Peer<RoleClient> {
        self.service.peer().clone()
    }

    /// The server process id (stdio servers).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// Takes the child out so a watcher can wait for it to exit.
    pub fn take_child(&mut self) -> Option<Child> {
        self.child.take()
    }

    /// Ends the MCP session (closing the server's stdin); the caller ends the process group.
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(1), self.service.close()).await;
        if let Some(child) = self.child.as_mut() {
            kill_child(child).await;
        }
    }
}

/// Calls one tool; the result as JSON (`content`, `isError`, `structuredContent`).
pub async fn call_tool(
    peer: &Peer<RoleClient>,
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<Value, rmcp::service::ServiceError> {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    params.arguments = Some(arguments);
    let result = peer.call_tool(params).await?;
    Ok(serde_json::to_value(&result).unwrap_or(Value::Null))
}

type Started = (
    RunningService<RoleClient, InitializeRequestParams>,
    Vec<rmcp::model::Tool>,
);

/// The MCP handshake and the tool listing over any transport, within `timeout`.
async fn handshake<T, E, A>(
    server: &str,
    transport: T,
    timeout: Duration,
) -> Result<Started, McpError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let started = tokio::time::timeout(timeout, async {
        let service = client_info()
            .serve(transport)
            .await
            .map_err(|e| e.to_string())?;
        let tools = service.list_all_tools().await.map_err(|e| e.to_string())?;
        Ok::<_, String>((service, tools))
    })
    .await;
    match started {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(message)) => Err(McpError::Handshake {
            server: server.to_owned(),
            message,
        }),
        Err(_) => Err(McpError::Timeout {
            server: server.to_owned(),
            what: "start",
            after: timeout,
        }),
    }
}

fn remote_tool(tool: rmcp::model::Tool) -> RemoteTool {
    let json = serde_json::to_value(&tool).unwrap_or(Value::Null);
    let schema = match json.get("inputSchema") {
        Some(Value::Object(o)) => Value::Object(o.clone()),
        _ => serde_json::json!({"type": "object", "properties": {}}),
    };
    RemoteTool {
        name: tool.name.to_string(),
        description: tool.description.as_deref().unwrap_or_default().to_owned(),
        input_schema: schema,
    }
}

fn with_stderr(message: String, stderr: &StderrTail) -> String {
    let tail = stderr.text();
    if tail.is_empty() {
        message
    } else {
        format!("{message}\nstderr:\n{tail}")
    }
}

async fn kill_child(child: &mut Child) {
    if let Some(pgid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
        arbor_tools::process::group::end_detached(pgid);
    }
    let _ = child.kill().await;
}
