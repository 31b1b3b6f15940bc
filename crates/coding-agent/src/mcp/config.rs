//! `mcp.json`: the `{"mcpServers": {name: entry}}` format MCP clients share, read from pi's and
//! Arbor's user and project files (DECISIONS §33.2). A bad file or entry becomes a
//! [`Diagnostic`] naming the file and line; the other servers are still used.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::McpError;

/// Per-request timeout when an entry sets none (pi's default, 60 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A problem with one configuration file or entry. Shown once at start-up and in `/mcp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    /// 1-based; `None` when the problem is not tied to one place (an unreadable file).
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file.display(), self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

/// Why one entry of a configuration file is not used (its text goes into a [`Diagnostic`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EntryError(pub String);

/// `${NAME}` names a variable that is not set and has no default.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("${{{0}}} is not set")]
pub struct UnsetVariable(pub String);

/// How Arbor reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking JSON-RPC lines on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// One usable server entry after merging and `${VAR}` expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    /// The file that defines it (the project file when it overrides a user entry).
    pub source: PathBuf,
    pub enabled: bool,
    pub transport: Transport,
    pub timeout: Duration,
}

/// Where the `mcp.json` files are, lowest precedence first.
#[derive(Debug, Clone)]
pub struct ConfigFiles {
    /// `(path, is_project)`.
    pub files: Vec<(PathBuf, bool)>,
}

impl ConfigFiles {
    /// pi's user file, Arbor's user file, then (only for a trusted project) pi's and Arbor's
    /// project files: a later file's entry replaces an earlier one of the same name.
    pub fn standard(
        arbor_home: &Path,
        user_home: Option<&Path>,
        cwd: &Path,
        trusted: bool,
    ) -> Self {
        let mut files = Vec::new();
        if let Some(home) = user_home {
            files.push((home.join(".pi").join("agent").join("mcp.json"), false));
        }
        files.push((arbor_home.join("mcp.json"), false));
        if trusted {
            files.push((cwd.join(".pi").join("mcp.json"), true));
            files.push((cwd.join(".arbor").join("mcp.json"), true));
        }
        ConfigFiles { files }
    }

    /// The file `arbor mcp add|remove` writes: Arbor's user or project file.
    pub fn arbor_file(arbor_home: &Path, cwd: &Path, project: bool) -> PathBuf {
        if project {
            cwd.join(".arbor").join("mcp.json")
        } else {
            arbor_home.join("mcp.json")
        }
    }
}

/// The merged configuration and what was wrong with it.
#[derive(Debug, Clone, Default)]
pub struct LoadedConfig {
    pub servers: Vec<ServerConfig>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Reads a configuration file's text; `Ok(None)` when it does not exist. Every read of
/// `mcp.json` and of the hook settings goes through here (one place to bound it).
pub(crate) fn read_config_text(path: &Path) -> Result<Option<String>, McpError> {
    // Bounded, regular files only (DECISIONS §30.4): a FIFO or /dev/zero is an error, not a hang.
    match arbor_tools::files::read_bounded(path, arbor_tools::files::FileKind::CONFIG) {
        Ok(file) => Ok(file.map(|f| f.text_with_notice(path))),
        Err(e) => Err(McpError::Read {
            path: path.to_path_buf(),
            source: std::io::Error::other(e),
        }),
    }
}

/// One server entry while the files are merged: its order of first appearance, the file and
/// line that last defined it, and its keys.
type MergedEntry = (usize, PathBuf, Map<String, Value>, Option<usize>);

/// Reads and merges the files. `env` resolves `${VAR}`.
pub fn load(files: &ConfigFiles, env: &dyn Fn(&str) -> Option<String>) -> LoadedConfig {
    let mut merged: BTreeMap<String, MergedEntry> = BTreeMap::new();
    let mut out = LoadedConfig::default();
    let mut order = 0usize;
    for (path, _project) in &files.files {
        let text = match read_config_text(path) {
            Ok(Some(t)) => t,
            Ok(None) => continue,
            Err(e) => {
                out.diagnostics.push(Diagnostic {
                    file: path.clone(),
                    line: None,
                    message: e.to_string(),
                });
                continue;
            }
        };
        let entries = match parse_file(path, &text) {
            Ok(e) => e,
            Err(d) => {
                out.diagnostics.push(d);
                continue;
            }
        };
        for (name, entry, line) in entries {
            let key = canonical_name(&name);
            let is_override = !entry.contains_key("command")
                && !entry.contains_key("url")
                && !entry.contains_key("type");
            match merged.get_mut(&key) {
                // An entry with neither command, url nor type only switches the earlier one
                // (pi: it overrides `enabled` and keeps the rest).
                Some(slot) if is_override => {
                    for (k, v) in entry {
                        slot.2.insert(k, v);
                    }
                    slot.1 = path.clone();
                    slot.3 = line;
                }
                _ => {
                    order += 1;
                    merged.insert(key, (order, path.clone(), with_name(entry, &name), line));
                }
            }
        }
    }
    let mut entries: Vec<_> = merged.into_values().collect();
    entries.sort_by_key(|e| e.0);
    for (_, path, entry, line) in entries {
        match server_from_entry(&entry, &path, env) {
            Ok(s) => out.servers.push(s),
            Err(e) => out.diagnostics.push(Diagnostic {
                file: path,
                line,
                message: e.0,
            }),
        }
    }
    out
}

const NAME_KEY: &str = "\u{0}name";

fn with_name(mut entry: Map<String, Value>, name: &str) -> Map<String, Value> {
    entry.insert(NAME_KEY.to_owned(), Value::String(name.to_owned()));
    entry
}

/// Names differing only in `-` and `_` are one server (pi's rule).
pub fn canonical_name(name: &str) -> String {
    name.replace('-', "_")
}

/// Parses one file into `(name, entry, line)` triples.
#[allow(clippy::type_complexity)]
fn parse_file(
    path: &Path,
    text: &str,
) -> Result<Vec<(String, Map<String, Value>, Option<usize>)>, Diagnostic> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let diag = |line: Option<usize>, message: String| Diagnostic {
        file: path.to_path_buf(),
        line,
        message,
    };
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let value: Value = serde_json::from_str(text)
        .map_err(|e| diag(Some(e.line()), format!("invalid JSON: {e}")))?;
    let Value::Object(mut root) = value else {
        return Err(diag(Some(1), "expected a JSON object".to_owned()));
    };
    let servers = match root.remove("mcpServers") {
        None => return Ok(Vec::new()),
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(diag(
                line_of(text, "mcpServers"),
                "\"mcpServers\" must be an object".to_owned(),
            ))
        }
    };
    let mut out = Vec::new();
    for (name, entry) in servers {
        let line = line_of(text, &name);
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(diag(
                line,
                format!("server name {name:?}: use only letters, digits, '_' and '-'"),
            ));
        }
        match entry {
            Value::Object(m) => out.push((name, m, line)),
            _ => {
                return Err(diag(
                    line,
                    format!("server \"{name}\": the entry must be an object"),
                ))
            }
        }
    }
    Ok(out)
}

