//! `SessionTree::build` on adversarial logs: long runs of `leaf` entries, parentId cycles.

use arbor_session::{SessionEntry, SessionTree};
use std::time::{Duration, Instant};

fn entry(line: String) -> SessionEntry {
    SessionEntry::from_json(&line).unwrap()
}

fn user(id: &str, parent: Option<&str>) -> SessionEntry {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    entry(format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-06-20T15:00:00.000Z","message":{{"role":"user","content":"x","timestamp":1}}}}"#
    ))
}

fn leaf(id: &str, parent: &str, target: &str) -> SessionEntry {
    entry(format!(
        r#"{{"type":"leaf","id":"{id}","parentId":"{parent}","timestamp":"2026-06-20T15:00:00.000Z","targetId":"{target}"}}"#
    ))
}

#[test]
fn hidden_parent_chains_are_resolved_in_linear_time() {
    // 50,000 chained `leaf` entries, then 50,000 messages hanging under the last one: before,
    // every message walked the whole chain (quadratic: over 120 s at this size).
    let n = 50_000;
    let mut entries = vec![user("root", None)];
    let mut parent = "root".to_owned();
    for i in 0..n {
        let id = format!("l{i}");
        entries.push(leaf(&id, &parent, "root"));
        parent = id;
    }
    for i in 0..n {
        entries.push(user(&format!("m{i}"), Some(&parent)));
    }
    let started = Instant::now();
    let tree = SessionTree::build(entries, None, &[]);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "build took {took:?}");
    assert_eq!(tree.nodes.len(), n + 1);
    assert_eq!(tree.roots.len(), 1);
    assert_eq!(tree.children(tree.roots[0]).len(), n);
    assert!(tree.unreachable.is_empty());
}

#[test]
fn entries_on_a_cycle_are_kept_and_listed() {
    let entries = vec![
        user("a", None),
        user("c", Some("d")),
        user("d", Some("c")),
        user("e", Some("d")),
        user("b", Some("a")),
    ];
    let tree = SessionTree::build(entries, Some("b"), &[]);
    let ids = |ix: &[usize]| -> Vec<String> {
        ix.iter().map(|&i| tree.nodes[i].id().to_string()).collect()
    };
    assert_eq!(ids(&tree.unreachable), ["c", "d", "e"]);
    let walked: Vec<usize> = tree.walk().into_iter().map(|(i, _)| i).collect();
    assert_eq!(ids(&walked), ["a", "b", "c", "d", "e"]);
}

#[test]
fn a_cycle_of_hidden_entries_forwards_to_no_parent() {
    let entries = vec![
        leaf("x", "y", "m"),
        leaf("y", "x", "m"),
        user("m", Some("x")),
    ];
    let tree = SessionTree::build(entries, Some("m"), &[]);
    assert_eq!(tree.nodes.len(), 1);
    assert_eq!(tree.roots, [0]);
}
