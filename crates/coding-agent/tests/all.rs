//! Integration tests: run the real `arbor` binary against the shared fixtures and temp dirs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
