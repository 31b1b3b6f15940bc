//! The single integration-test binary of `arbor-session-postgres`; topics live in `suite/`.
//! Every test needs a server: `ARBOR_TEST_POSTGRES_URL` (see `.ci/postgres.sh`). Without it each
//! test prints a SKIPPED line and passes, unless `ARBOR_TEST_POSTGRES_REQUIRE` is set (CI), where
//! a missing server fails the run.
// Tests may panic on unexpected values; the workspace lint is for library code.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod suite;
