//! Compaction and branch-summary preparation against pi 1.6.0's own plans
//! (`testdata/plans/`, made by `cargo xtask plans`): every key JSON-equal,
//! the serialized conversation byte for byte.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_agent::branch_summary::branch_plan_json;
use arbor_agent::branch_summary::{collect_branch_entries, prepare_branch_entries};
use arbor_agent::compaction::compaction_plan_json;
use arbor_agent::compaction::{prepare_compaction, CompactionSettings};
use arbor_agent::session::{JsonlRepository, Session};
use serde_json::Value;

use super::testdata_dir;

/// The session file a plan was made from.
fn session_for(plan: &Path) -> PathBuf {
    let stem = plan.file_stem().unwrap().to_string_lossy().to_string();
    let fixtures = testdata_dir();
    let generated = fixtures
        .join("generated/sessions")
        .join(format!("{stem}.jsonl"));
    if generated.is_file() {
        return generated;
    }
    let pi = fixtures.join("pi-sessions").join(format!("{stem}.jsonl"));
    assert!(pi.is_file(), "no session for plan {}", plan.display());
    pi
}

async fn open(path: &Path) -> Session {
    let dir = path.parent().unwrap().to_path_buf();
    let storage = JsonlRepository::flat(dir)
        .open_read_only(&path.display().to_string())
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Session::new(Arc::new(storage))
}

/// Compares two plans; on a mismatch names the first differing key (and shows the two
/// conversation texts when those differ).
fn diff(what: &str, ours: &Value, pi: &Value) -> Option<String> {
    if ours == pi {
        return None;
    }
    let (Some(o), Some(p)) = (ours.as_object(), pi.as_object()) else {
        return Some(format!("{what}: ours {ours} vs pi {pi}"));
    };
    for (k, pv) in p {
        let ov = o.get(k).unwrap_or(&Value::Null);
        if ov != pv {
            let show = |v: &Value| {
                let s = v.to_string();
                if s.len() > 600 {
                    format!("{}…", s.chars().take(600).collect::<String>())
                } else {
                    s
                }
            };
            return Some(format!(
                "{what}: key {k} differs\n  ours: {}\n  pi:   {}",
                show(ov),
                show(pv)
            ));
        }
    }
    Some(format!(
        "{what}: extra keys in ours: {:?}",
        o.keys().filter(|k| !p.contains_key(*k)).collect::<Vec<_>>()
    ))
}

pub struct Tally {
    pub compact: usize,
    pub branch: usize,
    pub skipped: usize,
    pub failures: Vec<String>,
}

/// Checks one session against its plan file's expectations.
pub async fn check_plan_file(session_path: &Path, plan: &Value, tally: &mut Tally) {
    let session = open(session_path).await;
    let ancestry = session.ancestry(None).await.unwrap();
    let name = session_path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    for (keep, expected) in plan["compact"].as_object().unwrap() {
        if expected.get("error").is_some() {
            tally.skipped += 1;
            continue;
        }
        let settings = CompactionSettings {
            keep_recent_tokens: keep.parse().unwrap(),
            ..Default::default()
        };
        let prep = prepare_compaction(&ancestry, &settings).unwrap();
        let ours = compaction_plan_json(prep.as_ref());
        tally.compact += 1;
        if let Some(d) = diff(&format!("{name} compact keep={keep}"), &ours, expected) {
            tally.failures.push(d);
        }
    }
    for case in plan["branch"].as_array().unwrap() {
        let expected = &case["plan"];
        if expected.get("error").is_some() {
            tally.skipped += 1;
            continue;
        }
        let to = case["to"].as_str().unwrap();
        let budget = case["tokenBudget"].as_u64().unwrap();
        let target_path = session.ancestry(Some(to)).await.unwrap();
        let collection = collect_branch_entries(&ancestry, &target_path);
        let prep = prepare_branch_entries(&collection.entries, budget);
        let ours = branch_plan_json(&collection, &prep);
        tally.branch += 1;
        if let Some(d) = diff(
            &format!("{name} branch to={to} budget={budget}"),
            &ours,
            expected,
        ) {
            tally.failures.push(d);
        }
    }
}

#[tokio::test]
async fn preparation_equals_pi_plans_on_every_fixture() {
    let dir = testdata_dir().join("plans");
    let mut plans: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    plans.sort();
    assert!(
        plans.len() >= 80,
        "expected the fixture plans in {}",
        dir.display()
    );
    let mut tally = Tally {
        compact: 0,
        branch: 0,
        skipped: 0,
        failures: Vec::new(),
    };
    for plan_path in &plans {
        let plan: Value =
            serde_json::from_str(&std::fs::read_to_string(plan_path).unwrap()).unwrap();
        check_plan_file(&session_for(plan_path), &plan, &mut tally).await;
    }
    eprintln!(
        "plans: {} compaction and {} branch cases compared, {} outside the reference",
        tally.compact, tally.branch, tally.skipped
    );
    assert!(tally.compact >= 200 && tally.branch >= 2000);
    assert!(
        tally.failures.is_empty(),
        "{} of {} cases differ:\n{}",
        tally.failures.len(),
        tally.compact + tally.branch,
        tally
            .failures
            .iter()
            .take(8)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
