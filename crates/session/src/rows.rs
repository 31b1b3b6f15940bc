//! Row summaries: what a tree view shows of an entry, without the entry (DECISIONS §25.80).
//!
//! `arbor session tree` and the TUI's `/tree` draw one row per entry: a role or type, a
//! one-line preview, tool names, a label. A [`RowSummary`] is exactly that, with every text
//! cut to a [`Preview`] of a few hundred characters, so a view over 1,000,000 entries keeps
//! ~100 bytes per row instead of the parsed entries.
//!
//! From a stored line, [`RowSummary::from_line`] reads the common entries (user, assistant and
//! tool-result messages) through a small borrowing serde view that skips everything a row does
//! not show (`serde::de::IgnoredAny`); every other line, and any line that view is unsure of,
//! goes through the full [`SessionEntry`] parse and [`RowSummary::from_entry`]. Both paths give
//! the same summary (test `rows::lean_and_full_summaries_agree_on_every_fixture`). Like the
//! open (DECISIONS §25.20), the lean read does not validate what it skips: a payload error there
//! surfaces when the entry itself is read.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use arbor_ai::types::{Content, ContentBlock, Message, StopReason};
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::entry::{EntryKind, SessionEntry};
use crate::error::Result;
use crate::message::AgentMessage;

mod scan;
#[doc(hidden)]
pub use scan::Scan;

/// How much of each text a summary keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowCaps {
    /// Characters of each [`Preview`]; a preview of up to `text - 2` characters drawn from it
    /// equals the one drawn from the whole text. Also caps tool-call argument strings.
    pub text: usize,
    /// Keep tool-call arguments (the TUI names a tool result's path or command from them).
    pub tool_args: bool,
}

impl RowCaps {
    /// The TUI's `/tree` rows (previews up to 510 characters wide; DECISIONS §25.81).
    pub const TREE: RowCaps = RowCaps {
        text: 512,
        tool_args: true,
    };
    /// The TUI's search text (DECISIONS §23.64: 8 KiB of each entry).
    pub const SEARCH: RowCaps = RowCaps {
        text: 8 * 1024 + 2,
        tool_args: false,
    };
}

/// The start of a text as a one-line preview sees it: runs of whitespace and control
/// characters become one space, leading and trailing ones go, and at most `cap` characters are
/// kept. Cutting a `preview` of up to `cap - 2` characters from it gives the same result as
/// cutting it from the whole text (DECISIONS §25.81).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Preview(Box<str>);

impl Preview {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The preview of one text.
    pub fn of(text: &str, cap: usize) -> Preview {
        let mut s = Squash::new(cap);
        s.push(text);
        s.finish()
    }
}

