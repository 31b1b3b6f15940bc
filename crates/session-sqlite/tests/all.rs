//! Integration tests of the SQLite session backend.
mod suite;
