//! JSON mode: line 1 is the session header as stored, then one event
//! per line in pi's shapes ([`super::events`]) (DECISIONS §22.20). The exit status is 0 even when the model failed
//! (the events say so); SIGTERM aborts and exits 143.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use arbor_agent::context::projection::ContextOptions;
use arbor_agent::harness::AgentHarness;
use arbor_agent::session::Session;

use super::events::PiEvents;
use crate::command::system_message::{has_conversation, now_ms, system_message};
use crate::error::CliError;
use crate::initial_prompts::Prompt;
use crate::startup::App;

/// Writes one JSON value as a line to stdout, flushed so readers see it at once.
pub fn emit_line(v: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, v);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// Announces retries and compaction as pi's JSON events.
pub struct EventObserver;

impl arbor_agent::harness::PolicyObserver for EventObserver {
    fn retry_scheduled(&self, attempt: u32, max_attempts: u32, delay_ms: u64, error: &str) {
        emit_line(
            &serde_json::json!({"type": "auto_retry_start", "attempt": attempt, "maxAttempts": max_attempts, "delayMs": delay_ms, "errorMessage": error}),
        );
    }
    fn retry_finished(&self, success: bool, attempt: u32, final_error: Option<&str>) {
        let mut v =
            serde_json::json!({"type": "auto_retry_end", "success": success, "attempt": attempt});
        if let Some(e) = final_error {
            v["finalError"] = serde_json::json!(e);
        }
        emit_line(&v);
    }
    fn compacting(&self, _reason: &str) {}
    fn compaction_failed(&self, error: &arbor_agent::agent::AgentError) {
        crate::policy::report_compaction_failure(error);
    }
}

/// Before a prompt: when the session's context is still empty, the run starts the
/// conversation and announces pi's system message (DECISIONS §31.2).
pub async fn announce_system_if_new(
    session: &Session,
    harness: &AgentHarness,
    events: &Mutex<PiEvents>,
) {
    let begins = session
        .build_context(&ContextOptions::default())
        .await
        .is_ok_and(|c| !has_conversation(&c.messages));
    if begins {
        let message = system_message(harness, now_ms());
        events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .announce_system(message);
    }
}

pub async fn run(app: App, prompts: Vec<Prompt>) -> Result<ExitCode, CliError> {
    emit_line(&serde_json::to_value(&app.header).unwrap_or_default());
    let conv = Arc::new(Mutex::new(PiEvents::default()));
    let events = conv.clone();
    app.harness.subscribe(move |e| {
        let lines = conv
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .convert(e);
        for l in lines {
            emit_line(&l);
        }
    });
    let harness = app.harness.clone();
    let settings = app.settings.clone();
    let session = app.session.clone();
    let resources = app.resources.clone();
    let mut work = tokio::spawn(async move {
        for p in &prompts {
            let text = resources.expand(&p.text)?;
            announce_system_if_new(&session, &harness, &events).await;
            crate::policy::prompt(&harness, &settings, &text, &p.images, &EventObserver).await?;
        }
        Ok::<_, CliError>(())
    });
    tokio::select! {
        r = &mut work => r.map_err(|e| CliError::Startup(format!("Error: the run failed: {e}")))??,
        code = crate::shutdown::shutdown_signal() => {
            crate::shutdown::stop(&app.harness, work).await;
            return Ok(ExitCode::from(code));
        }
    }
    Ok(ExitCode::SUCCESS)
}
