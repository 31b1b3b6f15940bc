//! Ctrl+G: the editor's text edited in `$VISUAL` / `$EDITOR` (default `vi`) through a
//! temporary file, run through the shell so the variable may carry arguments.

use std::path::PathBuf;
use std::process::ExitStatus;

/// Why the external editor gave no text back; the texts are what the transcript shows.
#[derive(Debug, thiserror::Error)]
pub enum EditorError {
    /// The temporary file could not be written or read back.
    #[error("{}: {source}", .path.display())]
    File {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("Could not start the editor {editor}: {source}")]
    Start {
        editor: String,
        #[source]
        source: std::io::Error,
    },
    #[error("The editor {editor} exited with {status}")]
    Exit { editor: String, status: ExitStatus },
}

/// Edits `text` in `$VISUAL` / `$EDITOR`; the result without trailing newlines.
pub fn edit(text: &str) -> Result<String, EditorError> {
    let editor = std::env::var("VISUAL")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .or_else(|| {
            std::env::var("EDITOR")
                .ok()
                .filter(|v| !v.trim().is_empty())
        })
        .unwrap_or_else(|| "vi".into());
    let dir = std::env::temp_dir();
    let path: PathBuf = dir.join(format!("arbor-edit-{}.md", std::process::id()));
    std::fs::write(&path, text).map_err(|source| EditorError::File {
        path: path.clone(),
        source,
    })?;
    // `$EDITOR` may carry arguments ("code --wait"): run it through the shell.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&path)
        .status()
        .map_err(|source| EditorError::Start {
            editor: editor.clone(),
            source,
        })?;
    let out = std::fs::read_to_string(&path).map_err(|source| EditorError::File {
        path: path.clone(),
        source,
    });
    let _ = std::fs::remove_file(&path);
    if !status.success() {
        return Err(EditorError::Exit { editor, status });
    }
    Ok(out?.trim_end_matches('\n').to_owned())
}
