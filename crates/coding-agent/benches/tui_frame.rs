//! Interactive UI benchmarks (docs/PERFORMANCE.md, "Interactive UI"), in process on the faux
//! provider, drawing into a 120×40 `TestBackend` buffer:
//!
//! 1. first frame on an empty session: harness + driver + the first full frame;
//! 2. first frame on a resumed large JSONL session: open + resume + driver + first frame (the
//!    driver draws from the active path's tail and loads the rest behind the frame, DECISIONS
//!    §23.102; `ARBOR_BENCH_PHASES=1` also prints when that background load ended);
//! 3. one frame while a response streams into that long transcript (a text delta, then a full
//!    redraw): the keystroke-to-frame budget;
//! 4. the app's whole start-up to the first frame (`startup::start`: settings, trust, models,
//!    skills, templates, MCP and hooks, then the driver and the frame), in a temp ARBOR_HOME and
//!    project with nothing configured and with 50 skills, 50 prompt templates and 3 MCP servers
//!    (which connect in the background, DECISIONS §33.5).
//!
//! `cargo bench -p arbor-coding-agent --bench tui_frame` (ARBOR_BENCH_TUI_MB sets the resumed
//! session's size; default 100; ARBOR_BENCH_TUI_STARTUP_ONLY=1 runs only part 4). A plain
//! binary: each figure is a median of several runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor_agent::agent::AgentEvent;
use arbor_agent::harness::{AgentHarness, HarnessOptions};
use arbor_agent::message::AgentMessage;
use arbor_agent::session::{JsonlRepository, MemoryStorage, Session, SessionRepository};
use arbor_ai::faux::FauxProvider;
use arbor_ai::{AssistantMessage, AssistantMessageEvent, Message};
use arbor_coding_agent::config::Settings;
use arbor_coding_agent::tui::driver::{Driver, TuiApp};
use arbor_coding_agent::tui::state::AppEvent;
use arbor_coding_agent::tui::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

const AREA: Rect = Rect {
    x: 0,
    y: 0,
    width: 120,
    height: 40,
};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn ctx(faux: &FauxProvider, session: Arc<Session>, harness: AgentHarness) -> TuiApp {
    let _ = faux;
    TuiApp {
        harness,
        session,
        session_file: None,
        session_id: "bench".into(),
        registry: Arc::new(arbor_ai::models::ModelRegistry::builtin().unwrap()),
        cycle_models: Vec::new(),
        usable_models: Vec::new(),
        settings: Settings::from_value(serde_json::json!({})),
        cwd: std::env::temp_dir(),
        repo: None,
        session_store: None,
        checkpoints: None,
        env_policy: Default::default(),
        resources: arbor_coding_agent::resources::LiveResources::empty(std::path::Path::new(
            "/work/project",
        )),
        trust: arbor_coding_agent::trust::ProjectTrust::new(
            true,
            arbor_coding_agent::trust::TrustSource::NothingToProtect,
        ),
        mcp: None,
        logins: None,
    }
}

