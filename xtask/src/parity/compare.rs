//! JSON comparison for the differential tests.

use serde_json::{Map, Value};

/// The first place where `pi` and `arbor` differ: a JSON path and both values there.
pub fn first_difference(pi: &Value, arbor: &Value) -> Option<(String, String)> {
    diff_at(pi, arbor, String::new())
}

fn show(v: Option<&Value>) -> String {
    match v {
        None => "<absent>".into(),
        Some(v) => {
            let s = v.to_string();
            if s.chars().count() > 300 {
                format!("{}…", s.chars().take(300).collect::<String>())
            } else {
                s
            }
        }
    }
}

fn diff_at(pi: &Value, arbor: &Value, path: String) -> Option<(String, String)> {
    match (pi, arbor) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                let p = format!("{path}.{k}");
                match b.get(k) {
                    None => return Some((p, format!("pi: {}\narbor: <absent>", show(Some(va))))),
                    Some(vb) => {
                        if let Some(d) = diff_at(va, vb, p) {
                            return Some(d);
                        }
                    }
                }
            }
            for (k, vb) in b {
                if !a.contains_key(k) {
                    return Some((
                        format!("{path}.{k}"),
                        format!("pi: <absent>\narbor: {}", show(Some(vb))),
                    ));
                }
            }
            None
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                if let Some(d) = diff_at(va, vb, format!("{path}[{i}]")) {
                    return Some(d);
                }
            }
            if a.len() != b.len() {
                let i = a.len().min(b.len());
                return Some((
                    format!("{path}[len]"),
                    format!(
                        "pi: {} items, next {}\narbor: {} items, next {}",
                        a.len(),
                        show(a.get(i)),
                        b.len(),
                        show(b.get(i))
                    ),
                ));
            }
            None
        }
        (Value::Number(a), Value::Number(b)) if same_number(a, b) => None,
        _ if pi == arbor => None,
        _ => Some((
            path,
            format!("pi: {}\narbor: {}", show(Some(pi)), show(Some(arbor))),
        )),
    }
}

/// Equal up to the last bits of a double: serde_json's default float parser is not exactly
/// round-trip (it may read node's shortest form of a value one ulp off).
fn same_number(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y || (x - y).abs() <= 4.0 * f64::EPSILON * x.abs().max(y.abs()),
        _ => a == b,
    }
}

/// Google generates missing tool-call ids as `<name>_<Date.now()>_<counter>`; the clock and the
/// process-wide counter differ between runs, so the comparison sees `<name>_<generated>`.
fn generated_id(id: &str) -> Option<String> {
    let mut parts = id.rsplitn(3, '_');
    let counter = parts.next()?;
    let millis = parts.next()?;
    let name = parts.next()?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(counter) && digits(millis) && millis.len() >= 12).then(|| format!("{name}_<generated>"))
}

fn normalize_ids(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if k == "id" {
                    if let Some(g) = x.as_str().and_then(generated_id) {
                        *x = Value::String(g);
                    }
                } else {
                    normalize_ids(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(normalize_ids),
        _ => {}
    }
}

/// Events without the live `partial`, terminal messages without wall-clock fields.
pub fn normalize_events(events: &Value) -> Value {
    let Some(list) = events.as_array() else {
        return Value::Null;
    };
    Value::Array(
        list.iter()
            .map(|e| {
                let mut e = e.as_object().cloned().unwrap_or_default();
                e.remove("partial");
                for key in ["message", "error"] {
                    if let Some(Value::Object(m)) = e.get_mut(key) {
                        normalize_message(m);
                    }
                }
                let mut e = Value::Object(e);
                normalize_ids(&mut e);
                e
            })
            .collect(),
    )
}

fn normalize_message(m: &mut Map<String, Value>) {
    m.remove("timestamp");
    m.remove("durationMs");
}
