//! Search across sessions for the app: which files to index, where the index lives, and the
//! text a hit is printed as. `arbor session search` goes through [`run`], the RPC `search`
//! command and the TUI's `/search` through [`search`]; with a store, every one of them reaches
//! [`run_with_store`].

use std::path::PathBuf;

use arbor_agent::session::jsonl::Layout;
use arbor_agent::session::{JsonlRepository, SessionRepository};
use arbor_search::{BranchFilter, Hit, Outcome, Query, SearchIndex, Stores};

use crate::error::{CliError, Result};
use crate::lookup::SessionDirs;

/// Hits shown when the caller does not ask for all of them.
pub const DEFAULT_LIMIT: usize = 20;

/// Searches every session file under `dirs`, and with `store` (a PostgreSQL connection
/// string) every session of that store too.
pub async fn run(dirs: &SessionDirs, store: Option<&str>, query: Query) -> Result<Outcome> {
    let files = match dirs {
        SessionDirs::Layout { root } => JsonlRepository::new(root.clone()),
        SessionDirs::Flat { dir } => JsonlRepository::flat(dir.clone()),
    };
    search(files, store, query).await
}

/// Searches the session files `files` lists and, with `store`, that PostgreSQL store
/// ([`run_with_store`]). The TUI (`/search`, the session picker's ^F) and RPC (`search`)
/// pass the store the run writes its sessions to (DECISIONS §34.9).
pub async fn search(files: JsonlRepository, store: Option<&str>, query: Query) -> Result<Outcome> {
    match store {
        Some(url) => run_with_store(files, url, query).await,
        None => run_in(files, query).await,
    }
}

/// Searches every session file `repo` can see (the index is `search-index.sqlite` in its
/// sessions directory, DECISIONS §34.6), on a blocking thread. Rows a store search left in
/// the index are not shown: they were not brought up to date (DECISIONS §34.20).
pub async fn run_in(repo: JsonlRepository, mut query: Query) -> Result<Outcome> {
    let index = arbor_search::index_path(&files_root(&repo));
    query.stores = Stores::FilesOnly;
    tokio::task::spawn_blocking(move || {
        let files: Vec<PathBuf> = repo.session_files();
        SearchIndex::search_files(&index, &files, &query)
    })
    .await
    .map_err(task_failed)?
    .map_err(CliError::from)
}

/// Searches the session files of `files` and every session of the PostgreSQL store at
/// `url`, in the one index beside the files (DECISIONS §34.15): the files are refreshed as in
/// [`run_in`], then the store's sessions past the last entry indexed of each; stored hits get
/// their snippets from the store. A store that cannot be reached or read is a warning naming
/// it (never its password) and the hits are the files' alone (DECISIONS §34.21).
pub async fn run_with_store(
    files: JsonlRepository,
    url: &str,
    mut query: Query,
) -> Result<Outcome> {
    if let Some(since) = &query.since {
        arbor_search::check_since(since)?;
    }
    let index_path = arbor_search::index_path(&files_root(&files));
    let (mut index, mut report, mut warnings) = tokio::task::spawn_blocking(move || {
        let files: Vec<PathBuf> = files.session_files();
        SearchIndex::open_refreshed(&index_path, &files)
    })
    .await
    .map_err(task_failed)??;
    let repo = match crate::pgstore::connect(url).await {
        Ok(repo) => Some(repo),
        Err(e) => {
            warnings.push(store_warning(
                &format!("the session store (schema {})", crate::pgstore::schema()),
                &e,
            ));
            None
        }
    };
    query.stores = Stores::FilesOnly;
    if let Some(repo) = &repo {
        let store = store_name(repo);
        let open = move |id: String| async move { repo.open_read_only(&id).await };
        let refreshed = match repo.list().await {
            Ok(listing) => index
                .refresh_store(&store, &listing, open)
                .await
                .map_err(CliError::from),
            Err(e) => Err(CliError::from(e)),
        };
        match refreshed {
            Ok(stored) => {
                report.indexed += stored.indexed;
                report.appended += stored.appended;
                report.removed += stored.removed;
                report.unchanged += stored.unchanged;
                warnings.extend(stored.warnings.iter().cloned());
                report.warnings.extend(stored.warnings);
                query.stores = Stores::Only(store);
            }
            Err(e) => warnings.push(store_warning(&store, &e)),
        }
    }
    let text = query.text.clone();
    let from_store = matches!(query.stores, Stores::Only(_));
    let mut hits = tokio::task::spawn_blocking(move || index.search(&query))
        .await
        .map_err(task_failed)??;
    if let (Some(repo), true) = (&repo, from_store) {
        let open = move |id: String| async move { repo.open_read_only(&id).await };
        arbor_search::fill_stored_snippets(&mut hits, &text, open).await;
    }
    Ok(Outcome {
        hits,
        report,
        warnings,
    })
}

/// A store's name in the index and in its hits: `postgres://user@host/db (schema arbor)`,
/// no password (DECISIONS §34.15).
fn store_name(repo: &arbor_session_postgres::PostgresRepository) -> String {
    format!("{} (schema {})", repo.server(), repo.schema())
}

/// The warning for a store left out of a search. The connection's errors name the server
/// without its password (DECISIONS §24.13).
fn store_warning(store: &str, e: &CliError) -> String {
    format!("{store} was not searched: {e}{STORE_WARNING_END}")
}

/// How the warning for a store left out of a search ends.
const STORE_WARNING_END: &str = "; the hits are from session files only";

/// Whether `warning` is the one for a store left out of a search (the TUI shows it whole
/// and only counts the skipped files).
pub fn is_store_warning(warning: &str) -> bool {
    warning.ends_with(STORE_WARNING_END)
}

fn files_root(repo: &JsonlRepository) -> PathBuf {
    match repo.layout() {
        Layout::PerCwd(root) | Layout::Flat(root) => root.clone(),
    }
}

fn task_failed(e: tokio::task::JoinError) -> CliError {
    CliError::Internal(format!("search task failed: {e}"))
}

/// Parses `--branch`.
pub fn branch_filter(text: &str) -> Result<BranchFilter> {
    BranchFilter::parse(text).ok_or_else(|| {
        CliError::Usage(format!(
            "--branch {text}: expected active, abandoned or any"
        ))
    })
}

/// The text form: per hit a heading line (date, branch state, session, entry, what matched,
/// `[store]` for a stored session) and the snippet indented below it.
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
            "{date}  {:<9}  {session}  entry {}  {}{}{}\n",
            hit.branch.as_str(),
            hit.entry_id,
            hit.kind,
            if hit.exact { "" } else { " (words)" },
            store_mark(hit),
        ));
        out.push_str(&format!("    {}\n", hit.snippet));
    }
    out
}

/// What a hit in a database store adds to its heading in the text forms (`arbor session
/// search`, the TUI's `/search`); JSON and RPC hits carry the store's name in `store`
/// (DECISIONS §34.21).
pub fn store_mark(hit: &Hit) -> &'static str {
    if hit.store.is_some() {
        "  [store]"
    } else {
        ""
    }
}

/// The first 8 characters of a session id (enough to name it in `arbor session` commands,
/// which take unique prefixes).
fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}
