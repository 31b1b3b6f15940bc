//! `arbor session context FILE --json` agrees with pi's projection on every shared fixture.

use std::path::Path;

use serde_json::Value;

use super::{fixture_files, run, shared_dir};

/// v1/v2 files get fresh entry ids on every in-memory migration, so their `leafId` differs.
fn is_pre_v3(path: &Path) -> bool {
    let text = std::fs::read_to_string(path).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    header.get("version").and_then(Value::as_u64).unwrap_or(1) < 3
}

/// JSON has one number type: `0.0` (kept verbatim from a Python-written file) equals `0`
/// (what JavaScript writes). Every number becomes an f64 before comparing.
fn numbers_as_f64(v: &mut Value) {
    match v {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().and_then(serde_json::Number::from_f64) {
                *n = f;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(numbers_as_f64),
        Value::Object(map) => map.values_mut().for_each(numbers_as_f64),
        _ => {}
    }
}

fn check_dir(sessions: &str, expected: &str) -> usize {
    let mut failures = Vec::new();
    let files = fixture_files(sessions);
    for file in &files {
        let name = file.file_stem().unwrap().to_str().unwrap();
        let expected_path = shared_dir()
            .join("fixtures")
            .join(expected)
            .join(format!("{name}.json"));
        let mut want: Value =
            serde_json::from_str(&std::fs::read_to_string(&expected_path).unwrap()).unwrap();
        let out = run(&["session", "context", file.to_str().unwrap(), "--json"]);
        assert_eq!(
            out.stdout.lines().count(),
            1,
            "{name}: --json must print exactly one line; got {:?}",
            out.stdout
        );
        let mut got: Value = match serde_json::from_str(&out.stdout) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{name}: stdout is not JSON ({e}): {}", out.stdout));
                continue;
            }
        };
        if want["ok"] == Value::Bool(false) {
            if out.code != 2 || got["ok"] != Value::Bool(false) || !got["error"].is_string() {
                failures.push(format!(
                    "{name}: must be refused with exit 2, got exit {} and {}",
                    out.code, out.stdout
                ));
            }
            if out.stderr.lines().count() != 1 {
                failures.push(format!("{name}: expected one stderr line: {}", out.stderr));
            }
            continue;
        }
        if out.code != 0 {
            failures.push(format!("{name}: exit {}: {}", out.code, out.stderr));
            continue;
        }
        if is_pre_v3(file) {
            want.as_object_mut().unwrap().remove("leafId");
            got.as_object_mut().unwrap().remove("leafId");
        }
        numbers_as_f64(&mut got);
        numbers_as_f64(&mut want);
        if got != want {
            let field = [
                "ok",
                "leafId",
                "model",
                "thinkingLevel",
                "activeToolNames",
                "llm",
            ]
            .into_iter()
            .find(|k| got.get(*k) != want.get(*k))
            .unwrap_or("(extra keys)");
            failures.push(format!("{name}: differs in `{field}`"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixtures disagree with pi:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    files.len()
}

#[test]
fn generated_sessions_match_the_reference_projection() {
    assert!(check_dir("generated/sessions", "generated/expected") >= 80);
}

#[test]
fn pi_sessions_match_the_reference_projection() {
    assert!(check_dir("pi-sessions", "pi-sessions/expected") >= 10);
}
