//! The test MCP server (binary `arbor-mcp-test-server`): a real MCP server over stdio made
//! with `rmcp`'s server side, so the app's tests exercise the protocol end to end.
//!
//! Tools: `echo {text}` (text `echo: TEXT`), `add {a, b}` (the sum as text), `image` (a 1×1
//! PNG), `fail` (an `isError` result), `crash` (the process exits with status 3 before
//! answering), `pid` (its process id), `headers` (the `authorization` and `x-*` headers of the
//! HTTP request that carried the call, as a JSON object; `{}` over stdio).
//!
//! `arbor-mcp-test-server --http ADDR` serves the same tools over streamable HTTP instead (see
//! [`crate::mcp_http`]).
//!
//! Environment: `MCP_TEST_START_DELAY_MS` waits before serving (a slow server);
//! `MCP_TEST_PID_FILE` appends the server's pid, and the pid of a `sleep` child it starts in its
//! own process group (so tests can check that both die); `MCP_TEST_EXIT_AT_START=1` exits at
//! once with a message on stderr (a broken server).

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::ServiceExt;
use serde_json::{json, Value};

/// A 1×1 transparent PNG.
pub const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// The test server's tools (one value per MCP session).
pub struct TestServer;

fn tool(name: &str, description: &str, schema: Value) -> Result<Tool, ErrorData> {
    serde_json::from_value(json!({"name": name, "description": description, "inputSchema": schema}))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

fn result(v: Value) -> Result<CallToolResponse, ErrorData> {
    serde_json::from_value::<CallToolResult>(v)
        .map(CallToolResponse::Complete)
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let empty = json!({"type": "object", "properties": {}});
        let tools = vec![
            tool(
                "echo",
                "Echoes the text back",
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            )?,
            tool(
                "add",
                "Adds two numbers",
                json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
            )?,
            tool("image", "Returns a tiny image", empty.clone())?,
            tool("fail", "Always reports an error", empty.clone())?,
            tool("crash", "Exits the server process", empty.clone())?,
            tool("pid", "Returns the server's process id", empty.clone())?,
            tool("headers", "Returns the HTTP headers of this call", empty)?,
        ];
        serde_json::from_value(json!({"tools": tools}))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        match request.name.as_ref() {
            "echo" => {
                let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
                result(json!({"content": [{"type": "text", "text": format!("echo: {text}")}]}))
            }
            "add" => {
                let n = |k: &str| args.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                result(
                    json!({"content": [{"type": "text", "text": format!("{}", n("a") + n("b"))}]}),
                )
            }
            "image" => result(json!({"content": [
                {"type": "text", "text": "one pixel"},
                {"type": "image", "data": PNG_1X1, "mimeType": "image/png"}
            ]})),
            "fail" => result(
                json!({"content": [{"type": "text", "text": "the tool failed on purpose"}], "isError": true}),
            ),
            "crash" => {
                eprintln!("test server: crashing on request");
                std::process::exit(3)
            }
            "pid" => result(
                json!({"content": [{"type": "text", "text": std::process::id().to_string()}]}),
            ),
            "headers" => {
                // Sorted: the order headers arrive in is the client's business.
                let mut seen = std::collections::BTreeMap::new();
                if let Some(parts) = context.extensions.get::<hyper::http::request::Parts>() {
                    for (name, value) in &parts.headers {
                        let name = name.as_str();
                        if name == "authorization" || name.starts_with("x-") {
                            seen.insert(
                                name.to_owned(),
                                String::from_utf8_lossy(value.as_bytes()).into_owned(),
                            );
                        }
                    }
                }
                let text = serde_json::to_string(&seen)
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                result(json!({"content": [{"type": "text", "text": text}]}))
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown tool {other}"),
                None,
            )),
        }
    }
}

pub(crate) fn record_pid(pid: u32) {
    if let Ok(path) = std::env::var("MCP_TEST_PID_FILE") {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{pid}");
        }
    }
}

/// The binary's `main` over stdio (`--http ADDR` goes to [`crate::mcp_http::main`]).
pub fn main() -> ExitCode {
    if std::env::var("MCP_TEST_EXIT_AT_START").as_deref() == Ok("1") {
        eprintln!("test server: refusing to start (MCP_TEST_EXIT_AT_START)");
        return ExitCode::from(2);
    }
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return ExitCode::FAILURE;
    };
    runtime.block_on(async {
        record_pid(std::process::id());
        // A grandchild in the server's process group: it must die with the server's group.
        let sleeper = if std::env::var("MCP_TEST_PID_FILE").is_ok() {
            let child = tokio::process::Command::new("sleep")
                .arg("1000")
                .spawn()
                .ok();
            if let Some(pid) = child.as_ref().and_then(tokio::process::Child::id) {
                record_pid(pid);
            }
            child
        } else {
            None
        };
        if let Some(ms) = std::env::var("MCP_TEST_START_DELAY_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let served = match TestServer.serve(rmcp::transport::stdio()).await {
            Ok(service) => service.waiting().await.is_ok(),
            Err(e) => {
                eprintln!("test server: {e}");
                false
            }
        };
        drop(sleeper);
        if served {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    })
}

/// Where the built server binary is: beside the test (or benchmark) binary's `deps/` folder,
/// built on first use with the same cargo and profile (once per process).
pub fn binary() -> std::path::PathBuf {
    static BUILT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap_or_default();
            // target/debug/deps/all-HASH → target/debug
            let dir = exe
                .parent()
                .and_then(std::path::Path::parent)
                .map(std::path::Path::to_path_buf)
                .unwrap_or_default();
            let bin = dir.join("arbor-mcp-test-server");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
            let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
            // A benchmark runs from target/release: build the server there too.
            let release = dir.file_name().is_some_and(|n| n == "release");
            let status = std::process::Command::new(cargo)
                .args([
                    "build",
                    "--quiet",
                    "--manifest-path",
                    manifest,
                    "--bin",
                    "arbor-mcp-test-server",
                ])
                .args(release.then_some("--release"))
                .env("CARGO_TARGET_DIR", dir.parent().unwrap_or(&dir))
                .status();
            if !matches!(status, Ok(s) if s.success()) && !bin.exists() {
                panic!("could not build arbor-mcp-test-server ({status:?})");
            }
            bin
        })
        .clone()
}
