//! `transform_messages`: every pi-ai 1.6.0 rule, the per-API id normalizers (checked against
//! values computed by pi's own code) and cross-provider handoffs.

use arbor_ai::transform::*;
use arbor_ai::types::{Message, Model};
use serde_json::{json, Value};

// ----- builders (pi's JSON shapes) ----------------------------------------------------------

fn model(provider: &str, api: &str, id: &str, input: &[&str]) -> Model {
    serde_json::from_value(json!({
        "id": id, "name": id, "api": api, "provider": provider,
        "baseUrl": "http://example.invalid", "reasoning": true, "input": input,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 200000, "maxTokens": 32000
    }))
    .unwrap()
}

fn anthropic_model() -> Model {
    model(
        "anthropic",
        "anthropic-messages",
        "claude-sonnet-4-5",
        &["text", "image"],
    )
}

fn responses_model() -> Model {
    model("openai", "openai-responses", "gpt-5.2", &["text", "image"])
}

fn msg(v: Value) -> Message {
    serde_json::from_value(v).unwrap()
}

fn user(text: &str) -> Message {
    msg(json!({"role": "user", "content": text, "timestamp": 1}))
}

fn assistant(m: &Model, content: Value, stop: &str) -> Message {
    assistant_from(&m.provider, &m.api, &m.id, content, stop)
}

fn assistant_from(provider: &str, api: &str, id: &str, content: Value, stop: &str) -> Message {
    msg(json!({
        "role": "assistant", "content": content, "api": api, "provider": provider, "model": id,
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": stop, "timestamp": 2
    }))
}

fn tool_result(id: &str, name: &str, text: &str) -> Message {
    msg(
        json!({"role": "toolResult", "toolCallId": id, "toolName": name,
               "content": [{"type": "text", "text": text}], "isError": false, "timestamp": 3}),
    )
}

fn system(text: &str) -> Message {
    msg(json!({"role": "system", "content": text, "timestamp": 4}))
}

/// JSON of the result with synthetic timestamps (wall clock) zeroed, for comparisons.
fn to_json(messages: &[Message]) -> Value {
    let mut v = serde_json::to_value(messages).unwrap();
    for m in v.as_array_mut().unwrap() {
        if m["role"] == "toolResult" && m["content"][0]["text"] == MISSING_TOOL_RESULT_TEXT {
            m["timestamp"] = json!(0);
        }
    }
    v
}

fn roles(messages: &[Message]) -> Vec<String> {
    to_json(messages)
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect()
}

const ISSUE_1022_ID: &str = "call_pAYbIr76hXIjncD9UE4eGfnS|t5nnb2qYMFWGSsr13fhCd1CaCu3t3qONEPuOudu4HSVEtA8YJSL6FAZUxvoOoD792VIJWl91g87EdqsCWp9krVsdBysQoDaf9lMCLb8BS4EYi4gQd5kBQBYLlgD71PYwvf+TbMD9J9/5OMD42oxSRj8H+vRf78/l2Xla33LWz4nOgsddBlbvabICRs8GHt5C9PK5keFtzyi3lsyVKNlfduK3iphsZqs4MLv4zyGJnvZo/+QzShyk5xnMSQX/f98+aEoNflEApCdEOXipipgeiNWnpFSHbcwmMkZoJhURNu+JEz3xCh1mrXeYoN5o+trLL3IXJacSsLYXDrYTipZZbJFRPAucgbnjYBC+/ZzJOfkwCs+Gkw7EoZR7ZQgJ8ma+9586n4tT4cI8DEhBSZsWMjrCt8dxKg==";

// ----- short hash ------------------------------------------------------------------------------

#[test]
fn short_hash_matches_pi_bit_for_bit() {
    // Expected values printed by pi-ai 1.6.0's own `shortHash`.
    let cases = [
        ("", "k4n83c7h0j2b"),
        ("a", "m8735310ae7sx"),
        ("hello", "1h6qa0qrowduu"),
        ("call_123|fc_123", "1yj4v1uqtu73x"),
        (ISSUE_1022_ID, "1q6evuz1sqwagw"),
        (ISSUE_1022_ID.split('|').nth(1).unwrap(), "1v7nyzn11qnzc5"),
        // Non-ASCII, including a character outside the BMP (two UTF-16 code units).
        ("héllo wörld 🎉", "1tjq0dl1pt82pr"),
        ("toolu_01A09q90qw90lq917835lq9", "16u9r0o1roxgrb"),
        ("item", "1c0dv6z7f3wp3"),
        ("fc_def", "1rjfy6e1pka46u"),
    ];
    for (input, expected) in cases {
        assert_eq!(short_hash(input), expected, "shortHash({input:?})");
    }
}

