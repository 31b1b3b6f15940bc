//! `find`: files (and directories) whose name or relative path matches a glob, with
//! `.gitignore` honoured and hidden files included (DECISIONS §22.2). Built on `ignore` and
//! `globset`; no `fd` binary needed.

use std::path::Path;

use globset::GlobBuilder;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::truncate::{truncate_head, LimitNotices, DEFAULT_MAX_BYTES};
use super::{
    count_arg, parse_args, path, BuiltinToolError, ToolEnv, ToolOutput, ToolResult, ToolSpec,
};

/// Results listed when the call gives no limit.
pub const DEFAULT_LIMIT: usize = 1000;

/// The `find` tool's declaration.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "find",
        label: "find",
        description: format!(
            "Find files by glob and get their paths relative to the searched directory. Files ignored by \
             .gitignore are skipped. At most {DEFAULT_LIMIT} results or {}KB are returned.",
            DEFAULT_MAX_BYTES / 1024
        ),
        parameters: json!({
            "type": "object",
            "required": ["pattern"],
            "properties": {
                "pattern": {"type": "string", "description": "Glob relative to the searched directory, e.g. 'src/**/*.rs'; without '/', e.g. '*.rs', it matches file names at any depth"},
                "path": {"type": "string", "description": "Directory to search (default: the working directory)"},
                "limit": {"type": "number", "description": "Most results to return (default: 1000)"}
            }
        }),
        snippet: "Find files by glob pattern (respects .gitignore)",
    }
}

#[derive(Debug, Deserialize)]
struct Args {
    pattern: String,
    path: Option<String>,
    limit: Option<f64>,
}

/// Runs one `find` call: a glob over the tree below the path, `.gitignore` honoured.
pub async fn run(env: &ToolEnv, args: Value, cancel: CancellationToken) -> ToolResult {
    let args: Args = parse_args("find", &args)?;
    let root = path::resolve(args.path.as_deref().unwrap_or("."), &env.cwd);
    if !root.exists() {
        return Err(BuiltinToolError::failed(format!(
            "Path not found: {}",
            root.display()
        )));
    }
    if !root.is_dir() {
        return Err(BuiltinToolError::failed(format!(
            "Not a directory: {}",
            root.display()
        )));
    }
    let limit = count_arg(args.limit).map_or(DEFAULT_LIMIT, |l| l.max(1) as usize);
    let task = tokio::task::spawn_blocking(move || search(&root, &args.pattern, limit, &cancel));
    task.await
        .map_err(|e| BuiltinToolError::failed(format!("find failed: {e}")))?
}

fn search(root: &Path, pattern: &str, limit: usize, cancel: &CancellationToken) -> ToolResult {
    let mut pattern = pattern;
    while let Some(rest) = pattern.strip_prefix("./") {
        pattern = rest;
    }
    let is_path_pattern = pattern.contains('/');
    // Smart case: an all-lowercase pattern matches either case.
    let ignore_case = pattern == pattern.to_lowercase();
    let absolute = Path::new(pattern).is_absolute();
    let glob = GlobBuilder::new(pattern)
        .case_insensitive(ignore_case)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| BuiltinToolError::failed(format!("Invalid glob '{pattern}': {e}")))?
        .compile_matcher();
    let mut walk = ignore::WalkBuilder::new(root);
    walk.hidden(false)
        .require_git(false)
        .sort_by_file_name(std::cmp::Ord::cmp);
    walk.filter_entry(|e| e.file_name() != ".git");
    let mut results: Vec<String> = Vec::new();
    let mut count = 0usize;
    let mut out_bytes = 0usize;
    let mut limit_reached = false;
    for entry in walk.build().filter_map(Result::ok) {
        if cancel.is_cancelled() {
            return Err(BuiltinToolError::Aborted("Operation aborted".into()));
        }
        if entry.depth() == 0 {
            continue;
        }
        let full = entry.path();
        let Ok(rel) = full.strip_prefix(root) else {
            continue;
        };
        let rel_text = rel.to_string_lossy().replace('\\', "/");
        let hit = if absolute {
            glob.is_match(full)
        } else if is_path_pattern {
            glob.is_match(&rel_text)
        } else {
            entry.file_name().to_str().is_some_and(|n| glob.is_match(n))
        };
        if !hit {
            continue;
        }
        if count == limit {
            limit_reached = true;
            break;
        }
        count += 1;
        let shown = if entry.file_type().is_some_and(|t| t.is_dir()) {
            format!("{rel_text}/")
        } else {
            rel_text
        };
        if out_bytes.saturating_sub(1) <= DEFAULT_MAX_BYTES {
            results.push(shown.clone());
        }
        out_bytes += shown.len() + 1;
    }
    if count == 0 {
        return Ok(ToolOutput::text("No files found matching pattern"));
    }
    let mut truncation = truncate_head(&results.join("\n"), usize::MAX, DEFAULT_MAX_BYTES);
    truncation.total_lines = count;
    truncation.total_bytes = out_bytes.saturating_sub(1);
    let mut notices = LimitNotices::default();
    if limit_reached {
        notices.add(
            format!(
                "{limit} results limit reached. Use limit={} for more, or refine pattern",
                limit * 2
            ),
            "resultLimitReached",
            json!(limit),
        );
    }
    notices.byte_limit(&truncation);
    Ok(notices.finish(truncation.content))
}
