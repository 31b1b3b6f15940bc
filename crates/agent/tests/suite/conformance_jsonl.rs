//! The storage conformance suite against the JSONL backend (per-cwd and flat layouts).

use arbor_agent::session::conformance::Fixture;
use arbor_agent::session::jsonl::JsonlRepository;

mod per_cwd {
    use super::*;
    arbor_agent::session_conformance_tests!(|| async {
        let dir = tempfile::tempdir().expect("tempdir");
        Fixture::new(JsonlRepository::new(dir.path()), dir)
    });
}

mod flat {
    use super::*;
    arbor_agent::session_conformance_tests!(|| async {
        let dir = tempfile::tempdir().expect("tempdir");
        Fixture::new(JsonlRepository::flat(dir.path()), dir)
    });
}
