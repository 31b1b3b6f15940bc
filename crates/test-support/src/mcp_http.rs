//! The test MCP server over streamable HTTP: `arbor-mcp-test-server --http ADDR` serves the
//! tools of [`crate::mcp_server`] with rmcp's streamable-HTTP server on hyper, on any path of
//! `http://ADDR` (tests use `/mcp`). It prints `listening on http://HOST:PORT` on its first
//! stdout line once it accepts connections (`ADDR` may name port 0), records its pid in
//! `MCP_TEST_PID_FILE` like the stdio server, and runs until it is killed.
//!
//! [`HttpServer`] starts it as a child process of a test, so a test can kill it and start it
//! again on the same port (a server restart as a client sees one).

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::io::AsyncBufReadExt;

use crate::mcp_server::{record_pid, TestServer};

/// The binary's `main` in HTTP mode.
pub fn main(addr: &str) -> ExitCode {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return ExitCode::FAILURE;
    };
    match runtime.block_on(serve(addr)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("test server: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(addr: &str) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    record_pid(std::process::id());
    let service = StreamableHttpService::new(
        || Ok(TestServer),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let mut stdout = std::io::stdout();
    writeln!(stdout, "listening on http://{}", listener.local_addr()?)?;
    stdout.flush()?;
    loop {
        let (stream, _) = listener.accept().await?;
        let service = TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// A running HTTP test server (a child process, killed on drop).
pub struct HttpServer {
    child: tokio::process::Child,
    /// `127.0.0.1:PORT`.
    pub addr: SocketAddr,
}

/// Why the HTTP test server did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot start the HTTP test server: {0}")]
    Spawn(#[from] std::io::Error),
    #[error("the HTTP test server did not say where it listens (first line {0:?})")]
    NoAddress(String),
}

impl HttpServer {
    /// Starts the server on `addr` (`127.0.0.1:0` for any free port); `env` is added to its
    /// environment. Returns once it accepts connections.
    pub async fn start(addr: &str, env: &[(&str, &str)]) -> Result<Self, StartError> {
        let mut child = tokio::process::Command::new(crate::mcp_server::binary())
            .args(["--http", addr])
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| StartError::Spawn(std::io::Error::other("the child has no stdout")))?;
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let first = lines.next_line().await?.unwrap_or_default();
        let addr = first
            .strip_prefix("listening on http://")
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| StartError::NoAddress(first.clone()))?;
        Ok(HttpServer { child, addr })
    }

    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The server's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Kills the server and waits for it to exit (its port is free again afterwards).
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}