// ----- id normalizers against pi's outputs -----------------------------------------------------

#[test]
fn issue_1022_id_normalized_for_every_api_like_pi() {
    assert_eq!(ISSUE_1022_ID.len(), 446);
    // Anthropic / Bedrock: sanitized and cut to 64.
    assert_eq!(
        normalize_anthropic_tool_call_id(ISSUE_1022_ID),
        "call_pAYbIr76hXIjncD9UE4eGfnS_t5nnb2qYMFWGSsr13fhCd1CaCu3t3qONEP"
    );
    // Chat Completions: call id + 8 hash chars of the whole id, 40 max.
    for provider in ["openrouter", "openai"] {
        let id = normalize_completions_tool_call_id(ISSUE_1022_ID, provider);
        assert_eq!(id, "call_pAYbIr76hXIjncD9UE4eGfnS_1q6evuz1");
        assert!(id.len() <= 40);
    }
    // Responses to OpenAI from a foreign source (Copilot): fc_ + hash of the item part.
    let copilot = assistant_from(
        "github-copilot",
        "openai-responses",
        "gpt-5.2-codex",
        json!([]),
        "toolUse",
    );
    let Message::Assistant(copilot) = copilot else {
        unreachable!()
    };
    let target = model("openai", "openai-responses", "gpt-5.5", &["text"]);
    let id = normalize_responses_tool_call_id(
        ISSUE_1022_ID,
        &target,
        &copilot,
        OPENAI_RESPONSES_TOOL_CALL_PROVIDERS,
    );
    assert_eq!(id, "call_pAYbIr76hXIjncD9UE4eGfnS|fc_1v7nyzn11qnzc5");
    let (_, item) = id.split_once('|').unwrap();
    assert!(item.len() <= 64 && item.chars().skip(3).all(|c| c.is_ascii_alphanumeric()));
    // Responses to a provider outside the pair list: one sanitized part, ≤ 64, no trailing _.
    let openrouter = model(
        "openrouter",
        "openai-responses",
        "openai/gpt-5.2",
        &["text"],
    );
    assert_eq!(
        normalize_responses_tool_call_id(
            ISSUE_1022_ID,
            &openrouter,
            &copilot,
            OPENAI_RESPONSES_TOOL_CALL_PROVIDERS
        ),
        "call_pAYbIr76hXIjncD9UE4eGfnS_t5nnb2qYMFWGSsr13fhCd1CaCu3t3qONEP"
    );
}

