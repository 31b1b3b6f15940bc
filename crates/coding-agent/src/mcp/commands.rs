//! `arbor mcp add|list|remove`: edit Arbor's own `mcp.json` (user level, or the project's with
//! `--local`) keeping every other entry and key as it was, and check what is configured by
//! connecting to it (DECISIONS §33.7).

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Map, Value};

use super::config::{canonical_name, read_config_text, ConfigFiles};
use super::{McpError, McpManager, ServerState};
use crate::cli::McpCommand;
use crate::error::CliError;

/// Runs one `arbor mcp` command.
pub async fn run(cmd: McpCommand) -> Result<ExitCode, CliError> {
    let home = crate::config::arbor_home();
    let cwd = std::env::current_dir().map_err(|e| CliError::io("current directory", e))?;
    match cmd {
        McpCommand::Add {
            name,
            url,
            env,
            headers,
            local,
            command,
        } => {
            let path = ConfigFiles::arbor_file(&home, &cwd, local);
            let entry = new_entry(&name, url, &env, &headers, &command)?;
            add(&path, &name, entry).map_err(mcp_error)?;
            println!("Added MCP server \"{name}\" to {}", path.display());
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Remove { name, local } => {
            let path = ConfigFiles::arbor_file(&home, &cwd, local);
            if remove(&path, &name).map_err(mcp_error)? {
                println!("Removed MCP server \"{name}\" from {}", path.display());
                Ok(ExitCode::SUCCESS)
            } else {
                Err(CliError::NotFound(format!(
                    "no MCP server \"{name}\" in {}",
                    path.display()
                )))
            }
        }
        McpCommand::List => {
            // The project-trust gate (issue 29, item 5) decides `trusted`; until it is wired,
            // a project's own mcp.json is not used, so no repository runs a command unasked.
            let loaded = super::load_standard(&home, &cwd, false);
            list(loaded, &cwd).await
        }
    }
}

fn mcp_error(e: McpError) -> CliError {
    CliError::Config(e.to_string())
}

fn new_entry(
    name: &str,
    url: Option<String>,
    env: &[String],
    headers: &[String],
    command: &[String],
) -> Result<Map<String, Value>, CliError> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(CliError::Usage(format!(
            "server name {name:?}: use only letters, digits, '_' and '-'"
        )));
    }
    let mut entry = Map::new();
    match (url, command.split_first()) {
        (Some(_), Some(_)) => {
            return Err(CliError::Usage(
                "give either --url or a command after --, not both".to_owned(),
            ))
        }
        (None, None) => {
            return Err(CliError::Usage(
                "give a command after -- (stdio) or --url URL (streamable HTTP)".to_owned(),
            ))
        }
        (Some(url), None) => {
            entry.insert("url".into(), Value::String(url));
            if !headers.is_empty() {
                let mut h = Map::new();
                for line in headers {
                    let (k, v) = line.split_once(':').ok_or_else(|| {
                        CliError::Usage(format!("--header {line:?}: expected \"Name: value\""))
                    })?;
                    h.insert(k.trim().to_owned(), Value::String(v.trim().to_owned()));
                }
                entry.insert("headers".into(), Value::Object(h));
            }
        }
        (None, Some((program, args))) => {
            entry.insert("command".into(), Value::String(program.clone()));
            if !args.is_empty() {
                entry.insert(
                    "args".into(),
                    Value::Array(args.iter().cloned().map(Value::String).collect()),
                );
            }
        }
    }
    if !env.is_empty() {
        let mut e = Map::new();
        for pair in env {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| CliError::Usage(format!("--env {pair:?}: expected KEY=VALUE")))?;
            e.insert(k.to_owned(), Value::String(v.to_owned()));
        }
        entry.insert("env".into(), Value::Object(e));
    }
    Ok(entry)
}

/// The file's object, or an empty one when it does not exist.
fn read_root(path: &Path) -> Result<Map<String, Value>, McpError> {
    let Some(text) = read_config_text(path)? else {
        return Ok(Map::new());
    };
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(McpError::Invalid {
            path: path.to_path_buf(),
            message: "expected a JSON object".to_owned(),
        }),
        Err(e) => Err(McpError::Invalid {
            path: path.to_path_buf(),
            message: format!("line {}: invalid JSON: {e} (nothing was changed)", e.line()),
        }),
    }
}

