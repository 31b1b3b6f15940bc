//! Reading a session file into the index.
//!
//! v3 files are streamed in chunks: each line's envelope is scanned and only its byte range is
//! kept, so a 100 MB session costs one pass over the bytes and a few bytes of index per entry.
//! v1/v2 files are small in practice; they are parsed whole, migrated, and kept in memory until
//! the first write rewrites them (DECISIONS §4.3).

use super::migrate;
use crate::entry::{SessionHeader, CURRENT_VERSION};
use crate::error::{Result, SessionError};
use crate::index::{IdHasher, Index, Raw};
use crate::line::envelope::{probe, probe_bytes};
use crate::line::envelope_scan::{skim, Role, Skim};
use serde_json::{Map, Value};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;

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
///
/// A large file is read and skimmed on a second thread while this one builds the index
/// (DECISIONS §25.116): the two halves cost about the same, and a machine with one core, or a
/// file of a chunk or two, does both here.
pub(crate) fn load(origin: &str, file: &File) -> Result<Loaded> {
    let file_len = file
        .metadata()
        .map_err(|e| SessionError::io(origin, e))?
        .len();
    let threaded = crate::workers::cores() > 1 && file_len > 2 * CHUNK;
    load_on(origin, file, file_len, threaded)
}

/// [`load`] with the choice of a reading thread given (tests take both paths on any file).
fn load_on(origin: &str, file: &File, file_len: u64, threaded: bool) -> Result<Loaded> {
    let io = |e| SessionError::io(origin, e);
    let mut reader = file;
    reader.seek(SeekFrom::Start(0)).map_err(io)?;

    let mut built = Building {
        origin,
        index: Index::new(origin),
        header: None,
        tail: Tail::Clean,
        line_no: 0,
    };
    // One entry per ~512 bytes undercounts typical lines (300-600 bytes) by little and costs
    // a few bytes per estimated entry: a few MB on a file of hundreds.
    built
        .index
        .reserve(usize::try_from(file_len / 512).unwrap_or(0));
    let mut skimmer = Skimmer::new(file, built.index.hasher());
    let flow = if threaded {
        // Bounded: the reader runs at most a few chunks ahead; consumed batches go back to it.
        let (tx, rx) = std::sync::mpsc::sync_channel::<std::io::Result<Batch>>(4);
        let (back_tx, back_rx) = std::sync::mpsc::channel::<Batch>();
        std::thread::scope(|scope| {
            scope.spawn(move || loop {
                let mut batch = back_rx.try_recv().unwrap_or_default();
                let more = skimmer.next(&mut batch);
                let stop = !matches!(more, Ok(true));
                // A closed channel means the index side stopped (an error, a legacy header).
                if tx.send(more.map(|_| batch)).is_err() || stop {
                    return;
                }
            });
            // Owned here, so an early return closes both channels and the reader, blocked on a
            // full channel or not, stops before the scope waits for it.
            let (rx, back_tx) = (rx, back_tx);
            let mut flow = Flow::More;
            while let Ok(batch) = rx.recv() {
                let batch = batch.map_err(io)?;
                flow = built.take(&batch)?;
                if flow != Flow::More {
                    break;
                }
                // The reader may have finished; a batch it will not reuse is simply dropped.
                let _ = back_tx.send(batch);
            }
            Ok::<_, SessionError>(flow)
        })?
    } else {
        let mut batch = Batch::default();
        loop {
            let more = skimmer.next(&mut batch).map_err(io)?;
            let flow = built.take(&batch)?;
            if flow != Flow::More || !more {
                break flow;
            }
        }
    };
    if let Flow::Legacy(version) = flow {
        return load_legacy(origin, file, version);
    }
    let Building {
        index,
        header,
        tail,
        line_no,
        ..
    } = built;
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
    let mut index = index;
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

/// One physical line as the reading side left it for the index side.
enum Seen {
    /// Only whitespace, newline-terminated.
    Blank,
    /// A line the skim read; the ranges are into the batch's `text`, `tag` is the id's hash
    /// tag for the index's table.
    Skimmed {
        offset: u64,
        len: usize,
        ty: Range<usize>,
        id: Range<usize>,
        parent: Option<Range<usize>>,
        role: Role,
        tag: u32,
    },
    /// Any other newline-terminated line (the header, the types the index reads in full, a
    /// line the skim left to the full probe), whole in `text`.
    Whole { offset: u64, text: Range<usize> },
    /// The file's last bytes, with no newline after them: whole in `tail`, UTF-8 unchecked
    /// (they may be a torn append).
    Unterminated { offset: u64 },
    /// The next line holds invalid UTF-8 at byte `at`; nothing after it was read.
    BadUtf8 { at: usize },
}

/// The lines of one chunk, in file order.
#[derive(Default)]
struct Batch {
    seen: Vec<Seen>,
    text: String,
    tail: Vec<u8>,
}

impl Batch {
    fn clear(&mut self) {
        self.seen.clear();
        self.text.clear();
        self.tail.clear();
    }

    fn keep(&mut self, s: &str) -> Range<usize> {
        let start = self.text.len();
        self.text.push_str(s);
        start..self.text.len()
    }
}

/// The reading side: chunks of the file, UTF-8 checked and skimmed line by line.
struct Skimmer<'f> {
    file: &'f File,
    hasher: IdHasher,
    /// `buf[..len]` holds the bytes read and not yet handled (a partial line, then a chunk);
    /// the buffer is zeroed once and grows only for a line longer than it.
    buf: Vec<u8>,
    len: usize,
    base: u64,
    scan_from: usize,
    /// A non-blank line was seen: the first one is the header, always handed over whole.
    content: bool,
    done: bool,
}

