//! The project's files offered for `@` completion, walked once in the background at start.

/// The project's files for `@` completion: an `ignore` walk (honours .gitignore), relative
/// paths, at most `limit` (DECISIONS §23.6).
pub fn project_files(cwd: &std::path::Path, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    for entry in ignore::WalkBuilder::new(cwd).hidden(true).build().flatten() {
        if out.len() >= limit {
            break;
        }
        if entry.file_type().is_some_and(|t| t.is_file()) {
            if let Ok(rel) = entry.path().strip_prefix(cwd) {
                out.push(rel.display().to_string());
            }
        }
    }
    out.sort();
    out
}
