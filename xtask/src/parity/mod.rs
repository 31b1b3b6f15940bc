//! `cargo xtask parity`: differential tests of Arbor's providers against pi-ai 1.6.0.
//!
//! * `requests N [SEED]` — N seeded random contexts (see [`gen`]) are sent by pi-ai's
//!   `streamSimple` (through `xtask/parity/driver.mjs`, which logs them on a 127.0.0.1 server)
//!   and built by Arbor's `stream_simple` path; the two bodies are compared as JSON values, and
//!   the URLs too.
//! * `streams N [SEED]` — N seeded random provider replies (see [`streams`]) are served to both
//!   (pi through the driver's server, Arbor through `arbor_test_support::MockServer`), and the
//!   event sequences and final messages are compared.
//!
//! * `sessions N [SEED]` — N seeded random sessions of 2–3 requests on Anthropic models with
//!   message threads (see [`sessions`]): both run the same turns against scripted replies with
//!   message ids, and the whole sequence of request bodies (later ones continue the thread) and
//!   each turn's outcome are compared.
//!
//! `--golden FILE K` additionally writes the first K agreeing cases as golden fixtures that
//! `cargo test -p arbor-ai` replays without node. Differences are grouped by the first JSON
//! path that differs; `--show N` prints N full examples per group.

pub mod compare;
pub mod gen;
pub mod sessions;
pub mod streams;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use arbor_ai::models::ModelRegistry;
use arbor_ai::{Context, Model, SimpleStreamOptions};
use futures::StreamExt;
use rand::SeedableRng;
use serde_json::{json, Value};

use compare::{first_difference, normalize_events};

/// Longest fixture line written by `--golden` (bytes).
const GOLDEN_LINE_LIMIT: usize = 8_000;

struct Args {
    mode: String,
    count: usize,
    seed: u64,
    golden: Option<(PathBuf, usize)>,
    show: usize,
    /// Prints case `id` in full (inputs, pi's and Arbor's output) instead of the summary.
    dump: Option<String>,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mode = args.first().cloned().ok_or(
        "usage: cargo xtask parity requests|streams|sessions N [SEED] [--golden FILE K] [--show N]",
    )?;
    if !["requests", "streams", "sessions"].contains(&mode.as_str()) {
        return Err(format!(
            "unknown parity mode {mode:?}: expected requests, streams or sessions"
        ));
    }
    let mut positional = Vec::new();
    let mut golden = None;
    let mut show = 1;
    let mut dump = None;
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--golden" => {
                let file = args.get(i + 1).ok_or("--golden needs FILE K")?;
                let k = args
                    .get(i + 2)
                    .and_then(|k| k.parse().ok())
                    .ok_or("--golden needs FILE K (K a number)")?;
                golden = Some((PathBuf::from(file), k));
                i += 3;
            }
            "--dump" => {
                dump = Some(args.get(i + 1).ok_or("--dump needs a case id")?.clone());
                i += 2;
            }
            "--show" => {
                show = args
                    .get(i + 1)
                    .and_then(|k| k.parse().ok())
                    .ok_or("--show needs a number")?;
                i += 2;
            }
            other => {
                positional.push(other.to_string());
                i += 1;
            }
        }
    }
    let count = positional.first().map_or(Ok(100), |s| {
        s.parse()
            .map_err(|_| format!("N must be a number, got {s:?}"))
    })?;
    let seed = positional.get(1).map_or(Ok(1), |s| {
        s.parse()
            .map_err(|_| format!("SEED must be a number, got {s:?}"))
    })?;
    Ok(Args {
        mode,
        count,
        seed,
        golden,
        show,
        dump,
    })
}

