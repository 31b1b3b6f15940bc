//! Files a project supplies (its `.arbor/` files and the context files from the project root
//! down to the cwd) are used only while they resolve inside the project: a cloned repository
//! must not be able to send `~/.ssh/id_rsa` to the provider as "AGENTS.md" (DECISIONS §30.6).

use std::path::{Path, PathBuf};

use super::{not_regular, read_bounded, Bounded, FileError, FileKind};

/// The root of the project `cwd` is in: the nearest ancestor (the cwd included) holding `.git`,
/// else the cwd itself.
pub fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// Reads files with the project's boundary applied to those under its root.
#[derive(Debug, Clone)]
pub struct ProjectFiles {
    /// The root as reached from the cwd (symlinks not resolved).
    root: PathBuf,
    /// The root with symlinks resolved; what resolved paths are compared with.
    real_root: PathBuf,
}

impl ProjectFiles {
    /// The project `cwd` is in.
    pub fn for_cwd(cwd: &Path) -> ProjectFiles {
        let root = project_root(cwd);
        let real_root = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
        ProjectFiles { root, real_root }
    }

    /// The project root, as reached from the cwd.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether `path` names a file of the project (by where it is named, not where it leads).
    pub fn contains(&self, path: &Path) -> bool {
        path.starts_with(&self.root) || path.starts_with(&self.real_root)
    }

    /// [`read_bounded`], refusing a project file that resolves outside the project. Files
    /// outside the project (the user's own) are read as they are.
    pub fn read(&self, path: &Path, kind: FileKind) -> Result<Option<Bounded>, FileError> {
        // What the path is comes first: `/dev/zero` behind a project's link is named a device.
        if let Some(is) = std::fs::metadata(path).ok().as_ref().and_then(not_regular) {
            return Err(FileError::NotRegular {
                what: kind.what,
                path: path.to_path_buf(),
                is,
            });
        }
        if self.contains(path) {
            match std::fs::canonicalize(path) {
                Ok(target) if !target.starts_with(&self.real_root) => {
                    return Err(FileError::OutsideProject {
                        what: kind.what,
                        path: path.to_path_buf(),
                        target,
                        project: self.root.clone(),
                    })
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(source) => {
                    return Err(FileError::Io {
                        what: kind.what,
                        path: path.to_path_buf(),
                        source,
                    })
                }
            }
        }
        read_bounded(path, kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_the_nearest_git_ancestor_or_the_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        assert_eq!(project_root(&sub), dir.path());
    }

    #[test]
    fn a_project_file_leading_outside_is_refused_and_a_user_file_is_not() {
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret.txt");
        std::fs::write(&secret, "secret").unwrap();
        let proj = tempfile::tempdir().unwrap();
        std::fs::create_dir(proj.path().join(".git")).unwrap();
        let link = proj.path().join("AGENTS.md");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let files = ProjectFiles::for_cwd(proj.path());
        let err = files.read(&link, FileKind::CONTEXT).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("context file {}: it resolves to ", link.display())),
            "{text}"
        );
        assert!(text.ends_with("; not used"), "{text}");
        // Inside stays fine, symlink or not.
        std::fs::write(proj.path().join("real.md"), "inside").unwrap();
        let inner = proj.path().join("CLAUDE.md");
        std::os::unix::fs::symlink(proj.path().join("real.md"), &inner).unwrap();
        assert_eq!(
            files
                .read(&inner, FileKind::CONTEXT)
                .unwrap()
                .unwrap()
                .text(),
            "inside"
        );
        // A file outside the project is the user's: read as is.
        assert_eq!(
            files
                .read(&secret, FileKind::CONTEXT)
                .unwrap()
                .unwrap()
                .text(),
            "secret"
        );
        // A dangling link is a missing file.
        let dangling = proj.path().join("gone.md");
        std::os::unix::fs::symlink(proj.path().join("nothing"), &dangling).unwrap();
        assert_eq!(files.read(&dangling, FileKind::CONTEXT).unwrap(), None);
    }
}
