//! Bringing the index up to date with the session files, incrementally.
//!
//! Session files are append-only, so each file's row remembers how far it was indexed (a
//! byte offset) and a fingerprint of what it saw: the size and modification time, a hash of
//! the header line and a hash of the last indexed line (DECISIONS §34.5). An unchanged file
//! costs one `stat`; a grown file whose fingerprint still matches is read from the offset
//! on; a shrunk or rewritten file is indexed again from the start; a file that is gone is
//! removed from the index.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use arbor_session::{EntryKind, SessionEntry, SessionHeader};
use rusqlite::{params, Connection, Transaction};
use sha2::{Digest, Sha256};

use crate::branch::move_leaf;
use crate::extract::extract;

/// Bytes of session files read per transaction during a refresh.
const BATCH_BYTES: i64 = 256 << 20;

/// What one refresh did, and every file it had to skip.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RefreshReport {
    /// Files read from the start (new, rewritten or shrunk).
    pub indexed: usize,
    /// Files read from their last offset on (appended to).
    pub appended: usize,
    /// Files whose index rows were dropped because the file is gone.
    pub removed: usize,
    /// Files left as they were.
    pub unchanged: usize,
    /// One line per file that could not be indexed (or only in part), naming it and why.
    pub warnings: Vec<String>,
}

/// The remembered state of one indexed file.
struct FileRow {
    id: i64,
    size: i64,
    mtime_ns: i64,
    indexed_to: i64,
    lines: i64,
    head_hash: i64,
    tail_start: i64,
    tail_hash: i64,
    leaf_id: Option<String>,
    problem: Option<String>,
    broken: bool,
}

/// Why a file is not (fully) in the index; kept in its row so an unchanged broken file is
/// reported again without being read again.
struct Problem {
    text: String,
    /// Only the last line is missing (an append torn or still being written): the lines
    /// before it stay indexed and reading resumes there.
    torn: bool,
}

/// Brings the index in `conn` up to date with `files` (every session file the caller can
/// see); rows of files not in the list are removed.
pub(crate) fn refresh(conn: &mut Connection, files: &[PathBuf]) -> rusqlite::Result<RefreshReport> {
    let mut report = RefreshReport::default();
    let mut known = known_files(conn)?;
    // Files are indexed in batches of about BATCH_BYTES per transaction (DECISIONS §34.14):
    // FTS5 writes its pending terms out at every commit, so a commit per small file would
    // leave thousands of tiny segments to merge.
    let mut tx = conn.transaction()?;
    let mut batched: i64 = 0;
    for path in files {
        let key = path.to_string_lossy().into_owned();
        let row = known.remove(&key);
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) => {
                report.warnings.push(format!(
                    "{}: cannot read: {e}; not searched",
                    path.display()
                ));
                continue;
            }
        };
        let size = meta.len() as i64;
        let mtime_ns = meta.mtime() * 1_000_000_000 + meta.mtime_nsec();
        let outcome = match row {
            Some(row) if row.size == size && row.mtime_ns == mtime_ns => {
                report.unchanged += 1;
                if let Some(problem) = &row.problem {
                    report.warnings.push(skipped(path, problem));
                }
                continue;
            }
            Some(row) if !row.broken && continues(path, &row, size) => {
                report.appended += 1;
                index_from(&tx, path, &key, Some(&row), size, mtime_ns)?
            }
            Some(row) => {
                clear_file(&tx, row.id)?;
                tx.execute("DELETE FROM files WHERE id = ?1", [row.id])?;
                report.indexed += 1;
                index_from(&tx, path, &key, None, size, mtime_ns)?
            }
            None => {
                report.indexed += 1;
                index_from(&tx, path, &key, None, size, mtime_ns)?
            }
        };
        if let Some(problem) = outcome {
            report.warnings.push(skipped(path, &problem.text));
        }
        batched += size;
        if batched >= BATCH_BYTES {
            tx.commit()?;
            tx = conn.transaction()?;
            batched = 0;
        }
    }
    for (_, row) in known {
        clear_file(&tx, row.id)?;
        tx.execute("DELETE FROM files WHERE id = ?1", [row.id])?;
        report.removed += 1;
    }
    tx.commit()?;
    Ok(report)
}

fn skipped(path: &Path, problem: &str) -> String {
    format!("{}: {problem}; skipped by search", path.display())
}

fn known_files(conn: &Connection) -> rusqlite::Result<HashMap<String, FileRow>> {
    let mut stmt = conn.prepare(
        "SELECT path, id, size, mtime_ns, indexed_to, lines, head_hash, tail_start, tail_hash, leaf_id, problem, broken FROM files WHERE store IS NULL",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            FileRow {
                id: r.get(1)?,
                size: r.get(2)?,
                mtime_ns: r.get(3)?,
                indexed_to: r.get(4)?,
                lines: r.get(5)?,
                head_hash: r.get(6)?,
                tail_start: r.get(7)?,
                tail_hash: r.get(8)?,
                leaf_id: r.get(9)?,
                problem: r.get(10)?,
                broken: r.get(11)?,
            },
        ))
    })?;
    rows.collect()
}

