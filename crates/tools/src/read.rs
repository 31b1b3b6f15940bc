//! `read`: a text file's lines (with pi's continuation notes) or an image (DECISIONS §22.43).
//! The file is streamed: only the selected lines up to the limits are kept in memory, so a
//! multi-gigabyte log costs no more than a small file.

use std::path::Path;

use arbor_ai::{ContentBlock, ImageContent};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::truncate::{
    format_size, truncate_head, Truncation, DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES,
};
use super::{
    count_arg, image, io_error_text, parse_args, path, BuiltinToolError, ToolEnv, ToolOutput,
    ToolResult, ToolSpec,
};

/// The largest image file `read` decodes: far above any picture worth sending (they are shrunk
/// to 4.5 MB of base64), a bound on what a disguised file can make us load.
pub const MAX_IMAGE_FILE_BYTES: u64 = 64 << 20;

/// The `read` tool's declaration.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "read",
        label: "read",
        description: format!(
            "Show a file's contents. Text files come back as lines, at most {DEFAULT_MAX_LINES} lines or {}KB \
             per call (whichever comes first); pass offset and limit to page through longer files and keep \
             going with offset until you have what you need. Images (jpg, png, gif, webp, bmp) are attached \
             as pictures.",
            DEFAULT_MAX_BYTES / 1024
        ),
        parameters: json!({
            "type": "object",
            "required": ["path"],
            "properties": {
                "path": {"type": "string", "description": "File to read, relative to the working directory or absolute"},
                "offset": {"type": "number", "description": "First line to show, counting from 1"},
                "limit": {"type": "number", "description": "How many lines to show at most"}
            }
        }),
        snippet: "Read file contents",
    }
}

#[derive(Debug, Deserialize)]
struct Args {
    path: String,
    offset: Option<f64>,
    limit: Option<f64>,
}

/// Runs one `read` call: a text file's selected lines (streamed), or an image.
pub async fn run(env: &ToolEnv, args: Value, cancel: &CancellationToken) -> ToolResult {
    let args: Args = parse_args("read", &args)?;
    let abs = path::resolve_for_read(&args.path, &env.cwd);
    // Checked before opening: opening a FIFO would wait for a writer.
    if let Ok(meta) = tokio::fs::metadata(&abs).await {
        if let Some(kind) = path::special_kind(&meta) {
            return Err(BuiltinToolError::failed(format!(
                "Cannot read {}: it is {kind}, not a regular file",
                abs.display()
            )));
        }
    }
    let mut file = tokio::fs::File::open(&abs)
        .await
        .map_err(|e| BuiltinToolError::failed(io_error_text(&e, "access", &abs)))?;
    let meta = file
        .metadata()
        .await
        .map_err(|e| BuiltinToolError::failed(io_error_text(&e, "access", &abs)))?;
    if meta.is_dir() {
        return Err(BuiltinToolError::failed(format!(
            "EISDIR: illegal operation on a directory, read '{}'",
            abs.display()
        )));
    }
    let mut head = [0u8; 64];
    let n = read_some(&mut file, &mut head, &abs).await?;
    if let Some(mime) = image::sniff(&head[..n]) {
        // An image is decoded whole, so its size is bounded first (DECISIONS §30.11): a huge
        // file with an image's first bytes must not be loaded into memory.
        if meta.len() > MAX_IMAGE_FILE_BYTES {
            return Ok(ToolOutput::text(format!(
                "Read image file [{mime}]\n[Image omitted: the file is {}, over the {} an image may have]",
                format_size(meta.len() as usize),
                format_size(MAX_IMAGE_FILE_BYTES as usize)
            )));
        }
        let mut bytes = Vec::new();
        tokio::fs::File::open(&abs)
            .await
            .map_err(|e| BuiltinToolError::failed(io_error_text(&e, "open", &abs)))?
            .take(MAX_IMAGE_FILE_BYTES)
            .read_to_end(&mut bytes)
            .await
            .map_err(|e| BuiltinToolError::failed(io_error_text(&e, "read", &abs)))?;
        return Ok(image_result(&bytes, mime, !env.settings.no_image_resize).await);
    }
    let offset = count_arg(args.offset);
    let limit = count_arg(args.limit);
    if limit.is_some_and(|l| l < 0) {
        return Err(BuiltinToolError::failed("limit must not be negative"));
    }
    let start = offset.map_or(0, |o| (o - 1).max(0) as usize);
    let limit = limit.map(|l| l as usize);
    let file = tokio::fs::File::open(&abs)
        .await
        .map_err(|e| BuiltinToolError::failed(io_error_text(&e, "open", &abs)))?;
    let sel = select_lines(file, start, limit, cancel, &abs).await?;
    text_result(&args.path, offset, start, limit, sel)
}

