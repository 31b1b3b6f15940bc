//! Moving sessions between pi's JSONL files and the store, losslessly: import keeps every line's
//! exact text (the `json` payload column stores it verbatim), export writes those texts back, so
//! a file imported and exported again is byte-for-byte the original (blank lines aside).

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::path::Path;

use arbor_session::error::{Result, SessionError};
use arbor_session::{SessionEntry, SessionHeader};

use crate::repository::insert_session_row;
use crate::repository::PostgresRepository;
use crate::state::to_i64;
use arbor_session::MaterializedState;

/// Rows sent per insert statement during import.
const IMPORT_BATCH: usize = 1000;
/// Rows read per query during export.
const EXPORT_PAGE: i64 = 5000;

/// What [`PostgresRepository::import_jsonl`] created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// The new session's id: the file header's, unchanged.
    pub id: String,
    /// How many entries were imported (the header line not counted).
    pub entries: u64,
}

struct Row {
    entry: SessionEntry,
    line: String,
}

fn line_error(file: &Path, line: usize, message: impl Into<String>) -> SessionError {
    SessionError::Line {
        file: file.display().to_string(),
        line,
        message: message.into(),
    }
}

/// Reads and checks a v3 session file: header, entries with unique ids, parents and targets
/// that appear earlier in the file (the order every writer produces).
fn read_file(path: &Path) -> Result<(SessionHeader, String, Vec<Row>)> {
    let file = std::fs::File::open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            SessionError::NotFound(format!("session file not found: {}", path.display()))
        } else {
            SessionError::io(path.display().to_string(), e)
        }
    })?;
    let mut header: Option<(SessionHeader, String)> = None;
    let mut rows = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let n = i + 1;
        let line = line.map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => line_error(path, n, "not valid UTF-8"),
            _ => SessionError::io(path.display().to_string(), e),
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let Some((h, _)) = &header else {
            let h =
                SessionHeader::from_json(&line).map_err(|e| line_error(path, n, e.to_string()))?;
            if h.format_version() != 3 {
                return Err(line_error(
                    path,
                    n,
                    format!(
                        "a v{} session file; run `arbor session migrate {}` first (import takes v3 files)",
                        h.format_version(),
                        path.display()
                    ),
                ));
            }
            header = Some((h, line));
            continue;
        };
        let entry =
            SessionEntry::from_json(&line).map_err(|e| line_error(path, n, e.to_string()))?;
        if !seen.insert(entry.id.clone()) {
            return Err(line_error(
                path,
                n,
                format!("duplicate entry id {}", entry.id),
            ));
        }
        if let Some(p) = &entry.parent_id {
            if !seen.contains(p) {
                return Err(line_error(
                    path,
                    n,
                    format!(
                        "entry {} has parentId {p}, which is not earlier in the file",
                        entry.id
                    ),
                ));
            }
        }
        if let Some(t) = entry.kind.target_id() {
            if !seen.contains(t) {
                return Err(line_error(
                    path,
                    n,
                    format!(
                        "entry {} targets {t}, which is not earlier in the file",
                        entry.id
                    ),
                ));
            }
        }
        let _ = h;
        rows.push(Row { entry, line });
    }
    let (h, line) =
        header.ok_or_else(|| line_error(path, 1, "the file is empty (no session header)"))?;
    Ok((h, line, rows))
}

