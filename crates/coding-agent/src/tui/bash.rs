//! `!cmd` / `!!cmd` (coding-agent.md §2.4, §9 `bash`): runs one shell command with the `bash`
//! tool's machinery (shell, output cap, full-output file, process-group kill on cancel) and
//! reports what a `bashExecution` message records.

use std::path::PathBuf;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::tools::{ToolEnv, ToolError, ToolSettings};

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

/// The bash tool's failure text ends with "Command exited with code N"; split it off.
fn split_exit(message: &str) -> (String, i64) {
    match message.rsplit_once("Command exited with code ") {
        Some((out, code)) => (
            out.trim_end_matches('\n').to_owned(),
            code.trim().parse().unwrap_or(1),
        ),
        None => (message.to_owned(), 1),
    }
}

pub async fn run(
    cwd: PathBuf,
    settings: ToolSettings,
    command: &str,
    cancel: CancellationToken,
) -> BashRun {
    let env = ToolEnv::new(cwd, settings);
    let r = crate::tools::run("bash", &env, json!({"command": command}), cancel, None).await;
    let (text, details, exit_code, cancelled) = match r {
        Ok(o) => (
            o.content
                .iter()
                .filter_map(|b| b.as_text())
                .collect::<String>(),
            o.details,
            Some(0),
            false,
        ),
        Err(ToolError::Failed { message, details }) => {
            let (out, code) = split_exit(&message);
            (out, details, Some(code), false)
        }
        Err(ToolError::Aborted(m)) => (m, None, None, true),
    };
    let output = if text == "(no output)" {
        String::new()
    } else {
        text
    };
    let full_output_path = details
        .as_ref()
        .and_then(|d| d.get("fullOutputPath"))
        .and_then(|p| p.as_str())
        .map(str::to_owned);
    BashRun {
        output,
        exit_code,
        cancelled,
        truncated: details
            .as_ref()
            .is_some_and(|d| d.get("truncation").is_some()),
        full_output_path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_split_from_the_output() {
        assert_eq!(
            split_exit("oops\n\nCommand exited with code 3"),
            ("oops".to_owned(), 3)
        );
        assert_eq!(split_exit("weird"), ("weird".to_owned(), 1));
    }

    #[tokio::test]
    async fn runs_a_command_and_reports_its_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let ok = run(
            dir.path().to_path_buf(),
            ToolSettings::default(),
            "echo hi",
            CancellationToken::new(),
        )
        .await;
        assert_eq!(ok.output.trim(), "hi");
        assert_eq!(ok.exit_code, Some(0));
        let bad = run(
            dir.path().to_path_buf(),
            ToolSettings::default(),
            "echo no; exit 4",
            CancellationToken::new(),
        )
        .await;
        assert_eq!(bad.exit_code, Some(4));
        assert_eq!(bad.output.trim(), "no");
    }
}
