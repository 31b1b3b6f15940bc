//! Agent start-up and tool benchmarks (docs/PERFORMANCE.md, "The coding agent"):
//! `arbor --version`; spawn → first request byte in print mode; resuming a large session with
//! `-c -p`; the `grep` tool against `rg` over this repository. A plain binary (no criterion):
//! each figure is the median of several runs of the real `arbor` binary.
//!
//! `cargo bench -p arbor-coding-agent --bench agent_startup` (set ARBOR_BENCH_RESUME_MB to
//! change the generated session's size, default 100, or ARBOR_BENCH_RESUME_FILE to resume a copy
//! of an existing file such as `gen_big.py`'s).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

const SSE: &str = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\ndata: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// Accepts one request: returns when its first byte arrived, answers with a tiny stream.
fn serve_one(listener: &TcpListener) -> Instant {
    let (mut sock, _) = listener.accept().expect("accept");
    let mut buf = [0u8; 65536];
    let n = sock.read(&mut buf).expect("read");
    let first = Instant::now();
    let mut total = buf[..n].to_vec();
    // Read the rest of the request (headers + body) before answering.
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
                break;
            }
        }
        let n = sock.read(&mut buf).expect("read");
        if n == 0 {
            break;
        }
        total.extend_from_slice(&buf[..n]);
    }
    let resp = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{SSE}",
        SSE.len()
    );
    let _ = sock.write_all(resp.as_bytes());
    first
}

fn home_with_mock(dir: &Path, port: u16) {
    let models = format!(
        "{{\"providers\":{{\"mock\":{{\"baseUrl\":\"http://127.0.0.1:{port}/v1\",\"api\":\"openai-completions\",\"apiKey\":\"k\",\"models\":[{{\"id\":\"mock-model\",\"contextWindow\":10000000,\"maxTokens\":4096}}]}}}}}}"
    );
    std::fs::write(dir.join("models.json"), models).expect("models.json");
    std::fs::write(
        dir.join("settings.json"),
        "{\"compaction\":{\"enabled\":false}}",
    )
    .expect("settings");
}

