//! The storage conformance suite against the JSONL backend (per-cwd and flat layouts).

use arbor_session::conformance::Fixture;
use arbor_session::jsonl::JsonlRepository;
use arbor_session::SessionError;

/// A repository that can open a session file made in another process (its folder).
async fn reopen(location: String) -> Result<JsonlRepository, SessionError> {
    let path = std::path::PathBuf::from(location);
    Ok(JsonlRepository::flat(
        path.parent().unwrap_or(std::path::Path::new(".")),
    ))
}

mod per_cwd {
    use super::*;
    arbor_session::session_conformance_tests!(|| async {
        let dir = tempfile::tempdir().expect("tempdir");
        Fixture::new(JsonlRepository::new(dir.path()), dir)
    }, second_process: reopen);
}

mod flat {
    use super::*;
    arbor_session::session_conformance_tests!(|| async {
        let dir = tempfile::tempdir().expect("tempdir");
        Fixture::new(JsonlRepository::flat(dir.path()), dir)
    }, second_process: reopen);
}
