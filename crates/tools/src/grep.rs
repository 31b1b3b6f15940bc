//! `grep`: searches file contents with ripgrep's own crates (no `rg` binary needed), honouring
//! `.gitignore`, hidden files included, pi's limits and line format (DECISIONS §22.2).
//! Files are searched in path order so results are stable between runs.

use std::path::{Path, PathBuf};

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::truncate::{
    truncate_head, truncate_line, LimitNotices, DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH,
};
use super::{
    count_arg, parse_args, path, BuiltinToolError, ToolEnv, ToolOutput, ToolResult, ToolSpec,
};

/// Matches shown when the call gives no limit.
pub const DEFAULT_LIMIT: usize = 100;

/// The `grep` tool's declaration.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "grep",
        label: "grep",
        description: format!(
            "Search inside files for a regular expression (or a literal string) and get matching lines as \
             path:line: text. Files ignored by .gitignore are skipped. At most {DEFAULT_LIMIT} matches or {}KB \
             are returned, and lines are cut at {GREP_MAX_LINE_LENGTH} characters.",
            DEFAULT_MAX_BYTES / 1024
        ),
        parameters: json!({
            "type": "object",
            "required": ["pattern"],
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression, or plain text with literal=true"},
                "path": {"type": "string", "description": "Directory or file to search (default: the working directory)"},
                "glob": {"type": "string", "description": "Only search files matching this glob, relative to path, e.g. 'src/**/*.rs'; without '/', e.g. '*.rs', it matches file names at any depth"},
                "ignoreCase": {"type": "boolean", "description": "Ignore letter case (default: false)"},
                "literal": {"type": "boolean", "description": "Take the pattern as plain text, not a regex (default: false)"},
                "context": {"type": "number", "description": "Lines to show before and after each match (default: 0)"},
                "limit": {"type": "number", "description": "Most matches to return (default: 100)"}
            }
        }),
        snippet: "Search file contents for patterns (respects .gitignore)",
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Args {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    ignore_case: bool,
    #[serde(default)]
    literal: bool,
    context: Option<f64>,
    limit: Option<f64>,
}

/// One output line before formatting.
struct Hit {
    line: u64,
    text: String,
    is_match: bool,
}

struct Collect<'a> {
    hits: &'a mut Vec<Hit>,
    cancel: &'a CancellationToken,
    /// After the limit only the existence of one more match matters.
    first_match_only: bool,
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;
    fn matched(
        &mut self,
        _: &grep_searcher::Searcher,
        m: &SinkMatch<'_>,
    ) -> Result<bool, Self::Error> {
        // A multi-line match still reports its first line, as rg's JSON does.
        let text = String::from_utf8_lossy(m.bytes());
        let first = text.split('\n').next().unwrap_or("");
        self.hits.push(Hit {
            line: m.line_number().unwrap_or(0),
            text: first.trim_end_matches('\r').to_owned(),
            is_match: true,
        });
        Ok(!self.cancel.is_cancelled() && !self.first_match_only)
    }
    fn context(
        &mut self,
        _: &grep_searcher::Searcher,
        c: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        let text = String::from_utf8_lossy(c.bytes());
        let text = text
            .strip_suffix('\n')
            .unwrap_or(&text)
            .trim_end_matches('\r')
            .to_owned();
        self.hits.push(Hit {
            line: c.line_number().unwrap_or(0),
            text,
            is_match: false,
        });
        Ok(!self.cancel.is_cancelled())
    }
}

/// Runs one `grep` call: a regex or literal search, in path order, `.gitignore` honoured.
pub async fn run(env: &ToolEnv, args: Value, cancel: CancellationToken) -> ToolResult {
    let args: Args = parse_args("grep", &args)?;
    let root = path::resolve(args.path.as_deref().unwrap_or("."), &env.cwd);
    let meta = std::fs::metadata(&root)
        .map_err(|_| BuiltinToolError::failed(format!("Path not found: {}", root.display())))?;
    let context = count_arg(args.context).map_or(0, |c| c.max(0) as usize);
    let limit = count_arg(args.limit).map_or(DEFAULT_LIMIT, |l| l.max(1) as usize);
    let task = tokio::task::spawn_blocking(move || {
        search(&root, meta.is_dir(), &args, context, limit, &cancel)
    });
    task.await
        .map_err(|e| BuiltinToolError::failed(format!("grep failed: {e}")))?
}

