//! Path arguments as models write them: one leading `@` dropped, Unicode
//! spaces made plain, `~` expanded, `file://` URLs accepted, relative paths taken from the
//! session cwd (DECISIONS §22.40). Reads also try the macOS spellings of a path that does not exist.

use std::path::{Component, Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// The user's home directory (`HOME`), if set.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// Decodes `%XX` escapes of a `file://` URL path; malformed escapes stay as written.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Cleans a path argument without resolving it against a directory.
pub fn expand(raw: &str) -> String {
    let stripped = raw.strip_prefix('@').unwrap_or(raw);
    let spaced: String = stripped
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    if let Some(rest) = spaced.strip_prefix("file://") {
        // file:///abs/path or file://localhost/abs/path
        let rest = rest.strip_prefix("localhost").unwrap_or(rest);
        return percent_decode(rest);
    }
    if spaced == "~" {
        if let Some(home) = home_dir() {
            return home.to_string_lossy().into_owned();
        }
    }
    if let Some(rest) = spaced.strip_prefix("~/") {
        if let Some(home) = home_dir() {
            return home.join(rest).to_string_lossy().into_owned();
        }
    }
    spaced
}

/// Removes `.` and folds `..` lexically, like Node's `path.resolve` (symlinks are not followed).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in path.components() {
        match comp {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The absolute path a tool argument names, relative to `cwd`.
pub fn resolve(raw: &str, cwd: &Path) -> PathBuf {
    let expanded = expand(raw);
    let p = Path::new(&expanded);
    if p.is_absolute() {
        normalize(p)
    } else {
        normalize(&cwd.join(p))
    }
}

/// Like [`resolve`], then tries the spellings macOS uses in file names (narrow no-break space
/// before AM/PM, NFD, a curly apostrophe) when the plain path does not exist.
pub fn resolve_for_read(raw: &str, cwd: &Path) -> PathBuf {
    let resolved = resolve(raw, cwd);
    if resolved.exists() {
        return resolved;
    }
    let Some(text) = resolved.to_str() else {
        return resolved;
    };
    let am_pm = am_pm_variant(text);
    let nfd: String = text.nfd().collect();
    let curly = text.replace('\'', "\u{2019}");
    let nfd_curly = nfd.replace('\'', "\u{2019}");
    for candidate in [am_pm, nfd, curly, nfd_curly] {
        if candidate != text && Path::new(&candidate).exists() {
            return PathBuf::from(candidate);
        }
    }
    resolved
}

/// ` AM.` / ` PM.` (any case) with a narrow no-break space, as in macOS screenshot names.
fn am_pm_variant(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find(' ') {
        let after = &rest[pos + 1..];
        let is_marker = after.len() >= 3
            && after.is_char_boundary(2)
            && matches!(after[..2].to_ascii_uppercase().as_str(), "AM" | "PM")
            && after[2..].starts_with('.');
        out.push_str(&rest[..pos]);
        out.push(if is_marker { '\u{202F}' } else { ' ' });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// What a path names when it is neither a regular file nor a directory (a device, a FIFO, a
/// socket), or `None`. The file tools refuse those before opening them: reading `/dev/zero`
/// never ends and opening a FIFO waits for a writer that may never come (DECISIONS §22.45).
pub(crate) fn special_kind(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let ty = meta.file_type();
    if ty.is_file() || ty.is_dir() {
        None
    } else if ty.is_fifo() {
        Some("a FIFO")
    } else if ty.is_socket() {
        Some("a socket")
    } else if ty.is_char_device() || ty.is_block_device() {
        Some("a device")
    } else {
        Some("not a regular file")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_unicode_spaces_tilde_and_file_urls() {
        let cwd = Path::new("/work/proj");
        assert_eq!(
            resolve("@src/a.rs", cwd),
            PathBuf::from("/work/proj/src/a.rs")
        );
        assert_eq!(
            resolve("my\u{00A0}file\u{3000}x.txt", cwd),
            PathBuf::from("/work/proj/my file x.txt")
        );
        assert_eq!(
            resolve("file:///tmp/a%20b.txt", cwd),
            PathBuf::from("/tmp/a b.txt")
        );
        assert_eq!(resolve("../other/./x", cwd), PathBuf::from("/work/other/x"));
        assert_eq!(resolve("/abs/y", cwd), PathBuf::from("/abs/y"));
        if let Some(home) = home_dir() {
            assert_eq!(resolve("~/notes.md", cwd), home.join("notes.md"));
            assert_eq!(resolve("~", cwd), normalize(&home));
        }
    }

    #[test]
    fn screenshot_names_get_a_narrow_space() {
        assert_eq!(
            am_pm_variant("/d/Shot 10.12.03 PM.png"),
            "/d/Shot 10.12.03\u{202F}PM.png"
        );
        assert_eq!(am_pm_variant("/d/plain name.png"), "/d/plain name.png");
    }

    #[test]
    fn reads_find_the_curly_apostrophe_spelling() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Bob\u{2019}s notes.txt"), "x").unwrap();
        let found = resolve_for_read("Bob's notes.txt", dir.path());
        assert_eq!(found, dir.path().join("Bob\u{2019}s notes.txt"));
    }
}