#[test]
fn completions_normalizer_cases_match_pi() {
    let cases = [
        ("call_abc|fc_def", "openrouter", "call_abc_fc_def"),
        ("call_abc|", "openrouter", "call_abc"),
        // Everything after the first pipe is the item part here.
        (
            "call_abc|item|extra|x",
            "openrouter",
            "call_abc_item_extra_x",
        ),
        ("a|b", "groq", "a_b"),
        ("call__|fc__", "openai", "call___fc__"),
        (
            "call_12345678901234567890123456789012345|fc_1",
            "openai",
            "call_12345678901234567890123456_10o1aiyb",
        ),
        // No pipe: untouched, except OpenAI's own 40-character limit.
        ("toolu_01ABC.def/ghi", "openrouter", "toolu_01ABC.def/ghi"),
        (
            "call_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "openrouter",
            "call_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        ),
        (
            "call_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "openai",
            "call_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        ),
    ];
    for (id, provider, expected) in cases {
        assert_eq!(
            normalize_completions_tool_call_id(id, provider),
            expected,
            "{id} → {provider}"
        );
    }
}

#[test]
fn responses_normalizer_cases_match_pi() {
    let Message::Assistant(copilot) = assistant_from(
        "github-copilot",
        "openai-responses",
        "gpt-5.2-codex",
        json!([]),
        "toolUse",
    ) else {
        unreachable!()
    };
    let Message::Assistant(same_api) = assistant_from(
        "openai",
        "openai-responses",
        "gpt-4.1",
        json!([]),
        "toolUse",
    ) else {
        unreachable!()
    };
    let openai = model("openai", "openai-responses", "gpt-5.5", &["text"]);
    let n = |id: &str, src| {
        normalize_responses_tool_call_id(id, &openai, src, OPENAI_RESPONSES_TOOL_CALL_PROVIDERS)
    };
    assert_eq!(n("call_abc|fc_def", &copilot), "call_abc|fc_1rjfy6e1pka46u");
    assert_eq!(n("call_abc|", &copilot), "call_abc|fc_k4n83c7h0j2b");
    // Only the part between the first and second pipe is the item id.
    assert_eq!(
        n("call_abc|item|extra|x", &copilot),
        "call_abc|fc_1c0dv6z7f3wp3"
    );
    assert_eq!(n("a|b", &copilot), "a|fc_jbf49n1hx4dkv");
    assert_eq!(n("call__|fc__", &copilot), "call|fc_7cqnqe15el1om");
    // Same provider and API (another model): the item id is kept, normalized.
    assert_eq!(n("call_abc|fc_def", &same_api), "call_abc|fc_def");
    assert_eq!(n("call_abc|item9", &same_api), "call_abc|fc_item9");
    // No pipe: one part, trailing underscores stripped.
    assert_eq!(n("toolu_01ABC.def/ghi", &copilot), "toolu_01ABC_def_ghi");
    assert_eq!(n("call_abc_", &copilot), "call_abc");
    // Azure accepts pairs too; OpenRouter does not.
    let azure = model("azure", "azure-openai-responses", "gpt-5.5", &["text"]);
    assert_eq!(
        normalize_responses_tool_call_id(
            "call_abc|fc_def",
            &azure,
            &copilot,
            AZURE_RESPONSES_TOOL_CALL_PROVIDERS
        ),
        "call_abc|fc_1rjfy6e1pka46u"
    );
    let openrouter = model("openrouter", "openai-responses", "x", &["text"]);
    assert_eq!(
        normalize_responses_tool_call_id(
            "call__|fc__",
            &openrouter,
            &copilot,
            OPENAI_RESPONSES_TOOL_CALL_PROVIDERS
        ),
        "call___fc"
    );
}

#[test]
fn google_normalizer_only_for_models_that_need_ids() {
    let id = "call_abc|fc+/=";
    assert_eq!(normalize_google_tool_call_id(id, "gemini-2.5-pro"), id);
    assert_eq!(
        normalize_google_tool_call_id(id, "gemini-3-pro-preview"),
        "call_abc_fc___"
    );
    assert_eq!(
        normalize_google_tool_call_id(id, "gemini-live-3-flash"),
        "call_abc_fc___"
    );
    assert_eq!(
        normalize_google_tool_call_id(id, "claude-sonnet-4-5"),
        "call_abc_fc___"
    );
    assert_eq!(
        normalize_google_tool_call_id(id, "gpt-oss-120b"),
        "call_abc_fc___"
    );
    assert!(google_requires_tool_call_id("Gemini-10-ultra"));
    assert!(!google_requires_tool_call_id("gemini-flash-latest"));
    assert_eq!(
        normalize_google_tool_call_id(ISSUE_1022_ID, "gemini-3.1-pro-preview").len(),
        64
    );
}

#[test]
fn mistral_ids_are_nine_alphanumerics_and_unique() {
    // Values from pi's derivation.
    assert_eq!(
        derive_mistral_tool_call_id("call_abc|fc_def", 0),
        "1ubsnwulr"
    );
    assert_eq!(
        derive_mistral_tool_call_id("call_abc|fc_def", 1),
        "1s4ew814s"
    );
    assert_eq!(derive_mistral_tool_call_id("abc-def-ghi", 0), "abcdefghi");
    assert_eq!(derive_mistral_tool_call_id("abc-def-ghi", 1), "mlj703uel");
    assert_eq!(derive_mistral_tool_call_id("|||", 0), "1wjog0l1x");
    let mut ids = MistralToolCallIds::default();
    let a = ids.normalize("abc-def-ghi");
    // "abcdefghi" is already taken by a different source id: the next attempt is used.
    let b = ids.normalize("abc_def_ghi");
    assert_eq!(a, "abcdefghi");
    assert_ne!(a, b);
    assert_eq!(b.len(), 9);
    assert!(b.chars().all(|c| c.is_ascii_alphanumeric()));
    assert_eq!(ids.normalize("abc-def-ghi"), a, "stable for repeated ids");
}

// ----- thinking ----------------------------------------------------------------------------

fn thinking_blocks() -> Value {
    json!([
        {"type": "thinking", "thinking": "plain reasoning"},
        {"type": "thinking", "thinking": "", "thinkingSignature": "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"encrypted_content\":\"xyz\"}"},
        {"type": "thinking", "thinking": "[Reasoning redacted]", "thinkingSignature": "opaque", "redacted": true},
        {"type": "thinking", "thinking": "   ", "thinkingSignature": ""},
        {"type": "thinking", "thinking": "signed", "thinkingSignature": "sig"},
        {"type": "text", "text": "answer"}
    ])
}

#[test]
fn foreign_thinking_is_dropped_whatever_its_kind() {
    let target = anthropic_model();
    // Differing in each one of provider, api and model id makes it foreign.
    for (provider, api, id) in [
        ("openai", "anthropic-messages", "claude-sonnet-4-5"),
        ("anthropic", "openai-completions", "claude-sonnet-4-5"),
        ("anthropic", "anthropic-messages", "claude-opus-4-6"),
    ] {
        let out = transform_messages(
            &[
                user("q"),
                assistant_from(provider, api, id, thinking_blocks(), "stop"),
            ],
            &target,
        );
        let v = to_json(&out);
        assert_eq!(
            v[1]["content"],
            json!([{"type": "text", "text": "answer"}]),
            "{provider}/{api}/{id}"
        );
    }
}

#[test]
fn same_model_keeps_signed_and_redacted_thinking_drops_blank() {
    let target = anthropic_model();
    let out = transform_messages(
        &[user("q"), assistant(&target, thinking_blocks(), "stop")],
        &target,
    );
    let content = to_json(&out)[1]["content"].clone();
    let expected = thinking_blocks();
    let expected: Vec<Value> = expected
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3) // blank text with an empty signature
        .map(|(_, b)| b.clone())
        .collect();
    assert_eq!(content, Value::Array(expected));
}

// ----- text and tool calls -----------------------------------------------------------------

#[test]
fn foreign_text_loses_signature_same_model_keeps_it() {
    let target = responses_model();
    let text = json!([{"type": "text", "text": "hi", "textSignature": "{\"v\":1,\"id\":\"msg_1\"}", "cacheHint": 1}]);
    let same = transform_messages(&[assistant(&target, text.clone(), "stop")], &target);
    assert_eq!(to_json(&same)[0]["content"], text);
    let foreign = transform_messages(&[assistant(&anthropic_model(), text, "stop")], &target);
    assert_eq!(
        to_json(&foreign)[0]["content"],
        json!([{"type": "text", "text": "hi"}])
    );
}

#[test]
fn foreign_tool_calls_lose_thought_signature_and_get_normalized_ids() {
    let google = model(
        "google",
        "google-generative-ai",
        "gemini-2.5-pro",
        &["text"],
    );
    let target = anthropic_model();
    let history = [
        user("q"),
        assistant(
            &google,
            json!([{"type": "toolCall", "id": "call|weird id!", "name": "read",
                    "arguments": {"path": "a"}, "thoughtSignature": "c2ln"}]),
            "toolUse",
        ),
        tool_result("call|weird id!", "read", "contents"),
    ];
    let out = to_json(&transform_messages(&history, &target));
    assert_eq!(
        out[1]["content"],
        json!([{"type": "toolCall", "id": "call_weird_id_", "name": "read", "arguments": {"path": "a"}}])
    );
    assert_eq!(
        out[2]["toolCallId"], "call_weird_id_",
        "the result follows its call"
    );
    assert_eq!(
        out.as_array().unwrap().len(),
        3,
        "no synthetic result: the call has one"
    );
}

#[test]
fn same_model_tool_calls_are_never_renamed() {
    let target = anthropic_model();
    let history = [
        assistant(
            &target,
            json!([{"type": "toolCall", "id": "odd|id", "name": "t", "arguments": {}, "thoughtSignature": "s"}]),
            "toolUse",
        ),
        tool_result("odd|id", "t", "ok"),
    ];
    let out = to_json(&transform_messages(&history, &target));
    assert_eq!(out[0]["content"][0]["id"], "odd|id");
    assert_eq!(out[0]["content"][0]["thoughtSignature"], "s");
    assert_eq!(out[1]["toolCallId"], "odd|id");
}

#[test]
fn unknown_api_keeps_ids_but_applies_the_other_rules() {
    let target = model("local", "pi-messages", "m", &["text"]);
    let history = [assistant(
        &anthropic_model(),
        json!([{"type": "thinking", "thinking": "t", "thinkingSignature": "s"},
                   {"type": "toolCall", "id": "a|b c", "name": "t", "arguments": {}}]),
        "toolUse",
    )];
    let out = to_json(&transform_messages(&history, &target));
    assert_eq!(
        out[0]["content"],
        json!([{"type": "toolCall", "id": "a|b c", "name": "t", "arguments": {}}])
    );
    assert_eq!(out[1]["toolCallId"], "a|b c");
}

#[test]
fn unknown_blocks_pass_through() {
    let target = anthropic_model();
    let block = json!({"type": "server_tool_use", "id": "x", "payload": [1, 2]});
    let out = transform_messages(
        &[assistant(
            &responses_model(),
            json!([block.clone()]),
            "stop",
        )],
        &target,
    );
    assert_eq!(to_json(&out)[0]["content"], json!([block]));
}

// ----- images ------------------------------------------------------------------------------

#[test]
fn images_become_placeholders_for_text_only_models() {
    let text_only = model(
        "groq",
        "openai-completions",
        "llama-3.3-70b-versatile",
        &["text"],
    );
    let img = |d: &str| json!({"type": "image", "data": d, "mimeType": "image/png"});
    let history = [
        msg(json!({"role": "user", "timestamp": 1, "content": [
            {"type": "text", "text": "look"}, img("a"), img("b"), {"type": "text", "text": "and"}, img("c")
        ]})),
        msg(json!({"role": "user", "timestamp": 1, "content": [
            {"type": "text", "text": USER_IMAGE_PLACEHOLDER}, img("d"), img("e")
        ]})),
        msg(json!({"role": "user", "timestamp": 1, "content": "plain string stays"})),
        assistant(
            &text_only,
            json!([{"type": "toolCall", "id": "c1", "name": "screenshot", "arguments": {}}]),
            "toolUse",
        ),
        msg(
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": "screenshot", "isError": false,
                   "timestamp": 3, "content": [img("x"), {"type": "text", "text": "caption"}, img("y"), img("z")]}),
        ),
    ];
    let out = to_json(&transform_messages(&history, &text_only));
    let t = |s: &str| json!({"type": "text", "text": s});
    assert_eq!(
        out[0]["content"],
        json!([
            t("look"),
            t(USER_IMAGE_PLACEHOLDER),
            t("and"),
            t(USER_IMAGE_PLACEHOLDER)
        ])
    );
    assert_eq!(out[1]["content"], json!([t(USER_IMAGE_PLACEHOLDER)]));
    assert_eq!(out[2]["content"], "plain string stays");
    assert_eq!(
        out[4]["content"],
        json!([
            t(TOOL_IMAGE_PLACEHOLDER),
            t("caption"),
            t(TOOL_IMAGE_PLACEHOLDER)
        ])
    );

    // A model with image input sees the images unchanged.
    let vision = model("groq", "openai-completions", "v", &["text", "image"]);
    let out = to_json(&transform_messages(&history, &vision));
    assert_eq!(out[0]["content"][1], img("a"));
    assert_eq!(out[4]["content"][0], img("x"));
}

