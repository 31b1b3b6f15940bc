//! A real MCP server over stdio, built on the SDK's server side, for Arbor's MCP tests: see
//! [`arbor_test_support::mcp_server`] for its tools and the environment that shapes it.

fn main() -> std::process::ExitCode {
    arbor_test_support::mcp_server::main()
}