/// The 1-based line where `"key"` first appears as an object key.
pub(crate) fn line_of(text: &str, key: &str) -> Option<usize> {
    let quoted = format!("\"{key}\"");
    let mut from = 0;
    while let Some(pos) = text[from..].find(&quoted) {
        let at = from + pos;
        let rest = text[at + quoted.len()..].trim_start();
        if rest.starts_with(':') {
            return Some(text[..at].matches('\n').count() + 1);
        }
        from = at + quoted.len();
    }
    None
}

fn server_from_entry(
    entry: &Map<String, Value>,
    source: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, EntryError> {
    let name = entry
        .get(NAME_KEY)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let fail = |m: String| EntryError(format!("server \"{name}\": {m}"));
    let string = |key: &str| -> Result<Option<String>, EntryError> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => expand(s, env)
                .map(Some)
                .map_err(|v| fail(format!("\"{key}\" uses ${{{}}}, which is not set", v.0))),
            Some(_) => Err(fail(format!("\"{key}\" must be a string"))),
        }
    };
    let string_map = |key: &str| -> Result<Vec<(String, String)>, EntryError> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => expand(s, env).map(|s| (k.clone(), s)).map_err(|var| {
                        fail(format!(
                            "\"{key}.{k}\" uses ${{{}}}, which is not set",
                            var.0
                        ))
                    }),
                    _ => Err(fail(format!("\"{key}.{k}\" must be a string"))),
                })
                .collect(),
            Some(_) => Err(fail(format!("\"{key}\" must be an object of strings"))),
        }
    };
    let enabled = match entry.get("enabled") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(fail("\"enabled\" must be true or false".to_owned())),
    };
    let timeout = match entry.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s.is_finite() => Duration::from_secs_f64(s),
            _ => {
                return Err(fail(
                    "\"timeout\" must be a positive number of seconds".to_owned(),
                ))
            }
        },
    };
    let kind = string("type")?;
    let command = string("command")?;
    let url = string("url")?;
    let transport = match (kind.as_deref(), command, url) {
        (Some("sse"), _, _) => return Err(fail(
            "the legacy SSE transport is not supported; use the server's streamable HTTP endpoint"
                .to_owned(),
        )),
        (Some(k), _, _) if !matches!(k, "stdio" | "http" | "streamable-http") => {
            return Err(fail(format!(
                "\"type\" is {k:?}; expected \"stdio\", \"http\" or \"streamable-http\""
            )))
        }
        (_, Some(_), Some(_)) => {
            return Err(fail(
                "has both \"command\" and \"url\"; keep one".to_owned(),
            ))
        }
        (Some("http" | "streamable-http"), Some(_), None) => {
            return Err(fail(
                "\"type\" says HTTP but the entry has a \"command\"".to_owned(),
            ))
        }
        (Some("stdio"), None, Some(_)) => {
            return Err(fail(
                "\"type\" says stdio but the entry has a \"url\"".to_owned(),
            ))
        }
        (_, Some(command), None) => {
            let args = match entry.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| match v {
                        Value::String(s) => expand(s, env).map_err(|var| {
                            fail(format!("\"args\" uses ${{{}}}, which is not set", var.0))
                        }),
                        _ => Err(fail("\"args\" must be an array of strings".to_owned())),
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(fail("\"args\" must be an array of strings".to_owned())),
            };
            if command.trim().is_empty() {
                return Err(fail("\"command\" is empty".to_owned()));
            }
            Transport::Stdio {
                command: home_path(&command),
                args: args.iter().map(|a| home_path(a)).collect(),
                env: string_map("env")?,
                cwd: string("cwd")?.map(|c| PathBuf::from(home_path(&c))),
            }
        }
        (_, None, Some(url)) => {
            super::http_client::check_url(&url).map_err(|e| fail(e.to_string()))?;
            let headers = string_map("headers")?;
            super::http_client::header_map(&headers).map_err(|e| fail(e.to_string()))?;
            Transport::Http { url, headers }
        }
        (_, None, None) => {
            return Err(fail(
                "needs a \"command\" (stdio) or a \"url\" (streamable HTTP)".to_owned(),
            ))
        }
    };
    Ok(ServerConfig {
        name,
        source: source.to_path_buf(),
        enabled,
        transport,
        timeout,
    })
}

