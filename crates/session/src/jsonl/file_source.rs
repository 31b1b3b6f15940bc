//! Reading a session file's lines by offset, for the index's reads and the line views.

use crate::error::{Result, SessionError};
use crate::index::{LineSource, Raw};
use crate::stored_lines::SnapshotSources;
use std::borrow::Cow;
use std::fs::File;

/// Reads entry lines by offset. A read close after the previous one (a path, a page, the
/// stats pass) fills a window of the file instead of one `pread` per line: the 200,000-entry
/// path of the 1M-entry bench is ~2,000 reads instead of 200,000 (DECISIONS §25.23).
pub(crate) struct FileSource<'a> {
    file: &'a File,
    origin: &'a str,
    window: std::cell::RefCell<Window>,
}

#[derive(Default)]
struct Window {
    start: u64,
    bytes: Vec<u8>,
    /// End of the previous read (window or single line); `None` before the first read.
    last_end: Option<u64>,
}

/// How far past the previous read a line may start and still be read through the window.
const WINDOW_GAP: u64 = 128 << 10;
const WINDOW_LEN: usize = 512 << 10;

impl<'s> FileSource<'s> {
    pub(crate) fn new(file: &'s File, origin: &'s str) -> Self {
        FileSource {
            file,
            origin,
            window: Default::default(),
        }
    }

    fn utf8(&self, buf: Vec<u8>, offset: u64) -> Result<String> {
        String::from_utf8(buf).map_err(|_| self.not_utf8(offset))
    }

    fn not_utf8(&self, offset: u64) -> SessionError {
        SessionError::InvalidSession(format!(
            "{}: bytes at offset {offset} are no longer valid UTF-8 (file changed underneath?)",
            self.origin
        ))
    }

    /// Makes the window hold the `len` bytes at `offset` when the read starts inside it or
    /// near the previous one (refilling it from `offset`); `false` for a far read, which the
    /// caller reads alone.
    fn fill(&self, w: &mut Window, offset: u64, len: u32) -> Result<bool> {
        let io = |e| SessionError::io(self.origin, e);
        let end = offset + u64::from(len);
        let w_end = w.start + w.bytes.len() as u64;
        if offset >= w.start && end <= w_end {
            w.last_end = Some(end);
            return Ok(true);
        }
        let near = w
            .last_end
            .is_some_and(|prev| offset >= prev && offset - prev <= WINDOW_GAP);
        w.last_end = Some(end);
        if !near {
            return Ok(false);
        }
        let want = WINDOW_LEN.max(len as usize);
        w.bytes.resize(want, 0);
        let got = read_at_most(self.file, &mut w.bytes, offset).map_err(io)?;
        w.bytes.truncate(got);
        w.start = offset;
        if got < len as usize {
            return Err(io(std::io::ErrorKind::UnexpectedEof.into()));
        }
        Ok(true)
    }

    fn read_line(&self, offset: u64, len: u32) -> Result<String> {
        let mut w = self.window.borrow_mut();
        if self.fill(&mut w, offset, len)? {
            let at = (offset - w.start) as usize;
            let line = w.bytes[at..at + len as usize].to_vec();
            return self.utf8(line, offset);
        }
        let mut buf = vec![0u8; len as usize];
        read_exact_at(self.file, &mut buf, offset).map_err(|e| SessionError::io(self.origin, e))?;
        self.utf8(buf, offset)
    }

    /// [`LineSource::with_line`] for a file line: lent from the window, UTF-8 checked in place.
    fn with_file_line(
        &self,
        offset: u64,
        len: u32,
        f: &mut dyn FnMut(&str) -> Result<()>,
    ) -> Result<()> {
        let mut w = self.window.borrow_mut();
        if self.fill(&mut w, offset, len)? {
            let at = (offset - w.start) as usize;
            let text = simdutf8::basic::from_utf8(&w.bytes[at..at + len as usize])
                .map_err(|_| self.not_utf8(offset))?;
            return f(text);
        }
        drop(w);
        f(&self.read_line(offset, len)?)
    }
}

/// The JSONL snapshot's sources: a second handle on the file. Indexed lines are never
/// rewritten in place (appends add bytes, repairs cut only unindexed tails), so the snapshot
/// reads what the index held when it was made (DECISIONS §25.82).
pub(crate) struct FileLines {
    pub(crate) file: File,
    pub(crate) origin: String,
}

impl SnapshotSources for FileLines {
    fn source(&self) -> Box<dyn LineSource + '_> {
        Box::new(FileSource::new(&self.file, &self.origin))
    }
}

impl LineSource for FileSource<'_> {
    fn read<'a>(&'a self, raw: &'a Raw) -> Result<Cow<'a, str>> {
        match raw {
            Raw::Mem(s) => Ok(Cow::Borrowed(s)),
            Raw::File { offset, len } => self.read_line(*offset, *len).map(Cow::Owned),
        }
    }

    fn with_line(&self, raw: &Raw, f: &mut dyn FnMut(&str) -> Result<()>) -> Result<()> {
        match raw {
            Raw::Mem(s) => f(s),
            Raw::File { offset, len } => self.with_file_line(*offset, *len, f),
        }
    }
}

/// Fills as much of `buf` as the file holds from `offset` on.
fn read_at_most(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match read_at(file, &mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    file.read_at(buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    use std::os::windows::fs::FileExt;
    file.seek_read(buf, offset)
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
