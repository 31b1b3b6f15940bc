//! The RPC and JSON-mode differential against pi: recordings of one scenario (made by
//! `tools/rpc-parity/record.mjs` through pi's own `RpcClient`, or by the app's offline test)
//! are normalized (paths, ports, times, ids, system prompt texts) and compared step by step.
//! One [`Unit`] per scenario step (its response and the events seen while it ran), so a
//! difference can be accepted for one command by a line of `decisions.txt` naming the
//! DECISIONS id that explains it.
//!
//! Recording shape: `{mode:"rpc", lab, log:[{step}|{response}|{event}|{failure}]}` or
//! `{mode:"json", lab, exitCode, lines:[…]}`.

use std::collections::HashMap;

use regex_lite::Regex;
use serde_json::{Map, Value};

/// One compared step: its key (`scenario#N`), what was sent, and the differences found
/// (empty when pi and Arbor agree).
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    pub key: String,
    pub command: String,
    pub differences: Vec<String>,
}

/// At most this many differences are listed per unit (the rest are counted).
const MAX_LISTED: usize = 12;

struct Normalizer {
    lab: String,
    lab_dashed: String,
    url: Regex,
    time: Regex,
    uuid: Regex,
    entry_id: Regex,
    ids: HashMap<String, String>,
}

impl Normalizer {
    fn new(lab: &str) -> Option<Self> {
        Some(Self {
            lab: lab.to_owned(),
            lab_dashed: lab.replace('/', "-"),
            url: Regex::new(r"http://127\.0\.0\.1:\d+").ok()?,
            time: Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}(?:[.-]\d{3})?Z").ok()?,
            uuid: Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
                .ok()?,
            entry_id: Regex::new(r"^[0-9a-f]{8}$").ok()?,
            ids: HashMap::new(),
        })
    }

    fn string(&mut self, s: &str) -> String {
        if self.entry_id.is_match(s) {
            let n = self.ids.len() + 1;
            return self
                .ids
                .entry(s.to_owned())
                .or_insert_with(|| format!("<id {n}>"))
                .clone();
        }
        let mut out = s.to_owned();
        if !self.lab.is_empty() {
            out = out.replace(&self.lab, "<lab>");
            out = out.replace(&self.lab_dashed, "-<lab>");
        }
        let out = self.url.replace_all(&out, "<model-url>");
        let out = self.time.replace_all(&out, "<time>");
        self.uuid.replace_all(&out, "<uuid>").into_owned()
    }

    fn value(&mut self, v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.string(s)),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.value(x)).collect()),
            // A system message is compared by presence and place: the prompt texts are each
            // agent's own, and pi splits its prompt into named sections (DECISIONS §31.2).
            Value::Object(o) if o.get("role").and_then(Value::as_str) == Some("system") => {
                serde_json::json!({"role": "system", "content": "<system prompt>", "timestamp": "<time>"})
            }
            Value::Object(o) => {
                let mut out = Map::new();
                // `message_update.usage` is the usage known when the event happened in Arbor;
                // pi serializes a partial message it keeps updating, so its value depends on
                // timing (DECISIONS §31.3).
                let update = o.get("type").and_then(Value::as_str) == Some("message_update");
                for (k, x) in o {
                    if update && k == "usage" {
                        continue;
                    }
                    let placeholder = match k.as_str() {
                        "timestamp" | "lastModified" | "created" | "modified" => Some("<time>"),
                        "durationMs" => Some("<ms>"),
                        // bash's `structuredContent` wall time, in tenths of a second.
                        "wall_time_seconds" => Some("<s>"),
                        "systemPrompt" => Some("<system prompt>"),
                        _ => None,
                    };
                    let x = match placeholder {
                        Some(p) if !x.is_null() => Value::String(p.into()),
                        _ => self.value(x),
                    };
                    out.insert(k.clone(), x);
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }
}

