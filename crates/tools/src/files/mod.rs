//! The one way Arbor reads a file it opens by itself (settings, models, auth, context and
//! system-prompt files, `@file` arguments): regular files only, at most a cap per kind, and —
//! for files a project supplies — only when they stay inside the project (DECISIONS §30.2–§30.5).
//! A cloned repository can point any of these names at `/dev/zero`, a FIFO or a huge file;
//! each case ends in an error naming the path and what it is, before anything blocks or grows.

mod project;

use std::io::Read;
use std::path::{Path, PathBuf};

pub use project::{project_root, ProjectFiles};

/// What a file is for, how much of it Arbor takes, and what happens past that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileKind {
    /// Names the file in errors ("settings file").
    pub what: &'static str,
    /// The most bytes taken from the file.
    pub cap: u64,
    /// What a larger file gets.
    pub over_cap: OverCap,
}

/// What a file larger than its kind's cap gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverCap {
    /// Refused with [`FileError::TooLarge`]: a half-read JSON file means nothing.
    Refuse,
    /// Cut at the cap (on a character boundary) and marked, so the reader sees the cut.
    Truncate,
}

const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;

impl FileKind {
    /// `settings.json`, user or project (DECISIONS §30.3).
    pub const SETTINGS: FileKind = FileKind::refused("settings file", MIB);
    /// `models.json`.
    pub const MODELS: FileKind = FileKind::refused("models file", MIB);
    /// `auth.json`.
    pub const AUTH: FileKind = FileKind::refused("auth file", MIB);
    /// Small configuration files of other features (trust, checkpoint settings, …).
    pub const CONFIG: FileKind = FileKind::refused("configuration file", MIB);
    /// `AGENTS.md`, `CLAUDE.md` and their variants (DECISIONS §30.4).
    pub const CONTEXT: FileKind = FileKind::truncated("context file", 256 * KIB);
    /// `SYSTEM.md`, `APPEND_SYSTEM.md` and `--system-prompt FILE`.
    pub const SYSTEM_PROMPT: FileKind = FileKind::truncated("system prompt file", 256 * KIB);
    /// `--theme FILE`, a JSON theme (DECISIONS §23.159).
    pub const THEME: FileKind = FileKind::refused("theme file", MIB);
    /// `arbor -p @FILE` (DECISIONS §30.5).
    pub const PROMPT_FILE: FileKind = FileKind::refused("@file", 32 * MIB);

    /// A kind refused over `cap` bytes.
    pub const fn refused(what: &'static str, cap: u64) -> FileKind {
        FileKind {
            what,
            cap,
            over_cap: OverCap::Refuse,
        }
    }

    /// A kind cut at `cap` bytes.
    pub const fn truncated(what: &'static str, cap: u64) -> FileKind {
        FileKind {
            what,
            cap,
            over_cap: OverCap::Truncate,
        }
    }
}

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// A device, FIFO, socket or directory where a file was expected.
    #[error("{what} {}: it is {is}, not a regular file", .path.display())]
    NotRegular {
        /// What the file is for (`FileKind::what`).
        what: &'static str,
        /// The path as given.
        path: PathBuf,
        /// What it is instead ("a device", "a FIFO", …).
        is: &'static str,
    },
    /// Larger than its kind allows.
    #[error("{what} {}: over the size limit of {}", .path.display(), size_text(*.cap))]
    TooLarge {
        /// What the file is for.
        what: &'static str,
        /// The path as given.
        path: PathBuf,
        /// The limit in bytes.
        cap: u64,
    },
    /// A project's file that resolves outside the project (DECISIONS §30.6).
    #[error("{what} {}: it resolves to {}, outside the project {}; not used", .path.display(), .target.display(), .project.display())]
    OutsideProject {
        /// What the file is for.
        what: &'static str,
        /// The path as given.
        path: PathBuf,
        /// Where it resolves to.
        target: PathBuf,
        /// The project's root.
        project: PathBuf,
    },
    /// The filesystem refused.
    #[error("{what} {}: {source}", .path.display())]
    Io {
        /// What the file is for.
        what: &'static str,
        /// The path as given.
        path: PathBuf,
        #[source]
        /// What the system said.
        source: std::io::Error,
    },
}

/// A file's bytes as far as its kind takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounded {
    /// The bytes read (at most the kind's cap).
    pub bytes: Vec<u8>,
    /// Set when the file was cut at this many bytes ([`OverCap::Truncate`]).
    pub truncated_at: Option<u64>,
}

impl Bounded {
    /// The text (invalid UTF-8 replaced, a leading BOM dropped).
    pub fn text(&self) -> String {
        let text = String::from_utf8_lossy(&self.bytes);
        text.strip_prefix('\u{FEFF}').unwrap_or(&text).to_owned()
    }

