//! `auth.json`: stored provider credentials (DECISIONS §22.6). The file is written mode
//! 0600 inside a 0700 directory, always under an exclusive lock on `auth.json.lock` and by
//! write-temp-then-rename, so two `arbor` processes never interleave writes or leave half a
//! file. A key never appears in `Debug` output or error texts.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use arbor_ai::models::ApiKey;
use serde_json::{json, Map, Value};

use crate::error::CliError;
use crate::key_command::KeyCommandError;

/// One stored credential.
#[derive(Clone, PartialEq)]
pub enum Credential {
    /// `{"type":"api_key","key":"…"}`; `key` may be `!command` or `$VAR`.
    ApiKey { key: String },
    /// `{"type":"oauth","access","refresh","expires"}`: the access token is used as the key.
    OAuth {
        access: String,
        refresh: String,
        expires: i64,
    },
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credential::ApiKey { .. } => f.write_str("ApiKey(<redacted>)"),
            Credential::OAuth { expires, .. } => write!(f, "OAuth(<redacted>, expires {expires})"),
        }
    }
}

/// The credentials of `auth.json` and where they came from.
pub struct AuthStore {
    path: PathBuf,
    /// Changed at run time by `/login` and `/logout` (after the file), so a running session
    /// uses a new key at once (DECISIONS §23.175).
    credentials: Mutex<BTreeMap<String, Credential>>,
    /// `!command` keys run once per process (pi's behaviour), failures included.
    resolved: Mutex<BTreeMap<String, Result<Option<String>, KeyCommandError>>>,
}

impl fmt::Debug for AuthStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthStore")
            .field("path", &self.path)
            .field("providers", &self.providers())
            .finish()
    }
}

fn invalid(provider: &str) -> CliError {
    CliError::Config(format!(
        "Invalid auth.json credential for provider \"{provider}\""
    ))
}

fn parse(text: &str, path: &Path) -> Result<BTreeMap<String, Credential>, CliError> {
    if text.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        // serde's message never contains the input text, so no key can leak through it.
        CliError::Config(format!(
            "{}: invalid JSON at line {} column {}",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    let Value::Object(map) = value else {
        return Err(CliError::Config(format!(
            "{}: must be a JSON object",
            path.display()
        )));
    };
    let mut out = BTreeMap::new();
    for (provider, v) in map {
        let kind = v.get("type").and_then(Value::as_str);
        let cred = match kind {
            Some("api_key") => Credential::ApiKey {
                key: v
                    .get("key")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid(&provider))?
                    .to_owned(),
            },
            Some("oauth") => Credential::OAuth {
                access: v
                    .get("access")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid(&provider))?
                    .to_owned(),
                refresh: v
                    .get("refresh")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                expires: v
                    .get("expires")
                    .and_then(Value::as_i64)
                    .ok_or_else(|| invalid(&provider))?,
            },
            _ => return Err(invalid(&provider)),
        };
        out.insert(provider, cred);
    }
    Ok(out)
}

/// Creates `dir` (0700) if needed.
fn ensure_private_dir(dir: &Path) -> Result<(), CliError> {
    if !dir.exists() {
        std::fs::create_dir_all(dir).map_err(|e| CliError::io(dir.display().to_string(), e))?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| CliError::io(dir.display().to_string(), e))?;
    }
    Ok(())
}

/// `auth.json`'s text through the bounded reader (DECISIONS §30.3); a missing file is empty.
fn read_auth_file(path: &Path) -> Result<String, CliError> {
    Ok(
        arbor_tools::files::read_bounded(path, arbor_tools::files::FileKind::AUTH)?
            .map(|f| String::from_utf8_lossy(&f.bytes).into_owned())
            .unwrap_or_default(),
    )
}

