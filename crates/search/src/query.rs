//! Running a search: the FTS5 queries, the filters and the ranking.
//!
//! Ranking (DECISIONS §34.7): among the newest [`RANK_WINDOW`] entries holding every word,
//! hits holding the words as an exact phrase come first, then the others; within each group
//! FTS5's BM25 order (rarer words and shorter entries rank higher), newer entries first on
//! ties. Older entries follow newest first, when filters or `--all` ask for more.

use std::collections::HashSet;

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

use crate::error::SearchError;

/// Which branch state a hit must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BranchFilter {
    /// Only entries on the path from the root to the session's current leaf.
    Active,
    /// Only entries off that path: what was tried and left.
    Abandoned,
    /// Entries on any branch.
    #[default]
    Any,
}

impl BranchFilter {
    /// `active`, `abandoned` or `any`; anything else is `None`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "active" => Some(Self::Active),
            "abandoned" => Some(Self::Abandoned),
            "any" => Some(Self::Any),
            _ => None,
        }
    }
}

/// One search.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// The words to find (punctuation separates words, case and accents do not matter).
    pub text: String,
    /// Which branch state hits must have (default: any).
    pub branch: BranchFilter,
    /// Only entries with a timestamp at or after this ISO date or date-time (UTC).
    pub since: Option<String>,
    /// Only sessions whose working directory is this one.
    pub cwd: Option<String>,
    /// At most this many hits; `None` for all of them.
    pub limit: Option<usize>,
    /// Which database stores' sessions may appear besides the session files.
    pub stores: Stores,
}

/// The sessions of database stores a search may return, besides every session file's
/// (DECISIONS §34.20). The index keeps a store's rows between searches, so a search that did
/// not bring a store up to date (not asked for, or unreachable) leaves that store out rather
/// than show stale hits it cannot cut snippets for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Stores {
    /// Every store the index holds.
    #[default]
    All,
    /// Only the store of this name (as given to `refresh_store`).
    Only(String),
    /// No store: session files only.
    FilesOnly,
}

impl Stores {
    /// The SQL parameters: whether stores are filtered, and the one store let through.
    fn params(&self) -> (bool, Option<&str>) {
        match self {
            Stores::All => (false, None),
            Stores::Only(name) => (true, Some(name)),
            Stores::FilesOnly => (true, None),
        }
    }
}

/// Whether a hit's entry is on the session's active path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BranchState {
    /// On the path from the root to the session's current leaf.
    Active,
    /// On a branch the session has left.
    Abandoned,
}

impl BranchState {
    /// `active` or `abandoned`, as serialized and as accepted by [`BranchFilter::parse`].
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Abandoned => "abandoned",
        }
    }
}

/// One ranked hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    /// The session's id (its header's `id`).
    pub session_id: String,
    /// The session file.
    pub path: String,
    /// The session's working directory.
    pub cwd: String,
    /// The session's name as its latest `session_info` entry set it; `None` when unnamed.
    pub session_name: Option<String>,
    /// The entry to open the session on (for a label, the entry it labels).
    pub entry_id: String,
    /// The entry whose text matched (differs from `entry_id` for labels).
    pub matched_entry_id: String,
    /// The matched entry's timestamp, ISO 8601 as stored in the session.
    pub timestamp: String,
    /// What matched: `user`, `assistant`, `toolResult`, `bash`, `compaction`,
    /// `branch_summary`, `label`, `session_name`, `custom`, `system`.
    pub kind: String,
    /// Whether the entry is on the session's active path now.
    pub branch: BranchState,
    /// Whether the entry holds the query as an exact phrase.
    pub exact: bool,
    /// A short excerpt around the first matched word.
    pub snippet: String,
    /// For a session in a database store, the store's name (`path` is then the session's
    /// location there); `None` for a session file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    #[serde(skip)]
    pub(crate) line_start: i64,
    #[serde(skip)]
    pub(crate) line_len: i64,
}

/// The query's words, lower-cased: what the tokenizer would index.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Checks `--since`: `YYYY-MM-DD`, optionally followed by a time (`T…`).
pub fn check_since(text: &str) -> Result<(), SearchError> {
    let b = text.as_bytes();
    let date_ok = b.len() >= 10
        && b[..10].iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        })
        && (b.len() == 10 || b[10] == b'T');
    if date_ok {
        Ok(())
    } else {
        Err(SearchError::Query(format!(
            "--since {text}: expected a date as YYYY-MM-DD (or an ISO date-time)"
        )))
    }
}

/// How many of the newest entries holding every word are ranked by BM25 (DECISIONS §34.7):
/// BM25 scores every document it ranks, so ranking all matches of common words costs
/// hundreds of milliseconds; within this window a query stays in a few.
pub const RANK_WINDOW: i64 = 2_000;

