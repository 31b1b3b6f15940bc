//! Seeded random request cases: a model (catalogue or models.json style), a context holding
//! every block kind pi knows, and simple-stream options.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use serde_json::{json, Map, Value};

/// One generated case in pi's JSON shapes.
#[derive(Debug, Clone)]
pub struct RequestCase {
    pub id: String,
    pub model: Value,
    pub context: Value,
    pub options: Value,
}

const WORDS: &[&str] = &[
    "alpha",
    "bravo",
    "read",
    "the",
    "file",
    "src/main.rs",
    "fix",
    "bug",
    "ünïcode",
    "😀",
    "tab\t",
    "line\nbreak",
    "quote\"",
    "back\\slash",
    "<tag>",
    "  ",
    "ok",
    "done",
    "{json}",
    "日本語",
];

const LEVELS: &[&str] = &["minimal", "low", "medium", "high", "xhigh", "max"];

const API_KINDS: &[&str] = &[
    "anthropic-messages",
    "openai-completions",
    "openai-responses",
    "google-generative-ai",
];

fn words(rng: &mut StdRng, max: usize) -> String {
    let n = rng.gen_range(1..=max);
    let mut out = String::new();
    for i in 0..n {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(WORDS.choose(rng).copied().unwrap_or("x"));
    }
    out
}

fn maybe<T>(rng: &mut StdRng, p: f64, f: impl FnOnce(&mut StdRng) -> T) -> Option<T> {
    if rng.gen_bool(p) {
        Some(f(rng))
    } else {
        None
    }
}

fn image(rng: &mut StdRng) -> Value {
    let mime = ["image/png", "image/jpeg", "image/webp"]
        .choose(rng)
        .copied();
    json!({"type": "image", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "mimeType": mime})
}

/// A tool with a schema of varying strictness and an optional `constrainedSampling`.
fn tool(rng: &mut StdRng, name: &str) -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    let n = rng.gen_range(0..4);
    for i in 0..n {
        let key = format!("p{i}");
        let schema = match rng.gen_range(0..9) {
            0 => json!({"type": "string", "description": "a path"}),
            1 => json!({"type": "integer", "minimum": 0}),
            2 => json!({"type": "number", "maximum": 10.5}),
            3 => json!({"type": "boolean"}),
            4 => {
                json!({"type": "array", "items": {"type": "string"}, "minItems": rng.gen_range(0..3)})
            }
            5 => json!({"type": "string", "enum": ["a", "b"]}),
            6 => {
                json!({"type": "string", "format": (["date-time", "email", "regex", "uri"].choose(rng).copied())})
            }
            7 => json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": []}),
            _ => json!({"const": (["fixed", "1"].choose(rng).copied())}),
        };
        props.insert(key.clone(), schema);
        if rng.gen_bool(0.5) {
            required.push(Value::String(key));
        }
    }
    let mut params = json!({"type": "object", "properties": props});
    if !required.is_empty() || rng.gen_bool(0.3) {
        params["required"] = Value::Array(required);
    }
    if rng.gen_bool(0.2) {
        params["additionalProperties"] = Value::Bool(false);
    }
    let mut t = json!({"name": name, "description": words(rng, 6), "parameters": params});
    match rng.gen_range(0..8) {
        0 => t["constrainedSampling"] = json!({"type": "json_schema", "strict": "prefer"}),
        1 => t["constrainedSampling"] = json!({"type": "json_schema", "strict": "require"}),
        2 => t["constrainedSampling"] = Value::Bool(false),
        3 => {
            // A grammar tool: usually with the one required string input it needs.
            if rng.gen_bool(0.7) {
                t["parameters"] = json!({"type": "object",
                    "properties": {"p0": {"type": "string"}}, "required": ["p0"]});
            }
            let variants = match rng.gen_range(0..4) {
                0 => json!({"openai_lark": "start: /[a-z ]+/"}),
                1 => json!({"openai_regex": "^[a-z ]+$"}),
                2 => json!({"openai_lark": "start: WORD", "openai_regex": "^x$"}),
                _ => json!({"openai_lark": "  "}),
            };
            t["constrainedSampling"] = json!({"type": "grammar", "variants": variants});
        }
        _ => {}
    }
    t
}

