//! Running one hook command: `sh -c COMMAND` in the session's directory, in its own process
//! group, the event as JSON on stdin, the reply read from stdout (DECISIONS §33.11). A hook
//! that fails, times out or answers something that is not a JSON object yields a
//! [`HookError`]; the caller reports it and goes on as if the hook had no opinion.

use std::path::Path;
use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::config::Hook;

/// At most this much of a hook's stdout is read (a reply is a small JSON object).
const MAX_REPLY: u64 = 1 << 20;

/// Why a hook's reply is not used.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("hook `{command}` ({event}) could not start: {source}")]
    Spawn {
        command: String,
        event: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("hook `{command}` ({event}) timed out after {secs} s and was killed")]
    Timeout {
        command: String,
        event: &'static str,
        secs: f64,
    },
    #[error("hook `{command}` ({event}) failed ({status}){stderr}")]
    Failed {
        command: String,
        event: &'static str,
        status: String,
        /// `": <last stderr line>"` or empty.
        stderr: String,
    },
    #[error(
        "hook `{command}` ({event}) replied with something that is not a JSON object: {reply}"
    )]
    BadReply {
        command: String,
        event: &'static str,
        reply: String,
    },
}

/// Runs `hook` with `event` on stdin. `Ok(None)`: the hook printed nothing (no opinion).
pub async fn run(hook: &Hook, event: &Value, cwd: &Path) -> Result<Option<Value>, HookError> {
    let name = hook.event.name();
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&hook.command)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0)
        .spawn()
        .map_err(|source| HookError::Spawn {
            command: hook.command.clone(),
            event: name,
            source,
        })?;
    // Arbor's exit ends the group, however the run ended (DECISIONS §28.3).
    let pgid = child.id().and_then(arbor_tools::process::registry::track);
    let input = serde_json::to_vec(event).unwrap_or_default();
    let mut stdin = child.stdin.take();
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let work = async {
        if let Some(mut w) = stdin.take() {
            // A hook that does not read its stdin is fine: a broken pipe is not an error.
            let _ = w.write_all(&input).await;
            let _ = w.shutdown().await;
        }
        let mut out = Vec::new();
        let mut err = Vec::new();
        let read_out = async {
            if let Some(r) = stdout.as_mut() {
                let _ = r.take(MAX_REPLY).read_to_end(&mut out).await;
            }
        };
        let read_err = async {
            if let Some(r) = stderr.as_mut() {
                let _ = r.take(MAX_REPLY).read_to_end(&mut err).await;
            }
        };
        tokio::join!(read_out, read_err);
        let status = child.wait().await;
        (status, out, err)
    };
    let outcome = tokio::time::timeout(hook.timeout, work).await;
    let Ok((status, out, err)) = outcome else {
        if let Some(pgid) = pgid {
            arbor_tools::process::group::end(pgid).await;
        }
        return Err(HookError::Timeout {
            command: hook.command.clone(),
            event: name,
            secs: hook.timeout.as_secs_f64(),
        });
    };
    if let Some(pgid) = pgid {
        // The shell is gone; anything it left running in its group goes with it.
        arbor_tools::process::group::end_detached(pgid);
    }
    let ok = status.as_ref().is_ok_and(std::process::ExitStatus::success);
    if !ok {
        let last = String::from_utf8_lossy(&err)
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .map(|l| format!(": {}", l.trim()))
            .unwrap_or_default();
        return Err(HookError::Failed {
            command: hook.command.clone(),
            event: name,
            status: match status {
                Ok(s) => s.to_string(),
                Err(e) => e.to_string(),
            },
            stderr: last,
        });
    }
    let text = String::from_utf8_lossy(&out);
    if text.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(v @ Value::Object(_)) => Ok(Some(v)),
        _ => Err(HookError::BadReply {
            command: hook.command.clone(),
            event: name,
            reply: text.trim().chars().take(200).collect(),
        }),
    }
}