fn servers_of<'a>(
    root: &'a mut Map<String, Value>,
    path: &Path,
) -> Result<&'a mut Map<String, Value>, McpError> {
    let servers = root
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    match servers {
        Value::Object(m) => Ok(m),
        _ => Err(McpError::Invalid {
            path: path.to_path_buf(),
            message: "\"mcpServers\" must be an object (nothing was changed)".to_owned(),
        }),
    }
}

/// Writes through a temporary file in the same directory, so a failed write leaves the old
/// file whole.
fn write_root(path: &Path, root: &Map<String, Value>) -> Result<(), McpError> {
    let err = |source| McpError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let mut text = serde_json::to_string_pretty(root).unwrap_or_default();
    text.push('\n');
    let tmp = path.with_extension("json.tmp");
    let mut f = std::fs::File::create(&tmp).map_err(err)?;
    f.write_all(text.as_bytes()).map_err(err)?;
    f.sync_all().map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}

/// Adds or replaces an entry (a name differing only in `-`/`_` is the same server).
pub fn add(path: &Path, name: &str, entry: Map<String, Value>) -> Result<(), McpError> {
    let mut root = read_root(path)?;
    let servers = servers_of(&mut root, path)?;
    let key = canonical_name(name);
    servers.retain(|k, _| canonical_name(k) != key);
    servers.insert(name.to_owned(), Value::Object(entry));
    write_root(path, &root)
}

/// Removes an entry; false when there was none.
pub fn remove(path: &Path, name: &str) -> Result<bool, McpError> {
    let mut root = read_root(path)?;
    let servers = servers_of(&mut root, path)?;
    let key = canonical_name(name);
    let before = servers.len();
    servers.retain(|k, _| canonical_name(k) != key);
    if servers.len() == before {
        return Ok(false);
    }
    write_root(path, &root)?;
    Ok(true)
}

async fn list(loaded: super::LoadedConfig, cwd: &Path) -> Result<ExitCode, CliError> {
    let mut failed = !loaded.diagnostics.is_empty();
    for d in &loaded.diagnostics {
        eprintln!("{d}");
    }
    if loaded.servers.is_empty() && loaded.diagnostics.is_empty() {
        println!("No MCP servers configured.");
        return Ok(ExitCode::SUCCESS);
    }
    let manager = McpManager::new(
        loaded,
        cwd.to_path_buf(),
        super::manager::DEFAULT_START_TIMEOUT,
    );
    manager.on_notice(|_| {});
    manager.start_all();
    manager
        .wait_started(super::manager::DEFAULT_START_TIMEOUT + Duration::from_secs(1))
        .await;
    let mut out = String::new();
    for s in manager.status() {
        out.push_str(&format!(
            "{}  {}  {} tools  ({})\n",
            s.name,
            s.state.label(),
            s.tools.len(),
            s.source.display()
        ));
        for (model_name, _) in &s.tools {
            out.push_str(&format!("    {model_name}\n"));
        }
        match &s.state {
            ServerState::Failed(m) => {
                failed = true;
                for line in m.lines() {
                    out.push_str(&format!("    error: {line}\n"));
                }
            }
            ServerState::Connecting => failed = true,
            _ => {}
        }
    }
    print!("{out}");
    manager.shutdown().await;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_and_remove_keep_other_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(
            &path,
            r#"{"other": 1, "mcpServers": {"keep": {"command": "k", "custom": true}}}"#,
        )
        .unwrap();
        let entry = new_entry(
            "new-one",
            None,
            &["A=${B}".into()],
            &[],
            &["srv".into(), "-x".into()],
        )
        .unwrap();
        add(&path, "new-one", entry).unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["other"], 1);
        assert_eq!(v["mcpServers"]["keep"]["custom"], true);
        assert_eq!(v["mcpServers"]["new-one"]["args"][0], "-x");
        assert_eq!(v["mcpServers"]["new-one"]["env"]["A"], "${B}");
        assert!(remove(&path, "new_one").unwrap());
        assert!(!remove(&path, "new_one").unwrap());
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert!(v["mcpServers"].get("new-one").is_none());
        assert_eq!(v["mcpServers"]["keep"]["command"], "k");
    }

    #[test]
    fn a_broken_file_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(&path, "{\n  broken").unwrap();
        let entry = new_entry("x", Some("http://127.0.0.1:1/mcp".into()), &[], &[], &[]).unwrap();
        let err = add(&path, "x", entry).unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\n  broken");
    }
}