impl fmt::Display for Preview {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `text` squeezed onto one line (every run of whitespace or control characters becomes one
/// space) and cut to at most `max` characters, ending in `…` when cut: the one-line preview
/// every view prints (`arbor session tree`, the TUI's rows and pickers).
pub fn preview(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(max.min(text.len()) + 3);
    preview_into(text, max, &mut out);
    out
}

/// [`preview`] appended to `out` (what came before is left alone).
pub fn preview_into(text: &str, max: usize, out: &mut String) {
    // Most texts a row prints are previews already squashed (DECISIONS §25.113): printable
    // ASCII words with single spaces. Then the preview is the text, or its first `max - 1`
    // characters and the ellipsis, which is what the walk below gives for such a text.
    if max > 0 && squashed_ascii(text.as_bytes()) {
        if text.len() <= max {
            out.push_str(text);
        } else {
            out.push_str(&text[..max - 1]);
            out.push('…');
        }
        return;
    }
    preview_walk(text, max, out);
}

/// Non-empty printable ASCII, words separated by single spaces, none at either end.
fn squashed_ascii(b: &[u8]) -> bool {
    let (Some(&first), Some(&last)) = (b.first(), b.last()) else {
        return false;
    };
    visible_ascii(first)
        && visible_ascii(last)
        && b.windows(2)
            .all(|w| visible_ascii(w[1]) || (w[1] == b' ' && visible_ascii(w[0])))
}

/// [`preview_into`] for any text.
fn preview_walk(text: &str, max: usize, out: &mut String) {
    let mut count = 0usize;
    let mut pending_space = false;
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if visible_ascii(c) {
            // A run of visible ASCII: as many as fit in one go.
            let start = i;
            while i < b.len() && visible_ascii(b[i]) {
                i += 1;
            }
            let room = max.saturating_sub(count + usize::from(pending_space));
            let fit = (i - start).min(room);
            if fit > 0 {
                if pending_space {
                    out.push(' ');
                    count += 1;
                    pending_space = false;
                }
                out.push_str(&text[start..start + fit]);
                count += fit;
            }
            if fit < i - start {
                ellipsis(out, count, max);
                return;
            }
            continue;
        }
        let ch = if c < 0x80 {
            i += 1;
            char::from(c)
        } else {
            match text[i..].chars().next() {
                Some(ch) => {
                    i += ch.len_utf8();
                    ch
                }
                None => return,
            }
        };
        if ch.is_whitespace() || ch.is_control() {
            pending_space = count > 0;
            continue;
        }
        let needed = usize::from(pending_space) + 1;
        if count + needed > max {
            ellipsis(out, count, max);
            return;
        }
        if pending_space {
            out.push(' ');
            count += 1;
            pending_space = false;
        }
        out.push(ch);
        count += 1;
    }
}

/// Ends a cut preview: drops characters (of the `count` this preview wrote) until the
/// ellipsis fits in `max`, then adds it.
fn ellipsis(out: &mut String, mut count: usize, max: usize) {
    while count + 1 > max && count > 0 {
        out.pop();
        count -= 1;
    }
    out.push('…');
}

/// An ASCII character that is neither whitespace nor a control character.
#[inline]
fn visible_ascii(c: u8) -> bool {
    c > b' ' && c < 0x7f
}

/// Builds a [`Preview`] from one or more pieces (text blocks joined by a space).
struct Squash {
    out: String,
    count: usize,
    cap: usize,
    pending_space: bool,
    full: bool,
}

impl Squash {
    fn new(cap: usize) -> Squash {
        Squash {
            out: String::new(),
            count: 0,
            cap,
            pending_space: false,
            full: false,
        }
    }

    fn push(&mut self, text: &str) {
        self.push_text(text, None);
    }

    /// [`Squash::push`] that also notes whether `text` has a non-whitespace character
    /// (`nonblank`; the assistant's "has text" flag, which counts control characters).
    fn push_tracking(&mut self, text: &str, nonblank: &mut bool) {
        self.push_text(text, Some(nonblank));
    }

    /// Runs of visible ASCII go in at once; other characters one by one (DECISIONS §25.93).
    fn push_text(&mut self, text: &str, mut nonblank: Option<&mut bool>) {
        if self.full {
            return;
        }
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if visible_ascii(c) {
                let start = i;
                while i < b.len() && visible_ascii(b[i]) {
                    i += 1;
                }
                if let Some(n) = nonblank.as_deref_mut() {
                    *n = true;
                }
                let space = usize::from(self.pending_space);
                let room = self.cap.saturating_sub(self.count + space);
                let fit = (i - start).min(room);
                if fit > 0 {
                    if self.out.capacity() == 0 {
                        self.out.reserve(self.cap.min(96));
                    }
                    if self.pending_space {
                        self.out.push(' ');
                        self.pending_space = false;
                    }
                    self.out.push_str(&text[start..start + fit]);
                    self.count += space + fit;
                }
                if fit < i - start {
                    self.full = true;
                    return;
                }
                continue;
            }
            let ch = if c < 0x80 {
                i += 1;
                char::from(c)
            } else {
                match text[i..].chars().next() {
                    Some(ch) => {
                        i += ch.len_utf8();
                        ch
                    }
                    None => return,
                }
            };
            if let Some(n) = nonblank.as_deref_mut() {
                if !ch.is_whitespace() {
                    *n = true;
                }
            }
            if !self.push_char(ch) {
                return;
            }
        }
    }