/// Drops everything indexed of one file (its row stays).
pub(crate) fn clear_file(tx: &Transaction<'_>, file_id: i64) -> rusqlite::Result<()> {
    tx.execute(
        "DELETE FROM fts WHERE rowid IN (SELECT id FROM docs WHERE file_id = ?1)",
        [file_id],
    )?;
    tx.execute("DELETE FROM docs WHERE file_id = ?1", [file_id])?;
    tx.execute("DELETE FROM entries WHERE file_id = ?1", [file_id])?;
    Ok(())
}

/// A short, stable hash of some bytes (the first 8 bytes of SHA-256).
fn hash(bytes: &[u8]) -> i64 {
    let digest = Sha256::digest(bytes);
    let mut head = [0u8; 8];
    head.copy_from_slice(&digest[..8]);
    i64::from_le_bytes(head)
}

/// Whether the file still starts with what was indexed: not shorter than the indexed part,
/// same header line, same last indexed line at the same offset.
fn continues(path: &Path, row: &FileRow, size: i64) -> bool {
    if size < row.indexed_to || row.indexed_to == 0 {
        return false;
    }
    let Ok(mut file) = File::open(path) else {
        return false;
    };
    let mut reader = BufReader::new(&mut file);
    let mut header = Vec::new();
    if reader.read_until(b'\n', &mut header).is_err() || hash(&header) != row.head_hash {
        return false;
    }
    let len = (row.indexed_to - row.tail_start) as usize;
    let mut tail = vec![0u8; len];
    if file.seek(SeekFrom::Start(row.tail_start as u64)).is_err()
        || file.read_exact(&mut tail).is_err()
    {
        return false;
    }
    hash(&tail) == row.tail_hash
}

/// Where a file's reading stands.
struct Cursor {
    offset: i64,
    lines: i64,
    head_hash: i64,
    tail_start: i64,
    tail_hash: i64,
    leaf: Option<String>,
}

/// Indexes `path` from the end of what `row` remembers (or from the start without one) and
/// writes its row. Returns the problem that stopped it, if any; on a problem the file's
/// entries are dropped so a broken file never shows half its hits.
fn index_from(
    tx: &Transaction<'_>,
    path: &Path,
    key: &str,
    row: Option<&FileRow>,
    size: i64,
    mtime_ns: i64,
) -> rusqlite::Result<Option<Problem>> {
    let file_id = match row {
        Some(r) => r.id,
        None => {
            tx.execute("INSERT INTO files(path) VALUES (?1)", [key])?;
            tx.last_insert_rowid()
        }
    };
    let mut cursor = match row {
        Some(r) => Cursor {
            offset: r.indexed_to,
            lines: r.lines,
            head_hash: r.head_hash,
            tail_start: r.tail_start,
            tail_hash: r.tail_hash,
            leaf: r.leaf_id.clone(),
        },
        None => Cursor {
            offset: 0,
            lines: 0,
            head_hash: 0,
            tail_start: 0,
            tail_hash: 0,
            leaf: None,
        },
    };
    let old_leaf = cursor.leaf.clone();
    let result = read_lines(tx, path, file_id, &mut cursor);
    let problem = match result {
        Ok(problem) => problem,
        Err(ReadError::Sql(e)) => return Err(e),
        Err(ReadError::Problem(p)) => Some(p),
    };
    if let Some(Problem { text, torn: false }) = &problem {
        clear_file(tx, file_id)?;
        tx.execute(
            "UPDATE files SET size = ?2, mtime_ns = ?3, indexed_to = 0, lines = 0, leaf_id = NULL, problem = ?4, broken = 1 WHERE id = ?1",
            params![file_id, size, mtime_ns, text],
        )?;
        return Ok(problem);
    }
    move_leaf(
        tx,
        file_id,
        old_leaf.as_deref(),
        cursor.leaf.as_deref(),
        cursor.lines,
    )?;
    tx.execute(
        "UPDATE files SET size = ?2, mtime_ns = ?3, indexed_to = ?4, lines = ?5, head_hash = ?6, tail_start = ?7, tail_hash = ?8, leaf_id = ?9, problem = ?10, broken = 0 WHERE id = ?1",
        params![
            file_id,
            size,
            mtime_ns,
            cursor.offset,
            cursor.lines,
            cursor.head_hash,
            cursor.tail_start,
            cursor.tail_hash,
            cursor.leaf,
            problem.as_ref().map(|p| p.text.as_str())
        ],
    )?;
    // A torn last line is reported but what came before it stays searchable; the row's
    // size and time are those of the torn file, so the warning repeats until it changes.
    Ok(problem)
}

enum ReadError {
    Sql(rusqlite::Error),
    Problem(Problem),
}

impl From<rusqlite::Error> for ReadError {
    fn from(e: rusqlite::Error) -> Self {
        ReadError::Sql(e)
    }
}