impl AuthStore {
    /// Reads `<home>/auth.json`; a missing file is an empty store (nothing is created).
    pub fn load(home: &Path) -> Result<AuthStore, CliError> {
        let path = home.join("auth.json");
        let text = read_auth_file(&path)?;
        let credentials = parse(&text, &path)?;
        Ok(AuthStore {
            path,
            credentials: Mutex::new(credentials),
            resolved: Mutex::new(BTreeMap::new()),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every stored credential as written (`!command`, `$VAR` or literal; OAuth tokens), for
    /// the redactor and the tool environment policy (DECISIONS §30.7).
    pub fn configured_values(&self) -> Vec<String> {
        self.creds()
            .values()
            .flat_map(|c| match c {
                Credential::ApiKey { key } => vec![key.clone()],
                Credential::OAuth {
                    access, refresh, ..
                } => vec![access.clone(), refresh.clone()],
            })
            .collect()
    }

    /// The providers with a stored credential, sorted.
    pub fn providers(&self) -> Vec<String> {
        self.creds().keys().cloned().collect()
    }

    fn creds(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Credential>> {
        self.credentials
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Stores (or with `None` removes) `provider`'s credential in `auth.json` ([`Self::update`])
    /// and in this store, so the running session uses it from its next request.
    pub fn store(&self, provider: &str, credential: Option<Credential>) -> Result<(), CliError> {
        let home = self.path.parent().unwrap_or(Path::new("."));
        Self::update(home, provider, credential.clone())?;
        let mut creds = self.creds();
        match credential {
            Some(c) => creds.insert(provider.to_owned(), c),
            None => creds.remove(provider),
        };
        drop(creds);
        self.resolved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(provider);
        Ok(())
    }

    /// The key stored for `provider`, with `!command` run (once) and `$VAR` expanded.
    pub fn api_key(&self, provider: &str) -> Option<ApiKey> {
        self.api_key_checked(provider).ok().flatten()
    }

    /// [`Self::api_key`], with a failed `!command` reported (DECISIONS §28.6).
    pub fn api_key_checked(&self, provider: &str) -> Result<Option<ApiKey>, KeyCommandError> {
        let raw = match self.creds().get(provider) {
            None => return Ok(None),
            Some(Credential::ApiKey { key }) => key.clone(),
            Some(Credential::OAuth { access, .. }) => return Ok(Some(ApiKey::new(access.clone()))),
        };
        let mut cache = self
            .resolved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let value = cache
            .entry(provider.to_owned())
            .or_insert_with(|| crate::key_command::resolve(provider, "auth.json", &raw))
            .clone();
        value.map(|v| v.map(ApiKey::new))
    }

    /// Stores (or with `None` removes) a provider's credential under the lock, re-reading the
    /// file first so concurrent writers' other providers are kept.
    pub fn update(
        home: &Path,
        provider: &str,
        credential: Option<Credential>,
    ) -> Result<(), CliError> {
        ensure_private_dir(home)?;
        let path = home.join("auth.json");
        let lock_path = home.join("auth.json.lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(|e| CliError::io(lock_path.display().to_string(), e))?;
        lock.lock()
            .map_err(|e| CliError::io(lock_path.display().to_string(), e))?;
        let text = read_auth_file(&path)?;
        let mut creds = parse(&text, &path)?;
        match credential {
            Some(c) => {
                creds.insert(provider.to_owned(), c);
            }
            None => {
                creds.remove(provider);
            }
        }
        let mut obj = Map::new();
        for (p, c) in &creds {
            obj.insert(
                p.clone(),
                match c {
                    Credential::ApiKey { key } => json!({"type": "api_key", "key": key}),
                    Credential::OAuth { access, refresh, expires } => {
                        json!({"type": "oauth", "access": access, "refresh": refresh, "expires": expires})
                    }
                },
            );
        }
        let body =
            serde_json::to_string_pretty(&Value::Object(obj)).unwrap_or_else(|_| "{}".into());
        let tmp = home.join(format!("auth.json.tmp-{}", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut f: File = OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(body.as_bytes())?;
            f.write_all(b"\n")?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
        };
        let result = write().map_err(|e| CliError::io(path.display().to_string(), e));
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        drop(lock);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_private_and_keep_other_providers() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        AuthStore::update(
            &home,
            "openai",
            Some(Credential::ApiKey {
                key: "sk-one".into(),
            }),
        )
        .unwrap();
        AuthStore::update(
            &home,
            "anthropic",
            Some(Credential::ApiKey {
                key: "!echo sk-two".into(),
            }),
        )
        .unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&home), 0o700);
        assert_eq!(mode(&home.join("auth.json")), 0o600);
        let store = AuthStore::load(&home).unwrap();
        assert_eq!(store.api_key("openai").unwrap().expose(), "sk-one");
        assert_eq!(store.api_key("anthropic").unwrap().expose(), "sk-two");
        // One at a time: the store's `Debug` takes the same lock `creds()` holds.
        let creds = format!("{:?}", store.creds());
        let debug = format!("{store:?} {creds}");
        assert!(
            !debug.contains("sk-one") && !debug.contains("echo"),
            "{debug}"
        );
        AuthStore::update(&home, "openai", None).unwrap();
        assert!(AuthStore::load(&home).unwrap().api_key("openai").is_none());
    }

    #[test]
    fn invalid_shapes_name_the_provider_without_the_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("auth.json"),
            r#"{"openai":{"type":"api_key","kee":"sk-secret"}}"#,
        )
        .unwrap();
        let err = AuthStore::load(dir.path()).unwrap_err().to_string();
        assert_eq!(err, "Invalid auth.json credential for provider \"openai\"");
        std::fs::write(dir.path().join("auth.json"), r#"{"openai": "sk-secret"#).unwrap();
        let err = AuthStore::load(dir.path()).unwrap_err().to_string();
        assert!(!err.contains("sk-secret"), "{err}");
    }

    #[test]
    fn concurrent_writers_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_path_buf();
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let home = home.clone();
                std::thread::spawn(move || {
                    AuthStore::update(
                        &home,
                        &format!("p{i}"),
                        Some(Credential::ApiKey {
                            key: format!("k{i}"),
                        }),
                    )
                    .unwrap()
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let store = AuthStore::load(&home).unwrap();
        assert_eq!(store.providers().len(), 8);
    }
}
