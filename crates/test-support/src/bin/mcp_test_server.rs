//! A real MCP server for Arbor's MCP tests, built on the SDK's server side: over stdio (see
//! [`arbor_test_support::mcp_server`] for its tools and the environment that shapes it), or
//! over streamable HTTP with `--http ADDR` ([`arbor_test_support::mcp_http`]).

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, addr] if flag == "--http" => arbor_test_support::mcp_http::main(addr),
        _ => arbor_test_support::mcp_server::main(),
    }
}
