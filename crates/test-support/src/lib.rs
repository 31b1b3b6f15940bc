//! Test support for Arbor crates.
//!
//! [`fixtures`] finds the shared fixture folder beside the checkout; [`snapshot`] makes
//! snapshot values stable.
//!
//! [`MockServer`] is a tiny hand-written HTTP/1.1 server on `127.0.0.1` for provider tests. It
//! records every request (method, path, headers, body) and answers with scripted
//! [`MockResponse`]s in order: status, headers and a body sent in caller-chosen chunks with
//! optional delays, optionally cut off before its end or held open until the client hangs up.
//! One request per connection (`Connection: close`), so a dropped client connection is visible
//! to the test through [`MockServer::wait_for_client_close`].

pub mod fixtures;
pub mod mcp_http;
pub mod mcp_server;
pub mod rpc_parity;
pub mod scripts;
pub mod snapshot;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// One recorded request.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    /// Path including the query string, e.g. `/v1/messages?beta=true`.
    pub path: String,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// First header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON (`Value::Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// A piece of the scripted response body.
#[derive(Debug, Clone)]
enum Part {
    Bytes(Vec<u8>),
    Delay(Duration),
}

/// What happens after the scripted body parts were written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Finish the body properly (final chunk for chunked framing) and close.
    Complete,
    /// Close the connection without finishing the body: the client sees a broken transfer.
    CutOff,
    /// Keep the connection open until the client closes it.
    Hang,
    /// Write the last body part again and again until the client closes: a server that never
    /// stops sending (a flood).
    RepeatLast,
}

/// A scripted response.
#[derive(Debug, Clone)]
pub struct MockResponse {
    status: u16,
    headers: Vec<(String, String)>,
    parts: Vec<Part>,
    ending: Ending,
    /// Delay before the status line is written.
    header_delay: Option<Duration>,
}

impl MockResponse {
    pub fn new(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            parts: Vec::new(),
            ending: Ending::Complete,
            header_delay: None,
        }
    }

    /// `200 text/event-stream` with no body yet.
    pub fn sse() -> Self {
        Self::new(200).header("content-type", "text/event-stream")
    }

    /// A JSON body with the given status.
    pub fn json(status: u16, body: &Value) -> Self {
        Self::new(status)
            .header("content-type", "application/json")
            .body(body.to_string())
    }

    /// A plain-text body with the given status.
    pub fn text(status: u16, body: &str) -> Self {
        Self::new(status)
            .header("content-type", "text/plain")
            .body(body)
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Appends one body chunk (written with a single write).
    pub fn body(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.parts.push(Part::Bytes(bytes.into()));
        self
    }

    /// Appends `bytes` split at the given byte offsets (each piece written separately and
    /// flushed), e.g. to cut a multibyte UTF-8 character or a JSON token in half.
    pub fn body_split_at(mut self, bytes: impl AsRef<[u8]>, offsets: &[usize]) -> Self {
        let bytes = bytes.as_ref();
        let mut start = 0;
        let mut cuts: Vec<usize> = offsets
            .iter()
            .copied()
            .filter(|&o| o > 0 && o < bytes.len())
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        for cut in cuts {
            self.parts.push(Part::Bytes(bytes[start..cut].to_vec()));
            self.parts.push(Part::Delay(Duration::from_millis(2)));
            start = cut;
        }
        self.parts.push(Part::Bytes(bytes[start..].to_vec()));
        self
    }

    /// Appends `bytes` in pieces of `size` bytes with a short pause between them.
    pub fn body_in_chunks(self, bytes: impl AsRef<[u8]>, size: usize) -> Self {
        let bytes = bytes.as_ref();
        let size = size.max(1);
        let offsets: Vec<usize> = (size..bytes.len()).step_by(size).collect();
        self.body_split_at(bytes, &offsets)
    }

    /// Pauses before writing the next part.
    pub fn delay(mut self, duration: Duration) -> Self {
        self.parts.push(Part::Delay(duration));
        self
    }

    /// Delays the response headers.
    pub fn delay_headers(mut self, duration: Duration) -> Self {
        self.header_delay = Some(duration);
        self
    }

    pub fn ending(mut self, ending: Ending) -> Self {
        self.ending = ending;
        self
    }
}