fn usage(rng: &mut StdRng) -> Value {
    let input = rng.gen_range(0..5000u64);
    let output = rng.gen_range(0..500u64);
    json!({"input": input, "output": output, "cacheRead": 0, "cacheWrite": 0,
        "totalTokens": input + output,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}})
}

struct Origin {
    api: String,
    provider: String,
    model: String,
}

fn tool_call_id(rng: &mut StdRng, origin_api: &str, n: usize) -> String {
    match (origin_api, rng.gen_range(0..5)) {
        ("openai-responses", _) | (_, 0) => format!(
            "call_{n}abc|fc_{n}0def{}",
            "x".repeat(rng.gen_range(0..3) * 40)
        ),
        (_, 1) => format!("toolu_{n}{}", "Z".repeat(rng.gen_range(0..70))),
        (_, 2) => format!("call {n}/weird.id"),
        _ => format!("tc_{n}"),
    }
}

/// An assistant turn from `origin`; returns the message and its tool calls (id, name).
fn assistant(
    rng: &mut StdRng,
    origin: &Origin,
    tools: &[String],
    ts: i64,
    n: &mut usize,
) -> (Value, Vec<(String, String)>) {
    let mut blocks = Vec::new();
    let mut calls = Vec::new();
    let count = rng.gen_range(0..4);
    for _ in 0..count {
        match rng.gen_range(0..7) {
            0 | 1 => {
                let mut b = json!({"type": "text", "text": if rng.gen_bool(0.1) { String::new() } else { words(rng, 12) }});
                if rng.gen_bool(0.4) {
                    b["textSignature"] = if origin.api == "openai-responses" {
                        Value::String(format!(
                            "{{\"v\":1,\"id\":\"msg_{}\"{}}}",
                            *n,
                            if rng.gen_bool(0.3) {
                                ",\"phase\":\"final_answer\""
                            } else {
                                ""
                            }
                        ))
                    } else {
                        Value::String("c2lnbmF0dXJl".into())
                    };
                }
                blocks.push(b);
            }
            2 | 3 => {
                let text = if rng.gen_bool(0.15) {
                    String::new()
                } else {
                    words(rng, 10)
                };
                let mut b = json!({"type": "thinking", "thinking": text});
                match rng.gen_range(0..5) {
                    0 => {}
                    1 => b["thinkingSignature"] = Value::String(String::new()),
                    2 if origin.api == "anthropic-messages" => {
                        b["redacted"] = Value::Bool(true);
                        b["thinking"] = Value::String("[Reasoning redacted]".into());
                        b["thinkingSignature"] = Value::String("b3BhcXVl".into());
                    }
                    _ => {
                        b["thinkingSignature"] = Value::String(match origin.api.as_str() {
                            "openai-responses" => json!({"type": "reasoning", "id": format!("rs_{}", *n), "summary": [{"type": "summary_text", "text": "s"}], "encrypted_content": "enc"}).to_string(),
                            "openai-completions" => ["reasoning_content", "reasoning", "reasoning_text"].choose(rng).copied().unwrap_or("reasoning").to_string(),
                            _ => "c2lnbmVkVGhpbmtpbmc=".to_string(),
                        })
                    }
                }
                blocks.push(b);
            }
            _ => {
                *n += 1;
                let name = tools.choose(rng).cloned().unwrap_or_else(|| "bash".into());
                let id = tool_call_id(rng, &origin.api, *n);
                let mut b = json!({"type": "toolCall", "id": id, "name": name,
                    "arguments": {"p0": words(rng, 3), "n": rng.gen_range(0..100)}});
                if origin.api == "google-generative-ai" && rng.gen_bool(0.5) {
                    b["thoughtSignature"] = Value::String("Z29vZ2xlU2ln".into());
                }
                calls.push((id, name));
                blocks.push(b);
            }
        }
    }
    let stop = if !calls.is_empty() {
        ["toolUse", "toolUse", "toolUse", "error", "aborted"]
            .choose(rng)
            .copied()
    } else {
        ["stop", "stop", "stop", "length", "error", "aborted"]
            .choose(rng)
            .copied()
    };
    let mut msg = json!({"role": "assistant", "content": blocks, "api": origin.api,
        "provider": origin.provider, "model": origin.model, "usage": usage(rng),
        "stopReason": stop, "timestamp": ts});
    if matches!(stop, Some("error" | "aborted")) {
        msg["errorMessage"] = Value::String("boom".into());
    }
    if rng.gen_bool(0.3) {
        // The effort a managed-effort reply ran at (replayed as an effort marker).
        msg["providerThinkingLevel"] =
            json!(["low", "high", "xhigh", "max", "minimal"].choose(rng));
    }
    (msg, calls)
}

