//! Reading a session file into the index.
//!
//! v3 files are streamed in chunks: each line's envelope is scanned and only its byte range is
//! kept, so a 100 MB session costs one pass over the bytes and a few bytes of index per entry.
//! v1/v2 files are small in practice; they are parsed whole, migrated, and kept in memory until
//! the first write rewrites them (DECISIONS §4.3).

use super::migrate;
use crate::error::{Result, SessionError};
use crate::session::common::{probe, probe_bytes};
use crate::session::entry::{SessionHeader, CURRENT_VERSION};
use crate::session::index::{Index, Raw};
use crate::session::skim::skim;
use serde_json::{Map, Value};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

const CHUNK: u64 = 256 << 10;

/// What follows the last complete line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tail {
    Clean,
    /// The last line is complete JSON but lacks its newline (pi appends one on repair).
    MissingNewline,
    /// The last line is incomplete (a crash during an append): `bytes` from `offset` on.
    Torn {
        offset: u64,
        bytes: Vec<u8>,
    },
}

pub(crate) struct Loaded {
    pub header: SessionHeader,
    /// The header as written back on a rewrite (migrated files keep their legacy keys).
    pub header_line: String,
    pub index: Index,
    /// Physical lines seen (header included); the next appended line gets `lines + 1`.
    pub lines: u32,
    pub file_len: u64,
    pub tail: Tail,
    /// The version the file declared when it had to be migrated in memory.
    pub migrated_from: Option<u32>,
}

fn line_err(file: &str, line: u32, message: impl Into<String>) -> SessionError {
    SessionError::Line {
        file: file.to_owned(),
        line: line as usize,
        message: message.into(),
    }
}

enum HeaderCheck {
    Current(Box<SessionHeader>),
    Legacy(u32),
}

fn check_header(file: &str, line: u32, text: &str) -> Result<HeaderCheck> {
    let header = SessionHeader::from_json(text).map_err(|e| line_err(file, line, e.to_string()))?;
    if header.id.is_empty() {
        return Err(line_err(file, line, "session header has an empty `id`"));
    }
    match header.version {
        None => Ok(HeaderCheck::Legacy(1)),
        Some(v @ (1 | 2)) => Ok(HeaderCheck::Legacy(v)),
        Some(CURRENT_VERSION) => Ok(HeaderCheck::Current(Box::new(header))),
        Some(v) => Err(line_err(
            file,
            line,
            format!("unsupported session version {v} (this build reads versions 1 to 3)"),
        )),
    }
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.first() != Some(&b'{') && bytes.iter().all(u8::is_ascii_whitespace)
}

