//! Search across sessions for the app: which files to index, where the index lives, and the
//! text a hit is printed as. `arbor session search`, the RPC `search` command and the TUI's
//! `/search` all go through [`run`].

use std::path::PathBuf;

use arbor_agent::session::jsonl::Layout;
use arbor_agent::session::{JsonlRepository, SessionRepository};
use arbor_search::{BranchFilter, Hit, Outcome, Query, SearchIndex};

use crate::error::{CliError, Result};
use crate::lookup::SessionDirs;

/// Hits shown when the caller does not ask for all of them.
pub const DEFAULT_LIMIT: usize = 20;

/// Searches every session file under `dirs`.
pub async fn run(dirs: &SessionDirs, query: Query) -> Result<Outcome> {
    let repo = match dirs {
        SessionDirs::Layout { root } => JsonlRepository::new(root.clone()),
        SessionDirs::Flat { dir } => JsonlRepository::flat(dir.clone()),
    };
    run_in(repo, query).await
}

/// Searches every session file `repo` can see (the index is `search-index.sqlite` in its
/// sessions directory, DECISIONS §34.6), on a blocking thread.
pub async fn run_in(repo: JsonlRepository, query: Query) -> Result<Outcome> {
    let root = match repo.layout() {
        Layout::PerCwd(root) | Layout::Flat(root) => root.clone(),
    };
    let index = arbor_search::index_path(&root);
    tokio::task::spawn_blocking(move || {
        let files: Vec<PathBuf> = repo.session_files();
        SearchIndex::search_files(&index, &files, &query)
    })
    .await
    .map_err(|e| CliError::Internal(format!("search task failed: {e}")))?
    .map_err(CliError::from)
}

/// Searches the session files under `dirs` and every session of the PostgreSQL store at
/// `url`, in the one index beside the files (DECISIONS §34.15): the files are refreshed as in
/// [`run`], then the store's sessions past the last entry indexed of each; stored hits get
/// their snippets from the store.
pub async fn run_with_store(dirs: &SessionDirs, url: &str, query: Query) -> Result<Outcome> {
    if let Some(since) = &query.since {
        arbor_search::check_since(since)?;
    }
    let repo = crate::pgstore::connect(url).await?;
    let store = format!("{} (schema {})", repo.server(), repo.schema());
    let files_repo = match dirs {
        SessionDirs::Layout { root } => JsonlRepository::new(root.clone()),
        SessionDirs::Flat { dir } => JsonlRepository::flat(dir.clone()),
    };
    let root = match files_repo.layout() {
        Layout::PerCwd(root) | Layout::Flat(root) => root.clone(),
    };
    let index_path = arbor_search::index_path(&root);
    let (mut index, mut report, mut warnings) = tokio::task::spawn_blocking(move || {
        let files: Vec<PathBuf> = files_repo.session_files();
        SearchIndex::open_refreshed(&index_path, &files)
    })
    .await
    .map_err(|e| CliError::Internal(format!("search task failed: {e}")))??;
    let listing = repo.list().await?;
    let r = &repo;
    let open = move |id: String| async move { r.open_read_only(&id).await };
    let stored = index.refresh_store(&store, &listing, open).await?;
    report.indexed += stored.indexed;
    report.appended += stored.appended;
    report.removed += stored.removed;
    report.unchanged += stored.unchanged;
    warnings.extend(stored.warnings.iter().cloned());
    report.warnings.extend(stored.warnings);
    let text = query.text.clone();
    let mut hits = tokio::task::spawn_blocking(move || index.search(&query))
        .await
        .map_err(|e| CliError::Internal(format!("search task failed: {e}")))??;
    arbor_search::fill_stored_snippets(&mut hits, &text, open).await;
    Ok(Outcome {
        hits,
        report,
        warnings,
    })
}

/// Parses `--branch`.
pub fn branch_filter(text: &str) -> Result<BranchFilter> {
    BranchFilter::parse(text).ok_or_else(|| {
        CliError::Usage(format!(
            "--branch {text}: expected active, abandoned or any"
        ))
    })
}

/// The text form: per hit a heading line (date, branch state, session, entry, what matched)
/// and the snippet indented below it.
pub fn render_text(hits: &[Hit]) -> String {
    let mut out = String::new();
    for hit in hits {
        let date = hit
            .timestamp
            .get(..16)
            .unwrap_or(&hit.timestamp)
            .replace('T', " ");
        let session = match &hit.session_name {
            Some(name) => format!("{} ({name})", short_id(&hit.session_id)),
            None => short_id(&hit.session_id).to_owned(),
        };
        out.push_str(&format!(
            "{date}  {:<9}  {session}  entry {}  {}{}\n",
            hit.branch.as_str(),
            hit.entry_id,
            hit.kind,
            if hit.exact { "" } else { " (words)" },
        ));
        out.push_str(&format!("    {}\n", hit.snippet));
    }
    out
}

/// The first 8 characters of a session id (enough to name it in `arbor session` commands,
/// which take unique prefixes).
fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}