/// A models.json-style model: custom provider, any API, random compat.
fn custom_model(rng: &mut StdRng) -> Value {
    let api = API_KINDS
        .choose(rng)
        .copied()
        .unwrap_or("openai-completions");
    let reasoning = rng.gen_bool(0.6);
    let base = match api {
        "google-generative-ai" => "http://localhost:8080/v1beta",
        "anthropic-messages" => "http://localhost:8080",
        _ => [
            "http://localhost:8080/v1",
            "https://api.together.xyz/v1",
            "https://api.z.ai/api/paas/v4",
            "https://openrouter.ai/api/v1",
            "https://api.deepseek.com/v1",
            "https://opencode.ai/zen/v1",
        ]
        .choose(rng)
        .copied()
        .unwrap_or("http://localhost:8080/v1"),
    };
    let id = match api {
        "google-generative-ai" => ["gemini-2.5-flash", "gemini-3-pro-preview", "gemma-local"]
            .choose(rng)
            .copied(),
        "anthropic-messages" => ["claude-local", "claude-sonnet-4-5"].choose(rng).copied(),
        _ => ["qwen3-coder", "llama-3.3-70b", "glm-4.6", "gpt-oss-120b"]
            .choose(rng)
            .copied(),
    }
    .unwrap_or("m");
    let mut m = json!({"id": id, "name": id, "api": api, "provider": (["local", "ollama", "my-proxy", "github-copilot", "opencode"].choose(rng).copied()),
        "baseUrl": base, "reasoning": reasoning,
        "input": if rng.gen_bool(0.5) { json!(["text", "image"]) } else { json!(["text"]) },
        "cost": {"input": rng.gen_range(0..4), "output": rng.gen_range(0..16), "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": ([8192, 32768, 40000, 131072, 200000].choose(rng).copied()),
        "maxTokens": ([1024, 4096, 16384, 32000].choose(rng).copied())});
    if reasoning && rng.gen_bool(0.5) {
        let mut map = Map::new();
        for level in ["off", "minimal", "low", "medium", "high", "xhigh", "max"] {
            match rng.gen_range(0..4) {
                0 => {
                    map.insert(level.into(), Value::Null);
                }
                1 => {
                    map.insert(
                        level.into(),
                        Value::String(if api == "google-generative-ai" {
                            ["low", "high", "MEDIUM"]
                                .choose(rng)
                                .copied()
                                .unwrap_or("low")
                                .into()
                        } else {
                            format!("{level}-x")
                        }),
                    );
                }
                _ => {}
            }
        }
        m["thinkingLevelMap"] = Value::Object(map);
    }
    let mut compat = Map::new();
    let flags: &[&str] = match api {
        "openai-completions" => &[
            "supportsDeveloperRole",
            "supportsStore",
            "supportsReasoningEffort",
            "supportsUsageInStreaming",
            "requiresToolResultName",
            "requiresAssistantAfterToolResult",
            "requiresThinkingAsText",
            "supportsStrictMode",
            "requiresNonNullAssistantContent",
            "requiresToolsWithToolHistory",
            "requiresReasoningContentOnAssistantMessages",
            "zaiToolStream",
            "supportsMidConvoSystemMessages",
        ],
        "openai-responses" => &[
            "supportsDeveloperRole",
            "supportsStrictMode",
            "supportsMidConvoSystemMessages",
            "supportsAdditionalTools",
        ],
        "anthropic-messages" => &[
            "supportsStrictTools",
            "supportsEagerToolInputStreaming",
            "supportsTemperature",
            "forceAdaptiveThinking",
            "allowEmptySignature",
            "supportsCacheControlOnTools",
            "supportsLongCacheRetention",
            "supportsMidConvoSystemMessages",
            "supportsMidConvoToolChanges",
            "supportsMidConvoEffort",
            "supportsMessageThreads",
        ],
        _ => &[],
    };
    for f in flags {
        if rng.gen_bool(0.25) {
            compat.insert((*f).into(), Value::Bool(rng.gen_bool(0.5)));
        }
    }
    if api == "openai-completions" && rng.gen_bool(0.3) {
        compat.insert(
            "maxTokensField".into(),
            Value::String(
                ["max_tokens", "max_completion_tokens"]
                    .choose(rng)
                    .copied()
                    .unwrap_or("max_tokens")
                    .into(),
            ),
        );
    }
    if api == "openai-completions" && rng.gen_bool(0.3) {
        compat.insert(
            "thinkingFormat".into(),
            Value::String(
                [
                    "openai",
                    "openrouter",
                    "deepseek",
                    "zai",
                    "qwen",
                    "qwen-chat-template",
                    "together",
                    "string-thinking",
                ]
                .choose(rng)
                .copied()
                .unwrap_or("openai")
                .into(),
            ),
        );
    }
    if api == "anthropic-messages" && rng.gen_bool(0.2) {
        // Server-side fallbacks; the second entry is priced (its provider matches).
        compat.insert(
            "allowedFallbackModels".into(),
            json!([{"model": "claude-fallback-a"},
                {"provider": m["provider"], "model": "claude-fallback-b",
                 "cost": {"input": 1, "output": 5, "cacheRead": 0.1, "cacheWrite": 1.25}}]),
        );
    }
    if !compat.is_empty() {
        m["compat"] = Value::Object(compat);
    }
    if rng.gen_bool(0.2) {
        m["samplingParams"] = json!({"top_p": 0.9, "top_k": 40});
    }
    if reasoning && rng.gen_bool(0.15) {
        m["samplingParamsByThinkingLevel"] =
            json!({"high": {"temperature": 0.6}, "off": {"min_p": 0.05}});
    }
    m
}

/// Draws the compat flags of in-place tool additions for Responses (`supportsToolSearch`, mostly
/// with system messages in place and without `additional_tools`, which would take precedence)
/// and Chat Completions (`supportsMidConvoToolAdditions`). No catalogue model of Arbor's sets
/// them; models.json can. Returns whether a flag was drawn.
fn announce_additions(rng: &mut StdRng, model: &mut Value) -> bool {
    let flag = match model["api"].as_str() {
        Some("openai-responses") => "supportsToolSearch",
        Some("openai-completions") => "supportsMidConvoToolAdditions",
        _ => return false,
    };
    if !rng.gen_bool(0.3) {
        return false;
    }
    model["compat"][flag] = json!(true);
    if rng.gen_bool(0.8) {
        model["compat"]["supportsMidConvoSystemMessages"] = json!(true);
        if flag == "supportsToolSearch" && rng.gen_bool(0.85) {
            model["compat"]["supportsAdditionalTools"] = json!(false);
        }
    }
    true
}

/// Later system messages that add tools not declared before (what an addition-only transport
/// announces in place): new tools appended to existing system messages and new system messages
/// inserted anywhere, sometimes redeclaring or removing a tool (which folds what precedes it
/// into the request-level list).
fn add_announced_tools(rng: &mut StdRng, messages: &mut Vec<Value>, tools: &[String], ts: i64) {
    let mut fresh = 0usize;
    let mut new_tool = |rng: &mut StdRng| {
        fresh += 1;
        tool(rng, &format!("loaded_{fresh}"))
    };
    for message in messages.iter_mut() {
        if message["role"] == "system" && rng.gen_bool(0.6) {
            let added = new_tool(rng);
            match message["toolsAdded"].as_array_mut() {
                Some(list) => list.push(added),
                None => message["toolsAdded"] = json!([added]),
            }
        }
    }
    for _ in 0..rng.gen_range(0..3) {
        let mut added = vec![new_tool(rng)];
        if rng.gen_bool(0.3) {
            added.push(new_tool(rng));
        }
        let mut system = json!({"role": "system", "content": if rng.gen_bool(0.5) { String::new() } else { words(rng, 4) },
            "toolsAdded": added, "timestamp": ts});
        match (rng.gen_range(0..6), tools.first()) {
            (0, Some(name)) => system["toolsRemoved"] = json!([{"name": name}]),
            (1, Some(name)) => {
                let again = tool(rng, name);
                if let Some(list) = system["toolsAdded"].as_array_mut() {
                    list.push(again);
                }
            }
            _ => {}
        }
        let at = rng.gen_range(0..=messages.len());
        messages.insert(at, system);
    }
}

/// Generates case `index` of the run seeded with `seed`, using `catalogue` models (pi JSON).
pub fn request_case(seed: u64, index: usize, catalogue: &[Value]) -> RequestCase {
    let mut rng: StdRng =
        rand::SeedableRng::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(index as u64));
    let mut model = if rng.gen_bool(0.7) || catalogue.is_empty() {
        catalogue
            .choose(&mut rng)
            .cloned()
            .unwrap_or_else(|| custom_model(&mut rng))
    } else {
        custom_model(&mut rng)
    };
    // Compat flags added after the goldens were cut are drawn from their own generator, so
    // the cases drawn before them stay as they were.
    let mut side: StdRng = rand::SeedableRng::seed_from_u64(
        seed.wrapping_mul(7_777_777).wrapping_add(index as u64) ^ 0x2641,
    );
    if model["api"] == "openai-completions" && side.gen_bool(0.4) {
        // Chat Completions grammar tools (DECISIONS §26.41); no catalogue model has them.
        model["compat"]["supportsOpenAIGrammarTools"] = json!(true);
    }
    // Tool additions announced in place (DECISIONS §26.50, §26.51), from a third generator so
    // the cases drawn before them stay as they were; only cases that draw a flag change.
    let mut additions: StdRng = rand::SeedableRng::seed_from_u64(
        seed.wrapping_mul(9_999_991).wrapping_add(index as u64) ^ 0x2650,
    );
    let announces_additions = announce_additions(&mut additions, &mut model);
    // Responses managed effort (DECISIONS §26.55), from a fourth generator; replayed turns
    // already carry `providerThinkingLevel` now and then.
    let mut effort: StdRng = rand::SeedableRng::seed_from_u64(
        seed.wrapping_mul(4_444_447).wrapping_add(index as u64) ^ 0x2655,
    );
    if model["api"] == "openai-responses" && effort.gen_bool(0.3) {
        model["compat"]["supportsMidConvoEffort"] = json!(true);
    }
    let target = Origin {
        api: model["api"].as_str().unwrap_or_default().into(),
        provider: model["provider"].as_str().unwrap_or_default().into(),
        model: model["id"].as_str().unwrap_or_default().into(),
    };
    let foreign = [
        Origin {
            api: "anthropic-messages".into(),
            provider: "anthropic".into(),
            model: "claude-sonnet-4-5".into(),
        },
        Origin {
            api: "openai-responses".into(),
            provider: "openai".into(),
            model: "gpt-5".into(),
        },
        Origin {
            api: "openai-completions".into(),
            provider: "openrouter".into(),
            model: "z-ai/glm-4.6".into(),
        },
        Origin {
            api: "google-generative-ai".into(),
            provider: "google".into(),
            model: "gemini-2.5-pro".into(),
        },
        Origin {
            api: target.api.clone(),
            provider: target.provider.clone(),
            model: "other-model".into(),
        },
    ];
    let tool_names: Vec<String> = ["read", "bash", "edit", "write_file", "grep"]
        .iter()
        .take(rng.gen_range(0..=5))
        .map(std::string::ToString::to_string)
        .collect();
    let tools: Vec<Value> = tool_names.iter().map(|n| tool(&mut rng, n)).collect();
    let mut messages = Vec::new();
    let mut ts: i64 = 1_700_000_000_000;
    let mut n = 0usize;
    let turns = rng.gen_range(1..7);
    for turn in 0..turns {
        ts += 1000;
        // User turn (sometimes absent: assistant after assistant / tool results).
        if turn == 0 || rng.gen_bool(0.8) {
            let content = match rng.gen_range(0..5) {
                0 => Value::String(words(&mut rng, 20)),
                1 => Value::String(if rng.gen_bool(0.5) {
                    "  ".into()
                } else {
                    String::new()
                }),
                2 => json!([image(&mut rng), {"type": "text", "text": words(&mut rng, 5)}]),
                3 => {
                    json!([{"type": "text", "text": words(&mut rng, 8)}, {"type": "text", "text": ""}, image(&mut rng), image(&mut rng)])
                }
                _ => json!([{"type": "text", "text": words(&mut rng, 15)}]),
            };
            messages.push(json!({"role": "user", "content": content, "timestamp": ts}));
        }
        // A mid-conversation system message.
        if rng.gen_bool(0.2) {
            let mut s = json!({"role": "system", "content": if rng.gen_bool(0.5) { Value::String(words(&mut rng, 6)) } else { json!([{"type": "text", "text": words(&mut rng, 4)}]) }, "timestamp": ts});
            if rng.gen_bool(0.5) {
                s["sections"] = json!({"env": if rng.gen_bool(0.7) { Value::String(words(&mut rng, 5)) } else { Value::Null }});
            }
            if !tools.is_empty() && rng.gen_bool(0.3) {
                s["toolsRemoved"] = json!([{"name": tools[0]["name"]}]);
            }
            if !tools.is_empty() && rng.gen_bool(0.3) {
                s["toolsAdded"] = json!([tools.choose(&mut rng).cloned()]);
            }
            messages.push(s);
        }
        if turn + 1 == turns && rng.gen_bool(0.7) {
            break;
        }
        ts += 1000;
        let origin = if rng.gen_bool(0.5) {
            &target
        } else {
            foreign.choose(&mut rng).unwrap_or(&target)
        };
        let (msg, calls) = assistant(&mut rng, origin, &tool_names, ts, &mut n);
        messages.push(msg);
        for (id, name) in calls {
            if rng.gen_bool(0.15) {
                continue; // orphan
            }
            let content = match rng.gen_range(0..5) {
                0 => json!([]),
                1 => json!([image(&mut rng)]),
                2 => json!([{"type": "text", "text": words(&mut rng, 6)}, image(&mut rng)]),
                _ => {
                    json!([{"type": "text", "text": words(&mut rng, 10)}, {"type": "text", "text": words(&mut rng, 3)}])
                }
            };
            messages.push(
                json!({"role": "toolResult", "toolCallId": id, "toolName": name,
                "content": content, "isError": rng.gen_bool(0.2), "timestamp": ts}),
            );
        }
    }
    if announces_additions {
        add_announced_tools(&mut additions, &mut messages, &tool_names, ts);
    }
    let mut context = json!({"messages": messages});
    if rng.gen_bool(0.85) {
        let mut prompt = words(&mut rng, 30);
        if rng.gen_bool(0.05) {
            prompt.push_str(&"x".repeat(rng.gen_range(10_000..140_000)));
        }
        context["systemPrompt"] = Value::String(prompt);
    }
    if !tools.is_empty() {
        context["tools"] = Value::Array(tools);
    }
    let mut options = json!({"apiKey": "sk-parity-test"});
    if let Some(level) = maybe(&mut rng, 0.7, |r| {
        if r.gen_bool(0.15) {
            "off"
        } else {
            LEVELS.choose(r).copied().unwrap_or("low")
        }
    }) {
        if level != "off" {
            options["reasoning"] = Value::String(level.into());
        }
    }
    if let Some(r) = maybe(&mut rng, 0.5, |r| {
        ["none", "short", "long"].choose(r).copied()
    }) {
        options["cacheRetention"] = json!(r);
    }
    if rng.gen_bool(0.4) {
        options["sessionId"] = Value::String(format!(
            "session-{index}-{}",
            "s".repeat(rng.gen_range(0..80))
        ));
    }
    if rng.gen_bool(0.3) {
        options["maxTokens"] = json!(rng.gen_range(100..40_000));
    }
    if rng.gen_bool(0.2) {
        options["temperature"] = json!([0.0, 0.5, 1.0].choose(&mut rng));
    }
    if rng.gen_bool(0.15) {
        options["toolChoice"] = json!(["auto", "none"].choose(&mut rng));
    }
    if rng.gen_bool(0.1) {
        options["thinkingBudgets"] = json!({"low": 1500, "high": 20000});
    }
    if rng.gen_bool(0.1) {
        options["samplingParams"] = json!({"top_p": 0.5, "min_p": 0.1});
    }
    RequestCase {
        id: format!("req-{seed}-{index}"),
        model,
        context,
        options,
    }
}