/// Formats SSE events: `event: <name>` (when given) and one `data:` line per data line.
pub fn sse_events<'a>(events: impl IntoIterator<Item = (Option<&'a str>, &'a str)>) -> String {
    let mut out = String::new();
    for (name, data) in events {
        if let Some(name) = name {
            out.push_str("event: ");
            out.push_str(name);
            out.push('\n');
        }
        for line in data.split('\n') {
            out.push_str("data: ");
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

/// `data: <json>\n\n` for each value (OpenAI / Google style streams).
pub fn sse_data(values: &[Value]) -> String {
    let mut out = String::new();
    for value in values {
        out.push_str("data: ");
        out.push_str(&value.to_string());
        out.push_str("\n\n");
    }
    out
}

#[derive(Default)]
struct State {
    responses: VecDeque<MockResponse>,
    requests: Vec<RecordedRequest>,
    client_closes: usize,
}

/// The mock server; stops when dropped.
pub struct MockServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    notify: Arc<Notify>,
    task: JoinHandle<()>,
}

impl MockServer {
    /// Binds `127.0.0.1:0` and starts serving.
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State::default()));
        let notify = Arc::new(Notify::new());
        let task = {
            let state = state.clone();
            let notify = notify.clone();
            tokio::spawn(async move {
                while let Ok((socket, _)) = listener.accept().await {
                    let state = state.clone();
                    let notify = notify.clone();
                    tokio::spawn(async move {
                        serve(socket, state, notify).await;
                    });
                }
            })
        };
        Ok(Self {
            addr,
            state,
            notify,
            task,
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues a response for the next unanswered request.
    pub fn push(&self, response: MockResponse) {
        lock(&self.state).responses.push_back(response);
    }

    /// Drops the responses no request took (a script that queued more than a step needed);
    /// returns how many there were.
    pub fn discard_unused(&self) -> usize {
        let mut s = lock(&self.state);
        let n = s.responses.len();
        s.responses.clear();
        n
    }

    /// All requests recorded so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).requests.clone()
    }

    /// The only recorded request; panics (test helper) when there is not exactly one.
    pub fn single_request(&self) -> RecordedRequest {
        let requests = self.requests();
        assert_eq!(requests.len(), 1, "expected exactly one request");
        requests
            .into_iter()
            .next()
            .unwrap_or_else(|| unreachable!())
    }

    /// How many connections the client closed while the server was still writing or waiting.
    pub fn client_closes(&self) -> usize {
        lock(&self.state).client_closes
    }

    /// Waits until the client has closed at least one connection early; false on timeout.
    pub async fn wait_for_client_close(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.notify.notified();
            if self.client_closes() > 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.client_closes() > 0;
            }
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn serve(mut socket: TcpStream, state: Arc<Mutex<State>>, notify: Arc<Notify>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let response = {
        let mut st = lock(&state);
        st.requests.push(request);
        st.responses.pop_front()
    };
    let response = response.unwrap_or_else(|| {
        MockResponse::text(500, "arbor-test-support: no scripted response queued")
    });
    if write_response(&mut socket, &response).await.is_err() {
        lock(&state).client_closes += 1;
        notify.notify_waiters();
    }
}

/// Reads one request: head up to the blank line, then `content-length` bytes of body.
async fn read_request(socket: &mut TcpStream) -> Option<RecordedRequest> {
    let mut buf = Vec::with_capacity(8192);
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        let mut chunk = [0u8; 8192];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_string();
    let path = request_line.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            Some((name.trim().to_ascii_lowercase(), value.trim().to_string()))
        })
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let mut chunk = vec![0u8; (length - body.len()).min(65536)];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Some(RecordedRequest {
        method,
        path,
        headers,
        body,
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Writes the response with chunked framing. Returns Err when the client went away early.
async fn write_response(socket: &mut TcpStream, response: &MockResponse) -> std::io::Result<()> {
    if let Some(delay) = response.header_delay {
        tokio::time::sleep(delay).await;
    }
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.flush().await?;
    for part in &response.parts {
        match part {
            Part::Delay(d) => tokio::time::sleep(*d).await,
            Part::Bytes(bytes) if bytes.is_empty() => {}
            Part::Bytes(bytes) => {
                let mut frame = format!("{:x}\r\n", bytes.len()).into_bytes();
                frame.extend_from_slice(bytes);
                frame.extend_from_slice(b"\r\n");
                socket.write_all(&frame).await?;
                socket.flush().await?;
            }
        }
    }
    match response.ending {
        Ending::Complete => {
            socket.write_all(b"0\r\n\r\n").await?;
            socket.flush().await?;
            // Let the client read to the end before we close.
            let _ = socket.shutdown().await;
            Ok(())
        }
        Ending::CutOff => {
            let _ = socket.shutdown().await;
            Ok(())
        }
        Ending::RepeatLast => {
            let last = response.parts.iter().rev().find_map(|p| match p {
                Part::Bytes(bytes) if !bytes.is_empty() => Some(bytes),
                _ => None,
            });
            let Some(bytes) = last else {
                return Ok(());
            };
            let mut frame = format!("{:x}\r\n", bytes.len()).into_bytes();
            frame.extend_from_slice(bytes);
            frame.extend_from_slice(b"\r\n");
            // Ends when the client hangs up (the write fails).
            loop {
                socket.write_all(&frame).await?;
            }
        }
        Ending::Hang => {
            // Wait for the client to hang up: a read returns 0 (or fails) once it closes.
            let mut scratch = [0u8; 1024];
            loop {
                match socket.read(&mut scratch).await {
                    Ok(0) | Err(_) => {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::ConnectionAborted,
                            "client closed",
                        ))
                    }
                    Ok(_) => {}
                }
            }
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, BufReader};

    #[tokio::test]
    async fn records_and_replays() {
        let server = MockServer::start().await.unwrap();
        server.push(MockResponse::sse().body_split_at("data: é\n\n", &[7]));
        let mut socket = TcpStream::connect(server.addr).await.unwrap();
        socket
            .write_all(
                b"POST /x?y=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\nX-K: v\r\n\r\n{\"a\":1}",
            )
            .await
            .unwrap();
        let mut raw = Vec::new();
        socket.read_to_end(&mut raw).await.unwrap();
        assert!(raw.starts_with(b"HTTP/1.1 200 OK\r\n"));
        // The two-byte é was split over two chunk frames.
        assert!(find(&raw, b"7\r\ndata: \xc3\r\n3\r\n\xa9\n\n\r\n").is_some());
        let req = server.single_request();
        assert_eq!(req.method, "POST");
        assert_eq!(req.path, "/x?y=1");
        assert_eq!(req.header("x-k"), Some("v"));
        assert_eq!(req.json(), serde_json::json!({"a": 1}));
    }

    #[tokio::test]
    async fn hang_sees_client_close() {
        let server = MockServer::start().await.unwrap();
        server.push(MockResponse::sse().body("data: 1\n\n").ending(Ending::Hang));
        let mut socket = TcpStream::connect(server.addr).await.unwrap();
        socket
            .write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            .await
            .unwrap();
        let mut reader = BufReader::new(socket);
        let mut line = String::new();
        reader.read_line(&mut line).await.unwrap();
        assert_eq!(server.client_closes(), 0);
        drop(reader);
        assert!(server.wait_for_client_close(Duration::from_secs(5)).await);
    }
}
