//! `/import PATH` (pi's command, DECISIONS §23.156): a JSONL session file from elsewhere is
//! copied into the session store under its own id and working directory, byte for byte, so it
//! lists, resumes and forks like a session Arbor wrote. The copy is new and private; the source
//! is only read. A session of that id already stored is opened instead when it is the same
//! file, and refused otherwise (two files with one id would make `--session ID` ambiguous).

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use arbor_agent::session::jsonl::layout::session_file_name;
use arbor_agent::session::jsonl::{JsonlRepository, DIR_MODE, FILE_MODE};
use arbor_agent::session::storage::SessionStorage as _;

use crate::error::CliError;

/// Copies `file` into `repo` and returns the stored copy's path (or the stored file that
/// already is this session).
pub async fn import_jsonl(repo: &JsonlRepository, file: &Path) -> Result<PathBuf, CliError> {
    let meta = tokio::fs::metadata(file)
        .await
        .map_err(|e| CliError::io(file.display().to_string(), e))?;
    if !meta.is_file() {
        return Err(CliError::Usage(format!(
            "/import: {} is not a session file",
            file.display()
        )));
    }
    // Opening checks the header and every line's envelope, so a broken file is refused with
    // its line before anything is copied.
    let shown = file.display().to_string();
    let header = repo.open_read_only(&shown).await?.header().await?;
    if let Some(existing) = repo.find(&header.id)? {
        let same = std::fs::canonicalize(&existing).ok() == std::fs::canonicalize(file).ok();
        if same {
            return Ok(existing);
        }
        return Err(CliError::Usage(format!(
            "/import: a session with id {} is already stored: {}",
            header.id,
            existing.display()
        )));
    }
    let dir = repo.dir_for_cwd(&header.cwd);
    let dest = dir.join(session_file_name(&header.timestamp, &header.id));
    let (src, to) = (file.to_path_buf(), dest.clone());
    tokio::task::spawn_blocking(move || copy_private(&src, &dir, &to))
        .await
        .map_err(|e| CliError::Internal(format!("/import: {e}")))??;
    Ok(dest)
}

/// Copies `src` to a new file `dest` (0600) in `dir` (made 0700); nothing is overwritten, and
/// a failed copy leaves no partial file behind.
fn copy_private(src: &Path, dir: &Path, dest: &Path) -> Result<(), CliError> {
    let io = |p: &Path| {
        let p = p.display().to_string();
        move |e| CliError::io(p, e)
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(io(dir))?;
    let mut input = std::fs::File::open(src).map_err(io(src))?;
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(dest)
        .map_err(io(dest))?;
    let copied = std::io::copy(&mut input, &mut out)
        .and_then(|_| out.flush())
        .and_then(|()| out.sync_all());
    if let Err(e) = copied {
        drop(out);
        let _ = std::fs::remove_file(dest);
        return Err(CliError::io(dest.display().to_string(), e));
    }
    Ok(())
}
