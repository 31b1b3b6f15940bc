//! `write`: creates or overwrites a file, making parent directories (DECISIONS §22.41).

use serde::Deserialize;
use serde_json::{json, Value};

use super::{
    io_error_text, parse_args, path, BuiltinToolError, ToolEnv, ToolOutput, ToolResult, ToolSpec,
};

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

pub async fn run(env: &ToolEnv, args: Value) -> ToolResult {
    let args: Args = parse_args("write", &args)?;
    let abs = path::resolve(&args.path, &env.cwd);
    let _turn = env.mutations.lock(&abs).await;
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
    tokio::fs::write(&abs, args.content.as_bytes())
        .await
        .map_err(|e| BuiltinToolError::failed(io_error_text(&e, "open", &abs)))?;
    Ok(ToolOutput::text(format!(
        "Successfully wrote to {}",
        args.path
    )))
}
