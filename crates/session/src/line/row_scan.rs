//! The byte-level read of the common message lines (DECISIONS §25.90).
//!
//! A tree row of a user, assistant or tool-result message needs a handful of fields and the
//! first ~80 visible characters of its texts. This scanner walks the line once: it reads the
//! envelope and the message keys a row shows, decodes a text only until its `Squash` is full
//! and steps over everything else, so a long text, a usage object or tool arguments cost a
//! byte scan, and nothing is allocated but the summary itself.
//!
//! It is a strict subset of the serde view beside it ([`super::row`]): wherever it answers
//! [`Scan::Row`], that view would give the same summary (test `reader_equivalence::row_scan`, fixtures and a
//! generated property with mutated lines). To keep that promise it checks JSON syntax the way
//! serde_json does for the values it skips (strings, escapes, control bytes, numbers,
//! literals, nesting, trailing bytes), and it gives up ([`Scan::Unsure`]) on anything it does
//! not handle itself: an escaped key, a duplicate key it reads, a value of an unexpected
//! type, a lone surrogate anywhere, deep nesting, a number in tool arguments that a
//! `serde_json::Value` could refuse, or a line that is not one object.

use super::string_end::next_special;
use crate::rows::preview::Squash;
use crate::rows::{boxed, cap_strings, time_of, CallSummary, MessageRow, Preview, RowCaps};
use crate::rows::{RowKind, RowSummary, Stop};

/// What the scan found.
#[derive(Debug)]
pub enum Scan {
    /// The summary; the serde view gives the same.
    Row(RowSummary),
    /// The serde view would give up on this line for certain (another entry type, another
    /// role, a shape it sends to the full parse): go straight to the full parse.
    Full,
    /// Not handled here: ask the serde view.
    Unsure,
}

/// Containers deeper than this are left to serde (its own limit for `Value`s is 128).
const MAX_DEPTH: u32 = 64;

/// A number longer than this inside tool arguments is left to serde: `Value` refuses numbers
/// outside `f64`'s range, which a byte check cannot see cheaply.
const MAX_PLAIN_NUMBER: usize = 300;

struct P<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

/// A string's contents (between the quotes) as a byte range of the line.
#[derive(Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    escaped: bool,
}

fn hex(c: u8) -> Option<u16> {
    match c {
        b'0'..=b'9' => Some(u16::from(c - b'0')),
        b'a'..=b'f' => Some(u16::from(c - b'a' + 10)),
        b'A'..=b'F' => Some(u16::from(c - b'A' + 10)),
        _ => None,
    }
}

