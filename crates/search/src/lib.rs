//! `arbor-search`: find anything in any session, on any branch.
//!
//! An SQLite FTS5 index (DECISIONS §34.1) kept beside the session files. It is a cache: it is
//! brought up to date incrementally before each search ([`refresh`](SearchIndex::refresh):
//! appended files cost their new lines, rewritten ones are read again, deleted ones drop
//! out), rebuilt when missing, of another schema or broken, and nothing else in Arbor needs
//! it (DECISIONS §34.6). Each hit names its session, its entry and whether that entry is on
//! the session's active path or on an abandoned branch.
//!
//! Layering: depends on `arbor-session` (entries are read by its readers, never parsed here)
//! and `arbor-ai` (message types); nothing of providers, the agent loop or terminals.

#![deny(missing_docs)]
#![deny(missing_debug_implementations)]

mod branch;
pub mod error;
pub mod extract;
pub mod query;
mod refresh;
pub mod schema;
mod snippet;
mod stored;

use std::path::{Path, PathBuf};

use rusqlite::Connection;

pub use error::{Result, SearchError};
pub use query::{check_since, words, BranchFilter, BranchState, Hit, Query, Stores, RANK_WINDOW};
pub use refresh::RefreshReport;
pub use schema::{index_path, INDEX_FILE_NAME, SCHEMA_VERSION};
pub use snippet::excerpt;
pub use stored::fill_stored_snippets;

use error::sql;

/// An open search index: one SQLite connection to the index file, used from one thread at a
/// time.
#[derive(Debug)]
pub struct SearchIndex {
    path: PathBuf,
    conn: Connection,
}

/// What [`SearchIndex::search_files`] found, and what it had to say about the way there.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The hits, best first, each with its snippet.
    pub hits: Vec<Hit>,
    /// What the refresh before the search read, replaced and dropped.
    pub report: RefreshReport,
    /// Warnings about the index itself (rebuilt, unusable) and about skipped files.
    pub warnings: Vec<String>,
}

impl SearchIndex {
    /// Opens the index file at `path`, creating it when missing and rebuilding it when it is
    /// of another schema version.
    pub fn open(path: &Path) -> Result<Self> {
        let (conn, _) = schema::open(path)?;
        Ok(Self {
            path: path.to_owned(),
            conn,
        })
    }

    /// Where the index file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Brings the index up to date with `files`, every session file the caller can see;
    /// files it no longer lists are dropped from the index.
    pub fn refresh(&mut self, files: &[PathBuf]) -> Result<RefreshReport> {
        let report =
            refresh::refresh(&mut self.conn, files).map_err(sql(&self.path, "cannot update"))?;
        schema::settle_wal(&self.conn, &self.path);
        Ok(report)
    }

    /// Runs `query` over what is indexed now, best hits first, each with its snippet.
    pub fn search(&self, query: &Query) -> Result<Vec<Hit>> {
        if let Some(since) = &query.since {
            check_since(since)?;
        }
        let words = words(&query.text);
        if words.is_empty() {
            return Err(SearchError::Query(format!(
                "nothing to search for in {:?}: give at least one word",
                query.text
            )));
        }
        let mut hits = query::run(&self.conn, query).map_err(sql(&self.path, "cannot search"))?;
        // Hits in a database store get their snippets from the store (`fill_stored_snippets`).
        for hit in hits.iter_mut().filter(|h| h.store.is_none()) {
            snippet::fill(hit, &words);
        }
        Ok(hits)
    }

    /// Opens the index at `path` and refreshes it over `files`. An index that cannot be
    /// opened or updated is deleted and built again from the files, with a warning
    /// (DECISIONS §34.6); only a failure of the rebuilt one is an error. Returns the index,
    /// what the refresh did, and the warnings (about the index and about skipped files).
    pub fn open_refreshed(
        path: &Path,
        files: &[PathBuf],
    ) -> Result<(Self, RefreshReport, Vec<String>)> {
        let mut warnings = Vec::new();
        let attempt = Self::open(path).and_then(|mut index| {
            let report = index.refresh(files)?;
            Ok((index, report))
        });
        let (index, report) = match attempt {
            Ok(done) => done,
            Err(e) => {
                warnings.push(format!("{}; rebuilding the search index", chain(&e)));
                schema::remove(path)?;
                let mut index = Self::open(path)?;
                let report = index.refresh(files)?;
                (index, report)
            }
        };
        warnings.extend(report.warnings.iter().cloned());
        Ok((index, report, warnings))
    }

    /// Opens the index at `path`, refreshes it over `files` and searches it
    /// ([`open_refreshed`](Self::open_refreshed), then [`search`](Self::search)); only a
    /// failure of a rebuilt index, or a bad query, is an error.
    pub fn search_files(path: &Path, files: &[PathBuf], query: &Query) -> Result<Outcome> {
        if let Some(since) = &query.since {
            check_since(since)?;
        }
        let (index, report, warnings) = Self::open_refreshed(path, files)?;
        let hits = index.search(query)?;
        Ok(Outcome {
            hits,
            report,
            warnings,
        })
    }
}

/// An error and its sources on one line.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}