pub fn run(args: &[String]) -> ExitCode {
    let args = match parse_args(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match args.mode.as_str() {
        "requests" => requests(&args),
        "sessions" => runtime.block_on(sessions_mode(&args)),
        _ => runtime.block_on(streams_mode(&args)),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("parity: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Catalogue models of the four APIs, in pi's JSON shape.
pub fn catalogue_models() -> Result<Vec<Value>, String> {
    let registry = ModelRegistry::builtin().map_err(|e| format!("built-in catalogue: {e}"))?;
    let apis = [
        "anthropic-messages",
        "openai-completions",
        "openai-responses",
        "google-generative-ai",
    ];
    registry
        .models()
        .filter(|m| apis.contains(&m.api.as_str()))
        .map(|m| serde_json::to_value(m).map_err(|e| format!("model {}: {e}", m.id)))
        .collect()
}

fn driver_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("parity/driver.mjs")
}

/// Runs the node driver over `cases` (JSON lines) and returns its output lines by case id.
fn run_driver(cases: &[Value]) -> Result<BTreeMap<String, Value>, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
    let file = dir.path().join("cases.jsonl");
    let mut f = std::fs::File::create(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    for c in cases {
        writeln!(f, "{c}").map_err(|e| format!("{}: {e}", file.display()))?;
    }
    drop(f);
    let output = Command::new("node")
        .arg(driver_path())
        .arg(&file)
        .output()
        .map_err(|e| format!("cannot run node: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "driver failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let mut out = BTreeMap::new();
    for (n, line) in String::from_utf8_lossy(&output.stdout).lines().enumerate() {
        let v: Value =
            serde_json::from_str(line).map_err(|e| format!("driver output line {}: {e}", n + 1))?;
        out.insert(v["id"].as_str().unwrap_or_default().to_string(), v);
    }
    Ok(out)
}

/// pi's simple-stream options (JSON) as Arbor's.
pub fn simple_options(options: &Value) -> Result<SimpleStreamOptions, String> {
    SimpleStreamOptions::from_pi_json(options).map_err(|e| e.to_string())
}

/// Headers compared between pi and Arbor: the per-provider ones (DECISIONS §26.13) and how
/// the credential is sent. Identity headers differ on purpose (§26.2) and are not compared;
/// nor is `x-opencode-session`, which pi adds in its model registry, above the `streamSimple`
/// the driver calls (§26.13).
const COMPARED_HEADERS: [&str; 6] = [
    "x-initiator",
    "openai-intent",
    "copilot-vision-request",
    "authorization",
    "x-api-key",
    "x-goog-api-key",
];

/// The compared headers of a request, names lowercased.
fn compared_headers<'a>(
    headers: impl Iterator<Item = (&'a str, &'a str)>,
) -> BTreeMap<String, String> {
    headers
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
        .filter(|(k, _)| COMPARED_HEADERS.contains(&k.as_str()))
        .collect()
}

/// The compared headers Arbor would send for a case.
pub fn arbor_headers(case: &gen::RequestCase) -> Result<BTreeMap<String, String>, String> {
    let model: Model =
        serde_json::from_value(case.model.clone()).map_err(|e| format!("model: {e}"))?;
    let context: Context =
        serde_json::from_value(case.context.clone()).map_err(|e| format!("context: {e}"))?;
    let options = simple_options(&case.options)?;
    let request = arbor_ai::providers::simple::build_simple_request(&model, &context, options)
        .map_err(|e| e.to_string())?;
    Ok(compared_headers(
        request
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str())),
    ))
}

/// The body and URL Arbor would send for a case.
pub fn arbor_request(case: &gen::RequestCase) -> Result<(String, Value), String> {
    let model: Model =
        serde_json::from_value(case.model.clone()).map_err(|e| format!("model: {e}"))?;
    let context: Context =
        serde_json::from_value(case.context.clone()).map_err(|e| format!("context: {e}"))?;
    let options = simple_options(&case.options)?;
    let request = arbor_ai::providers::simple::build_simple_request(&model, &context, options)
        .map_err(|e| e.to_string())?;
    Ok((request.url, request.body))
}

fn requests(args: &Args) -> Result<bool, String> {
    let catalogue = catalogue_models()?;
    let cases: Vec<gen::RequestCase> = (0..args.count)
        .map(|i| gen::request_case(args.seed, i, &catalogue))
        .collect();
    let reply = json!({"status": 400, "headers": {"content-type": "application/json"}, "body": "{\"error\":{\"message\":\"parity\"}}"});
    let lines: Vec<Value> = cases
        .iter()
        .map(|c| json!({"id": c.id, "model": c.model, "context": c.context, "options": c.options, "reply": reply}))
        .collect();
    let pi = run_driver(&lines)?;
    let mut groups: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut agreed = Vec::new();
    for case in &cases {
        let Some(out) = pi.get(&case.id) else {
            groups
                .entry("pi produced no output".into())
                .or_default()
                .push((case.id.clone(), String::new()));
            continue;
        };
        let pi_request = out["requests"].get(0).cloned();
        let arbor = arbor_request(case);
        if args.dump.as_deref() == Some(case.id.as_str()) {
            println!(
                "case: {}",
                json!({"model": case.model, "context": case.context, "options": case.options})
            );
            println!("pi: {out}");
            println!(
                "arbor: {}",
                match &arbor {
                    Ok((u, b)) => json!({"url": u, "body": b}),
                    Err(e) => json!({"error": e}),
                }
            );
        }
        let key_detail = match (&pi_request, &arbor) {
            (None, Err(a)) => {
                let pi_error = out["events"]
                    .as_array()
                    .and_then(|e| e.last())
                    .map(|e| e["error"]["errorMessage"].clone())
                    .unwrap_or_default();
                if pi_error.as_str() == Some(a.as_str()) {
                    None
                } else {
                    Some((
                        "setup error differs".to_string(),
                        format!("pi: {pi_error}\narbor: {a}"),
                    ))
                }
            }
            (None, Ok(_)) => {
                let pi_error = out["events"]
                    .as_array()
                    .and_then(|e| e.last())
                    .map(|e| e["error"]["errorMessage"].clone())
                    .unwrap_or_default();
                Some((
                    "pi sent nothing, arbor sent".to_string(),
                    format!(
                        "pi: {pi_error} {}",
                        out.get("thrown").cloned().unwrap_or_default()
                    ),
                ))
            }
            (Some(_), Err(e)) => Some(("arbor failed, pi sent".to_string(), e.clone())),
            (Some(p), Ok((url, body))) => {
                let pi_url = p["url"].as_str().unwrap_or_default();
                let pi_headers = compared_headers(
                    p["headers"]
                        .as_object()
                        .into_iter()
                        .flatten()
                        .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?))),
                );
                let arbor_headers = arbor_headers(case).unwrap_or_default();
                let header_difference = COMPARED_HEADERS.iter().find_map(|name| {
                    let (a, b) = (pi_headers.get(*name), arbor_headers.get(*name));
                    (a != b).then(|| {
                        (
                            format!(
                                "{} header {name}",
                                case.model["api"].as_str().unwrap_or("?")
                            ),
                            format!("pi: {a:?}\narbor: {b:?}"),
                        )
                    })
                });
                if pi_url != url {
                    Some(("url".to_string(), format!("pi: {pi_url}\narbor: {url}")))
                } else if let Some(difference) = header_difference {
                    Some(difference)
                } else {
                    first_difference(&p["body"], body).map(|(path, detail)| {
                        // Arbor's local-server profile for `ollama` models (DECISIONS §26.9):
                        // labelled when it is the only difference.
                        let local_profile = case.model["provider"] == "ollama"
                            && first_difference(&local_profile(&p["body"], body), body).is_none();
                        (
                            format!(
                                "{} body {}{path}",
                                case.model["api"].as_str().unwrap_or("?"),
                                if local_profile {
                                    "explained by DECISIONS §26.9 (local-server profile): "
                                } else {
                                    ""
                                }
                            ),
                            detail,
                        )
                    })
                }
            }
        };
        match key_detail {
            None => agreed.push((case, pi_request)),
            Some((key, detail)) => groups
                .entry(key)
                .or_default()
                .push((case.id.clone(), detail)),
        }
    }
    report(args, cases.len(), agreed.len(), &groups);
    if let Some((file, k)) = &args.golden {
        let mut f = std::fs::File::create(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let mut written = 0;
        for (case, request) in &agreed {
            let expected = request
                .as_ref()
                .map(|r| json!({"url": r["url"], "body": r["body"]}));
            let line = json!({"id": case.id, "model": case.model, "context": case.context, "options": case.options, "expected": expected}).to_string();
            // Keep the fixtures compact: huge prompts are exercised by the live run only.
            if written == *k || line.len() > GOLDEN_LINE_LIMIT {
                continue;
            }
            writeln!(f, "{line}").map_err(|e| format!("{}: {e}", file.display()))?;
            written += 1;
        }
        println!("wrote {written} golden request cases to {}", file.display());
    }
    Ok(groups.is_empty())
}