fn arbor(home: &Path, cwd: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_arbor"));
    c.env("ARBOR_HOME", home)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

fn main() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let cwd = tmp.path().join("proj");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&cwd).expect("cwd");

    // 1. --version
    let runs: Vec<Duration> = (0..30)
        .map(|_| {
            let t = Instant::now();
            arbor(&home, &cwd).arg("--version").status().expect("run");
            t.elapsed()
        })
        .collect();
    println!("arbor --version: median {} over 30 runs", ms(median(runs)));

    // 2. spawn → first request byte, print mode, no session
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    home_with_mock(&home, port);
    let mut firsts = Vec::new();
    let mut totals = Vec::new();
    for _ in 0..15 {
        let start = Instant::now();
        let mut child = arbor(&home, &cwd)
            .args(["-p", "--no-session", "--model", "mock/mock-model", "hi"])
            .spawn()
            .expect("spawn");
        let first = serve_one(&listener);
        child.wait().expect("wait");
        firsts.push(first - start);
        totals.push(start.elapsed());
    }
    println!(
        "print mode, spawn to first request byte: median {} (whole run {}) over 15 runs",
        ms(median(firsts)),
        ms(median(totals))
    );

    // 3. -c -p on a large session
    let mb: usize = std::env::var("ARBOR_BENCH_RESUME_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let folder = home.join("sessions").join(format!(
        "--{}--",
        cwd.display()
            .to_string()
            .trim_start_matches('/')
            .replace('/', "-")
    ));
    std::fs::create_dir_all(&folder).expect("folder");
    let file = folder.join("2026-12-01T00-00-00-000Z_01a22c74-0000-7000-8000-000000000001.jsonl");
    if let Ok(src) = std::env::var("ARBOR_BENCH_RESUME_FILE") {
        // A real-shaped session (shared/tools/gen_big.py), its header's cwd pointed here.
        let text = std::fs::read_to_string(&src).expect("ARBOR_BENCH_RESUME_FILE");
        let (head, rest) = text.split_once('\n').expect("header line");
        let mut header: serde_json::Value = serde_json::from_str(head).expect("header");
        header["cwd"] = serde_json::json!(cwd.display().to_string());
        let mut w = std::io::BufWriter::new(std::fs::File::create(&file).expect("create"));
        writeln!(w, "{header}").expect("w");
        w.write_all(rest.as_bytes()).expect("w");
    } else {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&file).expect("create"));
        writeln!(w, "{{\"type\":\"session\",\"version\":3,\"id\":\"01a22c74-0000-7000-8000-000000000001\",\"timestamp\":\"2026-12-01T00:00:00.000Z\",\"cwd\":\"{}\"}}", cwd.display()).expect("w");
        let filler = "x".repeat(2000);
        let mut parent = "null".to_owned();
        let mut i = 0u64;
        let mut written = 0usize;
        while written < mb * 1024 * 1024 {
            let id = format!("{i:08x}");
            let line = if i.is_multiple_of(2) {
                format!("{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-12-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"q{i} {filler}\"}}],\"timestamp\":1}}}}")
            } else {
                format!("{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-12-01T00:00:00.000Z\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"a{i} {filler}\"}}],\"api\":\"openai-completions\",\"provider\":\"mock\",\"model\":\"mock-model\",\"usage\":{{\"input\":1,\"output\":1,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":2,\"cost\":{{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"total\":0}}}},\"stopReason\":\"stop\",\"timestamp\":1}}}}")
            };
            writeln!(w, "{line}").expect("w");
            written += line.len() + 1;
            parent = format!("\"{id}\"");
            i += 1;
        }
    }
    let size = std::fs::metadata(&file).expect("meta").len();
    let mut walls = Vec::new();
    let mut rss = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        let child = Command::new("/usr/bin/time")
            .arg("-f")
            .arg("%M")
            .arg(env!("CARGO_BIN_EXE_arbor"))
            .args(["-c", "-p", "--model", "mock/mock-model", "next"])
            .env("ARBOR_HOME", &home)
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        serve_one(&listener);
        let out = child.wait_with_output().expect("wait");
        walls.push(start.elapsed());
        let kb: u64 = String::from_utf8_lossy(&out.stderr)
            .trim()
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or(0);
        rss.push(kb);
    }
    rss.sort();
    println!(
        "-c -p on a {:.1} MB session: median {} wall, peak RSS {:.1} MB",
        size as f64 / 1048576.0,
        ms(median(walls)),
        rss[rss.len() / 2] as f64 / 1024.0
    );

    // 4. grep tool vs rg over this repository
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let repo = repo.canonicalize().expect("repo");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    let env = arbor_tools::ToolEnv::new(repo.clone(), Default::default());
    let ours: Vec<Duration> = (0..10)
        .map(|_| {
            let t = Instant::now();
            rt.block_on(arbor_tools::run(
                "grep",
                &env,
                serde_json::json!({"pattern": "fn [a-z_]+_json", "limit": 1000}),
                tokio_util::sync::CancellationToken::new(),
                None,
            ))
            .expect("grep");
            t.elapsed()
        })
        .collect();
    println!("grep tool over the repository: median {}", ms(median(ours)));
    if Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok()
    {
        let theirs: Vec<Duration> = (0..10)
            .map(|_| {
                let t = Instant::now();
                Command::new("rg")
                    .args([
                        "--no-config",
                        "--json",
                        "--line-number",
                        "--color=never",
                        "--hidden",
                        "--",
                        "fn [a-z_]+_json",
                        ".",
                    ])
                    .current_dir(&repo)
                    .stdout(Stdio::null())
                    .status()
                    .expect("rg");
                t.elapsed()
            })
            .collect();
        println!(
            "rg --json (pi's invocation, before pi's own parsing): median {}",
            ms(median(theirs))
        );
    }
}
