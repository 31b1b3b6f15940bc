//! Integration tests of the built-in tools, called directly on temp directories.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
