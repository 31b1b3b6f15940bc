//! Agreement with pi: every fixture session projects to exactly what pi's own projection
//! code yields (`expected/*.json`, DECISIONS §3.7).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_session::context::projection::{
    build_session_context, build_session_context_from_window, build_session_context_owned,
    derive_state, ContextOptions,
};
use arbor_session::context::{expected_json, write_expected_json};
use arbor_session::jsonl::JsonlRepository;
use arbor_session::{Session, SessionStorage};
use serde_json::Value;

use super::context_support::fixtures_dir;

/// A session file opened the way the CLI opens one (JSONL backend, read-only; v1/v2 files
/// migrated in memory), with its leaf and projections.
struct Loaded {
    leaf: Option<String>,
    /// The pure pipeline over the storage's ancestry of the leaf.
    projected: Value,
    /// The same through `Session::build_context` (the cached path).
    via_session: Value,
    /// v1/v2 files get fresh random ids on migration: their leafId is not comparable.
    migrated: bool,
}

fn load(path: &Path) -> Result<Loaded, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = path.parent().unwrap();
        let repo = JsonlRepository::flat(dir);
        let storage = repo
            .open_read_only(path.to_str().unwrap())
            .await
            .map_err(|e| e.to_string())?;
        let migrated = storage.report().await.migrated_from.is_some();
        let leaf = storage.leaf_id().await.map_err(|e| e.to_string())?;
        let ancestry = storage
            .ancestry(leaf.as_deref())
            .await
            .map_err(|e| e.to_string())?;
        let ctx = build_session_context(&ancestry, &ContextOptions::default());
        let projected = expected_json(&ctx, leaf.as_deref());
        // The storage's bounded branch plus full-ancestry settings gives the same context.
        let window = storage
            .path_to_root_or_compaction(leaf.as_deref())
            .await
            .map_err(|e| e.to_string())?;
        let windowed = build_session_context_from_window(
            window,
            derive_state(&ancestry),
            &ContextOptions::default(),
        );
        if windowed != ctx {
            return Err("projection over the storage's bounded branch differs".into());
        }
        // The consuming pipeline and the streaming writer (what the CLI uses) agree with it.
        let owned = build_session_context_owned(ancestry, &ContextOptions::default());
        if owned != ctx {
            return Err("build_session_context_owned differs from build_session_context".into());
        }
        let mut streamed = Vec::new();
        write_expected_json(&mut streamed, &owned, leaf.as_deref()).unwrap();
        // Byte for byte too: the streaming writer prints numbers as the `Value` rewrite does.
        let mut whole = serde_json::to_vec(&projected).map_err(|e| e.to_string())?;
        whole.push(b'\n');
        if streamed != whole {
            return Err("write_expected_json bytes differ from expected_json's".into());
        }
        let streamed: Value =
            serde_json::from_slice(&streamed).map_err(|e| format!("streamed output: {e}"))?;
        if streamed != projected {
            return Err(format!(
                "write_expected_json differs: {}",
                first_diff("", &streamed, &projected).unwrap_or_default()
            ));
        }
        let session = Session::new(Arc::new(storage));
        let ctx = session
            .build_context(&ContextOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        let via_session = expected_json(&ctx, leaf.as_deref());
        Ok(Loaded {
            leaf,
            projected,
            via_session,
            migrated,
        })
    })
}

/// First place two JSON values differ, as a path.
fn first_diff(path: &str, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let (va, vb) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                if x.contains_key(k) != y.contains_key(k) {
                    return Some(format!(
                        "{path}.{k}: present on one side only ({va} vs {vb})"
                    ));
                }
                if let Some(d) = first_diff(&format!("{path}.{k}"), va, vb) {
                    return Some(d);
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_diff(&format!("{path}[{i}]"), va, vb) {
                    return Some(d);
                }
            }
            (x.len() != y.len()).then(|| format!("{path}: length {} vs {}", x.len(), y.len()))
        }
        _ => (a != b).then(|| format!("{path}: {a} vs {b}")),
    }
}

/// Compares one session file with its expected projection; `Err` describes the disagreement.
fn check(session: &Path, expected: &Path) -> Result<(), String> {
    let want: Value = serde_json::from_str(
        &std::fs::read_to_string(expected).map_err(|e| format!("{}: {e}", expected.display()))?,
    )
    .map_err(|e| format!("{}: {e}", expected.display()))?;
    let loaded = load(session);
    if want["ok"] == Value::Bool(false) {
        return match loaded {
            Err(_) => Ok(()),
            Ok(_) => Err(format!("accepted, but pi refuses it: {}", want["error"])),
        };
    }
    let loaded = loaded?;
    if loaded.projected != loaded.via_session {
        return Err("Session::build_context differs from the pure projection".into());
    }
    // The projection reports the leaf the storage recovered (pi's `leafId`).
    if loaded.projected["leafId"] != serde_json::json!(loaded.leaf) {
        return Err(format!(
            "projected leafId {} is not the storage leaf {:?}",
            loaded.projected["leafId"], loaded.leaf
        ));
    }
    let got = loaded.projected;
    let mut keys = vec!["llm", "model", "thinkingLevel", "activeToolNames"];
    if !loaded.migrated {
        keys.push("leafId");
    }
    for k in keys {
        if let Some(d) = first_diff(k, &got[k], &want[k]) {
            return Err(d);
        }
    }
    Ok(())
}

/// Runs [`check`] over `dir/sessions-ish/*.jsonl` against `expected_dir/<name>.json`.
fn check_dir(sessions: &Path, expected: &Path) -> (usize, Vec<String>) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(sessions)
        .unwrap_or_else(|e| panic!("{}: {e}", sessions.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut failures = Vec::new();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy();
        let stem = name.trim_end_matches(".jsonl");
        let exp = expected.join(format!("{stem}.json"));
        if let Err(e) = check(f, &exp) {
            failures.push(format!("{name}: {e}"));
        }
    }
    (files.len(), failures)
}

#[test]
fn generated_sessions_agree_with_pi() {
    let dir = fixtures_dir().join("generated");
    let (n, failures) = check_dir(&dir.join("sessions"), &dir.join("expected"));
    assert!(n >= 80, "expected the 80 generated fixtures, found {n}");
    assert!(
        failures.is_empty(),
        "{} of {n} disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn pi_sessions_agree_with_pi() {
    let dir = fixtures_dir().join("pi-sessions");
    let (n, failures) = check_dir(&dir, &dir.join("expected"));
    assert!(n >= 10, "expected the pi session fixtures, found {n}");
    assert!(
        failures.is_empty(),
        "{} of {n} disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Extra cases checked against pi (see docs/PERFORMANCE.md and docs/ARCHITECTURE.md, "Testing"):
/// `ARBOR_EXTRA_SESSIONS=DIR` with `DIR/sessions/*.jsonl` and `DIR/expected/*.json`.
#[test]
fn extra_generated_sessions_agree_with_pi() {
    let Ok(dir) = std::env::var("ARBOR_EXTRA_SESSIONS") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let (n, failures) = check_dir(&dir.join("sessions"), &dir.join("expected"));
    assert!(n > 0, "no sessions under {}", dir.display());
    assert!(
        failures.is_empty(),
        "{} of {n} disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
