//! The storage conformance suite against the in-memory backend.

use arbor_session::conformance::Fixture;
use arbor_session::MemoryRepository;

arbor_session::session_conformance_tests!(|| async { Fixture::bare(MemoryRepository::new()) });
