//! `arbor session context FILE --json` agrees with pi's projection on every shared fixture.

use std::path::Path;

use serde_json::Value;

use super::{fixture_files, run, testdata_dir};

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
        let expected_path = testdata_dir().join(expected).join(format!("{name}.json"));
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

/// A session file of `n` user messages in a chain (ids `e0`…), each with `text`, followed by
/// `tail` (extra lines, already formatted).
fn chain_session(dir: &Path, n: usize, text: &str, tail: &[String]) -> std::path::PathBuf {
    let mut s = String::from(
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-06-20T15:00:00.000Z","cwd":"/work/p"}"#,
    );
    s.push('\n');
    for i in 0..n {
        let parent = if i == 0 {
            "null".to_owned()
        } else {
            format!("\"e{}\"", i - 1)
        };
        s.push_str(&format!(
            r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2026-06-20T15:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#
        ));
        s.push('\n');
    }
    for l in tail {
        s.push_str(l);
        s.push('\n');
    }
    let path = dir.join("2026-06-20T15-00-00-000Z_s1.jsonl");
    std::fs::write(&path, s).unwrap();
    path
}

/// A user message under `parent` whose payload is broken after the envelope (the open accepts
/// it; reading it fails).
fn broken_after(parent: &str) -> String {
    format!(
        r#"{{"type":"message","id":"bad","parentId":"{parent}","timestamp":"2026-06-20T15:00:01.000Z","message":{{"role":"user","content":[oops]}}}}"#
    )
}

#[test]
fn a_broken_entry_on_the_path_is_refused_with_the_refusal_line_only() {
    // DECISIONS §25.102: the output is held, so a refusal found while streaming is all there is.
    let dir = tempfile::tempdir().unwrap();
    let path = chain_session(dir.path(), 20, "hello", &[broken_after("e19")]);
    let out = run(&["session", "context", path.to_str().unwrap(), "--json"]);
    assert_eq!(out.code, 2, "stderr: {}", out.stderr);
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    let got: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(got["ok"], Value::Bool(false));
    let error = got["error"].as_str().unwrap();
    assert!(
        error.contains(":22:") && error.contains("entry bad"),
        "{error}"
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    // The entry before it is intact.
    let ok = run(&[
        "session",
        "context",
        path.to_str().unwrap(),
        "--json",
        "--leaf",
        "e19",
    ]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    let got: Value = serde_json::from_str(&ok.stdout).unwrap();
    assert_eq!(got["llm"].as_array().unwrap().len(), 20);
}

#[test]
fn a_context_past_the_held_mib_streams_and_a_late_refusal_gets_its_own_line() {
    // ~1.6 MB of messages: more than the CLI holds back, so output starts before the end.
    let dir = tempfile::tempdir().unwrap();
    let text = "x".repeat(400);
    let path = chain_session(dir.path(), 4_000, &text, &[]);
    let out = run(&["session", "context", path.to_str().unwrap(), "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.lines().count(), 1);
    assert!(out.stdout.len() > 1 << 20, "{} bytes", out.stdout.len());
    let got: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(got["llm"].as_array().unwrap().len(), 4_000);
    assert_eq!(got["leafId"], "e3999");

    let path = chain_session(dir.path(), 4_000, &text, &[broken_after("e3999")]);
    let out = run(&["session", "context", path.to_str().unwrap(), "--json"]);
    assert_eq!(out.code, 2, "stderr: {}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "partial line, then the refusal");
    assert!(lines[0].starts_with(r#"{"ok":true,"leafId":"bad""#));
    assert!(
        serde_json::from_str::<Value>(lines[0]).is_err(),
        "cut short"
    );
    let refusal: Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(refusal["ok"], Value::Bool(false));
    assert!(refusal["error"].as_str().unwrap().contains("entry bad"));
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}