impl<'a> P<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// Position of the next `"`, `\` or control byte at or after `i`.
    fn next_special(&self, i: usize) -> Option<usize> {
        next_special(self.b, i)
    }

    fn hex4(&self, at: usize) -> Option<u16> {
        let d = self.b.get(at..at + 4)?;
        Some(hex(d[0])? << 12 | hex(d[1])? << 8 | hex(d[2])? << 4 | hex(d[3])?)
    }

    /// One string (the cursor on its opening quote), checked as serde_json checks a string it
    /// reads into a `&str`: valid escapes, no control bytes, surrogates paired.
    fn string(&mut self) -> Option<Span> {
        self.eat(b'"')?;
        let start = self.i;
        let mut escaped = false;
        let mut i = start;
        loop {
            i = self.next_special(i)?;
            match self.b[i] {
                b'"' => {
                    self.i = i + 1;
                    return Some(Span {
                        start,
                        end: i,
                        escaped,
                    });
                }
                b'\\' => {
                    escaped = true;
                    i = self.escape_end(i)?;
                }
                _ => return None,
            }
        }
    }

    /// The end of the escape starting at the backslash at `at` (checked).
    fn escape_end(&self, at: usize) -> Option<usize> {
        match *self.b.get(at + 1)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(at + 2),
            b'u' => {
                let n = self.hex4(at + 2)?;
                match n {
                    0xD800..=0xDBFF => {
                        if self.b.get(at + 6..at + 8)? != b"\\u" {
                            return None;
                        }
                        let low = self.hex4(at + 8)?;
                        (0xDC00..=0xDFFF).contains(&low).then_some(at + 12)
                    }
                    0xDC00..=0xDFFF => None,
                    _ => Some(at + 6),
                }
            }
            _ => None,
        }
    }

    /// A string without escapes, as `&str` (ids, types, roles: anything else is left to serde).
    fn plain(&mut self) -> Option<&'a str> {
        let sp = self.string()?;
        if sp.escaped {
            return None;
        }
        self.s.get(sp.start..sp.end)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.b[self.i..]
            .starts_with(word)
            .then(|| self.i += word.len())
    }

    /// A number by JSON's grammar (serde_json's); `strict` refuses the ones a `Value` might.
    fn number(&mut self, strict: bool) -> Option<()> {
        let start = self.i;
        let digits = |p: &mut Self| {
            let from = p.i;
            while let Some(b'0'..=b'9') = p.peek() {
                p.i += 1;
            }
            p.i - from
        };
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => {
                self.i += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return None;
                }
            }
            b'1'..=b'9' => {
                digits(self);
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if digits(self) == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            if strict {
                return None;
            }
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if digits(self) == 0 {
                return None;
            }
        }
        (!strict || self.i - start <= MAX_PLAIN_NUMBER).then_some(())
    }

    /// Steps over one value, checking its syntax (see the module docs).
    fn skip(&mut self, depth: u32, strict: bool) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'n' => self.literal(b"null"),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'-' | b'0'..=b'9' => self.number(strict),
            b'{' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.i += 1;
                self.ws();
                if self.peek()? == b'}' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.ws();
                    self.string()?;
                    self.ws();
                    self.eat(b':')?;
                    self.ws();
                    self.skip(depth + 1, strict)?;
                    self.ws();
                    match self.peek()? {
                        b',' => self.i += 1,
                        b'}' => {
                            self.i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.i += 1;
                self.ws();
                if self.peek()? == b']' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.ws();
                    self.skip(depth + 1, strict)?;
                    self.ws();
                    match self.peek()? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            _ => None,
        }
    }

    /// The members of an object (the cursor on `{`): `member(p, key)` reads or skips each
    /// value. Keys are plain strings; an escaped key is left to serde.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            let key = self.plain()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            member(self, key)?;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// `null` (`None`) or a string (`Some`).
    fn opt_string(&mut self) -> Option<Option<Span>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(None);
        }
        self.string().map(Some)
    }

    /// `null` (`None`) or a plain string.
    fn opt_plain(&mut self) -> Option<Option<&'a str>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(None);
        }
        self.plain().map(Some)
    }

    /// Feeds a string's decoded characters to `sink` until it reports that it is full.
    fn decode(&self, sp: Span, sink: &mut Squash, nonblank: &mut bool) {
        let Some(text) = self.s.get(sp.start..sp.end) else {
            return;
        };
        if !sp.escaped {
            sink.push_tracking(text, nonblank);
            return;
        }
        let b = text.as_bytes();
        let mut from = 0;
        while from < b.len() && !sink.full {
            let Some(at) = memchr::memchr(b'\\', &b[from..]).map(|p| from + p) else {
                sink.push_tracking(&text[from..], nonblank);
                return;
            };
            sink.push_tracking(&text[from..at], nonblank);
            let (ch, next) = match b.get(at + 1) {
                Some(b'u') => {
                    let at = sp.start + at;
                    let Some(n) = self.hex4(at + 2) else { return };
                    if (0xD800..=0xDBFF).contains(&n) {
                        let Some(low) = self.hex4(at + 8) else { return };
                        let c =
                            0x1_0000 + ((u32::from(n) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                        (char::from_u32(c), at + 12 - sp.start)
                    } else {
                        (char::from_u32(u32::from(n)), at + 6 - sp.start)
                    }
                }
                Some(b'n') => (Some('\n'), at + 2),
                Some(b't') => (Some('\t'), at + 2),
                Some(b'r') => (Some('\r'), at + 2),
                Some(b'b') => (Some('\u{8}'), at + 2),
                Some(b'f') => (Some('\u{c}'), at + 2),
                Some(&c) => (Some(char::from(c)), at + 2),
                None => return,
            };
            if let Some(ch) = ch {
                sink.push_char_tracking(ch, nonblank);
            }
            from = next;
        }
    }

    /// A string's decoded text, owned (for the rare escaped id, name or stop reason).
    fn owned(&self, sp: Span) -> Option<String> {
        if !sp.escaped {
            return self.s.get(sp.start..sp.end).map(str::to_owned);
        }
        serde_json::from_str::<String>(self.s.get(sp.start - 1..sp.end + 1)?).ok()
    }
}

/// A tool call block: its id, its name and, when kept, where its arguments are in the line.
type Call = (Span, Span, Option<(usize, usize)>);

/// What the content of a message holds, for every role at once.
#[derive(Default)]
struct Content {
    /// `content` was a string.
    string: bool,
    /// The text (string content, or text blocks joined by a space).
    text: Option<Squash>,
    nonblank: bool,
    calls: Vec<Call>,
    thinking: bool,
    /// A block without a `type` (or `type: null`).
    untyped: bool,
    /// A `text` block without text.
    textless: bool,
    /// A `toolCall` block without an id or name.
    nameless_call: bool,
}

/// Reads one content block (the cursor on `{`).
fn block(p: &mut P<'_>, c: &mut Content, cap: usize, tool_args: bool) -> Option<()> {
    let (mut ty, mut text, mut id, mut name) = (None, None, None, None);
    let (mut seen_ty, mut seen_text, mut seen_id, mut seen_name, mut seen_args) =
        (false, false, false, false, false);
    let mut args: Option<(usize, usize)> = None;
    p.object(|p, key| {
        match key {
            "type" if !seen_ty => {
                seen_ty = true;
                ty = p.opt_plain()?;
            }
            "text" if !seen_text => {
                seen_text = true;
                text = p.opt_string()?;
            }
            "id" if !seen_id => {
                seen_id = true;
                id = p.opt_string()?;
            }
            "name" if !seen_name => {
                seen_name = true;
                name = p.opt_string()?;
            }
            "arguments" if !seen_args => {
                seen_args = true;
                let from = p.i;
                p.skip(4, true)?;
                args = Some((from, p.i));
            }
            "type" | "text" | "id" | "name" | "arguments" => return None,
            _ => p.skip(4, false)?,
        }
        Some(())
    })?;
    match ty {
        None => c.untyped = true,
        Some("text") => match text {
            None => c.textless = true,
            Some(sp) => {
                let squash = c.text.get_or_insert_with(|| Squash::new(cap));
                squash.separator();
                if !squash.full {
                    p.decode(sp, squash, &mut c.nonblank);
                }
            }
        },
        Some("toolCall") => match (id, name) {
            (Some(id), Some(name)) => c.calls.push((id, name, args.filter(|_| tool_args))),
            _ => c.nameless_call = true,
        },
        Some("thinking") => c.thinking = true,
        Some(_) => {}
    }
    Some(())
}

/// Reads `content` (the cursor on its value).
fn content(p: &mut P<'_>, cap: usize, tool_args: bool) -> Option<Content> {
    let mut c = Content::default();
    match p.peek()? {
        b'"' => {
            let sp = p.string()?;
            let mut squash = Squash::new(cap);
            p.decode(sp, &mut squash, &mut c.nonblank);
            c.string = true;
            c.text = Some(squash);
        }
        b'[' => {
            p.i += 1;
            p.ws();
            if p.peek()? == b']' {
                p.i += 1;
                return Some(c);
            }
            loop {
                p.ws();
                if p.peek()? != b'{' {
                    return None;
                }
                block(p, &mut c, cap, tool_args)?;
                p.ws();
                match p.peek()? {
                    b',' => p.i += 1,
                    b']' => {
                        p.i += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        _ => return None,
    }
    Some(c)
}

/// The message keys a row reads.
#[derive(Default)]
struct Msg<'a> {
    role: Option<&'a str>,
    content: Option<Option<Content>>,
    stop_reason: Option<Option<Span>>,
    error_message: Option<Option<Span>>,
    tool_call_id: Option<Option<Span>>,
    tool_name: Option<Option<Span>>,
    is_error: Option<Option<bool>>,
    /// `api`, `provider`, `model`: present and not `null`.
    api: Option<bool>,
    provider: Option<bool>,
    model: Option<bool>,
}

fn present(p: &mut P<'_>) -> Option<bool> {
    if p.peek()? == b'n' {
        p.literal(b"null")?;
        return Some(false);
    }
    p.skip(3, false)?;
    Some(true)
}

fn message<'a>(p: &mut P<'a>, caps: RowCaps) -> Option<Msg<'a>> {
    let mut m = Msg::default();
    let cap = caps.text;
    p.object(|p, key| {
        match key {
            "role" if m.role.is_none() => m.role = Some(p.plain()?),
            "content" if m.content.is_none() => {
                m.content = Some(if p.peek()? == b'n' {
                    p.literal(b"null")?;
                    None
                } else {
                    Some(content(p, cap, caps.tool_args)?)
                });
            }
            "stopReason" if m.stop_reason.is_none() => m.stop_reason = Some(p.opt_string()?),
            "errorMessage" if m.error_message.is_none() => m.error_message = Some(p.opt_string()?),
            "toolCallId" if m.tool_call_id.is_none() => m.tool_call_id = Some(p.opt_string()?),
            "toolName" if m.tool_name.is_none() => m.tool_name = Some(p.opt_string()?),
            "isError" if m.is_error.is_none() => {
                m.is_error = Some(match p.peek()? {
                    b'n' => p.literal(b"null").map(|()| None)?,
                    b't' => p.literal(b"true").map(|()| Some(true))?,
                    b'f' => p.literal(b"false").map(|()| Some(false))?,
                    _ => return None,
                })
            }
            "api" if m.api.is_none() => m.api = Some(present(p)?),
            "provider" if m.provider.is_none() => m.provider = Some(present(p)?),
            "model" if m.model.is_none() => m.model = Some(present(p)?),
            "role" | "content" | "stopReason" | "errorMessage" | "toolCallId" | "toolName"
            | "isError" | "api" | "provider" | "model" => return None,
            _ => p.skip(3, false)?,
        }
        Some(())
    })?;
    Some(m)
}

/// The top-level keys a row reads.
struct Line<'a> {
    ty: Option<&'a str>,
    id: Option<&'a str>,
    parent: Option<Option<&'a str>>,
    timestamp: Option<&'a str>,
    message: Option<Option<Msg<'a>>>,
}

/// Scans one stored line (see the module docs).
pub(crate) fn scan(line: &str, caps: RowCaps) -> Scan {
    match read(line, caps) {
        Some(Some(row)) => Scan::Row(row),
        Some(None) => Scan::Full,
        None => Scan::Unsure,
    }
}

/// `None`: unsure; `Some(None)`: the serde view gives up for certain.
fn read(line: &str, caps: RowCaps) -> Option<Option<RowSummary>> {
    let mut p = P {
        s: line,
        b: line.as_bytes(),
        i: 0,
    };
    let mut l = Line {
        ty: None,
        id: None,
        parent: None,
        timestamp: None,
        message: None,
    };
    p.ws();
    let mut other_type = false;
    p.object(|p, key| {
        match key {
            "type" if l.ty.is_none() => {
                let t = p.plain()?;
                // Another entry type: the serde view returns nothing, whatever follows.
                other_type = t != "message";
                if other_type {
                    return None;
                }
                l.ty = Some(t);
            }
            "id" if l.id.is_none() => l.id = Some(p.plain()?),
            "parentId" if l.parent.is_none() => l.parent = Some(p.opt_plain()?),
            "timestamp" if l.timestamp.is_none() => l.timestamp = Some(p.plain()?),
            "message" if l.message.is_none() => {
                l.message = Some(if p.peek()? == b'n' {
                    p.literal(b"null")?;
                    None
                } else {
                    Some(message(p, caps)?)
                });
            }
            "type" | "id" | "parentId" | "timestamp" | "message" => return None,
            _ => p.skip(1, false)?,
        }
        Some(())
    })
    .or_else(|| other_type.then_some(()))?;
    if other_type {
        return Some(None);
    }
    p.ws();
    if p.i != p.b.len() {
        return None;
    }
    let (Some(_), Some(id), Some(ts)) = (l.ty, l.id, l.timestamp) else {
        return None;
    };
    if id.is_empty() {
        return Some(None);
    }
    let Some(Some(m)) = l.message else {
        return Some(None);
    };
    let role = m.role?;
    let cap = caps.text;
    let content = m.content.flatten();
    if content.as_ref().is_some_and(|c| c.untyped) {
        return Some(None);
    }
    let row = match role {
        "user" => match text_of(content) {
            Some(text) => MessageRow::User { text },
            None => return Some(None),
        },
        "toolResult" => {
            let (Some(Some(call_id)), Some(Some(tool_name))) = (m.tool_call_id, m.tool_name) else {
                return Some(None);
            };
            let Some(text) = text_of(content) else {
                return Some(None);
            };
            MessageRow::ToolResult {
                call_id: p.owned(call_id)?.into(),
                tool_name: p.owned(tool_name)?.into(),
                is_error: m.is_error.flatten().unwrap_or(false),
                text,
            }
        }
        "assistant" => {
            if m.api != Some(true) || m.provider != Some(true) || m.model != Some(true) {
                return Some(None);
            }
            let Some(Some(stop)) = m.stop_reason else {
                return Some(None);
            };
            if content
                .as_ref()
                .is_some_and(|c| c.string || c.textless || c.nameless_call)
            {
                return Some(None);
            }
            let stop = match p.s.get(stop.start..stop.end) {
                Some("error") if !stop.escaped => Stop::Error,
                Some("aborted") if !stop.escaped => Stop::Aborted,
                _ if stop.escaped => match p.owned(stop)?.as_str() {
                    "error" => Stop::Error,
                    "aborted" => Stop::Aborted,
                    _ => Stop::Other,
                },
                _ => Stop::Other,
            };
            let error = match m.error_message.flatten() {
                None => None,
                Some(sp) => {
                    let mut squash = Squash::new(cap);
                    p.decode(sp, &mut squash, &mut false);
                    Some(squash.finish())
                }
            };
            let (text, has_text, calls, thinking) = match content {
                None => (Preview::default(), false, Vec::new(), false),
                Some(c) => {
                    let mut calls = Vec::with_capacity(c.calls.len());
                    for (id, name, args) in &c.calls {
                        let args = match args {
                            None if caps.tool_args => Some(cap_strings(&empty_object(), cap)),
                            None => None,
                            Some((a, b)) => {
                                let v: serde_json::Value =
                                    serde_json::from_str(p.s.get(*a..*b)?).ok()?;
                                Some(cap_strings(&v, cap))
                            }
                        };
                        calls.push(CallSummary {
                            id: p.owned(*id)?.into(),
                            name: p.owned(*name)?.into(),
                            args,
                        });
                    }
                    (
                        c.text.map(Squash::finish).unwrap_or_default(),
                        c.nonblank,
                        calls,
                        c.thinking,
                    )
                }
            };
            MessageRow::Assistant {
                text,
                has_text,
                calls,
                thinking,
                stop,
                error,
            }
        }
        _ => return Some(None),
    };
    Some(Some(RowSummary {
        id: boxed(id),
        parent_id: l.parent.flatten().map(boxed),
        time: time_of(ts),
        kind: RowKind::Message(row),
    }))
}

/// A user's or tool result's text: `None` when a text block has no text.
fn text_of(c: Option<Content>) -> Option<Preview> {
    match c {
        None => Some(Preview::default()),
        Some(c) if c.textless => None,
        Some(c) => Some(c.text.map(Squash::finish).unwrap_or_default()),
    }
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}
