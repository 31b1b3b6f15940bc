//! `arbor session compact --dry-run --json` and `arbor session navigate --summarize --dry-run
//! --json` print pi 1.6.0's own plans (`testdata/plans/`, from `ref-plan.mjs`) for every
//! fixture: all keys JSON-equal, `conversation` byte for byte.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{run, testdata_dir};

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
    fixtures.join("pi-sessions").join(format!("{stem}.jsonl"))
}

/// One dry-run invocation and the plan pi made for it.
struct Case {
    label: String,
    args: Vec<String>,
    expected: Value,
}

fn cases_for(session: &Path, plan: &Value) -> (Vec<Case>, usize) {
    let file = session.display().to_string();
    let name = session.file_name().unwrap().to_string_lossy().to_string();
    let mut cases = Vec::new();
    let mut skipped = 0;
    for (keep, expected) in plan["compact"].as_object().unwrap() {
        if expected.get("error").is_some() {
            skipped += 1;
            continue;
        }
        cases.push(Case {
            label: format!("{name} compact --keep-recent-tokens {keep}"),
            args: [
                "session",
                "compact",
                &file,
                "--dry-run",
                "--json",
                "--keep-recent-tokens",
                keep,
            ]
            .map(String::from)
            .to_vec(),
            expected: expected.clone(),
        });
    }
    for case in plan["branch"].as_array().unwrap() {
        if case["plan"].get("error").is_some() {
            skipped += 1;
            continue;
        }
        let to = case["to"].as_str().unwrap();
        let budget = case["tokenBudget"].as_u64().unwrap().to_string();
        cases.push(Case {
            label: format!("{name} navigate --to {to} --token-budget {budget}"),
            args: [
                "session",
                "navigate",
                &file,
                "--to",
                to,
                "--summarize",
                "--dry-run",
                "--json",
                "--token-budget",
                &budget,
            ]
            .map(String::from)
            .to_vec(),
            expected: case["plan"].clone(),
        });
    }
    (cases, skipped)
}

fn check(case: &Case) -> Option<String> {
    let args: Vec<&str> = case.args.iter().map(String::as_str).collect();
    let out = run(&args);
    if out.code != 0 {
        return Some(format!(
            "{}: exit {} ({})",
            case.label, out.code, out.stderr
        ));
    }
    let got: Value = match serde_json::from_str(&out.stdout) {
        Ok(v) => v,
        Err(e) => return Some(format!("{}: not JSON ({e}): {}", case.label, out.stdout)),
    };
    let plan = &got["plan"];
    if plan == &case.expected {
        return None;
    }
    let key = case
        .expected
        .as_object()
        .and_then(|o| o.iter().find(|(k, v)| plan.get(k.as_str()) != Some(*v)))
        .map(|(k, _)| k.clone())
        .unwrap_or_else(|| "<plan>".into());
    Some(format!("{}: `{key}` differs from pi's plan", case.label))
}

#[test]
fn dry_run_plans_equal_pi_plans_on_every_fixture() {
    let dir = testdata_dir().join("plans");
    let mut plans: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    plans.sort();
    let mut cases = Vec::new();
    let mut skipped = 0;
    for p in &plans {
        let plan: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        let (c, s) = cases_for(&session_for(p), &plan);
        cases.extend(c);
        skipped += s;
    }
    let compact = cases.iter().filter(|c| c.args[1] == "compact").count();
    assert!(
        compact >= 200 && cases.len() - compact >= 2000,
        "fixture plans missing"
    );
    // Two workers: one process per case.
    let failures: Vec<String> = std::thread::scope(|s| {
        let (a, b) = cases.split_at(cases.len() / 2);
        let workers =
            [a, b].map(|part| s.spawn(move || part.iter().filter_map(check).collect::<Vec<_>>()));
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    eprintln!(
        "{} compact and {} navigate dry runs compared with pi's plans ({} outside the reference)",
        compact,
        cases.len() - compact,
        skipped
    );
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        cases.len(),
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