fn search(
    root: &Path,
    is_dir: bool,
    args: &Args,
    context: usize,
    limit: usize,
    cancel: &CancellationToken,
) -> ToolResult {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.ignore_case)
        .fixed_strings(args.literal)
        .build(&args.pattern)
        .map_err(|e| BuiltinToolError::failed(format!("regex parse error: {e}")))?;
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let files: Box<dyn Iterator<Item = PathBuf>> = if is_dir {
        let mut walk = ignore::WalkBuilder::new(root);
        walk.hidden(false)
            .require_git(false)
            .sort_by_file_name(std::cmp::Ord::cmp);
        walk.filter_entry(|e| e.file_name() != ".git");
        if let Some(glob) = &args.glob {
            let glob = strip_dot_slash(glob);
            let mut ob = ignore::overrides::OverrideBuilder::new(root);
            ob.add(&glob)
                .map_err(|e| BuiltinToolError::failed(format!("Invalid glob '{glob}': {e}")))?;
            walk.overrides(
                ob.build()
                    .map_err(|e| BuiltinToolError::failed(format!("Invalid glob '{glob}': {e}")))?,
            );
        }
        Box::new(
            walk.build()
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                .map(ignore::DirEntry::into_path),
        )
    } else {
        Box::new(std::iter::once(root.to_path_buf()))
    };
    let mut lines: Vec<String> = Vec::new();
    let mut out_bytes = 0usize;
    let mut line_count = 0usize;
    let mut matches = 0usize;
    let mut limit_reached = false;
    let mut lines_truncated = false;
    let mut limit_hit = false;
    let mut trailing_end = 0u64;
    'files: for file in files {
        if cancel.is_cancelled() {
            return Err(BuiltinToolError::Aborted("Operation aborted".into()));
        }
        let mut hits = Vec::new();
        let sink = Collect {
            hits: &mut hits,
            cancel,
            first_match_only: limit_hit,
        };
        if searcher.search_path(&matcher, &file, sink).is_err() {
            continue; // unreadable files are skipped, as rg reports and moves on
        }
        let shown = if is_dir {
            file.strip_prefix(root).map_or_else(
                |_| file.display().to_string(),
                |p| p.to_string_lossy().replace('\\', "/"),
            )
        } else {
            file.file_name().map_or_else(
                || file.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        };
        if limit_hit {
            // The limit fell on the previous file's last match: any match here means more exist.
            if hits.iter().any(|h| h.is_match) {
                limit_reached = true;
                break 'files;
            }
            continue;
        }
        for hit in hits {
            let mut push = |hit: &Hit, is_match: bool| {
                let (text, cut) = truncate_line(&hit.text, GREP_MAX_LINE_LENGTH);
                lines_truncated |= cut;
                let line = if is_match {
                    format!("{shown}:{}: {text}", hit.line)
                } else {
                    format!("{shown}-{}- {text}", hit.line)
                };
                if out_bytes.saturating_sub(1) <= DEFAULT_MAX_BYTES {
                    out_bytes += line.len() + 1;
                    lines.push(line);
                } else {
                    out_bytes += line.len() + 1;
                }
                line_count += 1;
            };
            if !limit_hit {
                push(&hit, hit.is_match);
                if hit.is_match {
                    matches += 1;
                    if matches >= limit {
                        limit_hit = true;
                        trailing_end = hit.line + context as u64;
                    }
                }
                continue;
            }
            // Past the limit: finish the last match's trailing context, then stop.
            let in_window = hit.line <= trailing_end;
            if in_window {
                push(&hit, false);
            }
            if hit.is_match {
                limit_reached = true;
            }
            if limit_reached && !(in_window && hit.line < trailing_end) {
                break 'files;
            }
        }
    }
    if matches == 0 {
        return Ok(ToolOutput::text("No matches found"));
    }
    let raw = lines.join("\n");
    let mut truncation = truncate_head(&raw, usize::MAX, DEFAULT_MAX_BYTES);
    truncation.total_lines = line_count;
    truncation.total_bytes = out_bytes.saturating_sub(1);
    let mut notices = LimitNotices::default();
    if limit_reached {
        notices.add(
            format!(
                "{limit} matches limit reached. Use limit={} for more, or refine pattern",
                limit * 2
            ),
            "matchLimitReached",
            json!(limit),
        );
    }
    notices.byte_limit(&truncation);
    if lines_truncated {
        notices.add(
            format!(
                "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
            ),
            "linesTruncated",
            json!(true),
        );
    }
    Ok(notices.finish(truncation.content))
}

fn strip_dot_slash(glob: &str) -> String {
    let (neg, rest) = match glob.strip_prefix('!') {
        Some(r) => ("!", r),
        None => ("", glob),
    };
    let mut rest = rest;
    while let Some(r) = rest.strip_prefix("./") {
        rest = r;
    }
    format!("{neg}{rest}")
}