/// The recording with paths, ports, times, uuids, entry ids and system prompt texts replaced
/// by placeholders (entry ids numbered in order of first appearance).
pub fn normalize(recording: &Value) -> Value {
    let lab = recording.get("lab").and_then(Value::as_str).unwrap_or("");
    match Normalizer::new(lab) {
        Some(mut n) => n.value(recording),
        None => recording.clone(),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 100 {
        let head: String = s.chars().take(100).collect();
        format!("{head}…")
    } else {
        s
    }
}

/// Structural differences of `arbor` from `pi` under `path`.
pub fn diff(path: &str, pi: &Value, arbor: &Value, out: &mut Vec<String>) {
    match (pi, arbor) {
        (Value::Object(p), Value::Object(a)) => {
            for (k, pv) in p {
                let sub = format!("{path}/{k}");
                match a.get(k) {
                    Some(av) => diff(&sub, pv, av, out),
                    None => out.push(format!("{sub}: missing (pi: {})", short(pv))),
                }
            }
            for (k, av) in a {
                if !p.contains_key(k) {
                    out.push(format!("{path}/{k}: extra (arbor: {})", short(av)));
                }
            }
        }
        (Value::Array(p), Value::Array(a)) => {
            if p.len() != a.len() {
                out.push(format!(
                    "{path}: {} items in pi, {} in arbor",
                    p.len(),
                    a.len()
                ));
            }
            for (i, (pv, av)) in p.iter().zip(a).enumerate() {
                diff(&format!("{path}/{i}"), pv, av, out);
            }
        }
        (Value::Number(p), Value::Number(a)) if p.as_f64() == a.as_f64() => {}
        (p, a) if p != a => out.push(format!("{path}: pi {}, arbor {}", short(p), short(a))),
        _ => {}
    }
}

/// What one step saw: the command sent, its responses and the events that arrived meanwhile.
#[derive(Default)]
struct Segment {
    command: String,
    responses: Vec<Value>,
    events: Vec<Value>,
    failures: Vec<String>,
}

fn segments(log: &[Value]) -> Vec<Segment> {
    let mut out: Vec<Segment> = vec![Segment {
        command: "start-up".into(),
        ..Segment::default()
    }];
    for item in log {
        if item.get("step").is_some() {
            out.push(Segment::default());
            continue;
        }
        let Some(seg) = out.last_mut() else { continue };
        if let Some(r) = item.get("response") {
            if seg.command.is_empty() {
                let c = r.get("command").and_then(Value::as_str).unwrap_or("?");
                seg.command = c.to_owned();
            }
            seg.responses.push(r.clone());
        } else if let Some(e) = item.get("event") {
            seg.events.push(e.clone());
        } else if let Some(f) = item.get("failure").and_then(Value::as_str) {
            seg.failures.push(f.to_owned());
        }
    }
    for s in &mut out {
        if s.command.is_empty() {
            s.command = "(wait)".into();
        }
    }
    out
}

fn event_types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            e.get("type")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned()
        })
        .collect()
}

/// Differences of two event streams: the types in order, then (when those agree) each event's
/// fields.
fn diff_events(what: &str, pi: &[Value], arbor: &[Value], out: &mut Vec<String>) {
    let (tp, ta) = (event_types(pi), event_types(arbor));
    let same = tp.iter().zip(&ta).take_while(|(p, a)| p == a).count();
    if same < tp.len() || same < ta.len() {
        let window = |t: &[String]| t.iter().skip(same).take(6).cloned().collect::<Vec<_>>();
        out.push(format!(
            "{what} types from [{same}] (of pi {}, arbor {}): pi [{}], arbor [{}]",
            tp.len(),
            ta.len(),
            window(&tp).join(","),
            window(&ta).join(",")
        ));
    }
    for (i, (p, a)) in pi.iter().zip(arbor).enumerate().take(same) {
        diff(&format!("{what}[{i}] {}", tp[i]), p, a, out);
    }
}

fn cap(mut differences: Vec<String>) -> Vec<String> {
    if differences.len() > MAX_LISTED {
        let more = differences.len() - MAX_LISTED;
        differences.truncate(MAX_LISTED);
        differences.push(format!("… {more} more"));
    }
    differences
}

/// Compares two recordings of scenario `name`: one unit per step (RPC) or one for the whole
/// stream (JSON mode).
pub fn compare(name: &str, pi: &Value, arbor: &Value) -> Vec<Unit> {
    let mut units = compare_streams(name, &normalize(pi), &normalize(arbor));
    let mut d = Vec::new();
    diff("", &pi["modelRequests"], &arbor["modelRequests"], &mut d);
    units.push(Unit {
        key: format!("{name}#requests"),
        command: "requests to the model".into(),
        differences: d,
    });
    units
}

