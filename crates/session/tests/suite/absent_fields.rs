//! Message fields a file leaves out stay out: a message without `timestamp` or `usage` projects
//! and re-serializes without them, as pi passes it through (DECISIONS §25.40).

use std::path::PathBuf;

use arbor_session::context::expected_json;
use arbor_session::context::projection::{build_session_context, ContextOptions};
use arbor_session::jsonl::JsonlRepository;
use arbor_session::{SessionEntry, SessionStorage};
use serde_json::Value;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/absent-fields")
        .join(name)
}

#[tokio::test]
async fn projection_leaves_absent_timestamp_and_usage_out_like_pi() {
    let path = data("session.jsonl");
    let repo = JsonlRepository::flat(path.parent().unwrap());
    let storage = repo.open_read_only(path.to_str().unwrap()).await.unwrap();
    let leaf = storage.leaf_id().await.unwrap();
    let ancestry = storage.ancestry(leaf.as_deref()).await.unwrap();
    let ours = expected_json(
        &build_session_context(&ancestry, &ContextOptions::default()),
        leaf.as_deref(),
    );
    let pi: Value =
        serde_json::from_str(&std::fs::read_to_string(data("pi-context.json")).unwrap()).unwrap();
    assert_eq!(ours, pi);
    // The cases the file is there for, spelled out.
    let llm = ours["llm"].as_array().unwrap();
    assert!(llm[0].get("timestamp").is_none(), "user without timestamp");
    assert!(llm[1].get("usage").is_none(), "assistant without usage");
    assert!(
        llm[1].get("timestamp").is_none(),
        "assistant without timestamp"
    );
    assert_eq!(llm[2]["timestamp"], 0, "an explicit 0 stays");
    assert!(
        llm[4].get("timestamp").is_none(),
        "tool result without timestamp"
    );
}

#[test]
fn every_entry_serializes_back_to_the_line_it_was_read_from() {
    let text = std::fs::read_to_string(data("session.jsonl")).unwrap();
    for (n, line) in text.lines().enumerate().skip(1) {
        let original: Value = serde_json::from_str(line).unwrap();
        let entry: SessionEntry = serde_json::from_str(line).unwrap();
        let again = serde_json::to_value(&entry).unwrap();
        assert_eq!(again, original, "line {}", n + 1);
    }
}
