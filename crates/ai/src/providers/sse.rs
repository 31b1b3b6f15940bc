//! Server-sent-events decoder working on raw bytes.
//!
//! Lines are split on `\r\n`, `\n` or `\r` (a `\r\n` pair split across two reads counts once);
//! a blank line dispatches the pending event; `:` lines are comments; one space after the field
//! colon is dropped; `data:` lines are joined with `\n`; a trailing event without its blank line
//! is still delivered by [`SseDecoder::finish`]. Only complete lines are decoded as UTF-8, so a
//! multibyte character split across network reads is reassembled before decoding. Buffers are
//! reused between events, so steady-state decoding does not allocate.

/// One decoded event, borrowed from the decoder until the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field, if any.
    pub event: Option<&'a str>,
    /// The `data:` lines joined with `\n`.
    pub data: &'a str,
    /// The event's raw lines (comments included) joined with a literal `\n` (backslash, n), for
    /// error messages.
    pub raw: &'a str,
}

/// Splits a byte stream into server-sent events, across reads of any size.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of an incomplete line carried over from the previous read.
    pending: Vec<u8>,
    /// A read ended on `\r`: a leading `\n` of the next read belongs to it.
    skip_lf: bool,
    event: String,
    has_event: bool,
    data: String,
    data_lines: usize,
    raw: String,
    /// Whether to keep raw lines (only needed for error messages that quote them).
    keep_raw: bool,
    /// The first bytes were seen (BOM check done).
    started: bool,
}

impl SseDecoder {
    /// A decoder that also records each event's raw lines ([`SseEvent::raw`]).
    pub fn new() -> Self {
        Self {
            keep_raw: true,
            ..Self::default()
        }
    }

    /// A decoder that skips raw-line bookkeeping ([`SseEvent::raw`] stays empty): one copy of
    /// the stream less for parsers that never quote raw lines.
    pub fn without_raw() -> Self {
        Self::default()
    }

    /// Whether bytes of an event that was not yet terminated by a blank line are buffered
    /// (what [`SseDecoder::finish`] would flush).
    pub fn has_unterminated_event(&self) -> bool {
        self.data_lines > 0 || self.has_event || !self.pending.iter().all(u8::is_ascii_whitespace)
    }

    /// Bytes held for the event not yet dispatched: its incomplete line, its data, and its raw
    /// lines. The driver bounds this, so a stream that never ends a line or an event cannot
    /// grow memory without limit.
    pub fn buffered_len(&self) -> usize {
        self.pending.len() + self.data.len() + self.raw.len() + self.event.len()
    }

