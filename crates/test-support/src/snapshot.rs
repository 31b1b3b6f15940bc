//! Snapshot helpers shared by the crates' suites.

use std::collections::HashMap;

use serde_json::Value;

/// Makes a snapshot value stable: entry ids become their names (`names`), and the
/// millisecond timestamps derived from entry times (anything after 2001) become `"<entry time>"`.
pub fn normalize(mut v: Value, names: &HashMap<String, String>) -> Value {
    fn walk(v: &mut Value, names: &HashMap<String, String>) {
        match v {
            Value::String(s) => {
                if let Some(n) = names.get(s.as_str()) {
                    *s = n.clone();
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, names)),
            Value::Object(o) => {
                for (k, x) in o.iter_mut() {
                    if k == "timestamp" && x.as_i64().is_some_and(|t| t > 1_000_000_000_000) {
                        *x = Value::String("<entry time>".into());
                    } else {
                        walk(x, names);
                    }
                }
            }
            _ => {}
        }
    }
    walk(&mut v, names);
    v
}
