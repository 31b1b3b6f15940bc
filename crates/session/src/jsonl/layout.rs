//! Where session files live and how they are named (pi's scheme, under `~/.arbor`).

use std::path::{Path, PathBuf};

/// `ARBOR_HOME`, else `~/.arbor`.
pub fn arbor_home() -> PathBuf {
    if let Some(dir) = non_empty_env("ARBOR_HOME") {
        return expand_tilde(&dir);
    }
    home_dir().join(".arbor")
}

/// The default sessions root: `<arbor home>/sessions`.
pub fn default_sessions_root() -> PathBuf {
    arbor_home().join("sessions")
}

/// pi's sessions root (`PI_CODING_AGENT_DIR` or `~/.pi/agent`, then `sessions`), for reading
/// sessions that pi wrote.
pub fn pi_sessions_root() -> PathBuf {
    let agent = match non_empty_env("PI_CODING_AGENT_DIR") {
        Some(dir) => expand_tilde(&dir),
        None => home_dir().join(".pi").join("agent"),
    };
    agent.join("sessions")
}

/// pi's per-cwd directory name: strip one leading `/` or `\`, turn every `/`, `\` and `:` into
/// `-`, wrap in `--…--`. Lossy by design (`/a-b` and `/a/b` share a directory), which is why
/// headers carry the real `cwd`.
pub fn encode_cwd(cwd: &str) -> String {
    let trimmed = cwd
        .strip_prefix('/')
        .or_else(|| cwd.strip_prefix('\\'))
        .unwrap_or(cwd);
    let body: String = trimmed
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{body}--")
}

/// `<ISO timestamp with ':' and '.' replaced by '-'>_<session id>.jsonl`.
pub fn session_file_name(created_iso: &str, session_id: &str) -> String {
    let ts: String = created_iso
        .chars()
        .map(|c| if matches!(c, ':' | '.') { '-' } else { c })
        .collect();
    format!("{ts}_{session_id}.jsonl")
}

/// The session id encoded in a file name (`<ts>_<id>.jsonl`, pi's naming), if the name has
/// that shape: the part before the first `_` must look like the file timestamp (ids may hold
/// `_`, the timestamp never does), so `notes_about_things.jsonl` names no id.
pub fn session_id_from_file_name(name: &str) -> Option<&str> {
    session_id_from_file_stem(name.strip_suffix(".jsonl")?)
}

/// [`session_id_from_file_name`] without the `.jsonl` suffix.
pub fn session_id_from_file_stem(stem: &str) -> Option<&str> {
    let (ts, id) = stem.split_once('_')?;
    let b = ts.as_bytes();
    let looks_like_ts =
        b.len() >= 20 && ts.ends_with('Z') && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-';
    (looks_like_ts && !id.is_empty()).then_some(id)
}

/// Whether a directory name is a pi/Arbor per-cwd directory (`--…--`).
pub fn is_cwd_dir_name(name: &str) -> bool {
    name.len() >= 4 && name.starts_with("--") && name.ends_with("--")
}

/// Arguments with a path separator or a `.jsonl` suffix are paths; anything else is an id.
pub fn looks_like_path(id_or_path: &str) -> bool {
    id_or_path.contains('/') || id_or_path.contains('\\') || id_or_path.ends_with(".jsonl")
}

/// Sidecar names used next to a session file.
pub fn torn_sidecar(path: &Path, unix_ms: i64) -> PathBuf {
    with_suffix(path, &format!(".torn-{unix_ms}"))
}

/// `<file>.v<N>.bak`: the original of a migrated file.
pub fn backup_path(path: &Path, version: u32) -> PathBuf {
    with_suffix(path, &format!(".v{version}.bak"))
}

/// A temporary sibling for atomic rewrites (same directory, so the rename stays atomic).
pub fn temp_path(path: &Path, unix_ms: i64) -> PathBuf {
    with_suffix(path, &format!(".tmp-{}-{unix_ms}", std::process::id()))
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut os = path.as_os_str().to_owned();
    os.push(suffix);
    PathBuf::from(os)
}

fn non_empty_env(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.trim().is_empty())
}

fn home_dir() -> PathBuf {
    non_empty_env("HOME")
        .or_else(|| non_empty_env("USERPROFILE"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn expand_tilde(p: &str) -> PathBuf {
    if p == "~" {
        return home_dir();
    }
    match p.strip_prefix("~/") {
        Some(rest) => home_dir().join(rest),
        None => PathBuf::from(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_encoding_matches_pi() {
        assert_eq!(encode_cwd("/srv/u/proj"), "--srv-u-proj--");
        assert_eq!(encode_cwd("C:\\x\\y"), "--C--x-y--");
        assert_eq!(encode_cwd("/tmp/my-project"), "--tmp-my-project--");
        assert_eq!(encode_cwd("//double"), "---double--");
        assert_eq!(encode_cwd("relative/dir"), "--relative-dir--");
    }

    #[test]
    fn file_names_match_pi() {
        assert_eq!(
            session_file_name(
                "2026-11-30T12:35:22.918Z",
                "01a22c73-e6a6-7170-a67f-ada77ed849fa"
            ),
            "2026-11-30T12-35-22-918Z_01a22c73-e6a6-7170-a67f-ada77ed849fa.jsonl"
        );
        assert_eq!(
            session_id_from_file_name("2026-11-30T12-36-34-121Z_my-session.1.jsonl"),
            Some("my-session.1")
        );
        assert_eq!(session_id_from_file_name("notes.txt"), None);
        assert_eq!(session_id_from_file_name("notes_about_things.jsonl"), None);
        assert_eq!(
            session_id_from_file_name("2026-11-30T12-36-34-121Z_.jsonl"),
            None
        );
        assert!(looks_like_path("a/b"));
        assert!(looks_like_path("x.jsonl"));
        assert!(!looks_like_path("0190abcd-1234"));
    }

    #[test]
    fn sidecars_sit_next_to_the_file() {
        let p = Path::new("/d/s.jsonl");
        assert_eq!(torn_sidecar(p, 5), PathBuf::from("/d/s.jsonl.torn-5"));
        assert_eq!(backup_path(p, 1), PathBuf::from("/d/s.jsonl.v1.bak"));
    }
}
