//! The equivalence harness of the line readers (`arbor_session::line`): each fast reader is
//! proven equal to the serde path it stands in for, over every fixture line and over generated
//! and mutated lines.
//!
//! - entry tier, [`entry`]: the direct typed reader against `SessionEntry::from_json_via_value`
//!   (same entry, same bytes back, same error text);
//! - row tier, [`row_scan`]: the byte scanner against the borrowed serde view, and [`row`]:
//!   `RowSummary::from_line` against `RowSummary::from_entry` of the parsed entry;
//! - envelope tier: the skim and the serde probe are crate-private, so their agreement is
//!   proven beside them (`line::envelope_scan`'s tests, and the loader's tests that open every
//!   fixture both ways).

mod entry;
mod row;
mod row_scan;

use arbor_session::SessionHeader;

use super::{fixture_files, testdata_dir};

/// Every entry line of the v3 fixture sessions (headers left out).
pub(super) fn v3_lines() -> Vec<String> {
    let mut files = fixture_files("generated/sessions");
    files.extend(fixture_files("pi-sessions"));
    let mut out = Vec::new();
    for p in files {
        let text = std::fs::read_to_string(&p).expect("read fixture");
        let mut lines = text.lines();
        let v3 = lines
            .next()
            .and_then(|h| SessionHeader::from_json(h).ok())
            .is_some_and(|h| h.format_version() == 3);
        if v3 {
            out.extend(lines.filter(|l| !l.trim().is_empty()).map(str::to_owned));
        }
    }
    out
}

/// Every `.jsonl` file under the shared fixtures, any version, sorted.
fn all_fixture_files() -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    walk(&testdata_dir(), &mut files);
    files
}

fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut items: Vec<_> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
    items.sort();
    for p in items {
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|e| e == "jsonl") {
            out.push(p);
        }
    }
}