// ----- orphaned tool calls, failed turns, system messages ------------------------------------

fn two_calls(m: &Model) -> Message {
    assistant(
        m,
        json!([{"type": "toolCall", "id": "c1", "name": "read", "arguments": {}},
               {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {}}]),
        "toolUse",
    )
}

fn is_synthetic(v: &Value, id: &str, name: &str) -> bool {
    v == &json!({"role": "toolResult", "toolCallId": id, "toolName": name,
                 "content": [{"type": "text", "text": "No result provided"}], "isError": true, "timestamp": 0})
}

#[test]
fn missing_results_are_synthesized_before_the_next_user_message() {
    let m = anthropic_model();
    let out = transform_messages(
        &[
            user("q"),
            two_calls(&m),
            tool_result("c2", "bash", "ok"),
            user("next"),
        ],
        &m,
    );
    assert_eq!(
        roles(&out),
        ["user", "assistant", "toolResult", "toolResult", "user"]
    );
    let v = to_json(&out);
    assert_eq!(v[2]["toolCallId"], "c2", "the real result keeps its place");
    assert!(
        is_synthetic(&v[3], "c1", "read"),
        "only the missing one, after the present ones: {}",
        v[3]
    );
    // Timestamps of synthetic results are "now".
    let Message::ToolResult(r) = &out[3] else {
        panic!()
    };
    assert!(r.timestamp.get() > 1_700_000_000_000);
}

