//! `/settings key value`: sets one of the settings Arbor reads in the global file
//! (`<ARBOR_HOME>/settings.json`), keeping every other key as it is (DECISIONS §32.15). Only
//! known keys are accepted, so a typo is an error instead of a setting nothing reads.

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::CliError;

/// The settings Arbor reads (dotted paths), with the type each takes.
pub const KNOWN_KEYS: &[(&str, &str)] = &[
    ("defaultProvider", "string"),
    ("defaultModel", "string"),
    ("defaultThinkingLevel", "string"),
    ("defaultTools", "array"),
    ("enabledModels", "array"),
    ("defaultProjectTrust", "string"),
    ("sessionDir", "string"),
    ("sessionStore", "string"),
    ("shellPath", "string"),
    ("shellCommandPrefix", "string"),
    ("steeringMode", "string"),
    ("followUpMode", "string"),
    ("httpIdleTimeoutMs", "number"),
    ("images.autoResize", "boolean"),
    ("compaction.enabled", "boolean"),
    ("compaction.reserveTokens", "number"),
    ("compaction.keepRecentTokens", "number"),
    ("branchSummary.skipPrompt", "boolean"),
    ("retry.enabled", "boolean"),
    ("retry.maxRetries", "number"),
    ("retry.baseDelayMs", "number"),
    ("retry.maxAgentDelayMs", "number"),
];

/// Parses `value` for `key`: JSON when it is valid JSON of the key's type, else (for a
/// string key) the text itself.
fn typed(key: &str, kind: &str, raw: &str) -> Result<Value, CliError> {
    let parsed = serde_json::from_str::<Value>(raw).ok();
    let ok = |v: &Value| match kind {
        "string" => v.is_string(),
        "array" => v.is_array(),
        "number" => v.is_u64(),
        "boolean" => v.is_boolean(),
        _ => false,
    };
    match parsed {
        Some(v) if ok(&v) => Ok(v),
        _ if kind == "string" => Ok(Value::String(raw.to_owned())),
        _ => Err(CliError::Usage(format!(
            "/settings {key}: expected a {kind}, got '{raw}'"
        ))),
    }
}

/// Sets `key` to `raw` in `<home>/settings.json` and returns the value written.
pub fn set_global(home: &Path, key: &str, raw: &str) -> Result<Value, CliError> {
    let Some((_, kind)) = KNOWN_KEYS.iter().find(|(k, _)| *k == key) else {
        let names: Vec<&str> = KNOWN_KEYS.iter().map(|(k, _)| *k).collect();
        return Err(CliError::Usage(format!(
            "/settings: unknown setting '{key}' (known: {})",
            names.join(", ")
        )));
    };
    let value = typed(key, kind, raw)?;
    let path = home.join("settings.json");
    let mut root = match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => {
            match serde_json::from_str::<Value>(t.strip_prefix('\u{FEFF}').unwrap_or(&t)) {
                Ok(Value::Object(m)) => m,
                _ => {
                    // Never overwrite a file the user would lose by it.
                    return Err(CliError::Config(format!(
                        "{}: not a JSON object; fix it before changing settings here",
                        path.display()
                    )));
                }
            }
        }
        Ok(_) => Map::new(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
        Err(e) => return Err(CliError::io(path.display().to_string(), e)),
    };
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().unwrap_or(key);
    let mut cur = &mut root;
    for p in parts {
        let entry = cur
            .entry(p.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        let Value::Object(next) = entry else {
            return Err(CliError::Config(format!(
                "{}: {p} is not an object",
                path.display()
            )));
        };
        cur = next;
    }
    cur.insert(last.to_owned(), value.clone());
    let mut text = serde_json::to_string_pretty(&Value::Object(root))
        .map_err(|e| CliError::Config(e.to_string()))?;
    text.push('\n');
    std::fs::create_dir_all(home).map_err(|e| CliError::io(home.display().to_string(), e))?;
    let tmp = home.join(".settings.json.tmp");
    std::fs::write(&tmp, text).map_err(|e| CliError::io(tmp.display().to_string(), e))?;
    std::fs::rename(&tmp, &path).map_err(|e| CliError::io(path.display().to_string(), e))?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_known_keys_and_keeps_the_rest() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("settings.json"),
            r#"{"custom":1,"retry":{"enabled":true}}"#,
        )
        .unwrap();
        set_global(home.path(), "retry.maxRetries", "5").unwrap();
        set_global(home.path(), "defaultModel", "gpt-x").unwrap();
        let v: Value = serde_json::from_str(
            &std::fs::read_to_string(home.path().join("settings.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"custom":1,"retry":{"enabled":true,"maxRetries":5},"defaultModel":"gpt-x"})
        );
        let e = set_global(home.path(), "retry.maxRetries", "many").unwrap_err();
        assert!(e.to_string().contains("expected a number"), "{e}");
        let e = set_global(home.path(), "nope", "1").unwrap_err();
        assert!(e.to_string().contains("unknown setting 'nope'"), "{e}");
        std::fs::write(home.path().join("settings.json"), "[1]").unwrap();
        assert!(set_global(home.path(), "defaultModel", "x").is_err());
        assert_eq!(
            std::fs::read_to_string(home.path().join("settings.json")).unwrap(),
            "[1]"
        );
    }
}