fn compare_streams(name: &str, pi: &Value, arbor: &Value) -> Vec<Unit> {
    if pi.get("mode").and_then(Value::as_str) == Some("json") {
        let mut d = Vec::new();
        diff("/exitCode", &pi["exitCode"], &arbor["exitCode"], &mut d);
        let lines = |v: &Value| v["lines"].as_array().cloned().unwrap_or_default();
        let (pl, al) = (lines(pi), lines(arbor));
        match (pl.split_first(), al.split_first()) {
            (Some((ph, pe)), Some((ah, ae))) => {
                diff("header", ph, ah, &mut d);
                diff_events("events", pe, ae, &mut d);
            }
            _ => d.push(format!("lines: pi {}, arbor {}", pl.len(), al.len())),
        }
        return vec![Unit {
            key: format!("{name}#stream"),
            command: "--mode json".into(),
            differences: cap(d),
        }];
    }
    let log = |v: &Value| v["log"].as_array().cloned().unwrap_or_default();
    let (ps, as_) = (segments(&log(pi)), segments(&log(arbor)));
    // A response is compared with the other agent's response of the same id wherever it came
    // (a cancelled `bash` may answer a step later); one without an id within its step.
    let arbor_by_id: HashMap<String, Value> = as_
        .iter()
        .flat_map(|s| s.responses.iter())
        .filter_map(|r| Some((r.get("id")?.as_str()?.to_owned(), r.clone())))
        .collect();
    let pi_ids: Vec<String> = ps
        .iter()
        .flat_map(|s| s.responses.iter())
        .filter_map(|r| Some(r.get("id")?.as_str()?.to_owned()))
        .collect();
    let mut units = Vec::new();
    for (i, p) in ps.iter().enumerate() {
        let mut d = Vec::new();
        let Some(a) = as_.get(i) else {
            units.push(Unit {
                key: format!("{name}#{i}"),
                command: p.command.clone(),
                differences: vec!["arbor's recording ends before this step".into()],
            });
            continue;
        };
        let without_id = |rs: &[Value]| -> Vec<Value> {
            rs.iter()
                .filter(|r| r.get("id").is_none())
                .cloned()
                .collect()
        };
        for (j, pr) in p.responses.iter().enumerate() {
            let Some(id) = pr.get("id").and_then(Value::as_str) else {
                continue;
            };
            match arbor_by_id.get(id) {
                Some(ar) => diff(&format!("response[{j}]"), pr, ar, &mut d),
                None => d.push(format!("response {id}: arbor never answered")),
            }
        }
        for ar in &a.responses {
            if let Some(id) = ar.get("id").and_then(Value::as_str) {
                if !pi_ids.iter().any(|p| p == id) {
                    d.push(format!(
                        "response {id}: pi never answered; arbor {}",
                        short(ar)
                    ));
                }
            }
        }
        let (pn, an) = (without_id(&p.responses), without_id(&a.responses));
        if pn.len() != an.len() {
            d.push(format!(
                "responses without id: pi {}, arbor {}",
                pn.len(),
                an.len()
            ));
        }
        for (j, (pr, ar)) in pn.iter().zip(&an).enumerate() {
            diff(&format!("response-without-id[{j}]"), pr, ar, &mut d);
        }
        diff_events("events", &p.events, &a.events, &mut d);
        if p.failures != a.failures {
            d.push(format!(
                "client failures: pi {:?}, arbor {:?}",
                p.failures, a.failures
            ));
        }
        // Step 0 is the start-up segment; scenario steps count from 0 after it.
        let key = if i == 0 {
            format!("{name}#start")
        } else {
            format!("{name}#{}", i - 1)
        };
        units.push(Unit {
            key,
            command: p.command.clone(),
            differences: cap(d),
        });
    }
    units
}

/// A line of `decisions.txt`: the unit key, the DECISIONS id that explains its difference (or
/// `open`: a known gap not closed yet, counted apart) and a note.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    pub key: String,
    pub decision: String,
    pub note: String,
}

/// A `decisions.txt` line that does not name a DECISIONS id.
#[derive(Debug, thiserror::Error)]
#[error("decisions.txt line {line}: expected `KEY §N.M note` or `KEY open note`, got {text:?}")]
pub struct BadDecisionLine {
    pub line: usize,
    pub text: String,
}

/// Reads `decisions.txt` (`KEY DECISION-ID note…`, `#` comments and blank lines ignored); a
/// line without a decision id is named in the error.
pub fn parse_accepted(text: &str) -> Result<Vec<Accepted>, BadDecisionLine> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut parts = line.splitn(3, char::is_whitespace);
        let key = parts.next().unwrap_or_default();
        let decision = parts.next().unwrap_or_default();
        if !decision.starts_with('§') && decision != "open" {
            return Err(BadDecisionLine {
                line: n + 1,
                text: line.to_owned(),
            });
        }
        out.push(Accepted {
            key: key.to_owned(),
            decision: decision.to_owned(),
            note: parts.next().unwrap_or_default().trim().to_owned(),
        });
    }
    Ok(out)
}