#[test]
fn missing_results_are_synthesized_before_the_next_assistant_and_at_the_end() {
    let m = anthropic_model();
    let out = transform_messages(&[user("q"), two_calls(&m), two_calls(&m)], &m);
    assert_eq!(
        roles(&out),
        [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "assistant",
            "toolResult",
            "toolResult"
        ]
    );
    let v = to_json(&out);
    assert!(is_synthetic(&v[2], "c1", "read"));
    assert!(is_synthetic(&v[3], "c2", "bash"), "in tool-call order");
    assert!(is_synthetic(&v[5], "c1", "read"));
    assert!(
        is_synthetic(&v[6], "c2", "bash"),
        "trailing calls get results too"
    );
}

#[test]
fn complete_results_add_nothing() {
    let m = anthropic_model();
    let history = [
        user("q"),
        two_calls(&m),
        tool_result("c1", "read", "a"),
        tool_result("c2", "bash", "b"),
        user("n"),
    ];
    let out = transform_messages(&history, &m);
    assert_eq!(to_json(&out), to_json(&history));
}

#[test]
fn errored_and_aborted_turns_are_skipped_with_their_calls() {
    let m = anthropic_model();
    for stop in ["error", "aborted"] {
        let failed = assistant(
            &m,
            json!([{"type": "thinking", "thinking": "half", "thinkingSignature": "s"},
                   {"type": "toolCall", "id": "bad", "name": "read", "arguments": {}}]),
            stop,
        );
        let out = transform_messages(&[user("q"), failed, user("again")], &m);
        assert_eq!(
            roles(&out),
            ["user", "user"],
            "{stop}: no replay, no synthetic result"
        );
    }
}