    /// One character; `false` once the preview is full.
    #[inline]
    fn push_char(&mut self, ch: char) -> bool {
        if ch.is_whitespace() || ch.is_control() {
            self.pending_space = self.count > 0;
            return true;
        }
        let needed = usize::from(self.pending_space) + 1;
        if self.count + needed > self.cap {
            self.full = true;
            return false;
        }
        if self.out.capacity() == 0 {
            self.out.reserve(self.cap.min(96));
        }
        if self.pending_space {
            self.out.push(' ');
            self.count += 1;
            self.pending_space = false;
        }
        self.out.push(ch);
        self.count += 1;
        true
    }

    #[inline]
    fn push_char_tracking(&mut self, ch: char, nonblank: &mut bool) -> bool {
        if !ch.is_whitespace() {
            *nonblank = true;
        }
        self.push_char(ch)
    }

    /// The space between two joined pieces.
    fn separator(&mut self) {
        self.pending_space = self.count > 0;
    }

    fn finish(self) -> Preview {
        Preview(self.out.into_boxed_str())
    }
}

/// Why an assistant message stopped, as far as a row cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Error,
    Aborted,
    Other,
}

/// One tool call of an assistant message.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSummary {
    pub id: Box<str>,
    pub name: Box<str>,
    /// The arguments with every string cut to [`RowCaps::text`] characters; `None` unless
    /// [`RowCaps::tool_args`].
    pub args: Option<Value>,
}

/// What a `message` entry's row shows.
#[derive(Debug, Clone, PartialEq)]
pub enum MessageRow {
    User {
        text: Preview,
    },
    Assistant {
        /// The text blocks, joined by a space.
        text: Preview,
        /// Some text block has non-whitespace text.
        has_text: bool,
        calls: Vec<CallSummary>,
        /// Some block is a thinking block.
        thinking: bool,
        stop: Stop,
        error: Option<Preview>,
    },
    ToolResult {
        call_id: Box<str>,
        tool_name: Box<str>,
        is_error: bool,
        text: Preview,
    },
    System {
        text: Preview,
        /// The names of the message's `sections`, in order.
        sections: Vec<Box<str>>,
    },
    BashExecution {
        command: Preview,
    },
    Custom {
        custom_type: Box<str>,
        text: Preview,
    },
    BranchSummary {
        summary: Preview,
    },
    CompactionSummary {
        summary: Preview,
    },
    /// A role this version does not know.
    Other {
        role: Box<str>,
    },
}

impl MessageRow {
    /// The message's `role`.
    pub fn role(&self) -> &str {
        match self {
            MessageRow::User { .. } => "user",
            MessageRow::Assistant { .. } => "assistant",
            MessageRow::ToolResult { .. } => "toolResult",
            MessageRow::System { .. } => "system",
            MessageRow::BashExecution { .. } => "bashExecution",
            MessageRow::Custom { .. } => "custom",
            MessageRow::BranchSummary { .. } => "branchSummary",
            MessageRow::CompactionSummary { .. } => "compactionSummary",
            MessageRow::Other { role } => role,
        }
    }
}