impl<'f> Skimmer<'f> {
    fn new(file: &'f File, hasher: IdHasher) -> Skimmer<'f> {
        Skimmer {
            file,
            hasher,
            buf: vec![0; 2 * CHUNK as usize],
            len: 0,
            base: 0,
            scan_from: 0,
            content: false,
            done: false,
        }
    }

    /// Fills `batch` (cleared first) with the complete lines of the next chunk; `false` when
    /// nothing follows (the end of the file, or bytes that are not UTF-8).
    fn next(&mut self, batch: &mut Batch) -> std::io::Result<bool> {
        batch.clear();
        if self.done {
            return Ok(false);
        }
        let chunk = CHUNK as usize;
        if self.buf.len() < self.len + chunk {
            self.buf.resize(self.len + chunk, 0);
        }
        let mut reader = self.file;
        let n = read_chunk(&mut reader, &mut self.buf[self.len..self.len + chunk])?;
        self.len += n;
        // Complete lines end at the last newline; a partial line waits for the next chunk.
        if let Some(last) = memchr::memrchr(b'\n', &self.buf[self.scan_from..self.len]) {
            let end = self.scan_from + last + 1;
            let region = &self.buf[..end];
            // Chunks are small enough to stay in cache between the UTF-8 check and the skim.
            // simdutf8's `compat` API reports std's `valid_up_to`, 1.7-5x faster than std here.
            // Lines before an invalid byte are handed over (an earlier error wins), the rest
            // are not.
            let (text, bad_utf8) = match simdutf8::compat::from_utf8(region) {
                Ok(text) => (text, None),
                Err(e) => {
                    let at = e.valid_up_to();
                    let line_start = memchr::memrchr(b'\n', &region[..at]).map_or(0, |p| p + 1);
                    let valid = std::str::from_utf8(&region[..line_start]).unwrap_or_default();
                    (valid, Some(at - line_start))
                }
            };
            let mut start = 0usize;
            for nl in memchr::memchr_iter(b'\n', text.as_bytes()) {
                let line = &text[start..nl];
                let offset = self.base + start as u64;
                start = nl + 1;
                if is_blank(line.as_bytes()) {
                    batch.seen.push(Seen::Blank);
                    continue;
                }
                // The index-only read (DECISIONS §25.20); the header always goes whole.
                let skimmed = if self.content { skim(line) } else { None };
                self.content = true;
                let seen = match skimmed {
                    Some(sk) => Seen::Skimmed {
                        offset,
                        len: line.len(),
                        tag: self.hasher.tag(sk.id),
                        ty: batch.keep(sk.ty),
                        id: batch.keep(sk.id),
                        parent: sk.parent_id.map(|p| batch.keep(p)),
                        role: sk.role,
                    },
                    None => Seen::Whole {
                        offset,
                        text: batch.keep(line),
                    },
                };
                batch.seen.push(seen);
            }
            if let Some(at) = bad_utf8 {
                batch.seen.push(Seen::BadUtf8 { at });
                self.done = true;
                return Ok(false);
            }
            self.buf.copy_within(end..self.len, 0);
            self.len -= end;
            self.base += end as u64;
        }
        self.scan_from = self.len;
        if n == 0 {
            if self.len > 0 {
                batch.tail.extend_from_slice(&self.buf[..self.len]);
                batch.seen.push(Seen::Unterminated { offset: self.base });
            }
            self.done = true;
            return Ok(false);
        }
        Ok(true)
    }
}

/// Whether the index side goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    More,
    /// The header asks for a migration from this version.
    Legacy(u32),
}

