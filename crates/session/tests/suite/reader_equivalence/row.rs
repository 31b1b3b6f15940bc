//! The row tier end to end: `RowSummary::from_line` (byte scan, then the borrowed serde view,
//! then the full parse) gives the summary of the parsed entry, on every fixture line.

use arbor_session::rows::{RowCaps, RowSummary};
use arbor_session::SessionEntry;

use super::v3_lines;

#[test]
fn lean_and_full_summaries_agree_on_every_fixture() {
    let lines = v3_lines();
    let small = RowCaps {
        text: 10,
        tool_args: true,
    };
    let mut messages = 0;
    for line in &lines {
        let Ok(entry) = SessionEntry::from_json(line) else {
            // Broken lines are the full parse's to report; the summary fails the same way.
            assert!(
                RowSummary::from_line(line, RowCaps::TREE).is_err(),
                "{line}"
            );
            continue;
        };
        messages += usize::from(entry.entry_type() == "message");
        for caps in [RowCaps::TREE, RowCaps::SEARCH, small] {
            let lean = RowSummary::from_line(line, caps).expect("summary");
            assert_eq!(lean, RowSummary::from_entry(&entry, caps), "{line}");
        }
    }
    assert!(
        messages > 500,
        "only {messages} message lines in the fixtures"
    );
}