/// What an entry's row shows, by entry type.
#[derive(Debug, Clone, PartialEq)]
pub enum RowKind {
    Message(MessageRow),
    ThinkingLevelChange {
        level: Box<str>,
    },
    ModelChange {
        provider: Box<str>,
        model_id: Box<str>,
    },
    ActiveToolsChange {
        /// `None`: all tools.
        names: Option<Vec<Box<str>>>,
    },
    Compaction {
        tokens_before: u64,
        retained_tail: bool,
        summary: Preview,
    },
    BranchSummary {
        from_id: Box<str>,
        summary: Preview,
    },
    Custom {
        custom_type: Box<str>,
    },
    CustomMessage {
        custom_type: Box<str>,
        text: Preview,
    },
    Label {
        target_id: Box<str>,
        /// As written (not trimmed); `None` when absent or `null`.
        label: Option<Box<str>>,
        /// The label entry's own timestamp.
        timestamp: Box<str>,
    },
    SessionInfo {
        name: Option<Box<str>>,
    },
    Leaf {
        target_id: Option<Box<str>>,
    },
    ContextEdit {
        target_id: Box<str>,
        /// The replacement is `null` (the target is left out).
        omit: bool,
    },
    Usage {
        kind: Box<str>,
        provider: Box<str>,
        model: Box<str>,
    },
    /// An entry type this version does not know.
    Other {
        entry_type: Box<str>,
    },
}

/// One entry as a tree view shows it (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct RowSummary {
    pub id: Box<str>,
    pub parent_id: Option<Box<str>>,
    /// The entry's timestamp in Unix ms; `i64::MAX` when it does not parse (sorts last).
    pub time: i64,
    pub kind: RowKind,
}

fn time_of(timestamp: &str) -> i64 {
    crate::time::iso_to_ms(timestamp).unwrap_or(i64::MAX)
}

fn boxed(s: &str) -> Box<str> {
    s.into()
}