/// Reads complete lines from `cursor.offset` on, indexing each entry; the header when
/// starting at 0. Stops before a last line without a newline that does not parse (a torn
/// append), reporting it.
fn read_lines(
    tx: &Transaction<'_>,
    path: &Path,
    file_id: i64,
    cursor: &mut Cursor,
) -> Result<Option<Problem>, ReadError> {
    let problem = |text: String| ReadError::Problem(Problem { text, torn: false });
    let mut file = File::open(path).map_err(|e| problem(format!("cannot read: {e}")))?;
    file.seek(SeekFrom::Start(cursor.offset as u64))
        .map_err(|e| problem(format!("cannot read: {e}")))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut line = Vec::new();
    // The last complete line read; empty until one is.
    let mut last = Vec::new();
    loop {
        line.clear();
        let start = cursor.offset;
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| problem(format!("cannot read: {e}")))?;
        if read == 0 {
            finish_tail(cursor, &last);
            return Ok(None);
        }
        let complete = line.last() == Some(&b'\n');
        let line_no = cursor.lines + 1;
        let text = match std::str::from_utf8(&line) {
            Ok(t) => t.trim_end_matches(['\n', '\r']),
            Err(_) if !complete => {
                finish_tail(cursor, &last);
                return Ok(Some(torn(line_no)));
            }
            Err(e) => return Err(problem(format!("line {line_no}: not UTF-8: {e}"))),
        };
        if text.trim().is_empty() {
            cursor.offset += read as i64;
            cursor.lines += 1;
            continue;
        }
        if start == 0 {
            let header = match SessionHeader::from_json(text) {
                Ok(h) => h,
                Err(_) if !complete => {
                    finish_tail(cursor, &last);
                    return Ok(Some(torn(line_no)));
                }
                Err(e) => return Err(problem(format!("line 1: {e}"))),
            };
            if header.format_version() < 3 {
                return Err(problem(format!(
                    "a version {} session (run `arbor session migrate` to make it searchable)",
                    header.format_version()
                )));
            }
            tx.execute(
                "UPDATE files SET session_id = ?2, cwd = ?3, created = ?4 WHERE id = ?1",
                params![file_id, header.id, header.cwd, header.timestamp],
            )?;
            cursor.head_hash = hash(&line);
        } else {
            let entry = match SessionEntry::from_json(text) {
                Ok(e) => e,
                Err(_) if !complete => {
                    finish_tail(cursor, &last);
                    return Ok(Some(torn(line_no)));
                }
                Err(e) => return Err(problem(format!("line {line_no}: {e}"))),
            };
            index_entry(tx, file_id, &entry, &mut cursor.leaf, start, read as i64)?;
        }
        cursor.offset += read as i64;
        cursor.lines += 1;
        cursor.tail_start = start;
        // Keep the line for the fingerprint, hashed once at the end (DECISIONS §34.5).
        std::mem::swap(&mut line, &mut last);
    }
}

/// Indexes one entry of file (or stored session) `file_id`: its tree row, its searchable
/// text with where to find it again (`line_start`, `line_len`: the line's byte range in a
/// file; for a stored session the entry's sequence number and 0), and where it moves the
/// leaf.
pub(crate) fn index_entry(
    tx: &Transaction<'_>,
    file_id: i64,
    entry: &SessionEntry,
    leaf: &mut Option<String>,
    line_start: i64,
    line_len: i64,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT OR REPLACE INTO entries(file_id, entry_id, parent_id, active) VALUES (?1, ?2, ?3, 0)",
    )?
    .execute(params![file_id, entry.id, entry.parent_id])?;
    match &entry.kind {
        EntryKind::Leaf(l) => *leaf = l.target_id.clone(),
        _ => *leaf = Some(entry.id.clone()),
    }
    if let EntryKind::SessionInfo(info) = &entry.kind {
        tx.prepare_cached("UPDATE files SET name = ?2 WHERE id = ?1")?
            .execute(params![file_id, info.name.get()])?;
    }
    if let Some(doc) = extract(entry) {
        tx.prepare_cached(
            "INSERT INTO docs(file_id, entry_id, target_id, ts, kind, line_start, line_len) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![
            file_id,
            entry.id,
            doc.target_id,
            entry.timestamp,
            doc.kind,
            line_start,
            line_len
        ])?;
        let doc_id = tx.last_insert_rowid();
        tx.prepare_cached("INSERT INTO fts(rowid, body) VALUES (?1, ?2)")?
            .execute(params![doc_id, doc.body])?;
    }
    Ok(())
}

/// Sets the fingerprint of the last indexed line, when this read indexed any.
fn finish_tail(cursor: &mut Cursor, last: &[u8]) {
    if !last.is_empty() {
        cursor.tail_hash = hash(last);
    }
}

fn torn(line_no: i64) -> Problem {
    Problem {
        text: format!(
            "torn last line {line_no} (no newline, not valid JSON); the lines before it are searchable"
        ),
        torn: true,
    }
}
