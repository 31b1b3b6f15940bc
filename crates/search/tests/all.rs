//! The `arbor-search` integration suite (one binary; one file per topic under `suite/`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
