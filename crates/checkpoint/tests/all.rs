//! Integration tests of the checkpoint stores on temporary git repositories and directories.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
