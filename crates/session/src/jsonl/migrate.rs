//! In-memory migration of v1 and v2 session files to v3 (pi's `migrateV1ToV2`/`migrateV2ToV3`).
//!
//! Works on parsed JSON objects so that every unknown key survives, in its original position;
//! keys the migration adds are appended at the end, as pi's JavaScript does.

use serde_json::{Map, Value};
use std::collections::HashSet;

/// The version a header declares (`version` absent = 1). `None` when it is not a positive integer.
#[cfg(test)]
pub(crate) fn header_version(header: &Map<String, Value>) -> Option<u64> {
    match header.get("version") {
        None => Some(1),
        Some(v) => v.as_u64().filter(|n| *n >= 1),
    }
}

/// Migrates `header` and `entries` (file order, header excluded) from `from` (1 or 2) to 3.
/// `new_id` must return an id not in the given set.
pub(crate) fn migrate_to_v3(
    from: u64,
    header: &mut Map<String, Value>,
    entries: &mut [Map<String, Value>],
    mut new_id: impl FnMut(&HashSet<String>) -> String,
) {
    if from < 2 {
        v1_to_v2(header, entries, &mut new_id);
    }
    if from < 3 {
        v2_to_v3(header, entries);
    }
}

fn v1_to_v2(
    header: &mut Map<String, Value>,
    entries: &mut [Map<String, Value>],
    new_id: &mut impl FnMut(&HashSet<String>) -> String,
) {
    header.insert("version".into(), Value::from(2));
    let mut taken: HashSet<String> = HashSet::with_capacity(entries.len());
    // Ids by line index where the header is index 0, as v1's firstKeptEntryIndex counts.
    let mut assigned: Vec<Option<String>> = vec![None; entries.len() + 1];
    let mut previous: Option<String> = None;
    for (i, entry) in entries.iter_mut().enumerate() {
        let id = new_id(&taken);
        taken.insert(id.clone());
        entry.insert("id".into(), Value::String(id.clone()));
        entry.insert(
            "parentId".into(),
            previous.clone().map(Value::String).unwrap_or(Value::Null),
        );
        assigned[i + 1] = Some(id.clone());
        if entry.get("type").and_then(Value::as_str) == Some("compaction") {
            if let Some(index) = entry.get("firstKeptEntryIndex").and_then(Value::as_u64) {
                let kept = usize::try_from(index)
                    .ok()
                    .filter(|ix| *ix >= 1)
                    .and_then(|ix| assigned.get(ix).cloned().flatten());
                if let Some(kept) = kept {
                    entry.insert("firstKeptEntryId".into(), Value::String(kept));
                }
            }
            entry.shift_remove("firstKeptEntryIndex");
        }
        previous = Some(id);
    }
}

fn v2_to_v3(header: &mut Map<String, Value>, entries: &mut [Map<String, Value>]) {
    header.insert("version".into(), Value::from(3));
    for entry in entries.iter_mut() {
        if entry.get("type").and_then(Value::as_str) != Some("message") {
            continue;
        }
        if let Some(Value::Object(message)) = entry.get_mut("message") {
            if message.get("role").and_then(Value::as_str) == Some("hookMessage") {
                message.insert("role".into(), Value::String("custom".into()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    fn counter() -> impl FnMut(&HashSet<String>) -> String {
        let mut n = 0;
        move |taken| loop {
            n += 1;
            let id = format!("{n:08x}");
            if !taken.contains(&id) {
                return id;
            }
        }
    }

    #[test]
    fn v1_chains_ids_and_maps_compaction_index() {
        let mut header = obj(json!({"type":"session","id":"s","timestamp":"t","cwd":"/"}));
        let mut entries = vec![
            obj(json!({"type":"message","timestamp":"a","message":{"role":"user","content":"x"}})),
            obj(
                json!({"type":"message","timestamp":"b","message":{"role":"assistant","content":[]}}),
            ),
            obj(
                json!({"type":"compaction","timestamp":"c","summary":"s","firstKeptEntryIndex":2,"tokensBefore":5}),
            ),
        ];
        assert_eq!(header_version(&header), Some(1));
        migrate_to_v3(1, &mut header, &mut entries, counter());
        assert_eq!(
            serde_json::to_string(&header).unwrap(),
            r#"{"type":"session","id":"s","timestamp":"t","cwd":"/","version":3}"#
        );
        assert_eq!(
            serde_json::to_string(&entries[0]).unwrap(),
            r#"{"type":"message","timestamp":"a","message":{"role":"user","content":"x"},"id":"00000001","parentId":null}"#
        );
        assert_eq!(entries[1]["parentId"], json!("00000001"));
        assert_eq!(
            serde_json::to_string(&entries[2]).unwrap(),
            r#"{"type":"compaction","timestamp":"c","summary":"s","tokensBefore":5,"id":"00000003","parentId":"00000002","firstKeptEntryId":"00000002"}"#
        );
    }

    #[test]
    fn v1_index_pointing_at_header_or_forward_is_dropped() {
        let mut header = obj(json!({"type":"session","id":"s","timestamp":"t","cwd":"/"}));
        let mut entries = vec![
            obj(json!({"type":"compaction","summary":"s","firstKeptEntryIndex":0})),
            obj(json!({"type":"compaction","summary":"s","firstKeptEntryIndex":9})),
        ];
        migrate_to_v3(1, &mut header, &mut entries, counter());
        for e in &entries {
            assert!(!e.contains_key("firstKeptEntryIndex"));
            assert!(!e.contains_key("firstKeptEntryId"));
        }
    }

    #[test]
    fn v2_renames_hook_messages_only() {
        let mut header =
            obj(json!({"type":"session","version":2,"id":"s","timestamp":"t","cwd":"/"}));
        let mut entries = vec![
            obj(
                json!({"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"hookMessage","customType":"x","content":"c","display":true}}),
            ),
            obj(
                json!({"type":"custom","id":"b","parentId":"a","timestamp":"t","message":{"role":"hookMessage"}}),
            ),
        ];
        assert_eq!(header_version(&header), Some(2));
        migrate_to_v3(2, &mut header, &mut entries, counter());
        assert_eq!(header["version"], json!(3));
        assert_eq!(
            serde_json::to_string(&header).unwrap(),
            r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}"#
        );
        assert_eq!(entries[0]["message"]["role"], json!("custom"));
        assert_eq!(entries[1]["message"]["role"], json!("hookMessage"));
    }

    #[test]
    fn odd_versions_are_reported() {
        assert_eq!(header_version(&obj(json!({"version": 0}))), None);
        assert_eq!(header_version(&obj(json!({"version": "3"}))), None);
        assert_eq!(header_version(&obj(json!({"version": 4}))), Some(4));
    }
}