/// A leading `~/` names the home directory (pi's rule for command, args and cwd).
fn home_path(s: &str) -> String {
    match (s.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest).display().to_string(),
        _ => s.to_owned(),
    }
}

/// Expands `${VAR}` (and `${VAR:-default}`); `Err(var)` names an unset variable without a
/// default. `$$` is not special; a `$` not followed by `{` stays as it is.
pub fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, UnsetVariable> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        match (env(var), default) {
            (Some(v), _) if !v.is_empty() || default.is_none() => out.push_str(&v),
            (_, Some(d)) => out.push_str(d),
            (None, None) => return Err(UnsetVariable(var.to_owned())),
            (Some(v), None) => out.push_str(&v),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("abc".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn variables_expand_with_defaults_and_unset_ones_are_named() {
        assert_eq!(expand("Bearer ${TOKEN}", &env).as_deref(), Ok("Bearer abc"));
        assert_eq!(expand("${NOPE:-x}-${EMPTY:-y}", &env).as_deref(), Ok("x-y"));
        assert_eq!(
            expand("a ${NOPE} b", &env),
            Err(UnsetVariable("NOPE".to_owned()))
        );
        assert_eq!(
            expand("$HOME ${unclosed", &env).as_deref(),
            Ok("$HOME ${unclosed")
        );
    }

    #[test]
    fn project_entries_replace_user_entries_and_overrides_keep_the_rest() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let user = dir.path().join("user.json");
        let project = dir.path().join("project.json");
        std::fs::write(
            &user,
            r#"{"mcpServers": {"a-b": {"command": "one", "env": {"K": "${TOKEN}"}}, "c": {"command": "two"}}}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            &project,
            "{\"mcpServers\": {\n \"a_b\": {\"enabled\": false},\n \"c\": {\"url\": \"http://127.0.0.1:1/mcp\"}}}",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let files = ConfigFiles {
            files: vec![(user, false), (project.clone(), true)],
        };
        let loaded = load(&files, &env);
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        assert_eq!(loaded.servers.len(), 2);
        let ab = &loaded.servers[0];
        assert!(!ab.enabled);
        assert_eq!(ab.source, project);
        assert!(
            matches!(&ab.transport, Transport::Stdio { command, env, .. }
            if command == "one" && env == &[("K".to_owned(), "abc".to_owned())])
        );
        assert!(matches!(
            &loaded.servers[1].transport,
            Transport::Http { .. }
        ));
    }

    #[test]
    fn bad_files_and_entries_name_file_and_line() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let broken = dir.path().join("broken.json");
        let bad_entry = dir.path().join("entry.json");
        std::fs::write(&broken, "{\n  \"mcpServers\": {\n    \"x\": {,}\n}}")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            &bad_entry,
            "{\"mcpServers\": {\n  \"ok\": {\"command\": \"c\"},\n  \"bad\": {\"args\": [\"x\"]},\n  \"tok\": {\"command\": \"c\", \"env\": {\"A\": \"${NOPE}\"}}\n}}",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let files = ConfigFiles {
            files: vec![(broken.clone(), false), (bad_entry.clone(), false)],
        };
        let loaded = load(&files, &env);
        let texts: Vec<String> = loaded.diagnostics.iter().map(ToString::to_string).collect();
        assert_eq!(loaded.servers.len(), 1, "{texts:?}");
        assert_eq!(texts.len(), 3, "{texts:?}");
        assert!(texts[0].starts_with(&format!("{}:3: invalid JSON", broken.display())));
        assert_eq!(
            texts[1],
            format!(
                "{}:3: server \"bad\": needs a \"command\" (stdio) or a \"url\" (streamable HTTP)",
                bad_entry.display()
            )
        );
        assert_eq!(
            texts[2],
            format!(
                "{}:4: server \"tok\": \"env.A\" uses ${{NOPE}}, which is not set",
                bad_entry.display()
            )
        );
    }
}