/// A copy of `v` with every string cut to `cap` characters.
fn cap_strings(v: &Value, cap: usize) -> Value {
    match v {
        Value::String(s) => match s.char_indices().nth(cap) {
            Some((end, _)) => Value::String(s[..end].to_string()),
            None => Value::String(s.clone()),
        },
        Value::Array(items) => Value::Array(items.iter().map(|x| cap_strings(x, cap)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, x)| (k.clone(), cap_strings(x, cap)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn content_preview(content: &Content, cap: usize) -> Preview {
    match content {
        Content::Text(s) => Preview::of(s, cap),
        Content::Blocks(blocks) => blocks_preview(blocks, cap),
    }
}

fn blocks_preview(blocks: &[ContentBlock], cap: usize) -> Preview {
    let mut s = Squash::new(cap);
    for block in blocks {
        if let ContentBlock::Text(t) = block {
            s.separator();
            s.push(&t.text);
        }
    }
    s.finish()
}

impl RowSummary {
    /// The summary of a parsed entry (the path every backend can take).
    pub fn from_entry(entry: &SessionEntry, caps: RowCaps) -> RowSummary {
        RowSummary {
            id: boxed(&entry.id),
            parent_id: entry.parent_id.as_deref().map(boxed),
            time: time_of(&entry.timestamp),
            kind: kind_of(entry, caps),
        }
    }

    /// The summary of a stored entry line: the common message entries are read lean, the rest
    /// parsed in full (see the module docs). Fails as `SessionEntry::from_json` fails.
    /// The byte scanner answers the common lines; what it is unsure of goes to the serde view,
    /// and what neither reads to the full parse (DECISIONS §25.90).
    pub fn from_line(line: &str, caps: RowCaps) -> Result<RowSummary> {
        match scan::scan(line, caps) {
            Scan::Row(row) => return Ok(row),
            Scan::Unsure => {
                if let Some(row) = lean(line, caps) {
                    return Ok(row);
                }
            }
            Scan::Full => {}
        }
        let entry = SessionEntry::from_json(line)?;
        Ok(RowSummary::from_entry(&entry, caps))
    }

    /// The byte scanner alone (for tests: it must agree with the serde view).
    #[doc(hidden)]
    pub fn scan_line(line: &str, caps: RowCaps) -> Scan {
        scan::scan(line, caps)
    }

    /// The serde view alone (for tests; `None` sends the line to the full parse).
    #[doc(hidden)]
    pub fn from_line_serde(line: &str, caps: RowCaps) -> Option<RowSummary> {
        lean(line, caps)
    }

    /// This entry's label target and text when it is a `label` entry (text trimmed, `None`
    /// when it clears the label).
    pub fn label_set(&self) -> Option<(&str, Option<&str>, &str)> {
        match &self.kind {
            RowKind::Label {
                target_id,
                label,
                timestamp,
            } => {
                let text = label.as_deref().map(str::trim).filter(|s| !s.is_empty());
                Some((target_id, text, timestamp))
            }
            _ => None,
        }
    }

    /// A `leaf` control entry (tree views hide these).
    pub fn is_leaf_entry(&self) -> bool {
        matches!(self.kind, RowKind::Leaf { .. })
    }
}

fn message_row(message: &AgentMessage, caps: RowCaps) -> MessageRow {
    let cap = caps.text;
    match message {
        AgentMessage::Llm(Message::User(u)) => MessageRow::User {
            text: content_preview(&u.content, cap),
        },
        AgentMessage::Llm(Message::Assistant(a)) => MessageRow::Assistant {
            text: blocks_preview(&a.content, cap),
            has_text: a.content.iter().any(|b| match b {
                ContentBlock::Text(t) => !t.text.trim().is_empty(),
                _ => false,
            }),
            calls: a
                .tool_calls()
                .map(|c| CallSummary {
                    id: boxed(&c.id),
                    name: boxed(&c.name),
                    args: caps.tool_args.then(|| cap_strings(&c.arguments, cap)),
                })
                .collect(),
            thinking: a
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::Thinking(_))),
            stop: match a.stop_reason {
                StopReason::Error => Stop::Error,
                StopReason::Aborted => Stop::Aborted,
                _ => Stop::Other,
            },
            error: a.error_message.as_deref().map(|e| Preview::of(e, cap)),
        },
        AgentMessage::Llm(Message::ToolResult(r)) => MessageRow::ToolResult {
            call_id: boxed(&r.tool_call_id),
            tool_name: boxed(&r.tool_name),
            is_error: r.is_error,
            text: content_preview(&r.content, cap),
        },
        AgentMessage::Llm(Message::System(s)) => MessageRow::System {
            text: content_preview(&s.content, cap),
            sections: s
                .sections
                .as_ref()
                .map(|m| m.keys().map(|k| boxed(k)).collect())
                .unwrap_or_default(),
        },
        AgentMessage::BashExecution(b) => MessageRow::BashExecution {
            command: Preview::of(&b.command, cap),
        },
        AgentMessage::Custom(c) => MessageRow::Custom {
            custom_type: boxed(&c.custom_type),
            text: content_preview(&c.content, cap),
        },
        AgentMessage::BranchSummary(b) => MessageRow::BranchSummary {
            summary: Preview::of(&b.summary, cap),
        },
        AgentMessage::CompactionSummary(c) => MessageRow::CompactionSummary {
            summary: Preview::of(&c.summary, cap),
        },
        AgentMessage::Other(_) => MessageRow::Other {
            role: boxed(message.role()),
        },
    }
}

fn kind_of(entry: &SessionEntry, caps: RowCaps) -> RowKind {
    let cap = caps.text;
    match &entry.kind {
        EntryKind::Message(m) => RowKind::Message(message_row(&m.message, caps)),
        EntryKind::ThinkingLevelChange(e) => RowKind::ThinkingLevelChange {
            level: boxed(&e.thinking_level),
        },
        EntryKind::ModelChange(e) => RowKind::ModelChange {
            provider: boxed(&e.provider),
            model_id: boxed(&e.model_id),
        },
        EntryKind::ActiveToolsChange(e) => RowKind::ActiveToolsChange {
            names: e
                .active_tool_names
                .get()
                .map(|names| names.iter().map(|n| boxed(n)).collect()),
        },
        EntryKind::Compaction(e) => RowKind::Compaction {
            tokens_before: e.tokens_before,
            retained_tail: e.retained_tail.is_some(),
            summary: Preview::of(&e.summary, cap),
        },
        EntryKind::BranchSummary(e) => RowKind::BranchSummary {
            from_id: boxed(&e.from_id),
            summary: Preview::of(&e.summary, cap),
        },
        EntryKind::Custom(e) => RowKind::Custom {
            custom_type: boxed(&e.custom_type),
        },
        EntryKind::CustomMessage(e) => RowKind::CustomMessage {
            custom_type: boxed(&e.custom_type),
            text: content_preview(&e.content, cap),
        },
        EntryKind::Label(e) => RowKind::Label {
            target_id: boxed(&e.target_id),
            label: e.label.get().map(|l| boxed(l)),
            timestamp: boxed(&entry.timestamp),
        },
        EntryKind::SessionInfo(e) => RowKind::SessionInfo {
            name: e.name.get().map(|n| boxed(n)),
        },
        EntryKind::Leaf(e) => RowKind::Leaf {
            target_id: e.target_id.as_deref().map(boxed),
        },
        EntryKind::ContextEdit(e) => RowKind::ContextEdit {
            target_id: boxed(&e.target_id),
            omit: e.replacement.is_null(),
        },
        EntryKind::Usage(e) => RowKind::Usage {
            kind: boxed(&e.kind),
            provider: boxed(&e.provider),
            model: boxed(&e.model),
        },
        EntryKind::Other { entry_type, .. } => RowKind::Other {
            entry_type: boxed(entry_type),
        },
    }
}

// ---- the lean read of message lines ---------------------------------------------------------

/// A string borrowed from the line when it has no escapes (also inside `Option` and `Vec`,
/// where serde's `Cow` would always copy).
struct Str<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(
                self,
                v: &'de str,
            ) -> std::result::Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> std::result::Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

#[derive(Deserialize)]
struct LeanLine<'a> {
    #[serde(rename = "type", borrow)]
    ty: Str<'a>,
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(rename = "parentId", default, borrow)]
    parent_id: Option<Str<'a>>,
    #[serde(borrow)]
    timestamp: Str<'a>,
    #[serde(default, borrow)]
    message: Option<LeanMessage<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeanMessage<'a> {
    #[serde(borrow)]
    role: Str<'a>,
    #[serde(default, borrow)]
    content: Option<LeanContent<'a>>,
    #[serde(default, borrow)]
    stop_reason: Option<Str<'a>>,
    #[serde(default, borrow)]
    error_message: Option<Str<'a>>,
    #[serde(default, borrow)]
    tool_call_id: Option<Str<'a>>,
    #[serde(default, borrow)]
    tool_name: Option<Str<'a>>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(default)]
    api: Option<IgnoredAny>,
    #[serde(default)]
    provider: Option<IgnoredAny>,
    #[serde(default)]
    model: Option<IgnoredAny>,
}

