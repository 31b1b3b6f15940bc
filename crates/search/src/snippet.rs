//! The excerpt shown with a hit, cut from the entry's line in its session file.
//!
//! The index keeps no copy of the text (DECISIONS §34.2): a hit remembers where its line is,
//! and the line is read again and parsed by the session crate's reader when shown.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use arbor_session::SessionEntry;

use crate::extract::extract;
use crate::query::Hit;

/// Characters of context on each side of the first match.
const CONTEXT: usize = 60;

/// Fills `hit.snippet` from its session file; leaves it empty when the line is no longer
/// what was indexed (the file changed since the last refresh).
pub(crate) fn fill(hit: &mut Hit, words: &[String]) {
    if let Some(body) = entry_body(hit) {
        hit.snippet = excerpt(&body, words);
    }
}

fn entry_body(hit: &Hit) -> Option<String> {
    let mut file = File::open(&hit.path).ok()?;
    file.seek(SeekFrom::Start(u64::try_from(hit.line_start).ok()?))
        .ok()?;
    let mut line = vec![0u8; usize::try_from(hit.line_len).ok()?];
    file.read_exact(&mut line).ok()?;
    let text = std::str::from_utf8(&line).ok()?;
    let entry = SessionEntry::from_json(text.trim_end()).ok()?;
    if entry.id != hit.matched_entry_id {
        return None;
    }
    extract(&entry).map(|doc| doc.body)
}

/// About `2 × CONTEXT` characters of `body` around the first of `words` it contains (case
/// folded), whitespace collapsed, `…` where it was cut.
pub fn excerpt(body: &str, words: &[String]) -> String {
    let lower = body.to_lowercase();
    // Lower-casing can change byte lengths; fall back to the start when it did.
    let at = if lower.len() == body.len() {
        words
            .iter()
            .filter_map(|w| lower.find(w.as_str()))
            .min()
            .unwrap_or(0)
    } else {
        0
    };
    let chars: Vec<(usize, char)> = body.char_indices().collect();
    let center = chars.partition_point(|(i, _)| *i < at);
    let from = center.saturating_sub(CONTEXT);
    let to = (center + CONTEXT).min(chars.len());
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    let mut last_space = false;
    for (_, c) in &chars[from..to] {
        if c.is_whitespace() {
            if !last_space {
                out.push(' ');
            }
            last_space = true;
        } else {
            out.push(*c);
            last_space = false;
        }
    }
    if to < chars.len() {
        out.push('…');
    }
    out.trim().to_owned()
}
