//! Print mode: run every prompt, then print each text block of the last
//! assistant message followed by a newline (DECISIONS §22.19). An `error`/`aborted` answer goes to stderr (exit
//! 1); a `length` stop prints the text, warns on stderr and exits 1. SIGTERM aborts the run and
//! exits 143 (SIGHUP 129) after the session is flushed.

use std::io::Write as _;
use std::process::ExitCode;

use arbor_ai::{AssistantMessage, StopReason};

use crate::error::CliError;
use crate::initial_prompts::Prompt;
use crate::startup::App;

/// What print mode reports for the final answer: stdout text, stderr text, exit code.
pub fn outcome(last: Option<&AssistantMessage>) -> (String, Option<String>, u8) {
    let Some(m) = last else {
        return (String::new(), None, 0);
    };
    let text: String = m
        .content
        .iter()
        .filter_map(|b| b.as_text())
        .map(|t| format!("{t}\n"))
        .collect();
    match m.stop_reason {
        StopReason::Error | StopReason::Aborted => {
            let msg = m
                .error_message
                .clone()
                .unwrap_or_else(|| format!("Request {}", m.stop_reason.as_str()));
            (String::new(), Some(msg), 1)
        }
        StopReason::Length => (
            text,
            Some("Response was truncated: the model reached its output token limit.".into()),
            1,
        ),
        _ => (text, None, 0),
    }
}

pub async fn run(app: App, prompts: Vec<Prompt>) -> Result<ExitCode, CliError> {
    let harness = app.harness.clone();
    let settings = app.settings.clone();
    let resources = app.resources.clone();
    super::events::progress_on_stderr(&harness);
    // The run is its own task so an abort (which waits for the run to wind down) can proceed.
    let mut work = tokio::spawn(async move {
        let mut last = None;
        for p in &prompts {
            last = Some(
                crate::policy::prompt(
                    &harness,
                    &settings,
                    &resources.expand(&p.text)?,
                    &p.images,
                    &crate::policy::StderrObserver,
                )
                .await?,
            );
        }
        Ok::<_, CliError>(last)
    });
    let last = tokio::select! {
        r = &mut work => r.map_err(|e| CliError::Startup(format!("Error: the run failed: {e}")))??,
        code = crate::shutdown::shutdown_signal() => {
            crate::shutdown::stop(&app.harness, work).await;
            return Ok(ExitCode::from(code));
        }
    };
    let (out, err, code) = outcome(last.as_ref());
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
    let _ = stdout.flush();
    if let Some(e) = err {
        eprintln!("{e}");
    }
    Ok(ExitCode::from(code))
}
