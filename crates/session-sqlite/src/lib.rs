//! SQLite backend