enum LeanContent<'a> {
    Text(Str<'a>),
    Blocks(Vec<LeanBlock<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for LeanContent<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LeanContent<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_borrowed_str<E: de::Error>(
                self,
                v: &'de str,
            ) -> std::result::Result<Self::Value, E> {
                Ok(LeanContent::Text(Str(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Self::Value, E> {
                Ok(LeanContent::Text(Str(Cow::Owned(v.to_owned()))))
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
                Ok(LeanContent::Blocks(Vec::new()))
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(2));
                while let Some(b) = seq.next_element::<LeanBlock<'de>>()? {
                    blocks.push(b);
                }
                Ok(LeanContent::Blocks(blocks))
            }
        }
        d.deserialize_any(V)
    }
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

#[derive(Deserialize)]
struct LeanBlock<'a> {
    #[serde(rename = "type", default, borrow)]
    ty: Option<Str<'a>>,
    #[serde(default, borrow)]
    text: Option<Str<'a>>,
    #[serde(default, borrow)]
    id: Option<Str<'a>>,
    #[serde(default, borrow)]
    name: Option<Str<'a>>,
    #[serde(default = "empty_object")]
    arguments: Value,
}

/// Text blocks joined by a space, as a preview; `None` when a text block has no text (the full
/// parse decides what that is).
fn lean_blocks(blocks: &[LeanBlock<'_>], cap: usize) -> Option<(Preview, bool)> {
    let mut s = Squash::new(cap);
    let mut has_text = false;
    for b in blocks {
        if b.ty.as_ref().map(|t| &*t.0) == Some("text") {
            let text = &b.text.as_ref()?.0;
            has_text |= !text.trim().is_empty();
            s.separator();
            s.push(text);
        }
    }
    Some((s.finish(), has_text))
}

fn lean_content(content: &Option<LeanContent<'_>>, cap: usize) -> Option<Preview> {
    match content {
        None => Some(Preview::default()),
        Some(LeanContent::Text(t)) => Some(Preview::of(&t.0, cap)),
        Some(LeanContent::Blocks(blocks)) => lean_blocks(blocks, cap).map(|(p, _)| p),
    }
}

/// The lean read; `None` sends the line to the full parse.
fn lean(line: &str, caps: RowCaps) -> Option<RowSummary> {
    let parsed: LeanLine<'_> = serde_json::from_str(line).ok()?;
    if &*parsed.ty.0 != "message" || parsed.id.0.is_empty() {
        return None;
    }
    let m = parsed.message?;
    let cap = caps.text;
    // Every block must have a known-good shape for the roles read here; anything else is the
    // full parse's to judge.
    if let Some(LeanContent::Blocks(blocks)) = &m.content {
        if blocks.iter().any(|b| b.ty.is_none()) {
            return None;
        }
    }
    let row = match &*m.role.0 {
        "user" => MessageRow::User {
            text: lean_content(&m.content, cap)?,
        },
        "toolResult" => MessageRow::ToolResult {
            call_id: boxed(&m.tool_call_id?.0),
            tool_name: boxed(&m.tool_name?.0),
            is_error: m.is_error.unwrap_or(false),
            text: lean_content(&m.content, cap)?,
        },
        "assistant" => {
            m.api.as_ref()?;
            m.provider.as_ref()?;
            m.model.as_ref()?;
            let blocks = match &m.content {
                None => &[][..],
                Some(LeanContent::Blocks(b)) => &b[..],
                Some(LeanContent::Text(_)) => return None,
            };
            let (text, has_text) = lean_blocks(blocks, cap)?;
            let mut calls = Vec::new();
            let mut thinking = false;
            for b in blocks {
                match b.ty.as_ref().map(|t| &*t.0) {
                    Some("toolCall") => calls.push(CallSummary {
                        id: boxed(&b.id.as_ref()?.0),
                        name: boxed(&b.name.as_ref()?.0),
                        args: caps.tool_args.then(|| cap_strings(&b.arguments, cap)),
                    }),
                    Some("thinking") => thinking = true,
                    _ => {}
                }
            }
            let stop = match &*m.stop_reason?.0 {
                "error" => Stop::Error,
                "aborted" => Stop::Aborted,
                _ => Stop::Other,
            };
            MessageRow::Assistant {
                text,
                has_text,
                calls,
                thinking,
                stop,
                error: m.error_message.map(|e| Preview::of(&e.0, cap)),
            }
        }
        _ => return None,
    };
    Some(RowSummary {
        id: boxed(&parsed.id.0),
        parent_id: parsed.parent_id.map(|p| boxed(&p.0)),
        time: time_of(&parsed.timestamp.0),
        kind: RowKind::Message(row),
    })
}

// ---- sources ------------------------------------------------------------------------------

/// A session's log as it was when the source was made, summarized on demand and without the
/// storage: the TUI's `/tree` search summarizes again with longer texts at its first keystroke
/// (DECISIONS §25.82). Summaries are in log order, one per entry.
pub trait RowSource: Send + Sync {
    fn summaries(&self, caps: RowCaps) -> Result<Vec<RowSummary>>;
}

/// A source over parsed entries (the default for backends without a line index).
pub struct EntryRows(pub Vec<SessionEntry>);

impl RowSource for EntryRows {
    fn summaries(&self, caps: RowCaps) -> Result<Vec<RowSummary>> {
        Ok(self
            .0
            .iter()
            .map(|e| RowSummary::from_entry(e, caps))
            .collect())
    }
}

impl fmt::Debug for dyn RowSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RowSource")
    }
}

