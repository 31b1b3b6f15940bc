//! The trust file, `<ARBOR_HOME>/trust.json`: `{"/canonical/dir": true | false | null}`, the
//! shape pi's trust file has (DECISIONS §32.12). Written whole through a temporary file and a
//! rename, readable by the owner only (0600), so a crash never leaves half a file and other
//! users cannot read which folders exist.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Why the trust file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: invalid JSON at line {line} column {column}: {source}")]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path}: {message}")]
    Shape { path: PathBuf, message: String },
}

/// The saved decisions.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
    entries: Map<String, Value>,
}

impl TrustStore {
    /// Reads the file (missing: no decisions). A broken file is an error naming it: guessing
    /// would either trust what the user refused or drop what they granted.
    pub fn load(path: &Path) -> Result<TrustStore, TrustError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => {
                return Err(TrustError::Io {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
        let entries = if text.trim().is_empty() {
            Map::new()
        } else {
            let v: Value = serde_json::from_str(text).map_err(|source| TrustError::Json {
                path: path.to_path_buf(),
                line: source.line(),
                column: source.column(),
                source,
            })?;
            let Value::Object(m) = v else {
                return Err(TrustError::Shape {
                    path: path.to_path_buf(),
                    message: "the trust file must be a JSON object".into(),
                });
            };
            for (k, v) in &m {
                if !matches!(v, Value::Bool(_) | Value::Null) {
                    return Err(TrustError::Shape {
                        path: path.to_path_buf(),
                        message: format!("the value for \"{k}\" must be true, false or null"),
                    });
                }
            }
            m
        };
        Ok(TrustStore {
            path: path.to_path_buf(),
            entries,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The decision saved for `dir` or its closest parent that has one.
    pub fn nearest(&self, dir: &Path) -> Option<(PathBuf, bool)> {
        dir.ancestors().find_map(|d| {
            let key = d.to_string_lossy();
            match self.entries.get(key.as_ref()) {
                Some(Value::Bool(b)) => Some((d.to_path_buf(), *b)),
                _ => None,
            }
        })
    }

    /// Saves (`Some`) or clears (`None`) the decision for `dir` and writes the file.
    pub fn set(&mut self, dir: &Path, decision: Option<bool>) -> Result<(), TrustError> {
        let key = dir.to_string_lossy().into_owned();
        match decision {
            Some(b) => {
                self.entries.insert(key, Value::Bool(b));
            }
            None => {
                self.entries.remove(&key);
            }
        }
        self.write()
    }

    fn write(&self) -> Result<(), TrustError> {
        let io = |source| TrustError::Io {
            path: self.path.clone(),
            source,
        };
        let mut sorted: Vec<(&String, &Value)> = self.entries.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        let map: Map<String, Value> = sorted
            .into_iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut text =
            serde_json::to_string_pretty(&Value::Object(map)).map_err(|e| TrustError::Shape {
                path: self.path.clone(),
                message: e.to_string(),
            })?;
        text.push('\n');
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut tmp = tempfile_in(dir).map_err(io)?;
        tmp.1.write_all(text.as_bytes()).map_err(io)?;
        tmp.1.sync_all().map_err(io)?;
        std::fs::rename(&tmp.0, &self.path).map_err(io)
    }
}

/// A new file beside the trust file, created 0600 from the start.
fn tempfile_in(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let name = format!(".trust.json.{}.tmp", std::process::id());
    let path = dir.join(name);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)?;
    Ok((path, file))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn decisions_round_trip_owner_only() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("trust.json");
        let mut s = TrustStore::load(&path).unwrap();
        s.set(Path::new("/p/b"), Some(true)).unwrap();
        s.set(Path::new("/p/a"), Some(false)).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "{\n  \"/p/a\": false,\n  \"/p/b\": true\n}\n");
        let s = TrustStore::load(&path).unwrap();
        assert_eq!(
            s.nearest(Path::new("/p/b/c")),
            Some((PathBuf::from("/p/b"), true))
        );
        assert_eq!(s.nearest(Path::new("/q")), None);
    }

    #[test]
    fn a_broken_file_is_an_error_naming_it() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("trust.json");
        std::fs::write(&path, "{\n \"/p\": \"yes\"\n}").unwrap();
        let e = TrustStore::load(&path).unwrap_err().to_string();
        assert!(e.contains("trust.json") && e.contains("\"/p\""), "{e}");
        std::fs::write(&path, "{\n \"/p\": tru,\n}").unwrap();
        let e = TrustStore::load(&path).unwrap_err().to_string();
        assert!(e.contains("invalid JSON at line"), "{e}");
    }
}