#[test]
fn results_of_skipped_turns_are_kept_and_duplicates_pass_through() {
    let m = anthropic_model();
    let failed = assistant(
        &m,
        json!([{"type": "toolCall", "id": "bad", "name": "read", "arguments": {}}]),
        "error",
    );
    let ok = assistant(
        &m,
        json!([{"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}]),
        "toolUse",
    );
    let history = [
        user("q"),
        failed,
        tool_result("bad", "read", "dangling"),
        ok,
        tool_result("c1", "read", "x"),
        tool_result("c1", "read", "again"),
    ];
    let out = transform_messages(&history, &m);
    assert_eq!(
        roles(&out),
        [
            "user",
            "toolResult",
            "assistant",
            "toolResult",
            "toolResult"
        ]
    );
    assert_eq!(to_json(&out)[1]["toolCallId"], "bad");
}

#[test]
fn system_messages_wait_for_pending_results() {
    let m = anthropic_model();
    // A system message between a call and its (late) result is moved after the result.
    let out = transform_messages(
        &[
            user("q"),
            two_calls(&m),
            system("update"),
            tool_result("c1", "read", "a"),
            tool_result("c2", "bash", "b"),
        ],
        &m,
    );
    assert_eq!(
        roles(&out),
        ["user", "assistant", "toolResult", "toolResult", "system"]
    );
    // With a result missing, the system message comes after the synthetic one.
    let out = transform_messages(
        &[
            user("q"),
            two_calls(&m),
            system("update"),
            tool_result("c1", "read", "a"),
            user("n"),
        ],
        &m,
    );
    assert_eq!(
        roles(&out),
        [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "system",
            "user"
        ]
    );
    assert!(is_synthetic(&to_json(&out)[3], "c2", "bash"));
    // Without pending calls it stays where it is.
    let out = transform_messages(&[system("p"), user("q"), system("later")], &m);
    assert_eq!(roles(&out), ["system", "user", "system"]);
    // At the end of the transcript it is flushed after the synthetic results.
    let out = transform_messages(&[user("q"), two_calls(&m), system("tail")], &m);
    assert_eq!(
        roles(&out),
        ["user", "assistant", "toolResult", "toolResult", "system"]
    );
}

// ----- cross-provider handoffs -------------------------------------------------------------

/// A turn as Anthropic writes it: signed thinking, text, a tool call; then its result.
fn anthropic_turn() -> Vec<Message> {
    let m = anthropic_model();
    vec![
        user("list files"),
        assistant(
            &m,
            json!([
                {"type": "thinking", "thinking": "I should run ls", "thinkingSignature": "EqQBCkYIBxgCKkDsig"},
                {"type": "thinking", "thinking": "[Reasoning redacted]", "thinkingSignature": "opaque-data", "redacted": true},
                {"type": "text", "text": "Listing."},
                {"type": "toolCall", "id": "toolu_01A09q90qw90lq917835lq9", "name": "bash", "arguments": {"command": "ls"}}
            ]),
            "toolUse",
        ),
        tool_result("toolu_01A09q90qw90lq917835lq9", "bash", "a.txt\nb.txt"),
        assistant(&m, json!([{"type": "text", "text": "Two files."}]), "stop"),
    ]
}

/// A turn as OpenAI Responses writes it: encrypted reasoning, signed text, `call|item` ids.
fn responses_turn() -> Vec<Message> {
    let m = responses_model();
    vec![
        user("read the file"),
        assistant(
            &m,
            json!([
                {"type": "thinking", "thinking": "", "thinkingSignature": "{\"type\":\"reasoning\",\"id\":\"rs_68a\",\"summary\":[],\"encrypted_content\":\"gAAAA\"}"},
                {"type": "text", "text": "Reading.", "textSignature": "{\"v\":1,\"id\":\"msg_68b\",\"phase\":\"commentary\"}"},
                {"type": "toolCall", "id": ISSUE_1022_ID, "name": "read", "arguments": {"path": "a.txt"}}
            ]),
            "toolUse",
        ),
        tool_result(ISSUE_1022_ID, "read", "hello"),
        assistant(
            &m,
            json!([{"type": "text", "text": "It says hello."}]),
            "stop",
        ),
    ]
}

#[test]
fn anthropic_history_to_openai_responses() {
    let out = transform_messages(&anthropic_turn(), &responses_model());
    insta::assert_json_snapshot!("anthropic_to_responses", to_json(&out));
    let v = to_json(&out);
    assert_eq!(
        v[1]["content"].as_array().unwrap().len(),
        2,
        "both thinking blocks dropped"
    );
    // No pipe in an Anthropic id: it is only sanitized (already clean).
    assert_eq!(v[1]["content"][1]["id"], "toolu_01A09q90qw90lq917835lq9");
    assert_eq!(v[2]["toolCallId"], "toolu_01A09q90qw90lq917835lq9");
}

#[test]
fn openai_responses_history_to_anthropic() {
    let out = transform_messages(&responses_turn(), &anthropic_model());
    insta::assert_json_snapshot!("responses_to_anthropic", to_json(&out));
    let v = to_json(&out);
    let id = "call_pAYbIr76hXIjncD9UE4eGfnS_t5nnb2qYMFWGSsr13fhCd1CaCu3t3qONEP";
    assert_eq!(
        v[1]["content"],
        json!([
            {"type": "text", "text": "Reading."},
            {"type": "toolCall", "id": id, "name": "read", "arguments": {"path": "a.txt"}}
        ])
    );
    assert_eq!(v[2]["toolCallId"], id);
}

#[test]
fn anthropic_to_responses_and_back_keeps_anthropic_reasoning_for_anthropic() {
    // A mixed session: Anthropic turn, then an OpenAI turn, then back to Anthropic.
    let mut history = anthropic_turn();
    history.extend(responses_turn());
    let to_anthropic = to_json(&transform_messages(&history, &anthropic_model()));
    // Anthropic's own thinking (signed + redacted) survives the round trip...
    assert_eq!(to_anthropic[1]["content"].as_array().unwrap().len(), 4);
    assert_eq!(to_anthropic[1]["content"][1]["redacted"], true);
    // ...the OpenAI turn loses its reasoning and gets Anthropic-safe ids.
    assert_eq!(to_anthropic[5]["content"].as_array().unwrap().len(), 2);
    assert!(to_anthropic[6]["toolCallId"]
        .as_str()
        .unwrap()
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));

    let to_responses = to_json(&transform_messages(&history, &responses_model()));
    // The OpenAI turn is the target's own: reasoning item, signature and pipe id kept.
    assert_eq!(to_responses[5], serde_json::to_value(&history[5]).unwrap());
    assert_eq!(to_responses[6]["toolCallId"], ISSUE_1022_ID);
    // The Anthropic turn: text and tool call only.
    assert_eq!(to_responses[1]["content"].as_array().unwrap().len(), 2);
}

#[test]
fn copilot_responses_history_to_openai_responses_gets_fc_item_ids() {
    let history: Vec<Message> = responses_turn()
        .into_iter()
        .map(|m| match m {
            Message::Assistant(mut a) => {
                a.provider = "github-copilot".into();
                a.model = "gpt-5.2-codex".into();
                Message::Assistant(a)
            }
            other => other,
        })
        .collect();
    let out = to_json(&transform_messages(
        &history,
        &model("openai", "openai-responses", "gpt-5.5", &["text"]),
    ));
    assert_eq!(
        out[1]["content"][1]["id"],
        "call_pAYbIr76hXIjncD9UE4eGfnS|fc_1v7nyzn11qnzc5"
    );
    assert_eq!(
        out[2]["toolCallId"],
        "call_pAYbIr76hXIjncD9UE4eGfnS|fc_1v7nyzn11qnzc5"
    );
    assert_eq!(
        out[1]["content"].as_array().unwrap().len(),
        2,
        "foreign reasoning dropped"
    );
}

#[test]
fn responses_history_to_chat_completions_and_google() {
    let completions = model(
        "openrouter",
        "openai-completions",
        "anthropic/claude-sonnet-4.5",
        &["text"],
    );
    let out = to_json(&transform_messages(&responses_turn(), &completions));
    assert_eq!(
        out[1]["content"][1]["id"],
        "call_pAYbIr76hXIjncD9UE4eGfnS_1q6evuz1"
    );
    assert_eq!(
        out[2]["toolCallId"],
        "call_pAYbIr76hXIjncD9UE4eGfnS_1q6evuz1"
    );

    let gemini3 = model(
        "google",
        "google-generative-ai",
        "gemini-3-flash-preview",
        &["text"],
    );
    let out = to_json(&transform_messages(&responses_turn(), &gemini3));
    assert_eq!(out[2]["toolCallId"].as_str().unwrap().len(), 64);
    let gemini25 = model(
        "google",
        "google-generative-ai",
        "gemini-2.5-flash",
        &["text"],
    );
    let out = to_json(&transform_messages(&responses_turn(), &gemini25));
    assert_eq!(
        out[2]["toolCallId"], ISSUE_1022_ID,
        "Gemini 2.5 does not need ids"
    );
}

#[test]
fn a_call_id_normalized_to_nothing_loses_its_result_like_in_pi() {
    // "__|__" becomes "" for Responses outside OpenAI; pi does not remap results to "", so
    // the call gets a synthetic result and the real one keeps the old id.
    let history = [
        assistant(
            &anthropic_model(),
            json!([{"type": "toolCall", "id": "__|__", "name": "t", "arguments": {}}]),
            "toolUse",
        ),
        tool_result("__|__", "t", "real"),
    ];
    let openrouter = model("openrouter", "openai-responses", "x", &["text"]);
    let out = to_json(&transform_messages(&history, &openrouter));
    assert_eq!(out[0]["content"][0]["id"], "");
    assert_eq!(out[1]["toolCallId"], "__|__");
    assert!(is_synthetic(&out[2], "", "t"));
}

// ----- parity with pi on generated histories --------------------------------------------------

/// JSON with object keys sorted, compact: the form hashed on both sides.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).unwrap());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&serde_json::to_string(other).unwrap()),
    }
}

