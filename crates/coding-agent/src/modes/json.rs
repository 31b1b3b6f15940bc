//! JSON mode (coding-agent.md §10.4): line 1 is the session header as stored, then one event
//! per line in pi's shapes ([`super::events`]). The exit status is 0 even when the model failed
//! (the events say so); SIGTERM aborts and exits 143.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use super::events::PiEvents;
use super::Prompt;
use crate::app::App;
use crate::error::CliError;

/// Writes one JSON value as a line to stdout, flushed so readers see it at once.
pub fn emit_line(v: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, v);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

pub async fn run(app: App, prompts: Vec<Prompt>) -> Result<ExitCode, CliError> {
    emit_line(&serde_json::to_value(&app.header).unwrap_or_default());
    let conv = Arc::new(Mutex::new(PiEvents::default()));
    app.harness.subscribe(move |e| {
        let lines = conv.lock().unwrap_or_else(|p| p.into_inner()).convert(e);
        for l in lines {
            emit_line(&l);
        }
    });
    let harness = app.harness.clone();
    let mut work = tokio::spawn(async move {
        for p in &prompts {
            harness.prompt(&p.text, &p.images).await?;
        }
        Ok::<_, CliError>(())
    });
    tokio::select! {
        r = &mut work => r.map_err(|e| CliError::Startup(format!("Error: the run failed: {e}")))??,
        code = super::shutdown_signal() => {
            super::stop(&app.harness, work).await;
            return Ok(ExitCode::from(code));
        }
    }
    Ok(ExitCode::SUCCESS)
}
