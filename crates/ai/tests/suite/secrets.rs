//! Credentials never leave the provider layer in error texts or `Debug` (DECISIONS §25.6).

use arbor_ai::providers::build_request;
use arbor_ai::{stream, StopReason, StreamOptions};
use arbor_test_support::MockResponse;
use serde_json::json;

use super::providers_common::*;

const KEY: &str = "sk-live-0123456789abcdef";
const PROXY_TOKEN: &str = "proxy-tok-9f8e7d6c5b4a";

fn options() -> StreamOptions {
    StreamOptions::default()
        .with_api_key(KEY.into())
        .with_headers(vec![("X-Proxy-Token".into(), Some(PROXY_TOKEN.into()))])
}

#[tokio::test]
async fn an_error_body_echoing_credentials_is_scrubbed() {
    // A proxy that reflects the request's headers into its error body.
    let echo = json!({"error": {"message": format!(
        "bad gateway; request headers: authorization=Bearer {KEY}, x-api-key={KEY}, x-proxy-token={PROXY_TOKEN}"
    )}});
    for (api, provider) in [
        ("openai-completions", "openai"),
        ("anthropic-messages", "anthropic"),
        ("openai-responses", "openai"),
    ] {
        let server = server_with(MockResponse::json(400, &echo)).await;
        let base = if api == "anthropic-messages" {
            server.url()
        } else {
            format!("{}/v1", server.url())
        };
        let m = model(api, provider, "m-test", &base);
        let events = collect(stream(&m, &simple_context(), options())).await;
        let last = final_message(&events);
        assert_eq!(last.stop_reason, StopReason::Error);
        let text = last.error_message.clone().unwrap_or_default();
        assert!(!text.contains(KEY), "{api}: {text}");
        assert!(!text.contains(PROXY_TOKEN), "{api}: {text}");
        assert!(text.contains("<redacted>"), "{api}: {text}");
        assert!(
            text.contains("bad gateway"),
            "{api}: the rest is kept: {text}"
        );
        // The request itself carried them (so the scrub is what removed them).
        let sent = server.single_request();
        assert!(sent.header("x-proxy-token") == Some(PROXY_TOKEN));
    }
}

#[test]
fn debug_of_a_request_hides_custom_credential_headers() {
    let m = model("openai-completions", "openai", "m", "http://127.0.0.1:9/v1");
    let request = build_request(&m, &simple_context(), &options()).unwrap();
    let shown = format!("{request:?}");
    assert!(!shown.contains(KEY), "{shown}");
    assert!(!shown.contains(PROXY_TOKEN), "{shown}");
}