/// `out` with pi's `structuredContent` for a read: the text, or for an image
/// `{type:"image", data, mimeType, note}` (the note is the text block beside it).
pub fn with_structured_content(out: ToolOutput) -> ToolOutput {
    let text = out
        .content
        .iter()
        .find_map(ContentBlock::as_text)
        .unwrap_or_default()
        .to_owned();
    let image = out.content.iter().find_map(|b| match b {
        ContentBlock::Image(i) => Some(i),
        _ => None,
    });
    let structured = match image {
        Some(i) => json!({"type": "image", "data": i.data, "mimeType": i.mime_type, "note": text}),
        None => Value::String(text),
    };
    out.with_structured_content(structured)
}

async fn read_some(
    file: &mut tokio::fs::File,
    buf: &mut [u8],
    abs: &Path,
) -> Result<usize, BuiltinToolError> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = file
            .read(&mut buf[filled..])
            .await
            .map_err(|e| BuiltinToolError::failed(io_error_text(&e, "read", abs)))?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(filled)
}

async fn image_result(bytes: &[u8], mime: &'static str, resize: bool) -> ToolOutput {
    let owned = bytes.to_vec();
    let prepared = tokio::task::spawn_blocking(move || image::prepare(&owned, mime, resize)).await;
    match prepared {
        Ok(Ok(p)) => {
            let mut note = format!("Read image file [{}]", p.mime_type);
            for h in &p.hints {
                note.push('\n');
                note.push_str(h);
            }
            ToolOutput {
                content: vec![
                    ContentBlock::text(note),
                    ContentBlock::Image(ImageContent {
                        data: p.data,
                        mime_type: p.mime_type.to_owned(),
                        ..Default::default()
                    }),
                ],
                ..ToolOutput::default()
            }
        }
        Ok(Err(image::Omitted(why))) => ToolOutput::text(format!("Read image file [{mime}]\n{why}")),
        Err(_) => ToolOutput::text(format!(
            "Read image file [{mime}]\n[Image omitted: could not be converted to a supported inline image format.]"
        )),
    }
}

/// The selected lines as far as the limits can use them, plus counts of the whole file.
struct Selection {
    truncation: Truncation,
    total_file_lines: usize,
    first_line_bytes: usize,
}

