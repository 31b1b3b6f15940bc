//! Redaction of the secrets Arbor holds (provider keys, credential header values) from text it
//! persists or exports, fragments included: any run of at least [`MIN_FRAGMENT`] characters of
//! a secret is replaced by [`REDACTED`] (DECISIONS §30.8). A 401 body that echoes the last
//! twelve characters of a key is caught as well as a tool that prints the whole key.
//!
//! Every secret is cut into its overlapping 8-byte windows, kept in a hash set; a text is scanned
//! once, one lookup per byte, so the cost is linear in the text whatever the number of secrets.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::RwLock;

use serde_json::Value;

/// The shortest run of a secret that is redacted, and the shortest secret Arbor redacts at
/// all: shorter values ("none", "ollama") are placeholders, and hunting them would blank
/// ordinary words (DECISIONS §30.8).
pub const MIN_FRAGMENT: usize = 8;

/// What a redacted run becomes.
pub const REDACTED: &str = "[redacted]";

/// The secrets known so far; shared, and added to as keys are resolved.
#[derive(Debug, Default)]
pub struct Redactor {
    windows: RwLock<Windows>,
}

/// The windows, behind a one-bit-per-slot filter: most positions of a text miss the filter
/// and never reach the hash set.
#[derive(Debug, Default)]
struct Windows {
    set: HashSet<u64>,
    filter: Vec<u64>,
}

const FILTER_BITS: u32 = 20;

fn slot(window: u64) -> usize {
    (window.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - FILTER_BITS)) as usize
}

impl Windows {
    fn insert(&mut self, window: u64) {
        if self.filter.is_empty() {
            self.filter = vec![0; (1 << FILTER_BITS) / 64];
        }
        let s = slot(window);
        self.filter[s / 64] |= 1 << (s % 64);
        self.set.insert(window);
    }

    fn contains(&self, window: u64) -> bool {
        let s = slot(window);
        self.filter[s / 64] & (1 << (s % 64)) != 0 && self.set.contains(&window)
    }

    fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
}

fn window(bytes: &[u8]) -> u64 {
    let mut w = [0u8; MIN_FRAGMENT];
    w.copy_from_slice(&bytes[..MIN_FRAGMENT]);
    u64::from_le_bytes(w)
}

impl Redactor {
    pub fn new() -> Redactor {
        Redactor::default()
    }

    /// Adds a secret. Only its ASCII runs of at least [`MIN_FRAGMENT`] bytes count (keys and
    /// header values are ASCII; this keeps every cut on a character boundary).
    pub fn add(&self, secret: &str) {
        let mut windows = self
            .windows
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for run in secret
            .as_bytes()
            .split(|b| !b.is_ascii() || b.is_ascii_whitespace())
        {
            if run.len() < MIN_FRAGMENT {
                continue;
            }
            for start in 0..=run.len() - MIN_FRAGMENT {
                windows.insert(window(&run[start..]));
            }
        }
    }

    /// Adds several secrets.
    pub fn add_all<'a>(&self, secrets: impl IntoIterator<Item = &'a str>) {
        for secret in secrets {
            self.add(secret);
        }
    }

    /// Whether no secret is known (redaction is then a no-op).
    pub fn is_empty(&self) -> bool {
        self.windows
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_empty()
    }

    /// `text` with every run of a known secret replaced; borrowed when nothing matched.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let bytes = text.as_bytes();
        if bytes.len() < MIN_FRAGMENT {
            return Cow::Borrowed(text);
        }
        let windows = self
            .windows
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if windows.is_empty() {
            return Cow::Borrowed(text);
        }
        // Covered byte ranges, merged as they are found (starts only grow).
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for start in 0..=bytes.len() - MIN_FRAGMENT {
            if !windows.contains(window(&bytes[start..])) {
                continue;
            }
            let end = start + MIN_FRAGMENT;
            match runs.last_mut() {
                Some(last) if start <= last.1 => last.1 = end,
                _ => runs.push((start, end)),
            }
        }
        if runs.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end) in runs {
            // Matched bytes are ASCII, so both ends are character boundaries.
            out.push_str(&text[at..start]);
            out.push_str(REDACTED);
            at = end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }

    /// Scrubs every string (and object key) in `value`; whether anything changed.
    pub fn scrub_value(&self, value: &mut Value) -> bool {
        match value {
            Value::String(s) => match self.scrub(s) {
                Cow::Borrowed(_) => false,
                Cow::Owned(clean) => {
                    *s = clean;
                    true
                }
            },
            Value::Array(items) => {
                let mut changed = false;
                for item in items {
                    changed |= self.scrub_value(item);
                }
                changed
            }
            Value::Object(map) => {
                let mut changed = false;
                let dirty_keys: Vec<String> = map
                    .keys()
                    .filter(|k| matches!(self.scrub(k), Cow::Owned(_)))
                    .cloned()
                    .collect();
                for key in dirty_keys {
                    if let Some(v) = map.remove(&key) {
                        map.insert(self.scrub(&key).into_owned(), v);
                        changed = true;
                    }
                }
                for v in map.values_mut() {
                    changed |= self.scrub_value(v);
                }
                changed
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-test-0123456789abcdefghijklmnopqrstuvwxyz";

    #[test]
    fn whole_keys_and_fragments_are_redacted_and_other_text_kept() {
        let r = Redactor::new();
        r.add(KEY);
        assert_eq!(r.scrub(&format!("key={KEY}!")), "key=[redacted]!");
        let tail = &KEY[KEY.len() - 12..];
        assert_eq!(
            r.scrub(&format!("Incorrect API key provided: sk-***{tail}.")),
            "Incorrect API key provided: sk-***[redacted]."
        );
        // Seven characters of the key are not a fragment.
        assert!(matches!(r.scrub("xyz abcdefg 0123456"), Cow::Borrowed(_)));
        assert!(matches!(r.scrub("ordinary text é ü"), Cow::Borrowed(_)));
        // Two fragments, UTF-8 around them.
        assert_eq!(
            r.scrub("é0123456789é|ghijklmnopq"),
            "é[redacted]é|[redacted]"
        );
    }

    #[test]
    fn short_values_are_not_secrets_and_nothing_known_is_a_no_op() {
        let r = Redactor::new();
        assert!(r.is_empty());
        r.add("ollama");
        assert!(r.is_empty());
        assert_eq!(r.scrub("ollama runs"), "ollama runs");
    }

    #[test]
    fn json_values_are_scrubbed_in_strings_and_keys() {
        let r = Redactor::new();
        r.add(KEY);
        let mut v = serde_json::json!({"a": [format!("x{KEY}"), 1, null], KEY: true, "n": "no"});
        assert!(r.scrub_value(&mut v));
        assert_eq!(
            v,
            serde_json::json!({"a": ["x[redacted]", 1, null], "[redacted]": true, "n": "no"})
        );
        assert!(!r.scrub_value(&mut v));
    }

    #[test]
    fn scrubbing_is_linear_in_the_text() {
        let r = Redactor::new();
        for i in 0..200 {
            r.add(&format!("{KEY}{i:04}"));
        }
        let text = "ABCDEFGHIJ".repeat(200_000); // 2 MB
        let started = std::time::Instant::now();
        let out = r.scrub(&text);
        assert!(matches!(out, Cow::Borrowed(_)));
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
}