fn short_sha256(v: &Value) -> String {
    use sha2::{Digest, Sha256};
    let mut text = String::new();
    canonical(v, &mut text);
    Sha256::digest(text.as_bytes())
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// 30 random histories (mixed providers, signed/redacted/blank thinking, pipe and long ids,
/// missing and duplicate results, failed turns, system messages, images) replayed to nine
/// targets; the expected hashes come from running pi-ai 1.6.0's `transformMessages` with
/// each adapter's id normalizer (see `about` in the data file).
#[test]
fn matches_pi_on_generated_histories() {
    let data: Value =
        serde_json::from_str(include_str!("../data/transform_pi_parity.json")).unwrap();
    let targets: Vec<Model> = serde_json::from_value(data["targets"].clone()).unwrap();
    let cases = data["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 30);
    let mut checked = 0;
    for (i, case) in cases.iter().enumerate() {
        let messages: Vec<Message> = serde_json::from_value(case["messages"].clone()).unwrap();
        for target in &targets {
            let key = format!("{}/{}/{}", target.provider, target.api, target.id);
            let expected = case["expected"][&key].as_str().unwrap();
            let got = to_json(&transform_messages(&messages, target));
            assert_eq!(
                short_sha256(&got),
                expected,
                "case {i}, target {key}: {got}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 270);
}

#[test]
fn null_or_missing_content_reads_as_empty() {
    // pi's pre-pass turns null content into []; here the types already do it when parsing.
    let m = anthropic_model();
    let history = [
        msg(json!({"role": "user", "content": null, "timestamp": 1})),
        msg(
            json!({"role": "assistant", "api": "x", "provider": "y", "model": "z", "stopReason": "stop", "timestamp": 2,
                   "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}),
        ),
        msg(
            json!({"role": "toolResult", "toolCallId": "c", "toolName": "t", "content": null, "isError": false, "timestamp": 3}),
        ),
    ];
    let out = to_json(&transform_messages(&history, &m));
    assert_eq!(out[0]["content"], json!([]));
    assert_eq!(out[1]["content"], json!([]));
    assert_eq!(out[2]["content"], json!([]));
}

/// A second transform changes nothing: the harness transforms incrementally and the provider
/// takes the marked list as it is (DECISIONS §10.8), which sends what transforming twice sent.
#[test]
fn transforming_twice_equals_transforming_once() {
    let anthropic = anthropic_model();
    let responses = responses_model();
    let histories: Vec<Vec<Message>> = vec![
        anthropic_turn(),
        responses_turn(),
        [anthropic_turn(), responses_turn()].concat(),
        vec![
            user("q"),
            two_calls(&responses),
            system("later"),
            user("again"),
        ],
        vec![user("q"), two_calls(&anthropic)],
        vec![
            user("q"),
            assistant(&responses, json!([{"type": "text", "text": "x"}]), "error"),
            user("again"),
        ],
    ];
    let targets = [
        anthropic.clone(),
        responses.clone(),
        model("mistral", "openai-completions", "devstral", &["text"]),
        model(
            "openrouter",
            "openai-completions",
            "any/model",
            &["text", "image"],
        ),
        model(
            "google",
            "google-generative-ai",
            "gemini-3-pro",
            &["text", "image"],
        ),
        model(
            "google",
            "google-generative-ai",
            "gemini-2.5-flash",
            &["text"],
        ),
    ];
    for history in &histories {
        for target in &targets {
            let once = transform_messages(history, target);
            let twice = transform_messages(&once, target);
            assert_eq!(
                to_json(&twice),
                to_json(&once),
                "{} / {}",
                target.api,
                target.id
            );
        }
    }
}