/// The verdict over all units: the lines to print and whether every difference carries a
/// decision and every decision line is still needed.
pub fn verdict(units: &[Unit], accepted: &[Accepted]) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    let (mut agree, mut decided, mut known, mut open, mut stale) = (0, 0, 0, 0, 0);
    for u in units {
        let decision = accepted.iter().find(|a| a.key == u.key);
        match (u.differences.is_empty(), decision) {
            (true, None) => {
                agree += 1;
                lines.push(format!("agree    {} {}", u.key, u.command));
            }
            (true, Some(a)) => {
                stale += 1;
                lines.push(format!(
                    "STALE    {} {}: agrees now; drop its line ({})",
                    u.key, u.command, a.decision
                ));
            }
            (false, Some(a)) if a.decision == "open" => {
                known += 1;
                lines.push(format!("OPEN     {} {} {}", u.key, u.command, a.note));
                lines.extend(u.differences.iter().map(|d| format!("    {d}")));
            }
            (false, Some(a)) => {
                decided += 1;
                lines.push(format!(
                    "decided  {} {} {} {}",
                    u.key, u.command, a.decision, a.note
                ));
            }
            (false, None) => {
                open += 1;
                lines.push(format!("DIFFERS  {} {}", u.key, u.command));
                lines.extend(u.differences.iter().map(|d| format!("    {d}")));
            }
        }
    }
    for a in accepted {
        if !units.iter().any(|u| u.key == a.key) {
            stale += 1;
            lines.push(format!("STALE    {}: no such step ({})", a.key, a.decision));
        }
    }
    lines.push(format!(
        "rpc-parity: {} steps: {agree} agree, {decided} differ by decision, {known} known open gaps, {open} differ unexplained, {stale} stale lines",
        units.len()
    ));
    (lines, open == 0 && stale == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalizing_replaces_paths_ids_times_and_ports() {
        let rec = json!({"lab": "/tmp/lab1", "mode": "rpc", "log": [
            {"response": {"data": {"sessionFile": "/tmp/lab1/home/sessions/--tmp-lab1-repo--/2026-12-04T18-44-26-480Z_01a2425f-38cf-73ba-a214-712604432eae.jsonl",
             "entries": [{"id": "02d34a97", "parentId": null, "timestamp": "2026-12-04T18:44:26.952Z"}, {"id": "79c033c4", "parentId": "02d34a97"}],
             "model": {"baseUrl": "http://127.0.0.1:38401/v1"}}}}
        ]});
        let n = normalize(&rec);
        let data = &n["log"][0]["response"]["data"];
        assert_eq!(
            data["sessionFile"],
            "<lab>/home/sessions/--<lab>-repo--/<time>_<uuid>.jsonl"
        );
        assert_eq!(data["entries"][1]["parentId"], "<id 1>");
        assert_eq!(data["entries"][1]["id"], "<id 2>");
        assert_eq!(data["entries"][0]["timestamp"], "<time>");
        assert_eq!(data["model"]["baseUrl"], "<model-url>/v1");
    }

    #[test]
    fn a_step_that_differs_needs_a_decision_and_a_decision_must_stay_needed() {
        let rec = |text: &str| {
            json!({"lab": "", "mode": "rpc", "log": [
                {"step": 0}, {"response": {"id": "req_1", "command": "get_state", "data": {"a": 1}}},
                {"step": 1}, {"response": {"id": "req_2", "command": "get_last_assistant_text", "data": {"text": text}}},
            ]})
        };
        let units = compare("s", &rec("x"), &rec("y"));
        assert_eq!(units.len(), 4);
        assert!(units[1].differences.is_empty());
        assert_eq!(
            units[2].differences,
            vec!["response[0]/data/text: pi \"x\", arbor \"y\""]
        );
        let (_, ok) = verdict(&units, &[]);
        assert!(!ok);
        let accepted = parse_accepted("# note\ns#1 §31.9 texts differ\n").unwrap_or_default();
        assert_eq!(accepted.len(), 1);
        let (lines, ok) = verdict(&units, &accepted);
        assert!(ok, "{lines:?}");
        let (lines, ok) = verdict(&compare("s", &rec("x"), &rec("x")), &accepted);
        assert!(!ok);
        assert!(
            lines.iter().any(|l| l.starts_with("STALE    s#1")),
            "{lines:?}"
        );
        assert!(parse_accepted("s#1 31.9 no section sign").is_err());
    }

    #[test]
    fn event_types_in_a_different_order_are_one_difference() {
        let rec = |types: &[&str]| {
            let log: Vec<Value> = std::iter::once(json!({"step": 0}))
                .chain(types.iter().map(|t| json!({"event": {"type": t}})))
                .collect();
            json!({"lab": "", "mode": "rpc", "log": log})
        };
        let units = compare("s", &rec(&["a", "b"]), &rec(&["b", "a"]));
        assert_eq!(
            units[1].differences,
            vec!["events types from [0] (of pi 2, arbor 2): pi [a,b], arbor [b,a]"]
        );
    }
}
