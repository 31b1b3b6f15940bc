//! The user's `models.json`, read through the bounded reader and layered over the catalogue
//! (arbor-ai parses it; the app decides how a file may be read, DECISIONS §30.3).

use std::path::Path;

use arbor_ai::models::ModelRegistry;

use arbor_tools::files::{read_bounded, FileKind};

use crate::error::CliError;

/// Layers `path` over `registry`; a missing file changes nothing.
pub fn load_models_json(registry: &mut ModelRegistry, path: &Path) -> Result<(), CliError> {
    let Some(file) = read_bounded(path, FileKind::MODELS)? else {
        return Ok(());
    };
    registry
        .apply_models_json_str(&file.text(), &path.display().to_string())
        .map_err(|e| CliError::Config(e.to_string()))
}
