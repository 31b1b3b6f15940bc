//! A shell command the user runs themselves — the TUI's `!cmd` / `!!cmd` and RPC's `bash`
//! (DECISIONS §23.126): the `bash` tool's machinery (shell, output cap, full-output
//! file, process-group kill on cancel), its result read back into what a `bashExecution`
//! message records. One place, so both front ends agree on exit codes and cancellation
//! (DECISIONS §23.126).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arbor_agent::message::BashExecutionMessage;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use arbor_tools::ansi::{clean, Cleaner};
use arbor_tools::bash::ChunkSink;
use arbor_tools::{BuiltinToolError, ToolEnv, ToolSettings};

/// What one command did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BashRun {
    pub output: String,
    /// `None` when cancelled.
    pub exit_code: Option<i64>,
    pub cancelled: bool,
    pub truncated: bool,
    pub full_output_path: Option<String>,
}

impl BashRun {
    /// The `bashExecution` message recording `command`'s run (`include`: `!cmd`, the model
    /// sees it; otherwise `!!cmd` / `excludeFromContext`).
    pub fn message(&self, command: &str, include: bool) -> BashExecutionMessage {
        BashExecutionMessage {
            command: command.to_owned(),
            output: self.output.clone(),
            exit_code: self.exit_code,
            cancelled: self.cancelled,
            truncated: self.truncated,
            full_output_path: self.full_output_path.clone(),
            exclude_from_context: (!include).then_some(true),
            timestamp: arbor_ai::time::now_ms().into(),
            ..Default::default()
        }
    }
}

/// The tails the bash tool appends to a failure's output.
const TAILS: [&str; 3] = [
    "\n\nCommand exited with code ",
    "\n\nCommand aborted",
    "Command aborted",
];

/// Splits the bash tool's failure text into the output and the exit code ("Command exited
/// with code N"; 1 when the text names none).
fn split_failure(message: &str) -> (String, i64) {
    let code = message
        .rsplit_once("Command exited with code ")
        .and_then(|(_, c)| c.trim().parse::<i64>().ok())
        .unwrap_or(1);
    let out = TAILS
        .iter()
        .find_map(|tail| message.rsplit_once(tail).map(|(o, _)| o.to_owned()))
        .unwrap_or_else(|| message.to_owned());
    (out, code)
}

/// Runs `command` in `cwd`; `chunks` receives the output as it arrives (RPC streams it).
pub async fn run(
    cwd: PathBuf,
    settings: ToolSettings,
    command: &str,
    cancel: CancellationToken,
    chunks: Option<ChunkSink>,
) -> BashRun {
    let env = ToolEnv::new(cwd, settings);
    // pi's user-bash executor cleans the output (escapes, control characters, CR) before it
    // streams or keeps it (DECISIONS §22.30); an escape cut across two chunks waits for the next.
    let cleaner = Arc::new(Mutex::new(Cleaner::default()));
    let cleaned: Option<ChunkSink> = chunks.clone().map(|sink| {
        let cleaner = cleaner.clone();
        Arc::new(move |delta: &str| {
            let out = cleaner
                .lock()
                .map(|mut c| c.push(delta))
                .unwrap_or_default();
            if !out.is_empty() {
                sink(&out);
            }
        }) as ChunkSink
    });
    let r = arbor_tools::bash::run_streaming(
        &env,
        json!({"command": command}),
        cancel.clone(),
        None,
        cleaned,
    )
    .await;
    if let Some(sink) = &chunks {
        let rest = cleaner.lock().map(|mut c| c.finish()).unwrap_or_default();
        if !rest.is_empty() {
            sink(&rest);
        }
    }
    let cancelled = cancel.is_cancelled();
    let (text, details, exit_code) = match r {
        Ok(o) => {
            let text = o
                .content
                .iter()
                .filter_map(|b| b.as_text())
                .collect::<String>();
            let code = o
                .structured_content
                .as_ref()
                .and_then(|s| s.get("exit_code"))
                .and_then(Value::as_i64);
            if o.is_error {
                // A non-zero exit: the status line is the tool's, not the command's output.
                let (out, parsed) = split_failure(&text);
                (out, o.details, Some(code.unwrap_or(parsed)))
            } else {
                (text, o.details, Some(code.unwrap_or(0)))
            }
        }
        Err(BuiltinToolError::Failed { message, details }) => {
            let (out, code) = split_failure(&message);
            (out, details, (!cancelled).then_some(code))
        }
        Err(BuiltinToolError::Aborted(m)) => (m, None, None),
    };
    let output = if text == "(no output)" {
        String::new()
    } else {
        text
    };
    // The tool's truncation notice is for the model; pi's answer carries the kept tail only.
    let output = match details.as_ref().and_then(|d| d.get("truncation")) {
        Some(_) => output
            .rsplit_once("\n\n[Showing ")
            .map_or(output.as_str(), |(kept, _)| kept)
            .to_owned(),
        None => output,
    };
    let output = clean(&output);
    let full_output_path = details
        .as_ref()
        .and_then(|d| d.get("fullOutputPath"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let truncated = details
        .as_ref()
        .and_then(|d| d.get("truncation"))
        .and_then(|t| t.get("truncated"))
        .and_then(Value::as_bool)
        .unwrap_or(full_output_path.is_some());
    BashRun {
        output,
        exit_code,
        cancelled: cancelled || exit_code.is_none(),
        truncated,
        full_output_path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_split_from_the_output() {
        assert_eq!(
            split_failure("oops\n\nCommand exited with code 3"),
            ("oops".to_owned(), 3)
        );
        assert_eq!(
            split_failure("partial\n\nCommand aborted"),
            ("partial".to_owned(), 1)
        );
        assert_eq!(split_failure("weird"), ("weird".to_owned(), 1));
    }

    #[tokio::test]
    async fn runs_a_command_and_reports_its_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let run_one = |cmd: &'static str| {
            run(
                dir.path().to_path_buf(),
                ToolSettings::default(),
                cmd,
                CancellationToken::new(),
                None,
            )
        };
        let ok = run_one("echo hi").await;
        assert_eq!(ok.output.trim(), "hi");
        assert_eq!(ok.exit_code, Some(0));
        assert!(!ok.cancelled);
        let bad = run_one("echo no; exit 4").await;
        assert_eq!(bad.exit_code, Some(4));
        assert_eq!(bad.output.trim(), "no");
        let m = bad.message("echo no; exit 4", false);
        assert_eq!(m.exit_code, Some(4));
        assert_eq!(m.exclude_from_context, Some(true));
        assert_eq!(ok.message("echo hi", true).exclude_from_context, None);
    }

    #[tokio::test]
    async fn a_cancelled_command_has_no_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            c.cancel();
        });
        let r = run(
            dir.path().to_path_buf(),
            ToolSettings::default(),
            "echo started; sleep 5",
            cancel,
            None,
        )
        .await;
        assert!(r.cancelled);
        assert_eq!(r.exit_code, None);
    }
}
