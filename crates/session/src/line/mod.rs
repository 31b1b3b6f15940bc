//! The readers of one stored entry line (a JSONL line, or a memory backend's kept line).
//!
//! One line format, read at three depths, each by the cheapest reader that can answer and
//! each falling back to the next reader, and in the end to the serde reference path, whose
//! answer (and error text) is the one that counts. Every fast reader is proven equal to its
//! fallback by the equivalence harness (`tests/suite/reader_equivalence`).
//!
//! | tier | produces | readers, fastest first | used by |
//! |------|----------|------------------------|---------|
//! | envelope | `type`, `id`, `parentId`, role: the index facts | [`envelope_scan`] (byte scan, stops after the envelope) → [`envelope`] (borrowed serde probe, also usage, labels, names, compaction facts) | opening a session, appends (DECISIONS §25.20, §25.110) |
//! | row | a [`RowSummary`](crate::rows::RowSummary) | [`row_scan`] (byte scan of message lines) → [`row`] (borrowed serde view) → the full entry parse and `RowSummary::from_entry` | tree views (DECISIONS §25.80, §25.90) |
//! | entry | a [`SessionEntry`](crate::SessionEntry) | [`entry`] (typed reader, no `Value`) → `SessionEntry::from_json_via_value` | every read of an entry (DECISIONS §25.60) |
//!
//! [`string_end`] is the word-at-a-time search both byte scanners use to find where the
//! plain part of a JSON string ends.
//!
//! The fast readers do not validate what they skip: a payload error past what they read
//! surfaces when the entry itself is read, with file and line named.

pub mod entry;
pub mod envelope;
pub mod envelope_scan;
pub mod row;
pub mod row_scan;
pub mod string_end;

#[cfg(feature = "internals")]
pub use row_scan::Scan;
