//! Listing facts about a session file without reading all of it.
//!
//! A listing reads the first 64 KiB (header, first user message, early names) and the last
//! 64 KiB (recent names) of each file. Files up to the head window are read whole, so their
//! entry count and name are exact; for larger files `entry_count` is `None` and the name is the
//! latest `session_info` found in either window (a rename buried in the middle of a large file
//! is not seen until the session is opened).

use crate::entry::SessionHeader;
use crate::error::SessionError;
use crate::storage::user_text;
use crate::storage::SessionInfo;
use serde_json::Value;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::UNIX_EPOCH;

const HEAD: u64 = 64 * 1024;
const TAIL: u64 = 64 * 1024;
/// The longest line a listing will read to find a header or first message.
const LINE_CAP: u64 = 1 << 20;

/// Why a listing skips a file (its text is the reason the listing reports).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unlisted {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("missing session header")]
    NoHeader,
    #[error("header is not UTF-8")]
    HeaderNotUtf8,
    #[error(transparent)]
    Header(SessionError),
    #[error("unsupported session version {0}")]
    Version(u32),
}

/// Reads the listing facts of one file; `Err` is the reason the file is skipped.
pub(crate) fn read_info(path: &Path) -> Result<SessionInfo, Unlisted> {
    let mut file = File::open(path)?;
    let meta = file.metadata()?;
    let len = meta.len();
    let modified_ms = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0);

    let head = read_range(&mut file, 0, HEAD.min(len))?;
    let whole = len <= HEAD;
    let lines = complete_lines(&head, whole);

    let (header_line, rest) = match lines.split_first() {
        Some((first, rest)) => (Some(*first), rest),
        None => (None, &[][..]),
    };
    let header_text = match header_line {
        Some(h) => h.to_vec(),
        None if len > HEAD => read_line_at(&mut file, 0, len)?,
        None => return Err(Unlisted::NoHeader),
    };
    let header_str = std::str::from_utf8(&header_text).map_err(|_| Unlisted::HeaderNotUtf8)?;
    let header = SessionHeader::from_json(header_str.trim()).map_err(Unlisted::Header)?;
    match header.format_version() {
        1..=3 => {}
        v => return Err(Unlisted::Version(v)),
    }

    let mut first_message = None;
    let mut name_head: Option<Option<String>> = None;
    for line in rest {
        if first_message.is_none() && memchr::memmem::find(line, b"\"user\"").is_some() {
            if let Some(text) = first_user_text(line) {
                first_message = Some(text);
            }
        }
        if let Some(n) = session_info_name(line) {
            name_head = Some(n);
        }
    }
    // The first user message may be cut by the head window: read that line on its own.
    if first_message.is_none() && !whole {
        if let Some(cut) = cut_line_start(&head) {
            if memchr::memmem::find(&head[cut..], b"\"user\"").is_some() {
                let line = read_line_at(&mut file, cut as u64, len)?;
                first_message = first_user_text(&line);
            }
        }
    }

    let mut name = name_head;
    if !whole {
        let start = len.saturating_sub(TAIL).max(HEAD.min(len));
        let tail = read_range(&mut file, start, len - start)?;
        // The first line of the window is usually partial; skip it.
        let body = match memchr::memchr(b'\n', &tail) {
            Some(p) if start > 0 => &tail[p + 1..],
            _ => &tail[..],
        };
        for line in complete_lines(body, true) {
            if let Some(n) = session_info_name(line) {
                name = Some(n);
            }
        }
    }

    let entry_count = whole.then_some(rest.len() as u64);
    Ok(SessionInfo {
        id: header.id,
        location: path.display().to_string(),
        cwd: header.cwd,
        name: name.flatten(),
        created: header.timestamp,
        modified_ms,
        entry_count,
        first_message,
        parent_session: header.parent_session,
    })
}

/// Whether a session file holds a user or assistant message: files without one are what a start
/// that never got to a prompt left behind (older versions wrote the header at once), and `-c`,
/// pickers and listings pass over them (DECISIONS §29.5). Reads line by line up to the first
/// such message (the second or third line of a real session); an unreadable file counts as
/// holding one, so it is reported where it is opened rather than hidden.
pub fn holds_conversation(path: &Path) -> bool {
    use std::io::BufRead as _;
    let Ok(file) = File::open(path) else {
        return true;
    };
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => return false,
            Ok(_) => {
                if memchr::memmem::find(&line, b"\"message\"").is_some()
                    && std::str::from_utf8(&line)
                        .is_ok_and(|l| super::pending::is_conversation_line(l.trim_end()))
                {
                    return true;
                }
            }
            Err(_) => return true,
        }
    }
}

fn read_range(file: &mut File, start: u64, len: u64) -> std::io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity(len as usize);
    file.take(len).read_to_end(&mut buf)?;
    Ok(buf)
}

/// The line starting at `start`, up to `LINE_CAP` bytes (without its newline).
fn read_line_at(file: &mut File, start: u64, len: u64) -> std::io::Result<Vec<u8>> {
    let buf = read_range(file, start, LINE_CAP.min(len.saturating_sub(start)))?;
    match memchr::memchr(b'\n', &buf) {
        Some(p) => Ok(buf[..p].to_vec()),
        None => Ok(buf),
    }
}

/// Non-blank lines of `buf`; the unterminated last piece only when `include_last`.
fn complete_lines(buf: &[u8], include_last: bool) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    while let Some(p) = memchr::memchr(b'\n', &buf[start..]) {
        out.push(&buf[start..start + p]);
        start += p + 1;
    }
    if include_last && start < buf.len() {
        out.push(&buf[start..]);
    }
    out.retain(|l| !l.iter().all(u8::is_ascii_whitespace));
    out
}

/// Where the unterminated last line of a window starts.
fn cut_line_start(buf: &[u8]) -> Option<usize> {
    let last_nl = memchr::memrchr(b'\n', buf)?;
    (last_nl + 1 < buf.len()).then_some(last_nl + 1)
}

fn first_user_text(line: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(line).ok()?;
    if v.get("type").and_then(Value::as_str) != Some("message") {
        return None;
    }
    let m = v.get("message")?;
    if m.get("role").and_then(Value::as_str) != Some("user") {
        return None;
    }
    user_text(m)
}

/// `Some(name)` for a `session_info` line (`Some(None)` when it clears the name).
fn session_info_name(line: &[u8]) -> Option<Option<String>> {
    memchr::memmem::find(line, b"session_info")?;
    let v: Value = serde_json::from_slice(line).ok()?;
    if v.get("type").and_then(Value::as_str) != Some("session_info") {
        return None;
    }
    let name = v
        .get("name")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or("");
    Some((!name.is_empty()).then(|| name.to_owned()))
}
