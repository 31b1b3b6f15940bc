//! `--export FILE [OUT]` and RPC `export_html`: one self-contained HTML page (no scripts, no
//! external resources) with the session's entry tree and the transcript of its active path,
//! HTML-escaped so no session text can inject markup.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::error::CliError;
use crate::render::transcript;
use crate::store;

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Builds the page for the session file `file`.
pub async fn render_html(file: &Path) -> Result<String, CliError> {
    let ctx = store::load_context(file, None).await?;
    let header = crate::lookup::read_header(file)?;
    let view = store::tree_view(file).await?;
    let mut tree_bytes = Vec::new();
    crate::render::tree::write(&mut tree_bytes, &view).map_err(|e| CliError::io("tree view", e))?;
    let tree = String::from_utf8_lossy(&tree_bytes);
    let text = transcript::render(
        &ctx.header,
        &ctx.messages,
        transcript::TranscriptOptions { full: true },
    );
    let title = format!("Arbor session {}", header.id);
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{t}</title>\n<style>\n\
         body{{font-family:system-ui,sans-serif;margin:2rem auto;max-width:60rem;padding:0 1rem;color:#222}}\n\
         pre{{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:1rem;border-radius:6px;font-size:13px}}\n\
         h2{{border-bottom:1px solid #ddd}}\n</style>\n</head>\n<body>\n<h1>{t}</h1>\n\
         <p>Working directory: <code>{cwd}</code> · created {ts}</p>\n<h2>Tree</h2>\n<pre class=\"tree\">{tree}</pre>\n\
         <h2>Transcript (active path)</h2>\n<pre class=\"transcript\">{body}</pre>\n</body>\n</html>\n",
        t = escape(&title),
        cwd = escape(&header.cwd),
        ts = escape(&header.timestamp),
        tree = escape(&tree),
        body = escape(&text),
    ))
}

/// Writes the page to `out` (default: the session file with `.html`); returns where.
pub async fn export(file: &Path, out: Option<&Path>) -> Result<PathBuf, CliError> {
    let html = render_html(file).await?;
    // A session written before its keys were known (or by another tool) is scrubbed here with
    // the keys Arbor holds now (DECISIONS §30.10).
    let secrets = crate::secrets::Secrets::for_current_run()?;
    let html = secrets.redactor.scrub(&html).into_owned();
    let out = out.map_or_else(|| file.with_extension("html"), Path::to_path_buf);
    tokio::fs::write(&out, html)
        .await
        .map_err(|e| CliError::io(out.display().to_string(), e))?;
    Ok(out)
}

/// `arbor --export FILE [OUT]`: prints the written path.
pub async fn run(args: &[String]) -> Result<ExitCode, CliError> {
    let file = PathBuf::from(&args[0]);
    if !file.is_file() {
        return Err(CliError::Startup(format!(
            "Error: File not found: {}",
            file.display()
        )));
    }
    let out = args.get(1).map(PathBuf::from);
    let path = export(&file, out.as_deref()).await?;
    println!("{}", path.display());
    Ok(ExitCode::SUCCESS)
}