/// pi's Chat Completions body as Arbor's local-server profile sends it (DECISIONS §26.9): no
/// `store`, and `max_tokens` instead of `max_completion_tokens`, where Arbor's body has them so.
fn local_profile(pi: &Value, arbor: &Value) -> Value {
    let mut body = pi.clone();
    if let Some(map) = body.as_object_mut() {
        if arbor.get("store").is_none() {
            map.remove("store");
        }
        if arbor.get("max_completion_tokens").is_none() && arbor.get("max_tokens").is_some() {
            if let Some(max) = map.shift_remove("max_completion_tokens") {
                map.insert("max_tokens".into(), max);
            }
        }
    }
    body
}

/// Group key: array indices and generated property names folded so one cause is one group.
fn group_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut chars = key.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '[' {
            let mut digits = false;
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
                digits = true;
            }
            if digits {
                out.push('*');
            }
        }
    }
    out
}

fn report(
    args: &Args,
    total: usize,
    agreed: usize,
    groups: &BTreeMap<String, Vec<(String, String)>>,
) {
    println!(
        "{} {} cases (seed {}): {} agree, {} differ",
        args.mode,
        total,
        args.seed,
        agreed,
        total - agreed
    );
    let mut folded: BTreeMap<String, Vec<&(String, String)>> = BTreeMap::new();
    for (key, items) in groups {
        folded
            .entry(group_key(key))
            .or_default()
            .extend(items.iter());
    }
    for (key, items) in &folded {
        println!("  {:5}  {key}", items.len());
        for (id, detail) in items.iter().take(args.show) {
            println!("         e.g. {id}:");
            for line in detail.lines().take(12) {
                let line: String = line.chars().take(400).collect();
                println!("           {line}");
            }
        }
    }
}