    /// The text with a visible notice at the end when it was cut, so that whoever reads it —
    /// the model included — knows the rest is missing (DECISIONS §30.4).
    pub fn text_with_notice(&self, path: &Path) -> String {
        let mut text = self.text();
        if let Some(at) = self.truncated_at {
            text.push_str(&format!(
                "\n\n[Arbor: {} is larger than {}; only its first {} are included]\n",
                path.display(),
                size_text(at),
                size_text(at)
            ));
        }
        text
    }
}

/// `256 KiB`, `1 MiB`, or bytes.
fn size_text(bytes: u64) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// Reads `path` as a `kind` file. `Ok(None)` when it does not exist (most such files are
/// optional). The type is checked before the file is opened, so a FIFO never blocks, and at
/// most `cap + 1` bytes are read, so `/dev/zero` behind a symlink or a huge file costs nothing.
pub fn read_bounded(path: &Path, kind: FileKind) -> Result<Option<Bounded>, FileError> {
    let io = |source: std::io::Error| FileError::Io {
        what: kind.what,
        path: path.to_path_buf(),
        source,
    };
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    if let Some(is) = not_regular(&meta) {
        return Err(FileError::NotRegular {
            what: kind.what,
            path: path.to_path_buf(),
            is,
        });
    }
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    let mut bytes = Vec::with_capacity(meta.len().min(kind.cap) as usize + 1);
    file.take(kind.cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 <= kind.cap {
        return Ok(Some(Bounded {
            bytes,
            truncated_at: None,
        }));
    }
    match kind.over_cap {
        OverCap::Refuse => Err(FileError::TooLarge {
            what: kind.what,
            path: path.to_path_buf(),
            cap: kind.cap,
        }),
        OverCap::Truncate => {
            bytes.truncate(kind.cap as usize);
            // Back off a character split by the cut (at most three bytes).
            let valid = match std::str::from_utf8(&bytes) {
                Ok(_) => bytes.len(),
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                Err(_) => bytes.len(),
            };
            bytes.truncate(valid);
            Ok(Some(Bounded {
                bytes,
                truncated_at: Some(kind.cap),
            }))
        }
    }
}

/// What a path is when it is not a regular file.
pub(super) fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    if meta.is_dir() {
        return Some("a directory");
    }
    crate::path::special_kind(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_none_and_a_small_one_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        assert_eq!(read_bounded(&path, FileKind::SETTINGS).unwrap(), None);
        std::fs::write(&path, "\u{FEFF}{}").unwrap();
        let got = read_bounded(&path, FileKind::SETTINGS).unwrap().unwrap();
        assert_eq!(got.text(), "{}");
        assert_eq!(got.truncated_at, None);
    }

    #[test]
    fn devices_fifos_and_directories_are_named_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix_mkfifo(&fifo);
        let err = read_bounded(&fifo, FileKind::SETTINGS).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "settings file {}: it is a FIFO, not a regular file",
                fifo.display()
            )
        );
        let err = read_bounded(Path::new("/dev/zero"), FileKind::CONTEXT).unwrap_err();
        assert_eq!(
            err.to_string(),
            "context file /dev/zero: it is a device, not a regular file"
        );
        let err = read_bounded(dir.path(), FileKind::AUTH).unwrap_err();
        assert!(err.to_string().contains("it is a directory"), "{err}");
    }

    #[test]
    fn over_the_cap_is_refused_or_cut_on_a_character_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        std::fs::write(&path, "é".repeat(10)).unwrap(); // 20 bytes
        let err = read_bounded(&path, FileKind::refused("models file", 8)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "models file {}: over the size limit of 8 bytes",
                path.display()
            )
        );
        let cut = read_bounded(&path, FileKind::truncated("context file", 7))
            .unwrap()
            .unwrap();
        assert_eq!(cut.text(), "ééé");
        assert_eq!(cut.truncated_at, Some(7));
        let noticed = cut.text_with_notice(&path);
        assert!(
            noticed.ends_with(&format!(
                "[Arbor: {} is larger than 7 bytes; only its first 7 bytes are included]\n",
                path.display()
            )),
            "{noticed}"
        );
        // Exactly at the cap is whole.
        let whole = read_bounded(&path, FileKind::refused("x", 20))
            .unwrap()
            .unwrap();
        assert_eq!(whole.bytes.len(), 20);
    }

    #[test]
    fn proc_files_report_no_size_but_are_read_up_to_the_cap() {
        let got = read_bounded(Path::new("/proc/self/status"), FileKind::CONFIG)
            .unwrap()
            .unwrap();
        assert!(got.text().contains("Name:"));
    }

    fn nix_mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }
}