/// Streams the file, keeping lines `[start, start+limit)` until the output limits are certainly
/// exceeded; counts every line of the file (a trailing newline starts one more, empty line).
async fn select_lines(
    mut file: tokio::fs::File,
    start: usize,
    limit: Option<usize>,
    cancel: &CancellationToken,
    abs: &Path,
) -> Result<Selection, BuiltinToolError> {
    let end = limit.map_or(usize::MAX, |l| start.saturating_add(l));
    let mut buf = vec![0u8; 64 * 1024];
    let mut line = 0usize;
    let mut kept: Vec<u8> = Vec::new();
    let mut kept_lines = 0usize;
    let mut collecting = true;
    let mut overflow = false;
    let mut sel_lines = 0usize;
    let mut sel_bytes = 0usize;
    let mut first_line_bytes = 0usize;
    let mut cur_len = 0usize;
    let mut started = false;
    loop {
        if cancel.is_cancelled() {
            return Err(BuiltinToolError::Aborted("Operation aborted".into()));
        }
        let n = file
            .read(&mut buf)
            .await
            .map_err(|e| BuiltinToolError::failed(io_error_text(&e, "read", abs)))?;
        let mut rest = &buf[..n];
        loop {
            let nl = memchr::memchr(b'\n', rest);
            let seg = nl.map_or(rest, |i| &rest[..i]);
            let selected = line >= start && line < end;
            if selected && collecting {
                if !started && line > start {
                    kept.push(b'\n');
                }
                let room = (DEFAULT_MAX_BYTES + 1).saturating_sub(kept.len());
                if seg.len() > room {
                    kept.extend_from_slice(&seg[..room]);
                    collecting = false;
                    overflow = true;
                } else {
                    kept.extend_from_slice(seg);
                }
            }
            started = true;
            if selected {
                cur_len += seg.len();
            }
            let Some(i) = nl else { break };
            if selected {
                if sel_lines == 0 {
                    first_line_bytes = cur_len;
                }
                sel_bytes += cur_len + usize::from(sel_lines > 0);
                sel_lines += 1;
                kept_lines += 1;
                if collecting && kept_lines > DEFAULT_MAX_LINES {
                    collecting = false;
                    overflow = true;
                }
            }
            cur_len = 0;
            started = false;
            line += 1;
            rest = &rest[i + 1..];
        }
        if n == 0 {
            break;
        }
    }
    // The text after the last newline (possibly empty) is a line too, as in `split("\n")`.
    let last_selected = line >= start && line < end;
    if last_selected {
        if sel_lines == 0 {
            first_line_bytes = cur_len;
        }
        sel_bytes += cur_len + usize::from(sel_lines > 0);
        sel_lines += 1;
    }
    let total_file_lines = line + 1;
    let text = String::from_utf8_lossy(&kept);
    let mut truncation = truncate_head(&text, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
    // Counts describe the whole selection, not only the part kept in memory; like pi, a
    // selection ending in an empty line counts one line less.
    let ends_empty = last_selected && cur_len == 0;
    truncation.total_lines = sel_lines - usize::from(ends_empty);
    truncation.total_bytes = sel_bytes;
    truncation.truncated |= overflow;
    Ok(Selection {
        truncation,
        total_file_lines,
        first_line_bytes,
    })
}

fn text_result(
    shown_path: &str,
    offset: Option<i64>,
    start: usize,
    limit: Option<usize>,
    sel: Selection,
) -> ToolResult {
    let Selection {
        truncation,
        total_file_lines,
        first_line_bytes,
    } = sel;
    if start >= total_file_lines {
        let shown = offset.map_or_else(|| "0".to_owned(), |o| o.to_string());
        return Err(BuiltinToolError::failed(format!(
            "Offset {shown} is beyond end of file ({total_file_lines} lines total)"
        )));
    }
    let first_display = start + 1;
    let limit_text = format_size(DEFAULT_MAX_BYTES);
    if truncation.first_line_exceeds_limit {
        let text = format!(
            "[Line {first_display} is {}, exceeds {limit_text} limit. Use bash: sed -n '{first_display}p' {shown_path} | head -c {DEFAULT_MAX_BYTES}]",
            format_size(first_line_bytes)
        );
        return Ok(ToolOutput::text(text).with_details(json!({ "truncation": truncation })));
    }
    if truncation.truncated {
        let last = first_display + truncation.output_lines - 1;
        let next = last + 1;
        let by_bytes = truncation.truncated_by == Some(super::truncate::TruncatedBy::Bytes);
        let size_note = if by_bytes {
            format!(" ({limit_text} limit)")
        } else {
            String::new()
        };
        let text = format!(
            "{}\n\n[Showing lines {first_display}-{last} of {total_file_lines}{size_note}. Use offset={next} to continue.]",
            truncation.content
        );
        return Ok(ToolOutput::text(text).with_details(json!({ "truncation": truncation })));
    }
    if let Some(limit) = limit {
        let shown = (start + limit).min(total_file_lines) - start;
        if start + shown < total_file_lines {
            let remaining = total_file_lines - (start + shown);
            let next = start + shown + 1;
            return Ok(ToolOutput::text(format!(
                "{}\n\n[{remaining} more lines in file. Use offset={next} to continue.]",
                truncation.content
            )));
        }
    }
    Ok(ToolOutput::text(truncation.content))
}
