//! `--export FILE [OUT]`, RPC `export_html`, `/export` and `/share`: one self-contained HTML
//! page people read — the conversation rendered (Markdown, code, tool calls and results,
//! images) beside the session's tree, where clicking an entry shows the branch that ends there
//! (DECISIONS §35). Every text of the session is escaped; the page loads nothing else.

mod entries;
mod markdown;
mod page;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use arbor_session::tree_view::{Layout, Rows};
use arbor_session::SessionStorage;

use crate::error::CliError;
use crate::render::tree::{plural, TreeView};
use crate::store;

use page::escape;

/// Entries read per page while rendering, so a large session is never held whole.
const ENTRY_PAGE: usize = 512;

/// Builds the page for the session file `file`.
pub async fn render_html(file: &Path) -> Result<String, CliError> {
    let view = store::tree_view(file).await?;
    let storage = store::open_storage(file).await?;
    let header = storage.header().await?;
    let name = storage.session_name().await?;
    let active: std::collections::HashSet<&str> = view
        .rows
        .iter()
        .zip(&view.active)
        .filter(|(_, on)| **on)
        .map(|(row, _)| &*row.id)
        .collect();

    let mut articles = String::new();
    let mut after = None;
    loop {
        let entries = storage.entries(after, Some(ENTRY_PAGE)).await?;
        for (_, entry) in &entries.entries {
            let json = serde_json::to_value(entry)
                .map_err(|e| CliError::Internal(format!("entry {} as JSON: {e}", entry.id)))?;
            if let Some(html) = entries::article(&json, active.contains(entry.id.as_str())) {
                articles.push_str(&html);
            }
        }
        match entries.next_after_seq {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    drop(storage);

    let title = match name.as_deref().filter(|n| !n.trim().is_empty()) {
        Some(name) => format!("{name} · Arbor session"),
        None => format!("Arbor session {}", header.id),
    };
    let selected = view.leaf.and_then(|n| view.rows.get(n)).map(|r| &*r.id);
    let mut html = String::with_capacity(articles.len() + view.rows.len() * 160 + 16 * 1024);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{style}</style>\n</head>\n<body data-selected=\"{selected}\">\n\
         <nav id=\"sidebar\">\n<h2>Tree · {count}</h2>\n\
         <input id=\"tree-search\" type=\"search\" placeholder=\"Filter the tree\" aria-label=\"Filter the tree\">\n",
        csp = page::CONTENT_SECURITY_POLICY,
        title = escape(&title),
        style = page::STYLE,
        selected = escape(selected.unwrap_or("")),
        count = plural(view.rows.len(), "entry", "entries"),
    );
    tree_list(&mut html, &view);
    let _ = write!(
        html,
        "</nav>\n<main>\n<header><h1>{title}</h1><p>{cwd} · created {created} · session {id}</p></header>\n\
         <div id=\"conversation\">\n{articles}</div>\n</main>\n<script>{script}</script>\n</body>\n</html>\n",
        title = escape(&title),
        cwd = escape(&header.cwd),
        created = escape(&header.timestamp),
        id = escape(&header.id),
        script = page::SCRIPT,
    );
    Ok(html)
}

/// The sidebar: one `<li>` per tree row, laid out as `arbor session tree` draws it (flat
/// chains, indentation only at forks), each a link that selects its branch.
fn tree_list(html: &mut String, view: &TreeView) {
    html.push_str("<ol id=\"tree\">\n");
    let mut rows = Rows::new(&view.links, Layout::default());
    while let Some(row) = rows.next_row() {
        if row.first_detached {
            let _ = writeln!(
                html,
                "<li class=\"detached-heading\">{} unreachable from any root (parentId cycle)</li>",
                plural(view.links.unreachable.len(), "entry", "entries")
            );
        }
        let Some(text) = view.rows.get(row.node) else {
            continue;
        };
        let parent = view.links.parent[row.node]
            .and_then(|p| view.rows.get(p))
            .map_or("", |p| &*p.id);
        let on_path = view.active.get(row.node).copied().unwrap_or(false);
        let is_leaf = view.leaf == Some(row.node);
        let class = match (on_path, is_leaf) {
            (_, true) => "path selected",
            (true, false) => "path",
            (false, false) => "",
        };
        let id = escape(&text.id);
        let _ = write!(
            html,
            "<li class=\"{class}\" data-id=\"{id}\" data-parent=\"{parent}\">{gutter}<a href=\"#leaf={href}\">\
             <span class=\"kind\">{kind}</span> {text}</a>",
            parent = escape(parent),
            gutter = escape(row.gutter),
            href = escape(&percent_encode(&text.id)),
            kind = escape(&text.kind),
            text = escape(&text.text),
        );
        if let Some(label) = &text.label {
            let _ = write!(html, " <span class=\"label\">[{}]</span>", escape(label));
        }
        if is_leaf {
            html.push_str(" <span class=\"leaf-mark\">← leaf</span>");
        }
        html.push_str("</li>\n");
    }
    html.push_str("</ol>\n");
}

/// An entry id as an address fragment (ids are usually hex; anything else is encoded).
fn percent_encode(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Where `/share` writes a session's page: Arbor's `exports` folder, one file per session id
/// (a later share of the same session replaces it; DECISIONS §35.5). Creates the folder,
/// readable only by the user, when it is missing.
pub fn share_path(session_id: &str) -> Result<PathBuf, CliError> {
    let name: String = session_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let dir = crate::config::arbor_home().join("exports");
    if !dir.is_dir() {
        private_dir(&dir)?;
    }
    Ok(dir.join(format!("{name}.html")))
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

/// Creates a missing output folder readable only by the user: the page holds the whole
/// conversation.
fn private_dir(dir: &Path) -> Result<(), CliError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| CliError::io(dir.display().to_string(), e))
}
