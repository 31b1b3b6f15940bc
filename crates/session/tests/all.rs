//! The single integration-test binary of `arbor-session`; topics live in `suite/`.
// Tests may panic on unexpected values; the workspace lint is for library code.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod suite;