/// Reads `file` (positioned anywhere) from its start.
pub(crate) fn load(origin: &str, file: &File) -> Result<Loaded> {
    let io = |e| SessionError::io(origin, e);
    let file_len = file.metadata().map_err(io)?.len();
    let mut reader = file;
    reader.seek(SeekFrom::Start(0)).map_err(io)?;

    let mut index = Index::new(origin);
    // One entry per ~512 bytes undercounts typical lines (300-600 bytes) by little and costs
    // 5 bytes per estimated entry: a few MB on a file of hundreds.
    index.reserve(usize::try_from(file_len / 512).unwrap_or(0));
    let mut header: Option<(SessionHeader, String)> = None;
    let mut tail = Tail::Clean;
    let mut line_no: u32 = 0;

    // `buf[..len]` holds the bytes read and not yet handled (a partial line, then a chunk);
    // the buffer is zeroed once and grows only for a line longer than it.
    let mut buf: Vec<u8> = vec![0; 2 * CHUNK as usize];
    let mut len = 0usize;
    let mut base: u64 = 0;
    let mut scan_from = 0usize;
    loop {
        if buf.len() < len + CHUNK as usize {
            buf.resize(len + CHUNK as usize, 0);
        }
        let n = read_chunk(&mut reader, &mut buf[len..len + CHUNK as usize]).map_err(io)?;
        len += n;
        // Complete lines end at the last newline; a partial line waits for the next chunk.
        if let Some(last) = memchr::memrchr(b'\n', &buf[scan_from..len]) {
            let end = scan_from + last + 1;
            let first_line = line_no + 1;
            let region = &buf[..end];
            // Chunks are small enough to stay in cache between the UTF-8 check and the scan.
            // simdutf8's `compat` API reports std's `valid_up_to`, 1.7-5x faster than std here.
            // Lines before an invalid byte are scanned (an earlier error wins), the rest is not.
            let (text, bad_utf8) = match simdutf8::compat::from_utf8(region) {
                Ok(text) => (text, None),
                Err(e) => {
                    let at = e.valid_up_to();
                    let line_start = memchr::memrchr(b'\n', &region[..at]).map_or(0, |p| p + 1);
                    let valid = std::str::from_utf8(&region[..line_start]).unwrap_or_default();
                    (valid, Some(at))
                }
            };
            let scanned = scan_region(
                origin,
                text,
                base,
                &mut line_no,
                &mut header,
                &mut index,
                &mut tail,
            );
            if let Some(at) = bad_utf8 {
                let line = first_line + memchr::memchr_iter(b'\n', &region[..at]).count() as u32;
                let line_start = memchr::memrchr(b'\n', &region[..at]).map_or(0, |p| p + 1);
                let utf8_err = line_err(
                    origin,
                    line,
                    format!("invalid UTF-8 at byte {} of the line", at - line_start),
                );
                match &scanned {
                    Err(SessionError::Line { line: l, .. }) if (*l as u32) < line => {}
                    _ => return Err(utf8_err),
                }
            }
            if let Some(legacy) = scanned? {
                return load_legacy(origin, file, legacy);
            }
            buf.copy_within(end..len, 0);
            len -= end;
            base += end as u64;
        }
        scan_from = len;
        if n == 0 {
            if len > 0 {
                line_no += 1;
                if let Some(legacy) = take_line(
                    origin,
                    &buf[..len],
                    None,
                    base,
                    line_no,
                    false,
                    &mut header,
                    &mut index,
                    &mut tail,
                )? {
                    return load_legacy(origin, file, legacy);
                }
            }
            break;
        }
    }
    let Some((header, header_line)) = header else {
        return Err(SessionError::InvalidSession(format!(
            "{origin}: missing session header{}",
            if matches!(tail, Tail::Torn { .. }) {
                " (the only line is incomplete)"
            } else {
                ""
            }
        )));
    };
    index.finish_load()?;
    Ok(Loaded {
        header,
        header_line,
        index,
        lines: line_no,
        file_len,
        tail,
        migrated_from: None,
    })
}

