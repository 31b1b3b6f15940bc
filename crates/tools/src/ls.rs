//! `ls`: one directory's entries, dotfiles included, sorted case-insensitively, `/` after
//! directories (DECISIONS §22.2).

use serde::Deserialize;
use serde_json::{json, Value};

use super::truncate::{truncate_head, LimitNotices, DEFAULT_MAX_BYTES};
use super::{
    count_arg, parse_args, path, BuiltinToolError, ToolEnv, ToolOutput, ToolResult, ToolSpec,
};

/// Entries listed when the call gives no limit.
pub const DEFAULT_LIMIT: usize = 500;

/// The `ls` tool's declaration.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "ls",
        label: "ls",
        description: format!(
            "List a directory: names in alphabetical order, dotfiles included, directories marked with a \
             trailing '/'. At most {DEFAULT_LIMIT} entries or {}KB are shown.",
            DEFAULT_MAX_BYTES / 1024
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory to list (default: the working directory)"},
                "limit": {"type": "number", "description": "Most entries to show (default: 500)"}
            }
        }),
        snippet: "List directory contents",
    }
}

#[derive(Debug, Deserialize)]
struct Args {
    path: Option<String>,
    limit: Option<f64>,
}

/// Runs one `ls` call: the entries of a directory, sorted, directories marked with `/`.
pub async fn run(env: &ToolEnv, args: Value) -> ToolResult {
    let args: Args = parse_args("ls", &args)?;
    let dir = path::resolve(args.path.as_deref().unwrap_or("."), &env.cwd);
    let limit = count_arg(args.limit).map_or(DEFAULT_LIMIT, |l| l.max(1) as usize);
    let meta = tokio::fs::metadata(&dir)
        .await
        .map_err(|_| BuiltinToolError::failed(format!("Path not found: {}", dir.display())))?;
    if !meta.is_dir() {
        return Err(BuiltinToolError::failed(format!(
            "Not a directory: {}",
            dir.display()
        )));
    }
    let mut reader = tokio::fs::read_dir(&dir)
        .await
        .map_err(|e| BuiltinToolError::failed(format!("Cannot read directory: {e}")))?;
    let mut names: Vec<(String, bool)> = Vec::new();
    loop {
        let entry = match reader.next_entry().await {
            Ok(Some(e)) => e,
            Ok(None) => break,
            Err(e) => {
                return Err(BuiltinToolError::failed(format!(
                    "Cannot read directory: {e}"
                )))
            }
        };
        // Entries that cannot be stat'ed (dangling symlinks...) are skipped, as in pi.
        let Ok(meta) = tokio::fs::metadata(entry.path()).await else {
            continue;
        };
        names.push((
            entry.file_name().to_string_lossy().into_owned(),
            meta.is_dir(),
        ));
    }
    names.sort_by_cached_key(|(n, _)| n.to_lowercase());
    if names.is_empty() {
        return Ok(ToolOutput::text("(empty directory)"));
    }
    let limited = names.len() > limit;
    let lines: Vec<String> = names
        .iter()
        .take(limit)
        .map(|(n, is_dir)| if *is_dir { format!("{n}/") } else { n.clone() })
        .collect();
    let raw = lines.join("\n");
    let truncation = truncate_head(&raw, usize::MAX, DEFAULT_MAX_BYTES);
    let mut notices = LimitNotices::default();
    if limited {
        notices.add(
            format!(
                "{limit} entries limit reached. Use limit={} for more",
                limit * 2
            ),
            "entryLimitReached",
            json!(limit),
        );
    }
    notices.byte_limit(&truncation);
    Ok(notices.finish(truncation.content))
}
