//! Finding a session from what the user typed: a path, a full id or a unique id prefix.
//!
//! Ids come from file names (`<fileTs>_<id>.jsonl`, pi's naming) so a lookup reads no file; a
//! file whose name does not follow the pattern is identified by its header line instead.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use arbor_agent::session::jsonl::layout::{self, is_cwd_dir_name};
use arbor_agent::session::jsonl::JsonlRepository;
use arbor_agent::session::SessionHeader;

use crate::error::{CliError, Result};

/// Where sessions live for this invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionDirs {
    /// `<root>/--<encoded cwd>--/<file>.jsonl` (Arbor's default under `~/.arbor/sessions`, and
    /// pi's `~/.pi/agent/sessions`).
    Layout { root: PathBuf },
    /// Session files directly in one directory (`--session-dir`, or one of pi's per-cwd folders).
    Flat { dir: PathBuf },
}

/// A session file found in a directory scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub id: String,
    pub path: PathBuf,
}

/// `$ARBOR_HOME/sessions`, else `~/.arbor/sessions` (the store's rules, `~` expanded). Unlike
/// the store, a missing home directory is an error here rather than a silent `./.arbor`.
pub fn default_sessions_root() -> Result<PathBuf> {
    let set = |key: &str| std::env::var_os(key).is_some_and(|v| !v.is_empty());
    if !set("ARBOR_HOME") && !set("HOME") && !set("USERPROFILE") {
        return Err(CliError::Usage(
            "cannot find the home directory: set HOME or ARBOR_HOME, or pass --session-dir".into(),
        ));
    }
    Ok(layout::default_sessions_root())
}

impl SessionDirs {
    /// The directories for `--session-dir` (when given) or the default `~/.arbor/sessions`.
    /// A given directory that holds per-cwd folders (`--…--`), like pi's
    /// `~/.pi/agent/sessions`, is read as a layout root; otherwise its files are the sessions.
    pub fn resolve(session_dir: Option<&Path>) -> Result<Self> {
        match session_dir {
            None => Ok(SessionDirs::Layout {
                root: default_sessions_root()?,
            }),
            Some(dir) => {
                if !dir.is_dir() {
                    return Err(CliError::NotFound(format!(
                        "session directory not found: {}",
                        dir.display()
                    )));
                }
                let children = read_dir_sorted(dir)?;
                let has_cwd_dirs = children
                    .iter()
                    .any(|p| p.is_dir() && file_name(p).is_some_and(is_cwd_dir_name));
                let has_files = children.iter().any(|p| is_jsonl(p));
                if has_cwd_dirs && !has_files {
                    Ok(SessionDirs::Layout {
                        root: dir.to_path_buf(),
                    })
                } else {
                    Ok(SessionDirs::Flat {
                        dir: dir.to_path_buf(),
                    })
                }
            }
        }
    }

    /// Like [`Self::resolve`], but a `--session-dir` that does not exist yet is fine: it is
    /// where a new session (a fork) will be written, and the store creates it.
    pub fn for_writing(session_dir: Option<&Path>) -> Result<Self> {
        match session_dir {
            Some(dir) if !dir.exists() => Ok(SessionDirs::Flat {
                dir: dir.to_path_buf(),
            }),
            other => Self::resolve(other),
        }
    }

    /// Human-readable place, for "not found" messages.
    pub fn describe(&self) -> String {
        match self {
            SessionDirs::Layout { root } | SessionDirs::Flat { dir: root } => {
                root.display().to_string()
            }
        }
    }

    /// The store's view of these directories: lookup walks the same folders the store writes
    /// to and lists, so the two can never disagree about what a session is.
    pub fn repository(&self) -> JsonlRepository {
        match self {
            SessionDirs::Layout { root } => JsonlRepository::new(root.clone()),
            SessionDirs::Flat { dir } => JsonlRepository::flat(dir.clone()),
        }
    }

    /// Every session file with its id (from the file name, else its header line). Files
    /// whose header cannot be read are left out: they stay reachable by path.
    pub fn candidates(&self) -> Result<Vec<Candidate>> {
        Ok(self
            .repository()
            .session_files()
            .into_iter()
            .filter_map(|path| session_id_of(&path).map(|id| Candidate { id, path }))
            .collect())
    }

    /// Resolves a path, full id or unique id prefix to a session file.
    /// `prefer` is the folder of the current project: an exact id present in several folders
    /// (an imported copy) resolves to the one there.
    pub fn find(&self, arg: &str, prefer: Option<&Path>) -> Result<PathBuf> {
        if looks_like_path(arg) {
            let path = PathBuf::from(arg);
            if path.is_file() {
                return Ok(path);
            }
            return Err(CliError::NotFound(format!("session file not found: {arg}")));
        }
        if arg.is_empty() {
            return Err(CliError::Usage("empty session id".into()));
        }
        let candidates = self.candidates()?;
        let exact: Vec<&Candidate> = candidates.iter().filter(|c| c.id == arg).collect();
        let chosen = if exact.is_empty() {
            candidates
                .iter()
                .filter(|c| c.id.starts_with(arg))
                .collect::<Vec<_>>()
        } else {
            exact
        };
        match chosen.as_slice() {
            [] => Err(CliError::NotFound(format!(
                "no session matching '{arg}' in {}",
                self.describe()
            ))),
            [one] => Ok(one.path.clone()),
            many => {
                if let Some(prefer) = prefer {
                    let local: Vec<_> = many
                        .iter()
                        .filter(|c| c.id == arg && c.path.parent() == Some(prefer))
                        .collect();
                    if let [one] = local.as_slice() {
                        return Ok(one.path.clone());
                    }
                }
                Err(CliError::Ambiguous {
                    prefix: arg.to_string(),
                    candidates: many
                        .iter()
                        .map(|c| format!("{} ({})", c.id, c.path.display()))
                        .collect(),
                })
            }
        }
    }
}

