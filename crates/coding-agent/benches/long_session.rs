//! Memory over a long print-mode session (docs/PERFORMANCE.md, "The coding agent"): one
//! `arbor -p` run with 1,000 messages, each turn a `bash` tool call (`seq 1 200`, ~900 bytes of
//! output) and a text answer, against a loopback mock model (2,000 requests). The parent samples
//! the child's `VmRSS` every 20 ms and reports it at 100, 500 and 1,000 turns and the peak
//! (`VmHWM`). A plain binary (no criterion).
//!
//! `cargo bench -p arbor-coding-agent --bench long_session` (ARBOR_BENCH_TURNS changes the turn
//! count; default 1000; ARBOR_BENCH_WRAP runs the binary under a profiler).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn sse(chunks: &[&str]) -> String {
    let mut s = String::new();
    for c in chunks {
        s.push_str("data: ");
        s.push_str(c);
        s.push_str("\n\n");
    }
    s.push_str("data: [DONE]\n\n");
    s
}

fn tool_call(n: usize) -> String {
    sse(&[
        &format!("{{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"id\":\"call_{n}\",\"type\":\"function\",\"function\":{{\"name\":\"bash\",\"arguments\":\"{{\\\"command\\\":\\\"seq 1 200\\\"}}\"}}}}]}}}}]}}"),
        "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":10}}",
    ])
}

fn text() -> String {
    sse(&[
        "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Done: the numbers are printed.\"}}]}",
        "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":10}}",
    ])
}

/// Reads one HTTP request (headers + content-length body).
fn read_request(sock: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 1 << 16];
    let mut total = Vec::new();
    loop {
        if let Some(h) = total.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&total[..h]).to_lowercase();
            let len = head
                .lines()
                .find_map(|l| {
                    l.strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            if total.len() >= h + 4 + len {
                return Some(total);
            }
        }
        let n = sock.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        total.extend_from_slice(&buf[..n]);
    }
}

/// Answers requests in order: a bash call, then text, then a bash call, …
fn serve(listener: TcpListener, served: Arc<AtomicUsize>) {
    for sock in listener.incoming() {
        let Ok(mut sock) = sock else { continue };
        let served = served.clone();
        std::thread::spawn(move || {
            while read_request(&mut sock).is_some() {
                let n = served.fetch_add(1, Ordering::SeqCst);
                let body = if n.is_multiple_of(2) {
                    tool_call(n)
                } else {
                    text()
                };
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                if sock.write_all(resp.as_bytes()).is_err() {
                    break;
                }
            }
        });
    }
}

fn status_kb(pid: u32, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

fn main() {
    let turns: usize = std::env::var("ARBOR_BENCH_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let cwd = tmp.path().join("proj");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&cwd).expect("cwd");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::fs::write(
        home.join("models.json"),
        format!("{{\"providers\":{{\"mock\":{{\"baseUrl\":\"http://127.0.0.1:{port}/v1\",\"api\":\"openai-completions\",\"apiKey\":\"k\",\"models\":[{{\"id\":\"mock-model\",\"contextWindow\":10000000,\"maxTokens\":4096}}]}}}}}}"),
    )
    .expect("models.json");
    let served = Arc::new(AtomicUsize::new(0));
    {
        let served = served.clone();
        std::thread::spawn(move || serve(listener, served));
    }
    let messages: Vec<String> = (1..=turns)
        .map(|i| format!("Turn {i}: print the numbers again."))
        .collect();
    let start = Instant::now();
    // ARBOR_BENCH_WRAP runs the binary under a profiler, e.g.
    // `valgrind --tool=massif --massif-out-file=/tmp/massif.out` (words split on spaces).
    let wrap: Vec<String> = std::env::var("ARBOR_BENCH_WRAP")
        .map(|w| w.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    let mut command = match wrap.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(env!("CARGO_BIN_EXE_arbor"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_arbor")),
    };
    let mut child = command
        .env("ARBOR_HOME", &home)
        .current_dir(&cwd)
        .args(["-p", "--model", "mock/mock-model"])
        .args(&messages)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn arbor");
    let pid = child.id();
    let marks = [turns / 10, turns / 2, turns];
    let mut at_mark: Vec<(usize, u64, Duration)> = Vec::new();
    let mut peak = 0u64;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "arbor failed: {status}");
            break;
        }
        let done_turns = served.load(Ordering::SeqCst) / 2;
        if let Some(rss) = status_kb(pid, "VmRSS:") {
            for &m in &marks {
                if done_turns >= m && !at_mark.iter().any(|(t, _, _)| *t == m) {
                    at_mark.push((m, rss, start.elapsed()));
                }
            }
        }
        if let Some(hwm) = status_kb(pid, "VmHWM:") {
            peak = peak.max(hwm);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let elapsed = start.elapsed();
    println!(
        "{turns}-turn print-mode session with bash output: {} requests in {:.1} s ({:.2} ms per turn)",
        served.load(Ordering::SeqCst),
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1000.0 / turns as f64
    );
    for (t, rss, when) in &at_mark {
        println!(
            "  RSS after {t} turns: {} (at {:.1} s)",
            mb(*rss),
            when.as_secs_f64()
        );
    }
    println!("  peak RSS (VmHWM, last sample): {}", mb(peak));
}