/// The index side of a load.
struct Building<'o> {
    origin: &'o str,
    index: Index,
    header: Option<(SessionHeader, String)>,
    tail: Tail,
    /// Physical lines handled so far.
    line_no: u32,
}

impl Building<'_> {
    fn take(&mut self, batch: &Batch) -> Result<Flow> {
        let origin = self.origin;
        for seen in &batch.seen {
            if let Seen::BadUtf8 { at } = seen {
                return Err(line_err(
                    origin,
                    self.line_no + 1,
                    format!("invalid UTF-8 at byte {at} of the line"),
                ));
            }
            self.line_no += 1;
            let line_no = self.line_no;
            let legacy = match seen {
                Seen::Blank | Seen::BadUtf8 { .. } => None,
                Seen::Skimmed {
                    offset,
                    len,
                    ty,
                    id,
                    parent,
                    role,
                    tag,
                } => {
                    let len = u32::try_from(*len)
                        .map_err(|_| line_err(origin, line_no, "line longer than 4 GiB"))?;
                    let text = &batch.text;
                    let sk = Skim {
                        ty: text.get(ty.clone()).unwrap_or_default(),
                        id: text.get(id.clone()).unwrap_or_default(),
                        parent_id: parent.clone().map(|p| text.get(p).unwrap_or_default()),
                        role: *role,
                    };
                    let raw = Raw::File {
                        offset: *offset,
                        len,
                    };
                    self.index.load_skimmed_tagged(&sk, *tag, raw, line_no)?;
                    None
                }
                Seen::Whole { offset, text } => {
                    let line = batch.text.get(text.clone()).unwrap_or_default();
                    take_line(
                        origin,
                        line.as_bytes(),
                        Some(line),
                        *offset,
                        line_no,
                        true,
                        &mut self.header,
                        &mut self.index,
                        &mut self.tail,
                    )?
                }
                Seen::Unterminated { offset } => take_line(
                    origin,
                    &batch.tail,
                    None,
                    *offset,
                    line_no,
                    false,
                    &mut self.header,
                    &mut self.index,
                    &mut self.tail,
                )?,
            };
            if let Some(version) = legacy {
                return Ok(Flow::Legacy(version));
            }
        }
        Ok(Flow::More)
    }
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
    // Ids of v1 entries are derived, not random: the same file reads with the same ids on
    // every open, read-only or not (DECISIONS §25.12).
    let seed = header_map
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut position = 0u64;
    migrate::migrate_to_v3(u64::from(version), &mut header_map, &mut maps, |taken| {
        position += 1;
        crate::ids::derived_entry_id(&seed, position, |c| taken.contains(c))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Parent;
    use std::io::Write;

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-06-20T15:00:00.000Z","cwd":"/w"}"#;

    fn entry(id: &str, parent: Option<&str>, text: &str) -> String {
        let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-06-20T15:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#
        )
    }

    /// A header and `n` chained entries of about 300 bytes (over two read chunks for n >= 2,000),
    /// with a side branch, a blank line, a leaf move, a label and a key order the canonical
    /// skim does not take along the way.
    fn session(n: usize) -> Vec<String> {
        let pad = "p".repeat(220);
        let mut lines = vec![HEADER.to_owned()];
        for i in 0..n {
            let parent = (i > 0).then(|| format!("e{}", i - 1));
            lines.push(entry(&format!("e{i}"), parent.as_deref(), &pad));
            match i {
                100 => lines.push(entry("side", Some("e50"), "a branch")),
                200 => lines.push("   ".to_owned()),
                300 => lines.push(
                    r#"{"type":"leaf","id":"l1","parentId":"e300","timestamp":"2026-06-20T15:00:01.000Z","targetId":"side"}"#
                        .to_owned(),
                ),
                400 => lines.push(
                    r#"{"type":"label","id":"lb","parentId":"e400","timestamp":"2026-06-20T15:00:01.000Z","targetId":"e3","label":"here"}"#
                        .to_owned(),
                ),
                500 => lines.push(
                    r#"{"id":"odd","type":"message","parentId":"e500","timestamp":"2026-06-20T15:00:01.000Z","message":{"role":"assistant","content":[]}}"#
                        .to_owned(),
                ),
                _ => {}
            }
        }
        lines
    }

    fn bytes_of(lines: &[String]) -> Vec<u8> {
        let mut out = Vec::new();
        for l in lines {
            out.extend_from_slice(l.as_bytes());
            out.push(b'\n');
        }
        out
    }

    /// What a load found, comparable across the two paths. A load that does not finish (the
    /// reader and the index side waiting on each other) fails the test instead of hanging it.
    fn outcome(bytes: &[u8], threaded: bool) -> std::result::Result<String, String> {
        let mut file = tempfile::tempfile().map_err(|e| e.to_string())?;
        file.write_all(bytes).map_err(|e| e.to_string())?;
        let len = bytes.len() as u64;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(load_on("t.jsonl", &file, len, threaded));
        });
        let loaded = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .map_err(|_| format!("the load (threaded: {threaded}) did not finish in 60 s"))
            .map(|r| r.map_err(|e| e.to_string()))
            .and_then(|r| r)?;
        let ix = &loaded.index;
        let slots: Vec<String> = (0..ix.len() as u32)
            .map(|i| {
                let s = ix.slot(i);
                let raw = match s.raw {
                    Raw::File { offset, len } => format!("{offset}+{len}"),
                    Raw::Mem(ref m) => format!("mem {}", m.len()),
                };
                let parent = match s.parent {
                    Parent::Root => "root".to_owned(),
                    Parent::At(p) => ix.id(p).to_owned(),
                    Parent::Missing => "missing".to_owned(),
                };
                format!("{} {parent} {} {raw} {:?}", ix.id(i), s.line, s.assistant)
            })
            .collect();
        Ok(format!(
            "lines {} len {} tail {:?} migrated {:?} leaf {:?} label {:?}\n{}",
            loaded.lines,
            loaded.file_len,
            loaded.tail,
            loaded.migrated_from,
            ix.leaf_id(),
            ix.label("e3"),
            slots.join("\n")
        ))
    }

    /// Both paths give the same answer; returns it.
    fn same_both_ways(bytes: &[u8]) -> std::result::Result<String, String> {
        let inline = outcome(bytes, false);
        assert_eq!(inline, outcome(bytes, true));
        inline
    }

    #[test]
    fn a_reading_thread_indexes_what_the_calling_thread_indexes() {
        let lines = session(3000);
        let bytes = bytes_of(&lines);
        assert!(
            bytes.len() as u64 > 3 * CHUNK,
            "the file spans several chunks"
        );
        let got = same_both_ways(&bytes).expect("loads");
        assert!(got.starts_with(&format!(
            "lines {} len {} tail Clean migrated None leaf Some(\"e2999\") label Some(\"here\")",
            lines.len(),
            bytes.len()
        )));
        assert!(got.contains("\nside e50 103 "), "{}", &got[..200]);
        assert!(got.contains("\nodd e500 "));
        assert!(
            got.contains(" Some(true)"),
            "the odd line's assistant role is read"
        );
    }

    #[test]
    fn tails_errors_and_legacy_headers_come_out_the_same_on_both_paths() {
        let base = session(2500);
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            (
                "torn tail",
                {
                    let mut b = bytes_of(&base);
                    b.extend_from_slice(br#"{"type":"message","id":"torn","par"#);
                    b
                },
                "tail Torn",
            ),
            (
                "missing newline",
                {
                    let mut b = bytes_of(&base);
                    b.extend_from_slice(entry("last", Some("e2499"), "x").as_bytes());
                    b
                },
                "tail MissingNewline",
            ),
            (
                "blank unterminated tail",
                {
                    let mut b = bytes_of(&base);
                    b.extend_from_slice(b"  ");
                    b
                },
                "tail MissingNewline",
            ),
            (
                "duplicate id in a late chunk",
                {
                    let mut l = base.clone();
                    l.insert(2200, entry("e7", Some("e6"), "again"));
                    bytes_of(&l)
                },
                "t.jsonl:2201: duplicate entry id e7 (first used (line 9))",
            ),
            (
                "invalid UTF-8 in a late chunk",
                {
                    let mut b = bytes_of(&base[..2000]);
                    b.extend_from_slice(b"{\"type\":\"message\",\"id\":\"bad\xff\"}\n");
                    b.extend_from_slice(&bytes_of(&base[2000..]));
                    b
                },
                "t.jsonl:2001: invalid UTF-8 at byte 27 of the line",
            ),
            (
                "an error before the invalid UTF-8 in the same chunk wins",
                {
                    let mut b = bytes_of(&base[..1999]);
                    b.extend_from_slice(b"{\"type\":\"message\",\"id\":\"\"}\n");
                    b.extend_from_slice(b"{\"type\":\"message\",\"id\":\"bad\xff\"}\n");
                    b.extend_from_slice(&bytes_of(&base[1999..]));
                    b
                },
                "t.jsonl:2000: not a valid entry",
            ),
            (
                "legacy header",
                {
                    let mut l = base.clone();
                    l[0] = r#"{"type":"session","version":2,"id":"s1","timestamp":"2026-06-20T15:00:00.000Z","cwd":"/w"}"#.to_owned();
                    bytes_of(&l)
                },
                "migrated Some(2)",
            ),
            (
                "no header",
                bytes_of(&base[1..]),
                "t.jsonl:1: the first line must be a session header",
            ),
            (
                "an error in the first chunk of many",
                {
                    let mut l = session(20_000);
                    l.insert(10, entry("e3", Some("e8"), "again"));
                    bytes_of(&l)
                },
                "t.jsonl:11: duplicate entry id e3",
            ),
            (
                "a legacy header on a file of many chunks",
                {
                    let mut l = session(20_000);
                    l[0] = r#"{"type":"session","version":2,"id":"s1","timestamp":"2026-06-20T15:00:00.000Z","cwd":"/w"}"#.to_owned();
                    bytes_of(&l)
                },
                "migrated Some(2)",
            ),
        ];
        for (name, bytes, want) in cases {
            let got = match same_both_ways(&bytes) {
                Ok(summary) => summary,
                Err(e) => e,
            };
            assert!(got.contains(want), "{name}: {}", &got[..got.len().min(300)]);
        }
    }

    /// One random well-formed line for [`the_two_paths_agree_on_any_file`]; `ids` holds the
    /// ids written so far (a branch's parent and a leaf's target are drawn from them).
    fn random_line(kind: u8, i: usize, pick: usize, ids: &mut Vec<String>) -> Vec<u8> {
        let id = format!("r{i}");
        let earlier = ids.get(pick % ids.len().max(1)).cloned();
        let line = match (kind % 9, earlier) {
            (5, Some(p)) => entry(&id, Some(&p), "a branch"),
            (6, _) => entry(&id, None, "a root"),
            (7, _) => return b"  \t".to_vec(),
            (8, Some(t)) => format!(
                r#"{{"type":"leaf","id":"{id}","parentId":null,"timestamp":"2026-06-20T15:00:01.000Z","targetId":"{t}"}}"#
            ),
            // Keys out of pi's order: the skim leaves it to the full probe.
            (4, _) => format!(
                r#"{{"id":"{id}","type":"custom","parentId":null,"timestamp":"2026-06-20T15:00:01.000Z","customType":"k"}}"#
            ),
            (3, _) => entry(&id, Some("nowhere"), "a missing parent"),
            _ => entry(&id, ids.last().map(String::as_str), &"q".repeat(180)),
        };
        ids.push(id);
        line.into_bytes()
    }

    /// A line that refuses the file (or, for 3, a leaf move the end of the load refuses).
    fn fault_line(kind: u8, ids: &[String]) -> Vec<u8> {
        match (kind % 4, ids.first()) {
            (0, Some(dup)) => entry(dup, None, "a duplicate id").into_bytes(),
            (1, _) => b"{\"type\":\"message\",\"id\":\"x\xfe\"}".to_vec(),
            (2, _) => b"{\"type\":".to_vec(),
            _ => br#"{"type":"leaf","id":"lz","parentId":null,"timestamp":"2026-06-20T15:00:01.000Z","targetId":"nobody"}"#.to_vec(),
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// Any mix of lines over several chunks (entries, branches, roots, blanks, leaf moves,
        /// duplicates, missing parents, broken and non-UTF-8 lines, a long line, a torn tail)
        /// loads the same way on both paths: the same index or the same error.
        #[test]
        fn the_two_paths_agree_on_any_file(
            kinds in proptest::collection::vec((0u8..9, 0usize..10_000), 1..3_000),
            long_at in proptest::option::of(0usize..3_000),
            fault in proptest::option::of((0usize..3_000, 0u8..4)),
            tail in proptest::option::of(0usize..3),
            legacy in proptest::bool::weighted(0.05),
        ) {
            let mut bytes = if legacy {
                HEADER.replace("\"version\":3", "\"version\":2").into_bytes()
            } else {
                HEADER.as_bytes().to_vec()
            };
            bytes.push(b'\n');
            let mut ids = Vec::new();
            for (i, (kind, pick)) in kinds.iter().enumerate() {
                let line = if long_at == Some(i) {
                    ids.push(format!("r{i}"));
                    entry(&format!("r{i}"), None, &"L".repeat(300_000)).into_bytes()
                } else {
                    random_line(*kind, i, *pick, &mut ids)
                };
                bytes.extend_from_slice(&line);
                bytes.push(b'\n');
                if let Some((at, f)) = fault {
                    if at == i {
                        bytes.extend_from_slice(&fault_line(f, &ids));
                        bytes.push(b'\n');
                    }
                }
            }
            match tail {
                Some(0) => bytes.extend_from_slice(br#"{"type":"message","id":"torn"#),
                Some(1) => bytes.extend_from_slice(entry("last", None, "no newline").as_bytes()),
                Some(_) => bytes.extend_from_slice(b"   "),
                None => {}
            }
            let inline = outcome(&bytes, false);
            let threaded = outcome(&bytes, true);
            proptest::prop_assert_eq!(inline, threaded);
        }
    }
}