/// pi's rule: anything with a path separator or a `.jsonl` ending is a path, not an id.
pub use arbor_agent::session::jsonl::layout::looks_like_path;

/// The session id of a file: from `<fileTs>_<id>.jsonl`, else from its header line.
pub fn session_id_of(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    if let Some(id) = layout::session_id_from_file_stem(stem) {
        return Some(id.to_string());
    }
    read_header(path).ok().map(|h| h.id)
}

/// Reads and parses only the first line of a session file.
pub fn read_header(path: &Path) -> Result<SessionHeader> {
    let file = fs::File::open(path).map_err(|e| CliError::io(path.display().to_string(), e))?;
    let mut line = String::new();
    BufReader::new(file)
        .read_line(&mut line)
        .map_err(|e| CliError::io(path.display().to_string(), e))?;
    SessionHeader::from_json(line.trim_end()).map_err(|e| {
        CliError::Session(arbor_agent::SessionError::Line {
            file: path.display().to_string(),
            line: 1,
            message: e.to_string(),
        })
    })
}

/// Whether `named` (a store session's id or location `<server>#<id>`) names the session
/// with id `id`: a switch to the session already open is no switch.
pub fn names_store_session(named: &str, id: &str) -> bool {
    named == id || named.rsplit_once('#').is_some_and(|(_, tail)| tail == id)
}

fn is_jsonl(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "jsonl")
}

fn file_name(path: &Path) -> Option<&str> {
    path.file_name().and_then(|n| n.to_str())
}

fn read_dir_sorted(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    let rd = fs::read_dir(dir).map_err(|e| CliError::io(dir.display().to_string(), e))?;
    for entry in rd {
        let entry = entry.map_err(|e| CliError::io(dir.display().to_string(), e))?;
        paths.push(entry.path());
    }
    paths.sort();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn touch(dir: &Path, name: &str, header_id: &str) -> PathBuf {
        let path = dir.join(name);
        fs::write(
            &path,
            format!(
                "{{\"type\":\"session\",\"version\":3,\"id\":\"{header_id}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/x\"}}\n"
            ),
        )
        .unwrap();
        path
    }

    #[test]
    fn ids_come_from_file_names() {
        assert_eq!(
            layout::session_id_from_file_stem("2026-11-30T12-36-34-121Z_my_session.1"),
            Some("my_session.1")
        );
        assert_eq!(
            layout::session_id_from_file_stem("notes_about_things"),
            None
        );
    }

    #[test]
    fn finds_by_full_id_prefix_and_reports_ambiguity() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let a = touch(dir, "2026-01-01T00-00-00-000Z_abc111.jsonl", "abc111");
        let b = touch(dir, "2026-01-01T00-00-01-000Z_abc222.jsonl", "abc222");
        let c = touch(dir, "odd-name.jsonl", "zzz999");
        let dirs = SessionDirs::Flat {
            dir: dir.to_path_buf(),
        };
        assert_eq!(dirs.find("abc111", None).unwrap(), a);
        assert_eq!(dirs.find("abc2", None).unwrap(), b);
        assert_eq!(dirs.find("zzz", None).unwrap(), c);
        let err = dirs.find("abc", None).unwrap_err().to_string();
        assert!(err.contains("ambiguous") && err.contains("abc111") && err.contains("abc222"));
        let err = dirs.find("nope", None).unwrap_err();
        assert!(matches!(err, CliError::NotFound(_)), "{err}");
    }

    #[test]
    fn exact_id_beats_longer_ids_sharing_it_as_prefix() {
        let tmp = tempfile::tempdir().unwrap();
        let a = touch(tmp.path(), "2026-01-01T00-00-00-000Z_abc.jsonl", "abc");
        touch(tmp.path(), "2026-01-01T00-00-00-000Z_abcd.jsonl", "abcd");
        let dirs = SessionDirs::Flat {
            dir: tmp.path().to_path_buf(),
        };
        assert_eq!(dirs.find("abc", None).unwrap(), a);
    }

    #[test]
    fn a_directory_of_cwd_folders_is_a_layout_root() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("--srv-proj--");
        fs::create_dir(&project).unwrap();
        let a = touch(&project, "2026-01-01T00-00-00-000Z_s1.jsonl", "s1");
        let dirs = SessionDirs::resolve(Some(tmp.path())).unwrap();
        assert_eq!(
            dirs,
            SessionDirs::Layout {
                root: tmp.path().to_path_buf()
            }
        );
        assert_eq!(dirs.find("s1", None).unwrap(), a);
        let flat = SessionDirs::resolve(Some(&project)).unwrap();
        assert!(matches!(flat, SessionDirs::Flat { .. }));
        // A directory with files of its own and per-cwd folders is flat, and both are searched.
        let b = touch(tmp.path(), "2026-01-01T00-00-00-000Z_s2.jsonl", "s2");
        let mixed = SessionDirs::resolve(Some(tmp.path())).unwrap();
        assert!(matches!(mixed, SessionDirs::Flat { .. }));
        assert_eq!(mixed.find("s1", None).unwrap(), a);
        assert_eq!(mixed.find("s2", None).unwrap(), b);
    }

    #[test]
    fn paths_are_not_looked_up_as_ids() {
        let dirs = SessionDirs::Flat {
            dir: PathBuf::from("/nonexistent"),
        };
        let err = dirs.find("./missing.jsonl", None).unwrap_err().to_string();
        assert_eq!(err, "session file not found: ./missing.jsonl");
    }
}
