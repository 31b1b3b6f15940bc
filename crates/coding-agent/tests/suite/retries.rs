//! Retries through the real binary against the mock server (DECISIONS §29.1–§29.4): a retried
//! request stores the prompt once, `Retry-After` is honoured within the cap and refused above
//! it, and requests that cannot be built fail at once.

use std::time::{Duration, Instant};

use arbor_test_support::scripts::openai_text;
use arbor_test_support::{MockResponse, MockServer};
use serde_json::{json, Value};

use super::agent_e2e::{lab, Lab};

fn settings(lab: &Lab, json: &str) {
    std::fs::write(lab.home.join("settings.json"), json).unwrap();
}

fn server_error() -> MockResponse {
    MockResponse::json(500, &json!({"error": {"message": "Internal server error"}}))
}

/// The session's lines as JSON, header excluded.
fn entries(lab: &Lab) -> Vec<Value> {
    let files = lab.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn count(entries: &[Value], f: impl Fn(&Value) -> bool) -> usize {
    entries.iter().filter(|e| f(e)).count()
}

fn is_user(e: &Value) -> bool {
    e["type"] == "message" && e["message"]["role"] == "user"
}

fn is_failed_answer(e: &Value) -> bool {
    e["type"] == "message"
        && e["message"]["role"] == "assistant"
        && e["message"]["stopReason"] == "error"
}

fn is_edit(e: &Value) -> bool {
    e["type"] == "context_edit"
}

#[tokio::test]
async fn two_failures_then_an_answer_store_the_prompt_once() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    settings(&lab, r#"{"retry": {"baseDelayMs": 10}}"#);
    server.push(server_error());
    server.push(server_error());
    server.push(openai_text("third time lucky"));
    let (code, out, err) = lab
        .run(&["-p", "--model", "mock/mock-model", "hello there"])
        .await;
    assert_eq!((code, out.as_str()), (0, "third time lucky\n"), "{err}");
    assert!(
        err.contains("retrying (1/3)") && err.contains("retrying (2/3)"),
        "{err}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        reqs[0].body, reqs[2].body,
        "every attempt sends the same request"
    );
    let e = entries(&lab);
    assert_eq!(count(&e, is_user), 1, "the prompt is stored once: {e:#?}");
    assert_eq!(count(&e, is_failed_answer), 2);
    assert_eq!(count(&e, is_edit), 2, "one context_edit per failed attempt");
    // Each edit hides a failed answer, never the prompt.
    let failed: Vec<&Value> = e
        .iter()
        .filter(|x| is_failed_answer(x))
        .map(|x| &x["id"])
        .collect();
    for edit in e.iter().filter(|x| is_edit(x)) {
        assert!(failed.contains(&&edit["targetId"]), "{edit}");
    }
    // The next run sees one prompt and one answer.
    server.push(openai_text("sure"));
    let (code, _, err) = lab.run(&["-c", "-p", "next"]).await;
    assert_eq!(code, 0, "{err}");
    let body = server.requests()[3].json();
    let texts: Vec<String> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(
        texts.iter().filter(|t| t.contains("hello there")).count(),
        1,
        "{texts:?}"
    );
}

#[tokio::test]
async fn a_dead_server_prints_the_final_error_once() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    settings(&lab, r#"{"retry": {"baseDelayMs": 10}}"#);
    for _ in 0..4 {
        server.push(server_error());
    }
    let (code, out, err) = lab
        .run(&["-p", "--model", "mock/mock-model", "hello"])
        .await;
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert_eq!(
        server.requests().len(),
        4,
        "the first attempt and three retries"
    );
    assert_eq!(
        err.matches("Internal server error").count(),
        4,
        "three retry notices and the final error, once: {err}"
    );
    assert!(err.contains("giving up after 3 retries"), "{err}");
    let e = entries(&lab);
    assert_eq!(count(&e, is_user), 1, "{e:#?}");
    assert_eq!(count(&e, is_failed_answer), 4);
    assert_eq!(count(&e, is_edit), 3);
}

#[tokio::test]
async fn retry_after_is_waited_for_and_announced() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    // A 10 ms backoff: only the server's header can make the wait 2 s.
    settings(&lab, r#"{"retry": {"baseDelayMs": 10}}"#);
    server.push(
        MockResponse::json(429, &json!({"error": {"message": "Rate limit reached"}}))
            .header("retry-after", "2"),
    );
    server.push(openai_text("after the wait"));
    let started = Instant::now();
    let (code, out, err) = lab
        .run(&["-p", "--model", "mock/mock-model", "hello"])
        .await;
    let took = started.elapsed();
    assert_eq!((code, out.as_str()), (0, "after the wait\n"), "{err}");
    assert!(took >= Duration::from_secs(2), "waited {took:?}");
    assert!(err.contains("the server asks to retry in 2 s"), "{err}");
    assert!(err.contains("retrying (1/3) in 2.0s"), "{err}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn retry_after_above_the_cap_fails_at_once_naming_the_delay() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    settings(&lab, r#"{"retry": {"baseDelayMs": 10}}"#);
    server.push(
        MockResponse::json(429, &json!({"error": {"message": "Rate limit reached"}}))
            .header("retry-after", "3600"),
    );
    let started = Instant::now();
    let (code, out, err) = lab
        .run(&["-p", "--model", "mock/mock-model", "hello"])
        .await;
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        err.contains("Server requested 3600s retry delay (max: 60s)"),
        "{err}"
    );
    assert!(!err.contains("retrying"), "{err}");
    assert_eq!(server.requests().len(), 1);

    // The cap is the `retry.provider.maxRetryDelayMs` setting.
    let server = MockServer::start().await.unwrap();
    let lab = super::agent_e2e::lab(&server);
    settings(
        &lab,
        r#"{"retry": {"baseDelayMs": 10, "provider": {"maxRetryDelayMs": 1000}}}"#,
    );
    server.push(
        MockResponse::json(503, &json!({"error": {"message": "Service unavailable"}}))
            .header("retry-after", "2"),
    );
    let (code, _, err) = lab
        .run(&["-p", "--model", "mock/mock-model", "hello"])
        .await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("Server requested 2s retry delay (max: 1s)"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1);
}

fn models_with(lab: &Lab, provider: Value) {
    let models = json!({"providers": {"broken": provider}});
    std::fs::write(lab.home.join("models.json"), models.to_string()).unwrap();
}

#[tokio::test]
async fn requests_that_cannot_be_built_are_not_retried() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    let model = json!([{"id": "m", "contextWindow": 32000, "maxTokens": 4096}]);
    let cases = [
        (
            json!({"baseUrl": "not a url", "api": "openai-completions", "apiKey": "k", "models": model}),
            "Invalid request URL",
        ),
        (
            json!({"baseUrl": format!("{}/v1", server.url()), "api": "openai-completions", "apiKey": "k",
                   "headers": {"x-team": "a\nb"}, "models": model}),
            "Invalid request header \"x-team\"",
        ),
        (
            json!({"baseUrl": format!("{}/v1", server.url()), "api": "no-such-api", "apiKey": "k", "models": model}),
            "no-such-api",
        ),
    ];
    for (provider, needle) in cases {
        models_with(&lab, provider);
        let started = Instant::now();
        let (code, _, err) = lab.run(&["-p", "--model", "broken/m", "hello"]).await;
        let took = started.elapsed();
        assert_eq!(code, 1, "{err}");
        assert!(err.contains(needle), "{needle}: {err}");
        assert!(!err.contains("retrying"), "{err}");
        assert!(took < Duration::from_secs(1), "{needle}: took {took:?}");
    }
    assert!(server.requests().is_empty());
}
