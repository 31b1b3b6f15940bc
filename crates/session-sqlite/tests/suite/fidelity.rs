//! Entries round-trip unchanged: real pi files and generated trees are imported entry by entry
//! and read back structurally equal, unknown types included; leaf recovery matches pi.

use std::path::Path;

use arbor_session::{DerivedSettings, SessionEntry, SessionRepository, SessionStorage};
use serde_json::Value;

use super::*;

fn fixture_files() -> Vec<std::path::PathBuf> {
    let shared = testdata_dir();
    let mut files = Vec::new();
    for dir in ["generated/sessions", "pi-sessions"] {
        for e in std::fs::read_dir(shared.join(dir)).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            // v1/v2 files need the JSONL migration first; SQLite stores v3 entries.
            if name.ends_with(".jsonl") && !name.starts_with("v1-") && !name.starts_with("v2-") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// The `expected/<name>.json` of a fixture when pi could open it (`ok: true`).
fn expected(file: &Path) -> Option<Value> {
    let stem = file.file_stem()?.to_string_lossy().to_string();
    let expected = file
        .parent()?
        .parent()?
        .join("expected")
        .join(format!("{stem}.json"));
    let expected = if expected.exists() {
        expected
    } else {
        file.parent()?.join("expected").join(format!("{stem}.json"))
    };
    let v: Value = serde_json::from_str(&std::fs::read_to_string(expected).ok()?).ok()?;
    (v["ok"] == Value::Bool(true)).then_some(v)
}

#[tokio::test]
async fn fixture_sessions_round_trip_entry_by_entry() {
    let files = fixture_files();
    assert!(files.len() >= 80, "fixtures found: {}", files.len());
    let (_dir, repo) = repo().await;
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let s = session(&repo).await;
        for (n, line) in lines[1..].iter().enumerate() {
            let entry = SessionEntry::from_json(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", file.display(), n + 2));
            s.append_entry(entry)
                .await
                .unwrap_or_else(|e| panic!("{}:{}: {e}", file.display(), n + 2));
        }
        let stored = s.entries(None, None).await.unwrap().entries;
        assert_eq!(stored.len(), lines.len() - 1);
        for ((seq, entry), line) in stored.iter().zip(&lines[1..]) {
            let want: Value = serde_json::from_str(line).unwrap();
            let got: Value = serde_json::from_str(&entry.to_json()).unwrap();
            assert_eq!(got, want, "{} seq {seq}", file.display());
        }
        if let Some(want) = expected(file) {
            let ours = s.leaf_id().await.unwrap();
            assert_eq!(
                ours.map(Value::String).unwrap_or(Value::Null),
                want["leafId"],
                "{}",
                file.display()
            );
            // Derived settings (DECISIONS §3.2) agree with pi's and with a full replay.
            let derived = s.derived_settings(None).await.unwrap();
            let model = derived
                .model
                .clone()
                .map(|(p, m)| serde_json::json!({"provider": p, "modelId": m}))
                .unwrap_or(Value::Null);
            assert_eq!(model, want["model"], "{}", file.display());
            let level = derived
                .thinking_level
                .clone()
                .unwrap_or_else(|| "off".into());
            assert_eq!(
                Value::String(level),
                want["thinkingLevel"],
                "{}",
                file.display()
            );
            assert_eq!(
                serde_json::to_value(&derived.active_tool_names).unwrap(),
                want["activeToolNames"],
                "{}",
                file.display()
            );
            for (_, e) in stored.iter().step_by(stored.len().div_ceil(20).max(1)) {
                let replay = DerivedSettings::from_entries(&s.ancestry(Some(&e.id)).await.unwrap());
                assert_eq!(
                    s.derived_settings(Some(&e.id)).await.unwrap(),
                    replay,
                    "{} at {}",
                    file.display(),
                    e.id
                );
            }
            // A whole-tree fork is the same tree.
            let f = repo.fork(s.id(), Default::default()).await.unwrap();
            assert_eq!(f.entries(None, None).await.unwrap().entries, stored);
            assert_eq!(
                f.ancestry(None).await.unwrap(),
                s.ancestry(None).await.unwrap()
            );
            checked += 1;
        }
    }
    assert!(checked >= 80, "leaf checked for {checked} files");
}

#[tokio::test]
async fn stored_payloads_are_the_json_lines_pi_would_write() {
    let (dir, repo) = repo().await;
    let s = session(&repo).await;
    let e = s.append(assistant(1, 2, 3, 4, 0.25)).await.unwrap();
    let unknown = SessionEntry::from_json(
        r#"{"type":"future_kind","id":"f0000001","parentId":null,"timestamp":"2026-06-20T15:00:00.000Z","x":{"deep":[1,2]},"y":null}"#,
    )
    .unwrap();
    s.append_entry(unknown.clone()).await.unwrap();
    let payloads: Vec<String> = raw(&dir.path().join("sessions.db"))
        .prepare("SELECT payload FROM entries ORDER BY key")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(payloads, vec![e.to_json(), unknown.to_json()]);
    assert!(
        payloads[1].contains(r#""x":{"deep":[1,2]},"y":null"#),
        "{}",
        payloads[1]
    );
    assert_eq!(
        s.find_entries("future_kind").await.unwrap(),
        vec![unknown.clone()]
    );
    assert_eq!(s.leaf_id().await.unwrap().as_deref(), Some("f0000001"));
}
