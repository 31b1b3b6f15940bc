//! arbor-agent
