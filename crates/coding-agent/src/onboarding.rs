//! What a run without a usable model says (DECISIONS §23.170): the one text the TUI's first
//! screen shows and print mode writes to stderr — how to store a key with `/login`, where
//! `models.json` is, and a `models.json` for a local OpenAI-compatible server that works as
//! written.

use std::path::Path;

/// The local-server example's provider, model and `models.json` body. Kept here so the text
/// and the test that loads it never drift apart.
pub const LOCAL_EXAMPLE_MODEL: &str = "local/qwen2.5-coder:7b";

/// The `models.json` of the example (a local Ollama-style server; a local URL needs no key,
/// DECISIONS §22.5).
pub const LOCAL_EXAMPLE_JSON: &str = r#"{
  "providers": {
    "local": {
      "baseUrl": "http://localhost:11434/v1",
      "api": "openai-completions",
      "models": [{"id": "qwen2.5-coder:7b", "contextWindow": 32768, "maxTokens": 8192}]
    }
  }
}"#;

/// The onboarding text. `models_json` is the resolved path of the file the run reads.
pub fn no_model_text(models_json: &Path) -> String {
    let auth = models_json.with_file_name("auth.json");
    let mut lines: Vec<String> = [
        "No model available yet: no provider has an API key, and no local server can be used.",
        "",
        "1. Store a provider's API key: in the interactive UI (arbor on a terminal) type",
        "     /login PROVIDER        e.g. /login anthropic, /login openai",
    ]
    .iter()
    .map(|l| (*l).to_owned())
    .collect();
    lines.push(format!(
        "   and paste the key. It is saved in {} (mode 0600);",
        auth.display()
    ));
    lines.extend(
        [
            "   /logout PROVIDER removes it. An environment variable (ANTHROPIC_API_KEY,",
            "   OPENAI_API_KEY, …) or --api-key KEY works too.",
            "",
            "2. Or use a local OpenAI-compatible server (Ollama, llama.cpp, vLLM, LM Studio):",
        ]
        .iter()
        .map(|l| (*l).to_owned()),
    );
    lines.push(format!("   write {} like this:", models_json.display()));
    lines.push(String::new());
    lines.extend(LOCAL_EXAMPLE_JSON.lines().map(|l| format!("     {l}")));
    lines.push(String::new());
    lines.push(format!(
        "   then start: arbor --model {LOCAL_EXAMPLE_MODEL}"
    ));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example is a `models.json` Arbor loads, and its model needs no key.
    #[test]
    fn the_local_example_loads_and_needs_no_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("models.json");
        std::fs::write(&path, LOCAL_EXAMPLE_JSON).unwrap();
        let mut registry = arbor_ai::models::ModelRegistry::builtin().unwrap();
        crate::models_json::load_models_json(&mut registry, &path).unwrap();
        let (provider, id) = LOCAL_EXAMPLE_MODEL.split_once('/').unwrap();
        let model = registry.get(provider, id).expect("the example's model");
        assert!(crate::command::models::is_local_url(&model.base_url));
        let text = no_model_text(&path);
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(text.contains(&dir.path().join("auth.json").display().to_string()));
        assert!(
            text.contains("\"baseUrl\": \"http://localhost:11434/v1\""),
            "{text}"
        );
    }
}