/// Fills `into` from `reader` as far as the file goes; returns how many bytes (0 at the end of
/// the file). `Read::take` + `read_to_end` made about six `read` calls per chunk (growth steps
/// and an end probe: 9,671 for the 1M bench file, 1,627 this way), and a system call is
/// several microseconds on a slow VM.
fn read_chunk(reader: &mut impl Read, into: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < into.len() {
        match reader.read(&mut into[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Handles every complete line of `region` (which ends with a newline).
#[allow(clippy::too_many_arguments)]
fn scan_region(
    origin: &str,
    region: &str,
    base: u64,
    line_no: &mut u32,
    header: &mut Option<(SessionHeader, String)>,
    index: &mut Index,
    tail: &mut Tail,
) -> Result<Option<u32>> {
    let mut start = 0usize;
    for nl in memchr::memchr_iter(b'\n', region.as_bytes()) {
        *line_no += 1;
        let offset = base + start as u64;
        let line = &region[start..nl];
        if let Some(legacy) = take_line(
            origin,
            line.as_bytes(),
            Some(line),
            offset,
            *line_no,
            true,
            header,
            index,
            tail,
        )? {
            return Ok(Some(legacy));
        }
        start = nl + 1;
    }
    Ok(None)
}

/// Handles one physical line; returns `Some(version)` when the header asks for a migration.
/// Terminated lines are UTF-8-checked by the caller (in bulk); only the unterminated tail and
/// the header are checked here.
#[allow(clippy::too_many_arguments)]
fn take_line(
    origin: &str,
    bytes: &[u8],
    checked: Option<&str>,
    offset: u64,
    line_no: u32,
    terminated: bool,
    header: &mut Option<(SessionHeader, String)>,
    index: &mut Index,
    tail: &mut Tail,
) -> Result<Option<u32>> {
    let torn = |tail: &mut Tail| {
        *tail = Tail::Torn {
            offset,
            bytes: bytes.to_vec(),
        };
        Ok(None)
    };
    if is_blank(bytes) {
        if !terminated {
            *tail = Tail::MissingNewline;
        }
        return Ok(None);
    }
    if !terminated && std::str::from_utf8(bytes).is_err() {
        return torn(tail);
    }
    if header.is_none() {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            line_err(
                origin,
                line_no,
                format!("invalid UTF-8 at byte {} of the line", e.valid_up_to()),
            )
        })?;
        return match check_header(origin, line_no, text) {
            Ok(HeaderCheck::Current(h)) => {
                *header = Some((*h, text.to_owned()));
                if !terminated {
                    *tail = Tail::MissingNewline;
                }
                Ok(None)
            }
            Ok(HeaderCheck::Legacy(v)) => Ok(Some(v)),
            Err(_) if !terminated && serde_json::from_str::<Value>(text).is_err() => torn(tail),
            Err(e) => Err(e),
        };
    }
    let len = u32::try_from(bytes.len())
        .map_err(|_| line_err(origin, line_no, "line longer than 4 GiB"))?;
    // The index-only read (DECISIONS §25.20); an unterminated last line is always probed in
    // full, since it may be torn.
    if let (true, Some(text)) = (terminated, checked) {
        if let Some(sk) = skim(text) {
            index.load_skimmed(&sk, Raw::File { offset, len }, line_no)?;
            return Ok(None);
        }
    }
    match probe_bytes(bytes) {
        Ok(env) => {
            index.load(&env, Raw::File { offset, len }, line_no)?;
            if !terminated {
                *tail = Tail::MissingNewline;
            }
            Ok(None)
        }
        Err(_)
            if !terminated && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_err() =>
        {
            torn(tail)
        }
        Err(e) => Err(line_err(origin, line_no, format!("not a valid entry: {e}"))),
    }
}

/// v1/v2: parse every line, migrate to v3 in memory, index the re-serialized lines.
fn load_legacy(origin: &str, file: &File, version: u32) -> Result<Loaded> {
    let io = |e| SessionError::io(origin, e);
    let mut bytes = Vec::new();
    let mut reader = file;
    reader.seek(SeekFrom::Start(0)).map_err(io)?;
    reader.read_to_end(&mut bytes).map_err(io)?;
    let file_len = bytes.len() as u64;

    let mut header: Option<Map<String, Value>> = None;
    let mut entries: Vec<(u32, Map<String, Value>)> = Vec::new();
    let mut tail = Tail::Clean;
    let mut line_no = 0u32;
    let mut start = 0usize;
    while start < bytes.len() {
        let (end, terminated) = match memchr::memchr(b'\n', &bytes[start..]) {
            Some(p) => (start + p, true),
            None => (bytes.len(), false),
        };
        line_no += 1;
        let line = &bytes[start..end];
        let offset = start as u64;
        start = end + 1;
        if is_blank(line) {
            if !terminated {
                tail = Tail::MissingNewline;
            }
            continue;
        }
        let parsed = std::str::from_utf8(line)
            .map_err(|e| format!("invalid UTF-8 at byte {} of the line", e.valid_up_to()))
            .and_then(|t| match serde_json::from_str::<Value>(t) {
                Ok(Value::Object(m)) => Ok(m),
                Ok(_) => Err("not a JSON object".to_owned()),
                Err(e) => Err(format!("not valid JSON: {e}")),
            });
        let map = match parsed {
            Ok(m) => m,
            Err(_) if !terminated => {
                tail = Tail::Torn {
                    offset,
                    bytes: line.to_vec(),
                };
                continue;
            }
            Err(e) => return Err(line_err(origin, line_no, e)),
        };
        if !terminated {
            tail = Tail::MissingNewline;
        }
        if header.is_none() {
            header = Some(map);
        } else {
            entries.push((line_no, map));
        }
    }
    let Some(mut header_map) = header else {
        return Err(SessionError::InvalidSession(format!(
            "{origin}: missing session header"
        )));
    };
    let mut maps: Vec<Map<String, Value>> = entries.iter().map(|(_, m)| m.clone()).collect();
    migrate::migrate_to_v3(u64::from(version), &mut header_map, &mut maps, |taken| {
        crate::ids::new_entry_id(|c| taken.contains(c))
    });
    let header_line = serde_json::to_string(&header_map)
        .map_err(|e| line_err(origin, 1, format!("session header: {e}")))?;
    let header =
        SessionHeader::from_json(&header_line).map_err(|e| line_err(origin, 1, e.to_string()))?;
    let mut index = Index::new(origin);
    for ((line, _), map) in entries.iter().zip(maps) {
        let text =
            serde_json::to_string(&map).map_err(|e| line_err(origin, *line, e.to_string()))?;
        let env =
            probe(&text).map_err(|e| line_err(origin, *line, format!("not a valid entry: {e}")))?;
        index.load(&env, Raw::Mem(text.as_str().into()), *line)?;
    }
    index.finish_load()?;
    Ok(Loaded {
        header,
        header_line,
        index,
        lines: line_no,
        file_len,
        tail,
        migrated_from: Some(version),
    })
}