impl PostgresRepository {
    /// Imports one v3 JSONL session file as a new session with the same id, in one
    /// transaction: either the whole session is stored or nothing is. A session with that id
    /// already in the store is refused.
    pub async fn import_jsonl(&self, path: &Path) -> Result<Imported> {
        let owned = path.to_path_buf();
        let (header, header_line, rows) = tokio::task::spawn_blocking(move || read_file(&owned))
            .await
            .map_err(|e| SessionError::Storage(format!("import task failed: {e}")))??;
        let db = self.db();
        let err = |ctx: &'static str| move |e| db.err(ctx, e);
        let mut conn = db.conn().await?;
        let tx = conn
            .transaction()
            .await
            .map_err(err("cannot start import"))?;
        let Some(s) = insert_session_row(&tx, db, &header, &header_line).await? else {
            return Err(SessionError::InvalidSession(format!(
                "{}: session {} already exists in {}",
                path.display(),
                header.id,
                db.target.display
            )));
        };
        let insert = tx
            .prepare(
                "INSERT INTO entries (sid, seq, id, parent_id, type, role, target_id, timestamp, payload)
                 SELECT $1, seq, id, parent_id, type, role, target_id, timestamp, CAST(payload AS json)
                 FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[],
                             $7::text[], $8::text[], $9::text[])
                      AS r(seq, id, parent_id, type, role, target_id, timestamp, payload)",
            )
            .await
            .map_err(err("cannot prepare import"))?;
        let mut state = MaterializedState::default();
        for (chunk_no, chunk) in rows.chunks(IMPORT_BATCH).enumerate() {
            let base = chunk_no * IMPORT_BATCH;
            let seqs: Vec<i64> = (0..chunk.len())
                .map(|i| to_i64((base + i + 1) as u64))
                .collect();
            let ids: Vec<&str> = chunk.iter().map(|r| r.entry.id.as_str()).collect();
            let parents: Vec<Option<&str>> =
                chunk.iter().map(|r| r.entry.parent_id.as_deref()).collect();
            let types: Vec<&str> = chunk.iter().map(|r| r.entry.entry_type()).collect();
            let roles: Vec<Option<&str>> = chunk
                .iter()
                .map(|r| r.entry.message().map(arbor_session::AgentMessage::role))
                .collect();
            let targets: Vec<Option<&str>> =
                chunk.iter().map(|r| r.entry.kind.target_id()).collect();
            let times: Vec<&str> = chunk.iter().map(|r| r.entry.timestamp.as_str()).collect();
            let lines: Vec<&str> = chunk.iter().map(|r| r.line.as_str()).collect();
            tx.execute(
                &insert,
                &[
                    &s.sid, &seqs, &ids, &parents, &types, &roles, &targets, &times, &lines,
                ],
            )
            .await
            .map_err(|e| db.err(&format!("cannot import {}", path.display()), e))?;
            for r in chunk {
                state.apply(&r.entry);
            }
        }
        crate::state::write(&tx, &s, &state)
            .await
            .map_err(err("cannot write session state"))?;
        tx.commit().await.map_err(err("cannot commit import"))?;
        Ok(Imported {
            id: header.id,
            entries: rows.len() as u64,
        })
    }

    /// Writes session `id_or_location` to `out` as a JSONL file: the stored header and entry
    /// texts, one per line, in log order. The file is written beside `out` and renamed into
    /// place once complete; an existing `out` is never overwritten. Returns the entry count.
    pub async fn export_jsonl(&self, id_or_location: &str, out: &Path) -> Result<u64> {
        if out.exists() {
            return Err(SessionError::Storage(format!(
                "{} already exists; export never overwrites a file",
                out.display()
            )));
        }
        let storage = self.open_read_only(id_or_location).await?;
        let db = self.db();
        let conn = db.conn().await?;
        let header: String = conn
            .query_one(
                "SELECT header FROM sessions WHERE id = $1",
                &[&storage.id()],
            )
            .await
            .map_err(|e| db.err("cannot read session header", e))?
            .get(0);
        let tmp = out.with_file_name(format!(
            ".{}.export-{}",
            out.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            std::process::id()
        ));
        let io = |p: &Path| {
            let p = p.display().to_string();
            move |e| SessionError::io(p, e)
        };
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(io(&tmp))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 16, file);
        let written = async {
            w.write_all(header.as_bytes()).map_err(io(&tmp))?;
            w.write_all(b"\n").map_err(io(&tmp))?;
            let sid: i32 = conn
                .query_one("SELECT sid FROM sessions WHERE id = $1", &[&storage.id()])
                .await
                .map_err(|e| db.err("cannot read session", e))?
                .get(0);
            let page = conn
                .prepare(
                    "SELECT seq, payload::text FROM entries WHERE sid = $1 AND seq > $2
                     ORDER BY seq LIMIT $3",
                )
                .await
                .map_err(|e| db.err("cannot read entries", e))?;
            let (mut after, mut count) = (0i64, 0u64);
            loop {
                let rows = conn
                    .query(&page, &[&sid, &after, &EXPORT_PAGE])
                    .await
                    .map_err(|e| db.err("cannot read entries", e))?;
                for r in &rows {
                    after = r.get(0);
                    let line: &str = r.get(1);
                    w.write_all(line.as_bytes()).map_err(io(&tmp))?;
                    w.write_all(b"\n").map_err(io(&tmp))?;
                    count += 1;
                }
                if (rows.len() as i64) < EXPORT_PAGE {
                    break;
                }
            }
            let file = w.into_inner().map_err(|e| io(&tmp)(e.into_error()))?;
            file.sync_all().map_err(io(&tmp))?;
            std::fs::rename(&tmp, out).map_err(io(out))?;
            Ok::<u64, SessionError>(count)
        }
        .await;
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}
