//! Golden fixtures from the pi-ai 1.6.0 differential run (`cargo xtask parity … --golden`):
//! request bodies pi sent for seeded random contexts, and the event sequences pi produced for
//! seeded random provider replies. Arbor must reproduce both without node.

use arbor_ai::{Context, Model, SimpleStreamOptions};
use arbor_test_support::{Ending, MockResponse, MockServer};
use futures::StreamExt;
use serde_json::Value;

fn lines(name: &str) -> Vec<Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/parity")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .map(|(n, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{name} line {}: {e}", n + 1))
        })
        .collect()
}

/// Equal as JSON values, numbers up to the last bits of a double (serde's default float parser
/// may read node's shortest form one ulp off).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(p), Some(q)) => {
                p == q || (p - q).abs() <= 4.0 * f64::EPSILON * p.abs().max(q.abs())
            }
            _ => x == y,
        },
        _ => a == b,
    }
}

#[test]
fn request_bodies_match_pi() {
    let cases = lines("requests.jsonl");
    assert!(
        cases.len() >= 100,
        "expected the committed golden set, got {}",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        let model: Model = serde_json::from_value(case["model"].clone()).unwrap();
        let context: Context = serde_json::from_value(case["context"].clone()).unwrap();
        let options = SimpleStreamOptions::from_pi_json(&case["options"]).unwrap();
        let built = arbor_ai::providers::simple::build_simple_request(&model, &context, options);
        let ok = match (&case["expected"], built) {
            (Value::Null, Err(_)) => true,
            (expected, Ok(request)) => {
                same(&expected["body"], &request.body) && expected["url"] == request.url.as_str()
            }
            _ => false,
        };
        if !ok {
            failures.push(case["id"].as_str().unwrap_or("?").to_string());
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ from pi: {failures:?}",
        failures.len(),
        cases.len()
    );
}

fn generated_id(id: &str) -> Option<String> {
    let mut parts = id.rsplitn(3, '_');
    let counter = parts.next()?;
    let millis = parts.next()?;
    let name = parts.next()?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(counter) && digits(millis) && millis.len() >= 12).then(|| format!("{name}_<generated>"))
}

fn normalize(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("partial");
            m.remove("timestamp");
            m.remove("durationMs");
            for (k, x) in m.iter_mut() {
                match x.as_str().filter(|_| k == "id").and_then(generated_id) {
                    Some(g) => *x = Value::String(g),
                    None => normalize(x),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(normalize),
        _ => {}
    }
}

#[tokio::test]
async fn stream_outcomes_match_pi() {
    let cases = lines("streams.jsonl");
    assert!(
        cases.len() >= 100,
        "expected the committed golden set, got {}",
        cases.len()
    );
    let server = MockServer::start().await.unwrap();
    let mut failures = Vec::new();
    for case in &cases {
        let reply = &case["reply"];
        let splits: Vec<usize> = reply["splits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_u64().unwrap() as usize)
            .collect();
        let mut response = MockResponse::new(reply["status"].as_u64().unwrap() as u16)
            .header(
                "content-type",
                reply["headers"]["content-type"].as_str().unwrap(),
            )
            .body_split_at(reply["body"].as_str().unwrap().as_bytes(), &splits);
        if reply["ending"] == "cut" {
            response = response.ending(Ending::CutOff);
        }
        server.push(response);
        let mut model_json = case["model"].clone();
        let base = model_json["baseUrl"]
            .as_str()
            .unwrap()
            .replace("{server}", &server.url());
        model_json["baseUrl"] = Value::String(base);
        let model: Model = serde_json::from_value(model_json).unwrap();
        let context: Context = serde_json::from_value(case["context"].clone()).unwrap();
        let options = SimpleStreamOptions::from_pi_json(&case["options"]).unwrap();
        let events: Vec<_> = arbor_ai::stream_simple(&model, &context, options)
            .collect()
            .await;
        let mut got = serde_json::to_value(&events).unwrap();
        normalize(&mut got);
        let mut expected = case["expected"].clone();
        normalize(&mut expected);
        if !same(&expected, &got) {
            failures.push(case["id"].as_str().unwrap_or("?").to_string());
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ from pi: {failures:?}",
        failures.len(),
        cases.len()
    );
}
