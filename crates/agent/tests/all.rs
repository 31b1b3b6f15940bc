//! The single integration-test binary of arbor-agent.
mod suite;