    /// Feeds bytes; `on_event` runs for every complete event. Stops early (returning the error)
    /// when the callback fails.
    pub fn feed<E>(
        &mut self,
        mut bytes: &[u8],
        on_event: &mut dyn FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if !self.started && !bytes.is_empty() {
            // A UTF-8 byte-order mark before the first line is not part of the stream.
            self.pending.extend_from_slice(bytes);
            if self.pending.len() < 3 && b"\xEF\xBB\xBF".starts_with(&self.pending) {
                return Ok(());
            }
            self.started = true;
            let pending = std::mem::take(&mut self.pending);
            let body = pending.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&pending);
            return self.feed(body, on_event);
        }
        if bytes.is_empty() {
            // An empty read says nothing about a `\r\n` pair split around it.
            return Ok(());
        }
        if self.skip_lf {
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
            self.skip_lf = false;
        }
        // `memchr2` scans a word at a time; long `data:` lines are the common case.
        while let Some(i) = memchr::memchr2(b'\n', b'\r', bytes) {
            let (line, rest) = bytes.split_at(i);
            let mut next = &rest[1..];
            if rest[0] == b'\r' {
                match next.first() {
                    Some(b'\n') => next = &next[1..],
                    None => self.skip_lf = true,
                    _ => {}
                }
            }
            if self.pending.is_empty() {
                self.line(line, on_event)?;
            } else {
                let mut joined = std::mem::take(&mut self.pending);
                joined.extend_from_slice(line);
                let result = self.line(&joined, on_event);
                joined.clear();
                self.pending = joined;
                result?;
            }
            bytes = next;
        }
        self.pending.extend_from_slice(bytes);
        Ok(())
    }

    /// End of input: decodes a final unterminated line and flushes a pending event.
    pub fn finish<E>(
        &mut self,
        on_event: &mut dyn FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if !self.started {
            self.started = true;
            if b"\xEF\xBB\xBF".starts_with(&self.pending) {
                self.pending.clear();
            }
        }
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line(&line, on_event)?;
        }
        self.dispatch(on_event)
    }

    fn line<E>(
        &mut self,
        line: &[u8],
        on_event: &mut dyn FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if line.is_empty() {
            return self.dispatch(on_event);
        }
        // `from_utf8` is much faster than the lossy decoder on the (normal) valid input.
        let line = match std::str::from_utf8(line) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(line),
        };
        if self.keep_raw {
            if !self.raw.is_empty() {
                self.raw.push_str("\\n");
            }
            self.raw.push_str(&line);
        }
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.find(':') {
            Some(i) => (&line[..i], &line[i + 1..]),
            None => (&line[..], ""),
        };
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => {
                self.event.clear();
                self.event.push_str(value);
                self.has_event = true;
            }
            "data" => {
                if self.data_lines > 0 {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.data_lines += 1;
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch<E>(
        &mut self,
        on_event: &mut dyn FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let result = if self.has_event || self.data_lines > 0 {
            on_event(SseEvent {
                event: self.has_event.then_some(self.event.as_str()),
                data: &self.data,
                raw: &self.raw,
            })
        } else {
            Ok(())
        };
        self.event.clear();
        self.has_event = false;
        self.data.clear();
        self.data_lines = 0;
        self.raw.clear();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&[u8]]) -> Vec<(Option<String>, String, String)> {
        let mut out = Vec::new();
        let mut dec = SseDecoder::new();
        let mut push = |e: SseEvent<'_>| -> Result<(), ()> {
            out.push((
                e.event.map(str::to_string),
                e.data.to_string(),
                e.raw.to_string(),
            ));
            Ok(())
        };
        for c in chunks {
            dec.feed(c, &mut push).ok();
        }
        dec.finish(&mut push).ok();
        out
    }

    #[test]
    fn line_endings_comments_and_multiline_data() {
        let got = decode(&[
            b"event: a\r\ndata: 1\r",
            b"\ndata:2\r\r: c\nevent:b\ndata: x\n\n",
        ]);
        assert_eq!(
            got,
            vec![
                (
                    Some("a".into()),
                    "1\n2".into(),
                    "event: a\\ndata: 1\\ndata:2".into()
                ),
                (
                    Some("b".into()),
                    "x".into(),
                    ": c\\nevent:b\\ndata: x".into()
                ),
            ]
        );
    }

    #[test]
    fn utf8_split_and_trailing_flush() {
        let bytes = "data: héllo\n\ndata: tail".as_bytes();
        let got = decode(&[&bytes[..8], &bytes[8..]]);
        assert_eq!(got[0].1, "héllo");
        assert_eq!(got[1].1, "tail");
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn leading_bom_is_skipped_even_when_split() {
        let got = decode(&[b"\xEF", b"\xBB\xBFdata: a\n\n"]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1, "a");
        let got = decode(&[b"\xEF\xBB\xBFevent: x\ndata: b\n\n"]);
        assert_eq!(got[0].0.as_deref(), Some("x"));
    }

    #[test]
    fn empty_read_between_cr_and_lf_keeps_the_pair() {
        // Found by the chunking property test: an empty read after `\r` used to forget the
        // pending `\r\n`, so the `\n` dispatched the event early.
        let got = decode(&[b"event: a\r", b"", b"\ndata: \r\n\r\n"]);
        assert_eq!(
            got,
            vec![(Some("a".into()), "".into(), "event: a\\ndata: ".into())]
        );
    }

    #[test]
    fn blank_lines_without_fields_do_not_dispatch() {
        assert!(decode(&[b"\n\n\r\n: only comment\n\n"]).is_empty());
    }
}
