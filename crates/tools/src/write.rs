//! `write`: creates or overwrites a file, making parent directories (DECISIONS §22.41), all
//! at once: temporary file, fsync, rename (DECISIONS §28.7).

use serde::Deserialize;
use serde_json::{json, Value};

use tokio_util::sync::CancellationToken;

use super::atomic_write::{self, Outcome};
use super::{
    aborted_unchanged, io_error_text, parse_args, path, BuiltinToolError, ToolEnv, ToolOutput,
    ToolResult, ToolSpec,
};

/// The `write` tool's declaration.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "write",
        label: "write",
        description: "Put content into a file: a new file is created (with any missing parent \
            directories), an existing one is replaced entirely."
            .to_owned(),
        parameters: json!({
            "type": "object",
            "required": ["path", "content"],
            "properties": {
                "path": {"type": "string", "description": "File to write, relative to the working directory or absolute"},
                "content": {"type": "string", "description": "The complete new contents of the file"}
            }
        }),
        snippet: "Create or overwrite files",
    }
}

#[derive(Debug, Deserialize)]
struct Args {
    path: String,
    content: String,
}

/// Runs one `write` call: parents made, the contents put in place atomically.
pub async fn run(env: &ToolEnv, args: Value, cancel: &CancellationToken) -> ToolResult {
    let args: Args = parse_args("write", &args)?;
    let abs = path::resolve(&args.path, &env.cwd);
    let _turn = env.mutations.lock(&abs).await;
    if cancel.is_cancelled() {
        return Err(aborted_unchanged(&args.path));
    }
    // Writing into a FIFO waits for a reader and into a device goes nowhere a file would.
    if let Ok(meta) = tokio::fs::metadata(&abs).await {
        if let Some(kind) = path::special_kind(&meta) {
            return Err(BuiltinToolError::failed(format!(
                "Cannot write {}: it is {kind}, not a regular file",
                args.path
            )));
        }
    }
    if let Some(parent) = abs.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| BuiltinToolError::failed(io_error_text(&e, "mkdir", parent)))?;
    }
    let outcome = atomic_write::replace(&abs, args.content.into_bytes(), cancel)
        .await
        .map_err(|e| {
            BuiltinToolError::failed(match e.io() {
                Some((err, path, op)) => io_error_text(err, op, path),
                None => e.to_string(),
            })
        })?;
    match outcome {
        // Once renamed the file holds the new text; an abort that came later does not undo
        // that, so the record says it was written (DECISIONS §28.8).
        Outcome::Replaced => Ok(ToolOutput::text(format!(
            "Successfully wrote to {}",
            args.path
        ))),
        Outcome::Abandoned => Err(aborted_unchanged(&args.path)),
    }
}
