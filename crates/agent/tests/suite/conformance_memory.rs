//! The storage conformance suite against the in-memory backend.

use arbor_agent::session::conformance::Fixture;
use arbor_agent::session::MemoryRepository;

arbor_agent::session_conformance_tests!(|| async { Fixture::bare(MemoryRepository::new()) });
