//! Running a search: the FTS5 queries, the filters and the ranking.
//!
//! Ranking (DECISIONS §34.7): hits holding the query's words as an exact phrase come first,
//! then hits holding every word anywhere in the entry; within each group FTS5's BM25 order
//! (rarer words and shorter entries rank higher), then newer entries first.

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
    pub branch: BranchFilter,
    /// Only entries with a timestamp at or after this ISO date or date-time (UTC).
    pub since: Option<String>,
    /// Only sessions whose working directory is this one.
    pub cwd: Option<String>,
    /// At most this many hits; `None` for all of them.
    pub limit: Option<usize>,
}

/// Whether a hit's entry is on the session's active path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BranchState {
    Active,
    Abandoned,
}

impl BranchState {
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
    pub session_id: String,
    /// The session file.
    pub path: String,
    pub cwd: String,
    pub session_name: Option<String>,
    /// The entry to open the session on (for a label, the entry it labels).
    pub entry_id: String,
    /// The entry whose text matched (differs from `entry_id` for labels).
    pub matched_entry_id: String,
    pub timestamp: String,
    /// What matched: `user`, `assistant`, `toolResult`, `bash`, `compaction`,
    /// `branch_summary`, `label`, `session_name`, `custom`, `system`.
    pub kind: String,
    pub branch: BranchState,
    /// Whether the entry holds the query as an exact phrase.
    pub exact: bool,
    /// A short excerpt around the first matched word.
    pub snippet: String,
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
    let limit = query.limit.map_or(-1, |n| n as i64);
    let order = if rarest(conn, &words)? > RANKED_MATCHES {
        Order::Newest
    } else {
        Order::Rank
    };
    let mut hits = matching(conn, query, &phrase, true, limit, order)?;
    if words.len() > 1 && (limit < 0 || (hits.len() as i64) < limit) {
        let seen: HashSet<(String, String)> = hits
            .iter()
            .map(|h| (h.path.clone(), h.matched_entry_id.clone()))
            .collect();
        // Ask for enough rows to fill the limit after dropping the phrase hits again.
        let more = if limit < 0 {
            -1
        } else {
            limit + hits.len() as i64
        };
        for hit in matching(conn, query, &all_words, false, more, order)? {
            if limit >= 0 && hits.len() as i64 >= limit {
                break;
            }
            if !seen.contains(&(hit.path.clone(), hit.matched_entry_id.clone())) {
                hits.push(hit);
            }
        }
    }
    Ok(hits)
}

/// Every hit with its session, entry and branch state; the order and limit are added.
const HIT_QUERY: &str =
    "SELECT f.session_id, f.path, f.cwd, f.name, d.target_id, d.entry_id, d.ts, d.kind,
                coalesce(e.active, 0), d.line_start, d.line_len
         FROM fts
         JOIN docs d ON d.id = fts.rowid
         JOIN files f ON f.id = d.file_id
         LEFT JOIN entries e ON e.file_id = d.file_id AND e.entry_id = d.target_id
         WHERE fts MATCH ?1
           AND (?2 IS NULL OR d.ts >= ?2)
           AND (?3 IS NULL OR f.cwd = ?3)
           AND (?4 IS NULL OR coalesce(e.active, 0) = ?4)";

/// Above this many documents for the query's rarest word, BM25 ranking (which scores every
/// match) gives way to newest-first order, which FTS5 serves without reading every match
/// (DECISIONS §34.7).
const RANKED_MATCHES: i64 = 50_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    Rank,
    Newest,
}

/// How many documents hold the rarest of `words` (0 when one is unknown).
fn rarest(conn: &Connection, words: &[String]) -> Result<i64, rusqlite::Error> {
    let mut stmt = conn.prepare_cached("SELECT doc FROM fts_terms WHERE term = ?1")?;
    let mut least = i64::MAX;
    for word in words {
        let docs: i64 = stmt
            .query_row([word], |r| r.get(0))
            .optional()?
            .unwrap_or(0);
        least = least.min(docs);
    }
    Ok(if least == i64::MAX { 0 } else { least })
}

fn matching(
    conn: &Connection,
    query: &Query,
    fts_query: &str,
    exact: bool,
    limit: i64,
    order: Order,
) -> Result<Vec<Hit>, rusqlite::Error> {
    let branch: Option<bool> = match query.branch {
        BranchFilter::Active => Some(true),
        BranchFilter::Abandoned => Some(false),
        BranchFilter::Any => None,
    };
    let sql = format!(
        "{HIT_QUERY} {}",
        match order {
            Order::Rank => "ORDER BY fts.rank, d.ts DESC LIMIT ?5",
            Order::Newest => "ORDER BY fts.rowid DESC LIMIT ?5",
        }
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(
        params![fts_query, query.since, query.cwd, branch, limit],
        |r| {
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
            })
        },
    )?;
    rows.collect()
}
