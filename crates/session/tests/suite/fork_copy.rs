//! A JSONL fork indexes its copy as it writes it instead of reading the new file back
//! (DECISIONS §25.92): the storage the fork returns must answer every index question exactly
//! as a fresh open of the file it wrote does, on sessions with branches, labels, names,
//! compactions and `leaf` entries, forked at many points.

use arbor_session::jsonl::JsonlRepository;
use arbor_session::{ForkOptions, ForkPosition, JsonlStorage, SessionRepository, SessionStorage};
use std::path::Path;

use super::fixture_files;

/// Everything the index answers, from the storage's public methods.
async fn facts(s: &JsonlStorage) -> String {
    let mut out = String::new();
    let page = s.entries(None, None).await.expect("entries");
    out.push_str(&format!(
        "count {}\n",
        s.entry_count().await.expect("count")
    ));
    out.push_str(&format!("leaf {:?}\n", s.leaf_id().await.expect("leaf")));
    out.push_str(&format!(
        "name {:?}\n",
        s.session_name().await.expect("name")
    ));
    out.push_str(&format!("stats {:?}\n", s.stats().await.expect("stats")));
    for (seq, e) in &page.entries {
        out.push_str(&format!(
            "{seq} {} parent {:?} label {:?} children {}\n",
            e.id,
            e.parent_id,
            s.get_label(&e.id).await.expect("label"),
            s.children(Some(&e.id)).await.expect("children").len(),
        ));
    }
    out.push_str(&format!(
        "window {:?}\n",
        s.path_to_root_or_compaction(None)
            .await
            .expect("window")
            .iter()
            .map(|e| e.id.clone())
            .collect::<Vec<_>>()
    ));
    out.push_str(&format!(
        "settings {:?}\n",
        s.derived_settings(None).await.expect("settings")
    ));
    out
}

#[tokio::test]
async fn a_fork_answers_as_a_fresh_open_of_its_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut forks = 0;
    for source in fixture_files("pi-sessions") {
        let name = source.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !name.starts_with("v3-") || !name.ends_with(".jsonl") {
            continue;
        }
        let src_repo = JsonlRepository::flat(source.parent().expect("dir"));
        let src = src_repo
            .open_read_only(source.to_str().expect("utf-8"))
            .await
            .expect("open the fixture");
        let ids: Vec<String> = src
            .entries(None, None)
            .await
            .expect("entries")
            .entries
            .into_iter()
            .map(|(_, e)| e.id)
            .collect();
        drop(src);
        // The whole log, and --at every 7th entry (labels, compactions, leaf entries included).
        let mut points: Vec<Option<String>> = vec![None];
        points.extend(ids.iter().step_by(7).cloned().map(Some));
        points.extend(ids.last().cloned().map(Some));
        for point in points {
            let out = dir.path().join(format!("f{forks}"));
            let repo = JsonlRepository::flat(&out);
            let forked = repo
                .fork(source.to_str().expect("utf-8"), {
                    let mut o = ForkOptions::default();
                    o.entry_id = point.clone();
                    o.position = ForkPosition::At;
                    o
                })
                .await
                .unwrap_or_else(|e| panic!("{name} at {point:?}: {e}"));
            let written = forked.path().to_owned();
            let from_copy = facts(&forked).await;
            drop(forked);
            let reopened = JsonlRepository::flat(&out)
                .open_read_only(written.to_str().expect("utf-8"))
                .await
                .expect("reopen");
            assert_eq!(from_copy, facts(&reopened).await, "{name} at {point:?}");
            forks += 1;
        }
    }
    assert!(forks > 20, "only {forks} forks");
}

#[tokio::test]
async fn a_fork_appends_and_reports_lines_like_a_reopened_file() {
    let source = fixture_files("pi-sessions")
        .into_iter()
        .find(|p| {
            p.to_str()
                .is_some_and(|s| s.contains("v3-generated-branches-labels"))
        })
        .expect("fixture");
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = JsonlRepository::flat(dir.path());
    let forked = repo
        .fork(source.to_str().expect("utf-8"), ForkOptions::default())
        .await
        .expect("fork");
    // An append lands after the copied lines with the next line number, as after a reopen.
    let leaf = forked.leaf_id().await.expect("leaf");
    forked
        .append(arbor_session::EntryDraft::new(
            arbor_session::EntryKind::from_fields(
                "custom",
                serde_json::json!({"customType": "t", "data": 1})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            )
            .expect("custom"),
        ))
        .await
        .expect("append");
    let path = forked.path().to_owned();
    drop(forked);
    let text = std::fs::read_to_string(&path).expect("read");
    let last: serde_json::Value =
        serde_json::from_str(text.lines().last().expect("a line")).expect("json");
    assert_eq!(last["parentId"].as_str(), leaf.as_deref());
    let reopened = JsonlRepository::flat(dir.path())
        .open_read_only(path.to_str().expect("utf-8"))
        .await
        .expect("reopen");
    assert_eq!(
        reopened.entry_count().await.expect("count") as usize,
        text.lines().count() - 1
    );
    assert!(Path::new(&path).exists());
}
