//! The session: an append-only entry tree behind one async storage contract.

pub mod entry;
pub mod storage;

pub use entry::*;
pub use storage::*;
