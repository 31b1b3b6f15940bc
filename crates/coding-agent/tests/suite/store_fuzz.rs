//! Mutated session files, CI-sized (issue 15): every mutation of the small pi fixtures is
//! opened by the real `arbor session context --json` and `arbor session tree`, which must end
//! within the time limit with a documented exit code (0 shown, 1 not found, 2 refused as
//! invalid, with an `arbor: ` line naming the file), never a panic or a hang.
//! `ARBOR_FUZZ_CASES` raises the count for a longer local run (default: 30 per fixture).

use std::io::Read as _;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{arbor, fixture_files};

/// xorshift64*: deterministic, so a failure names a case that can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const KINDS: &[&str] = &[
    "message",
    "compaction",
    "branch_summary",
    "leaf",
    "label",
    "session_info",
    "custom",
    "model_change",
    "thinking_level_change",
    "no_such_type",
];

fn ids(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// One mutation of the file's text; the name says which, for the failure message.
fn mutate(text: &str, rng: &mut Rng) -> (String, &'static str) {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let n = lines.len();
    let pick = rng.below(n);
    let kind = rng.below(10);
    let name = match kind {
        0 => {
            let mut bytes = text.as_bytes().to_vec();
            let at = rng.below(bytes.len());
            bytes[at] ^= 1 << rng.below(8);
            return (String::from_utf8_lossy(&bytes).into_owned(), "bit flip");
        }
        1 => {
            let mut cut = rng.below(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            return (text[..cut].to_owned(), "truncation");
        }
        2 => {
            lines.remove(pick);
            "deleted line"
        }
        3 => {
            let l = lines[pick].clone();
            lines.insert(rng.below(n), l);
            "duplicated line"
        }
        4 => {
            lines.swap(pick, rng.below(n));
            "swapped lines"
        }
        5 | 6 => {
            // parentId (5) or id (6) set to another entry's id: cycles, self-parents, duplicates.
            let all = ids(&lines);
            if let (Ok(mut v), false) =
                (serde_json::from_str::<Value>(&lines[pick]), all.is_empty())
            {
                let key = if kind == 5 { "parentId" } else { "id" };
                if let Some(o) = v.as_object_mut() {
                    o.insert(key.into(), Value::String(all[rng.below(all.len())].clone()));
                }
                lines[pick] = v.to_string();
            }
            if kind == 5 {
                "parentId rewired"
            } else {
                "id duplicated"
            }
        }
        7 => {
            lines.insert(
                pick,
                ["{", "[]", "{\"type\":", "\u{0}", "{\"id\":1}"][rng.below(5)].into(),
            );
            "garbage line"
        }
        8 => {
            // A field removed at some depth (timestamp, usage, message, content...).
            if let Ok(mut v) = serde_json::from_str::<Value>(&lines[pick]) {
                // Walk down 0-2 object levels (read-only), then remove one key there.
                let mut pointer = String::new();
                for _ in 0..rng.below(3) {
                    let Some(Value::Object(o)) = v.pointer(&pointer) else {
                        break;
                    };
                    let Some(k) = o.keys().nth(rng.below(o.len())).cloned() else {
                        break;
                    };
                    if !o[&k].is_object() {
                        break;
                    }
                    pointer = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
                }
                if let Some(Value::Object(o)) = v.pointer_mut(&pointer) {
                    if let Some(k) = o.keys().nth(rng.below(o.len())).cloned() {
                        o.remove(&k);
                    }
                }
                lines[pick] = v.to_string();
            }
            "field removed"
        }
        _ => {
            if let Ok(mut v) = serde_json::from_str::<Value>(&lines[pick]) {
                if let Some(o) = v.as_object_mut() {
                    o.insert("type".into(), KINDS[rng.below(KINDS.len())].into());
                }
                lines[pick] = v.to_string();
            }
            "type changed"
        }
    };
    let mut out = lines.join("\n");
    out.push('\n');
    (out, name)
}

/// Runs `arbor ARGS`, killing it after `limit`; `None` when it had to be killed.
fn run_limited(home: &Path, args: &[&str], limit: Duration) -> Option<(i32, String)> {
    let mut child = arbor(home)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running arbor");
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("waiting for arbor") {
            let err = reader.join().unwrap_or_default();
            return Some((status.code().unwrap_or(-1), err));
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn mutated_session_files_never_panic_or_hang() {
    let per_file: usize = std::env::var("ARBOR_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let home = tempfile::tempdir().unwrap();
    let sources: Vec<_> = fixture_files("pi-sessions")
        .into_iter()
        .filter(|p| {
            std::fs::metadata(p)
                .map(|m| m.len() < 100_000)
                .unwrap_or(false)
        })
        .collect();
    assert!(sources.len() >= 5, "small pi fixtures: {sources:?}");
    let mut runs = 0;
    let mut refusals = 0;
    let mut problems = Vec::new();
    for (fi, src) in sources.iter().enumerate() {
        let text = std::fs::read_to_string(src).unwrap();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (fi as u64 + 1));
        for case in 0..per_file {
            let (mutated, what) = mutate(&text, &mut rng);
            let file = home.path().join(format!("case-{fi}-{case}.jsonl"));
            std::fs::write(&file, &mutated).unwrap();
            let f = file.to_str().unwrap();
            for args in [
                &["session", "context", "--json", f][..],
                &["session", "tree", f][..],
            ] {
                runs += 1;
                let label = format!(
                    "{} case {case} ({what}) `{}`",
                    src.file_name().unwrap().to_string_lossy(),
                    args[1]
                );
                match run_limited(home.path(), args, Duration::from_secs(20)) {
                    None => problems.push(format!("{label}: hung (killed after 20 s)")),
                    Some((code, err)) => {
                        if code == 2 {
                            refusals += 1;
                        }
                        let named = code == 0 || (err.contains("arbor: ") && err.contains(f));
                        if !(0..=2).contains(&code)
                            || !named
                            || err.contains("panicked")
                            || err.contains("internal error")
                        {
                            problems.push(format!("{label}: exit {code}: {err}"));
                        }
                    }
                }
            }
            let _ = std::fs::remove_file(&file);
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {runs} runs failed:\n{}",
        problems.len(),
        problems.join("\n")
    );
    // The mutations are not all harmless: some files must have been refused.
    assert!(refusals > 0, "no mutated file was refused in {runs} runs");
}
