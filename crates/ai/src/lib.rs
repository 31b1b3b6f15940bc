//! arbor-ai