/// One stream case: a model, a fixed context and a scripted reply.
pub struct StreamCase {
    pub id: String,
    pub model: Value,
    pub context: Value,
    pub options: Value,
    pub reply: streams::Reply,
}

pub fn stream_case(seed: u64, index: usize, catalogue: &[Value], base_url: &str) -> StreamCase {
    use rand::seq::SliceRandom;
    let mut rng =
        rand::rngs::StdRng::seed_from_u64(seed.wrapping_mul(7_919).wrapping_add(index as u64));
    let mut model = catalogue.choose(&mut rng).cloned().unwrap_or_default();
    let original = model["baseUrl"].as_str().unwrap_or_default().to_string();
    let path = original
        .splitn(4, '/')
        .nth(3)
        .map(|p| format!("/{p}"))
        .unwrap_or_default();
    model["baseUrl"] = Value::String(format!("{base_url}{path}"));
    let api = model["api"].as_str().unwrap_or_default().to_string();
    let id = model["id"].as_str().unwrap_or_default().to_string();
    let reply = streams::reply(&mut rng, &api, &id);
    let tools = json!([
        {"name": "read", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
        {"name": "bash", "description": "Run a command", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
        {"name": "apply", "description": "Apply a patch", "parameters": {"type": "object", "properties": {"patch": {"type": "string"}}, "required": ["patch"]},
         "constrainedSampling": {"type": "grammar", "variants": {"openai_lark": "start: /.+/s"}}}
    ]);
    StreamCase {
        id: format!("stream-{seed}-{index}"),
        model,
        context: json!({"systemPrompt": "Be brief.", "messages": [{"role": "user", "content": "hi", "timestamp": 1}], "tools": tools}),
        options: json!({"apiKey": "sk-parity-test"}),
        reply,
    }
}

/// Arbor's normalized events for a stream case served by `server`.
async fn arbor_events(
    case: &StreamCase,
    server: &arbor_test_support::MockServer,
) -> Result<Value, String> {
    use arbor_test_support::{Ending, MockResponse};
    let mut response = MockResponse::new(case.reply.status)
        .header("content-type", case.reply.content_type)
        .body_split_at(case.reply.body.as_bytes(), &case.reply.splits);
    if case.reply.cut {
        response = response.ending(Ending::CutOff);
    }
    server.push(response);
    let model: Model =
        serde_json::from_value(case.model.clone()).map_err(|e| format!("model: {e}"))?;
    let context: Context =
        serde_json::from_value(case.context.clone()).map_err(|e| format!("context: {e}"))?;
    let options = simple_options(&case.options)?;
    let events: Vec<_> = arbor_ai::stream_simple(&model, &context, options)
        .collect()
        .await;
    let values: Result<Vec<Value>, _> = events.iter().map(serde_json::to_value).collect();
    Ok(normalize_events(&Value::Array(
        values.map_err(|e| format!("event: {e}"))?,
    )))
}

async fn streams_mode(args: &Args) -> Result<bool, String> {
    let catalogue = catalogue_models()?;
    let server = arbor_test_support::MockServer::start()
        .await
        .map_err(|e| format!("mock server: {e}"))?;
    let cases: Vec<StreamCase> = (0..args.count)
        .map(|i| stream_case(args.seed, i, &catalogue, &server.url()))
        .collect();
    let lines: Vec<Value> = cases
        .iter()
        .map(|c| {
            // Arbor treats a dropped connection as an early end of the body (DECISIONS §26.3),
            // so its outcome is compared with pi's for the same bytes ending cleanly.
            let mut reply = c.reply.to_json();
            reply["ending"] = json!("complete");
            json!({"id": c.id, "model": c.model, "context": c.context, "options": c.options, "reply": reply})
        })
        .collect();
    let pi = run_driver(&lines)?;
    let mut groups: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut agreed = Vec::new();
    for case in &cases {
        let api = case.model["api"].as_str().unwrap_or("?");
        let pi_events = pi
            .get(&case.id)
            .map(|o| normalize_events(&o["events"]))
            .unwrap_or(Value::Null);
        let arbor = arbor_events(case, &server).await?;
        if args.dump.as_deref() == Some(case.id.as_str()) {
            println!(
                "case: {}",
                json!({"model": case.model, "reply": case.reply.to_json()})
            );
            println!("pi: {pi_events}");
            println!("arbor: {arbor}");
        }
        match first_difference(&pi_events, &arbor) {
            None => agreed.push((case, pi_events)),
            Some((path, detail)) => {
                // pi's own Anthropic decoder sees an empty `data:` when a read ends between CR
                // and LF (DECISIONS §26.4): a known pi fault, labelled as such.
                let pi_crlf_fault = case.reply.body.contains("\r\n")
                    && pi_events.as_array().into_iter().flatten().any(|e| {
                        e["error"]["errorMessage"].as_str().is_some_and(|m| {
                            m.starts_with("Could not parse Anthropic SSE event")
                                && m.contains("; data=;")
                        })
                    });
                // @google/genai parses an HTTP error's empty body as JSON and reports only that
                // failure, losing the status; Arbor keeps the status (DECISIONS §26.14).
                let pi_empty_error_body = api == "google-generative-ai"
                    && case.reply.status != 200
                    && case.reply.body.trim().is_empty();
                let shape = if pi_crlf_fault {
                    "explained by DECISIONS §26.4 (pi's CR/LF split):"
                } else if pi_empty_error_body {
                    "explained by DECISIONS §26.14 (empty Google error body):"
                } else if case.reply.cut {
                    "cut"
                } else if case.reply.status != 200 {
                    "http-error"
                } else {
                    "sse"
                };
                groups
                    .entry(format!("{api} {shape} events{path}"))
                    .or_default()
                    .push((
                        case.id.clone(),
                        format!(
                            "{detail}\nbody: {}",
                            case.reply.body.chars().take(600).collect::<String>()
                        ),
                    ));
            }
        }
    }
    report(args, cases.len(), agreed.len(), &groups);
    if let Some((file, k)) = &args.golden {
        let mut f = std::fs::File::create(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let mut written = 0;
        for (case, events) in &agreed {
            if written == *k {
                break;
            }
            let mut model = case.model.clone();
            // The golden test serves the reply from its own mock server.
            let base = model["baseUrl"]
                .as_str()
                .unwrap_or_default()
                .replacen(&server.url(), "", 1);
            model["baseUrl"] = Value::String(format!("{{server}}{base}"));
            let line = json!({"id": case.id, "model": model, "context": case.context, "options": case.options, "reply": case.reply.to_json(), "expected": events}).to_string();
            if line.len() > GOLDEN_LINE_LIMIT {
                continue;
            }
            writeln!(f, "{line}").map_err(|e| format!("{}: {e}", file.display()))?;
            written += 1;
        }
        println!("wrote {written} golden stream cases to {}", file.display());
    }
    Ok(groups.is_empty())
}

/// Arbor's request bodies and turn outcomes for a session case served by `server`.
async fn arbor_session(
    case: &sessions::SessionCase,
    server: &arbor_test_support::MockServer,
) -> Result<(Vec<Value>, Vec<Value>), String> {
    use arbor_ai::{AssistantMessageEvent, Message};
    use arbor_test_support::MockResponse;
    server.discard_unused();
    let before = server.requests().len();
    for reply in case.turns.iter().flat_map(|t| t.replies.iter()) {
        server.push(
            MockResponse::new(reply.status)
                .header("content-type", reply.content_type)
                .body(reply.body.clone()),
        );
    }
    let mut model = case.model.clone();
    let original = model["baseUrl"].as_str().unwrap_or_default().to_string();
    // pi's default for threads reads the real URL; Arbor is sent to the mock server.
    if model["compat"].get("supportsMessageThreads").is_none() {
        model["compat"]["supportsMessageThreads"] = json!(original.contains("api.anthropic.com"));
    }
    let path = original
        .splitn(4, '/')
        .nth(3)
        .map(|p| format!("/{p}"))
        .unwrap_or_default();
    model["baseUrl"] = Value::String(format!("{}{path}", server.url()));
    let model: Model = serde_json::from_value(model).map_err(|e| format!("model: {e}"))?;
    let mut context: Context =
        serde_json::from_value(case.context.clone()).map_err(|e| format!("context: {e}"))?;
    let mut outcomes = Vec::new();
    for turn in &case.turns {
        for message in &turn.append {
            let message: Message =
                serde_json::from_value(message.clone()).map_err(|e| format!("message: {e}"))?;
            context.messages.push(message);
        }
        if let Some(prompt) = &turn.system_prompt {
            context.system_prompt = Some(prompt.clone());
        }
        let options = simple_options(&case.options)?;
        let events: Vec<_> = arbor_ai::stream_simple(&model, &context, options)
            .collect()
            .await;
        let last = match events.last() {
            Some(AssistantMessageEvent::Done { message, .. }) => Some(message.clone()),
            Some(AssistantMessageEvent::Error { error, .. }) => Some(error.clone()),
            _ => None,
        };
        match last {
            Some(message) => {
                let value = serde_json::to_value(&message).map_err(|e| format!("message: {e}"))?;
                outcomes.push(sessions::turn_outcome(&value));
                context.messages.push(Message::Assistant(message));
            }
            None => outcomes.push(Value::Null),
        }
    }
    let bodies = server.requests()[before..]
        .iter()
        .map(arbor_test_support::RecordedRequest::json)
        .collect();
    Ok((bodies, outcomes))
}

async fn sessions_mode(args: &Args) -> Result<bool, String> {
    let catalogue = catalogue_models()?;
    let server = arbor_test_support::MockServer::start()
        .await
        .map_err(|e| format!("mock server: {e}"))?;
    let cases: Vec<sessions::SessionCase> = (0..args.count)
        .map(|i| sessions::session_case(args.seed, i, &catalogue))
        .collect();
    let lines: Vec<Value> = cases
        .iter()
        .map(sessions::SessionCase::to_driver_json)
        .collect();
    let pi = run_driver(&lines)?;
    let mut groups: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut agreed = 0;
    let mut continued = 0;
    for case in &cases {
        let Some(out) = pi.get(&case.id) else {
            groups
                .entry("pi produced no output".into())
                .or_default()
                .push((case.id.clone(), String::new()));
            continue;
        };
        let pi_bodies: Vec<Value> = out["requests"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| r["body"].clone())
            .collect();
        let pi_outcomes: Vec<Value> = out["turns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                if t["final"].is_null() {
                    Value::Null
                } else {
                    sessions::turn_outcome(&t["final"])
                }
            })
            .collect();
        let (bodies, outcomes) = arbor_session(case, &server).await?;
        if args.dump.as_deref() == Some(case.id.as_str()) {
            println!("case: {}", case.to_driver_json());
            println!(
                "pi: {}",
                json!({"requests": pi_bodies, "outcomes": pi_outcomes})
            );
            println!(
                "arbor: {}",
                json!({"requests": bodies, "outcomes": outcomes})
            );
        }
        let difference = first_difference(&json!(pi_bodies), &json!(bodies))
            .map(|(path, detail)| (format!("anthropic-messages requests{path}"), detail))
            .or_else(|| {
                first_difference(&json!(pi_outcomes), &json!(outcomes)).map(|(path, detail)| {
                    (format!("anthropic-messages turn outcomes{path}"), detail)
                })
            });
        match difference {
            None => {
                agreed += 1;
                continued += pi_bodies
                    .iter()
                    .filter(|b| b["thread"]["type"] == "continue")
                    .count();
            }
            Some((key, detail)) => groups
                .entry(key)
                .or_default()
                .push((case.id.clone(), detail)),
        }
    }
    report(args, cases.len(), agreed, &groups);
    println!("  (agreeing sessions sent {continued} thread continues)");
    Ok(groups.is_empty())
}