fn write_session(file: &Path, mb: usize) -> usize {
    let mut w = std::io::BufWriter::new(std::fs::File::create(file).unwrap());
    writeln!(w, "{{\"type\":\"session\",\"version\":3,\"id\":\"01a22c74-0000-7000-8000-000000000002\",\"timestamp\":\"2026-12-01T00:00:00.000Z\",\"cwd\":\"/tmp\"}}").unwrap();
    let filler = "word ".repeat(400);
    let mut parent = "null".to_owned();
    let mut i = 0usize;
    let mut written = 0usize;
    while written < mb * 1024 * 1024 {
        let id = format!("{i:08x}");
        let line = if i.is_multiple_of(2) {
            format!("{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-12-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"q{i} {filler}\"}}],\"timestamp\":1}}}}")
        } else {
            format!("{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-12-01T00:00:00.000Z\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"## a{i}\\n\\n- {filler}\\n\\n`code`\"}}],\"api\":\"faux\",\"provider\":\"faux\",\"model\":\"faux-1\",\"usage\":{{\"input\":1,\"output\":1,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":2,\"cost\":{{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"total\":0}}}},\"stopReason\":\"stop\",\"timestamp\":1}}}}")
        };
        writeln!(w, "{line}").unwrap();
        written += line.len() + 1;
        parent = format!("\"{id}\"");
        i += 1;
    }
    i
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    startup_with_resources(&rt);
    if std::env::var_os("ARBOR_BENCH_TUI_STARTUP_ONLY").is_some() {
        return;
    }
    let faux = FauxProvider::new();
    let options = HarnessOptions::new(faux.model());

    // 1. Empty session.
    let mut firsts = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        rt.block_on(async {
            let session = Arc::new(Session::new(Arc::new(MemoryStorage::new("/tmp"))));
            let harness =
                AgentHarness::new(session.clone(), Arc::new(faux.clone()), options.clone())
                    .unwrap();
            let mut d = Driver::new(ctx(&faux, session, harness), Theme::colored())
                .await
                .unwrap();
            let mut buf = Buffer::empty(AREA);
            d.render(AREA, &mut buf);
        });
        firsts.push(start.elapsed());
    }
    println!(
        "tui first frame, empty session: median {} over 20 runs",
        ms(median(firsts))
    );

    // 2. Resumed large session.
    let mb: usize = std::env::var("ARBOR_BENCH_TUI_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let dir = tempfile::tempdir().unwrap();
    let file = dir
        .path()
        .join("2026-12-01T00-00-00-000Z_01a22c74-0000-7000-8000-000000000002.jsonl");
    let messages = write_session(&file, mb);
    let repo = JsonlRepository::flat(dir.path());
    let mut resumed = Vec::new();
    let mut last: Option<Driver> = None;
    for _ in 0..3 {
        // The previous run's session holds the file's writer lock.
        drop(last.take());
        let start = Instant::now();
        let d = rt.block_on(async {
            let t = Instant::now();
            let storage = repo.open(&file.display().to_string()).await.unwrap();
            let session = Arc::new(Session::new(Arc::new(storage)));
            let t1 = t.elapsed();
            let (harness, _) =
                AgentHarness::resume(session.clone(), Arc::new(faux.clone()), options.clone())
                    .await
                    .unwrap();
            let t2 = t.elapsed();
            let mut d = Driver::new(ctx(&faux, session, harness), Theme::colored())
                .await
                .unwrap();
            let t3 = t.elapsed();
            let mut buf = Buffer::empty(AREA);
            d.render(AREA, &mut buf);
            let frame = t.elapsed();
            (d, t, [t1, t2, t3, frame])
        });
        resumed.push(start.elapsed());
        // Not part of the first frame: the full context, transcript and totals loading behind
        // it (the session must be free again before the next run opens the file).
        let (mut d, t, [t1, t2, t3, frame]) = d;
        rt.block_on(async {
            while d.state.is_loading() {
                match d.next_event().await {
                    Some(ev) => d.dispatch(ev).await,
                    None => break,
                }
            }
            d.settle().await;
        });
        if std::env::var_os("ARBOR_BENCH_PHASES").is_some() {
            eprintln!(
                "open {t1:?} resume {t2:?} driver {t3:?} frame {frame:?} loaded behind it {:?} ({} items)",
                t.elapsed(),
                d.transcript.len()
            );
        }
        last = Some(d);
    }
    println!(
        "tui first frame, resumed {mb} MB session ({messages} messages): median {} over 3 runs",
        ms(median(resumed))
    );

    // 3. One frame per streamed delta on the long transcript.
    let mut d = last.unwrap();
    let partial = AssistantMessage {
        api: "faux".into(),
        provider: "faux".into(),
        model: "faux-1".into(),
        ..Default::default()
    };
    let mut frames = Vec::new();
    rt.block_on(async {
        d.dispatch(AppEvent::Agent(Box::new(AgentEvent::MessageStart {
            message: AgentMessage::Llm(Message::Assistant(partial)),
        })))
        .await;
        d.dispatch(AppEvent::Agent(Box::new(AgentEvent::MessageUpdate {
            assistant_message_event: AssistantMessageEvent::TextStart { content_index: 0 },
        })))
        .await;
        for i in 0..300 {
            let start = Instant::now();
            d.dispatch(AppEvent::Agent(Box::new(AgentEvent::MessageUpdate {
                assistant_message_event: AssistantMessageEvent::TextDelta {
                    content_index: 0,
                    delta: format!("token{i} "),
                },
            })))
            .await;
            let mut buf = Buffer::empty(AREA);
            d.render(AREA, &mut buf);
            frames.push(start.elapsed());
        }
    });
    let mut sorted = frames.clone();
    sorted.sort();
    println!(
        "tui frame while streaming into the {messages}-message transcript: median {}, p99 {} over 300 deltas",
        ms(median(frames)),
        ms(sorted[sorted.len() * 99 / 100])
    );
}

fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A temp ARBOR_HOME (with `models.json` for the mock provider) and project; `loaded` adds 50
/// skills and 50 templates (half the user's, half the trusted project's) and 3 MCP servers.
fn startup_dirs(root: &Path, loaded: bool) -> (std::path::PathBuf, std::path::PathBuf) {
    let home = root.join("home");
    let project = root.join("project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    put(
        &home.join("models.json"),
        r#"{"providers": {"mock": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "k", "models": [{"id": "mock-model", "contextWindow": 32000, "maxTokens": 4096}]}}}"#,
    );
    std::fs::create_dir_all(home.join("user")).unwrap();
    if !loaded {
        return (home, project);
    }
    for i in 0..50 {
        let base = if i % 2 == 0 {
            home.clone()
        } else {
            project.join(".arbor")
        };
        put(
            &base.join(format!("skills/skill-{i}/SKILL.md")),
            &format!("---\nname: skill-{i}\ndescription: Does task {i} when the user asks for it.\n---\n# Skill {i}\nSteps.\n"),
        );
        put(
            &base.join(format!("prompts/template-{i}.md")),
            &format!("---\ndescription: Template {i}\nargument-hint: \"<what>\"\n---\nDo $1 for template {i}.\n"),
        );
    }
    let server = arbor_test_support::mcp_server::binary()
        .display()
        .to_string();
    let servers: serde_json::Map<String, serde_json::Value> = (0..3)
        .map(|i| {
            (
                format!("server-{i}"),
                serde_json::json!({"command": server}),
            )
        })
        .collect();
    put(
        &home.join("mcp.json"),
        &serde_json::json!({ "mcpServers": servers }).to_string(),
    );
    (home, project)
}

/// Part 4: start-up to the first frame without and with resources, medians of 15 runs each.
fn startup_with_resources(rt: &tokio::runtime::Runtime) {
    let mut medians = Vec::new();
    for loaded in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (home, project) = startup_dirs(dir.path(), loaded);
        std::env::set_var("ARBOR_HOME", &home);
        std::env::set_var("HOME", home.join("user"));
        std::env::set_current_dir(&project).unwrap();
        let argv = [
            "arbor",
            "--model",
            "mock/mock-model",
            "--approve",
            "--no-session",
        ];
        let mut runs = Vec::new();
        for _ in 0..15 {
            let (took, mcp) = rt.block_on(async {
                let start = Instant::now();
                let (_frame, mcp) = arbor_coding_agent::tui::headless::first_frame(&argv, AREA)
                    .await
                    .unwrap();
                (start.elapsed(), mcp)
            });
            runs.push(took);
            // Not timed: the servers connected in the background; end them before the next run.
            if let Some(mcp) = mcp {
                rt.block_on(async {
                    let connected = mcp.wait_started(Duration::from_secs(20)).await;
                    assert!(connected, "the MCP servers did not finish starting");
                    for s in mcp.status() {
                        assert_eq!(s.state.label(), "connected", "{}: {:?}", s.name, s.state);
                    }
                    mcp.shutdown().await;
                });
            }
        }
        let what = if loaded {
            "50 skills, 50 templates, 3 MCP servers"
        } else {
            "nothing configured"
        };
        let m = median(runs);
        println!(
            "tui start-up to first frame, {what}: median {} over 15 runs",
            ms(m)
        );
        medians.push(m);
    }
    println!(
        "tui start-up to first frame: resources cost {} (target: within 20 ms)",
        ms(medians[1].saturating_sub(medians[0]))
    );
}
