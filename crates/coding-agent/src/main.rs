//! The `arbor` binary; everything lives in the library so it can be tested.

fn main() -> std::process::ExitCode {
    arbor_coding_agent::app::main()
}