/// Shared handle to a source.
pub type RowSourceRef = Arc<dyn RowSource>;

#[cfg(test)]
mod preview_fast_path {
    use proptest::prelude::*;

    proptest! {
        /// The squashed-text shortcut gives what the general walk gives, for every text.
        #[test]
        fn shortcut_equals_the_walk(text in "[ab \t\u{e9}\n.]{0,14}", max in 0usize..16) {
            let mut fast = String::from(">");
            super::preview_into(&text, max, &mut fast);
            let mut slow = String::from(">");
            super::preview_walk(&text, max, &mut slow);
            prop_assert_eq!(fast, slow);
        }
    }

    #[test]
    fn the_shortcut_is_taken_for_squashed_text() {
        assert!(super::squashed_ascii(b"ab cd.e"));
        for no in [&b""[..], b" ab", b"ab ", b"a  b", b"a\tb", b"caf\xc3\xa9"] {
            assert!(!super::squashed_ascii(no), "{no:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic mix of words, whitespace runs and control characters.
    fn texts() -> Vec<String> {
        let pieces = [
            "ab", " ", "\n\n", "\t ", "é", "\u{1}", "xyz", "  ", "ü€", "\u{7f}",
        ];
        let mut out = vec![String::new(), " ".into(), "a".into()];
        let mut state = 7u64;
        for n in 0..400 {
            let mut s = String::new();
            for _ in 0..(n % 60) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                s.push_str(pieces[(state % pieces.len() as u64) as usize]);
            }
            out.push(s);
        }
        out
    }

    #[test]
    fn a_preview_of_the_head_equals_a_preview_of_the_whole_text() {
        for text in texts() {
            for cap in [3, 8, 20, 40] {
                let head = Preview::of(&text, cap);
                assert!(head.as_str().chars().count() <= cap);
                for max in 1..=cap - 2 {
                    assert_eq!(
                        preview(head.as_str(), max),
                        preview(&text, max),
                        "{text:?} cap {cap} max {max}"
                    );
                }
            }
        }
    }

    #[test]
    fn joined_blocks_preview_like_their_joined_text() {
        let all = texts();
        for pair in all.chunks(2) {
            let joined = pair.join(" ");
            let mut s = Squash::new(30);
            for p in pair {
                s.separator();
                s.push(p);
            }
            let head = s.finish();
            for max in 1..=28 {
                assert_eq!(
                    preview(head.as_str(), max),
                    preview(&joined, max),
                    "{pair:?}"
                );
            }
        }
    }

    #[test]
    fn a_lean_read_gives_up_on_what_it_does_not_know() {
        let caps = RowCaps::TREE;
        // Not a message, an unknown role, a block without a type, a text block without text.
        for line in [
            r#"{"type":"model_change","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","provider":"p","modelId":"m"}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"bashExecution","command":"ls"}}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"text":"x"}]}}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text"}]}}"#,
        ] {
            assert!(lean(line, caps).is_none(), "{line}");
        }
        let user = r#"{"type":"message","id":"a","parentId":"p","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi  there\nyou","extra":{"x":[1,2]}}}"#;
        let row = lean(user, caps).map(|r| r.kind);
        assert_eq!(
            row,
            Some(RowKind::Message(MessageRow::User {
                text: Preview("hi there you".into())
            }))
        );
    }
}
