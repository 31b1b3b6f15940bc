// clippy's `redundant_clone` misreads values used again inside `json!` and `prop_assert_eq!`.
#![allow(clippy::redundant_clone)]
//! The single integration-test binary of `arbor-ai`; topics live in `suite/`.
// Tests may panic on unexpected values; the workspace lint is for library code.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod suite;