pub(crate) fn run(conn: &Connection, query: &Query) -> Result<Vec<Hit>, rusqlite::Error> {
    let words = words(&query.text);
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let phrase = format!("\"{}\"", words.join(" "));
    let all_words = words
        .iter()
        .map(|w| format!("\"{w}\""))
        .collect::<Vec<_>>()
        .join(" ");
    let mut found = Found {
        hits: Vec::new(),
        seen: HashSet::new(),
        need: query.limit.unwrap_or(usize::MAX),
        filter: Filter::of(query),
    };
    // The window: the newest RANK_WINDOW documents holding every word (all of them when
    // there are fewer).
    let floor: Option<i64> = conn
        .prepare_cached(
            "SELECT rowid FROM fts WHERE fts MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2",
        )?
        .query_row(params![all_words, RANK_WINDOW - 1], |r| r.get(0))
        .optional()?;
    let stages: &[(&str, bool)] = if words.len() > 1 {
        &[(&phrase, true), (&all_words, false)]
    } else {
        &[(&phrase, true)]
    };
    for (fts_query, exact) in stages {
        ranked(conn, fts_query, floor, *exact, &mut found)?;
    }
    // Past the window (only reached when filters left too few hits, or for every hit):
    // older documents, newest first, phrase hits before the others.
    if let Some(floor) = floor {
        for (fts_query, exact) in stages {
            older(conn, fts_query, floor, *exact, &mut found)?;
        }
    }
    Ok(found.hits)
}

/// The hits gathered so far and what they must satisfy.
struct Found {
    hits: Vec<Hit>,
    /// Documents already taken (a phrase hit is also a words hit).
    seen: HashSet<i64>,
    need: usize,
    filter: Filter,
}

impl Found {
    fn full(&self) -> bool {
        self.hits.len() >= self.need
    }

    /// Adds document `doc` when it is new and passes the filters.
    fn offer(&mut self, conn: &Connection, doc: i64, exact: bool) -> Result<(), rusqlite::Error> {
        if self.full() || !self.seen.insert(doc) {
            return Ok(());
        }
        if let Some(hit) = hit(conn, doc, &self.filter, exact)? {
            self.hits.push(hit);
        }
        Ok(())
    }
}

/// The query's filters as SQL parameters.
struct Filter {
    since: Option<String>,
    cwd: Option<String>,
    active: Option<bool>,
    stores: Stores,
}

impl Filter {
    fn of(query: &Query) -> Self {
        Self {
            since: query.since.clone(),
            cwd: query.cwd.clone(),
            active: match query.branch {
                BranchFilter::Active => Some(true),
                BranchFilter::Abandoned => Some(false),
                BranchFilter::Any => None,
            },
            stores: query.stores.clone(),
        }
    }
}

/// Documents matching `fts_query` at or above `floor`, best BM25 first, newer first on ties.
fn ranked(
    conn: &Connection,
    fts_query: &str,
    floor: Option<i64>,
    exact: bool,
    found: &mut Found,
) -> Result<(), rusqlite::Error> {
    if found.full() {
        return Ok(());
    }
    let mut stmt = conn.prepare_cached(
        "SELECT rowid FROM fts WHERE fts MATCH ?1 AND rowid >= ?2 ORDER BY rank, rowid DESC",
    )?;
    let docs = stmt
        .query_map(params![fts_query, floor.unwrap_or(i64::MIN)], |r| {
            r.get::<_, i64>(0)
        })?
        .collect::<Result<Vec<_>, _>>()?;
    for doc in docs {
        if found.full() {
            break;
        }
        found.offer(conn, doc, exact)?;
    }
    Ok(())
}

/// Documents matching `fts_query` below `floor`, newest first, read only as far as needed.
fn older(
    conn: &Connection,
    fts_query: &str,
    floor: i64,
    exact: bool,
    found: &mut Found,
) -> Result<(), rusqlite::Error> {
    if found.full() {
        return Ok(());
    }
    let mut stmt = conn.prepare_cached(
        "SELECT rowid FROM fts WHERE fts MATCH ?1 AND rowid < ?2 ORDER BY rowid DESC",
    )?;
    let mut rows = stmt.query(params![fts_query, floor])?;
    while let Some(row) = rows.next()? {
        found.offer(conn, row.get(0)?, exact)?;
        if found.full() {
            break;
        }
    }
    Ok(())
}

/// Document `doc` as a hit with its session, entry and branch state, or `None` when the
/// filters leave it out.
fn hit(
    conn: &Connection,
    doc: i64,
    filter: &Filter,
    exact: bool,
) -> Result<Option<Hit>, rusqlite::Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT f.session_id, f.path, f.cwd, f.name, d.target_id, d.entry_id, d.ts, d.kind,
                coalesce(e.active, 0), d.line_start, d.line_len, f.store
         FROM docs d
         JOIN files f ON f.id = d.file_id
         LEFT JOIN entries e ON e.file_id = d.file_id AND e.entry_id = d.target_id
         WHERE d.id = ?1
           AND (?2 IS NULL OR d.ts >= ?2)
           AND (?3 IS NULL OR f.cwd = ?3)
           AND (?4 IS NULL OR coalesce(e.active, 0) = ?4)
           AND (?5 = 0 OR f.store IS NULL OR f.store = ?6)",
    )?;
    let (store_filtered, only_store) = filter.stores.params();
    let args = params![
        doc,
        filter.since,
        filter.cwd,
        filter.active,
        store_filtered,
        only_store
    ];
    stmt.query_row(args, |r| {
        Ok(Hit {
            session_id: r.get(0)?,
            path: r.get(1)?,
            cwd: r.get(2)?,
            session_name: r.get(3)?,
            entry_id: r.get(4)?,
            matched_entry_id: r.get(5)?,
            timestamp: r.get(6)?,
            kind: r.get(7)?,
            branch: if r.get::<_, bool>(8)? {
                BranchState::Active
            } else {
                BranchState::Abandoned
            },
            exact,
            snippet: String::new(),
            line_start: r.get(9)?,
            line_len: r.get(10)?,
            store: r.get(11)?,
        })
    })
    .optional()
}
