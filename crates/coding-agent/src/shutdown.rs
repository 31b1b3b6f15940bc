//! Ending a run in order on SIGTERM, SIGHUP or SIGINT, shared by every mode: the run is aborted
//! (the tools end their process groups and record what happened) and allowed to write its last
//! entries; the exit code is 128 + the signal, as pi's 143 / 129 (DECISIONS §28.9). A second
//! signal kills what is left and exits at once.

/// Aborts the run (tools are cancelled, bash process groups ended) and waits for it to write
/// its last entries; a second signal exits at once.
pub async fn stop<T>(
    harness: &arbor_agent::harness::AgentHarness,
    work: tokio::task::JoinHandle<T>,
) {
    let wind_down = async {
        harness.abort().await;
        let _ = work.await;
    };
    tokio::select! {
        _ = wind_down => {}
        code = shutdown_signal() => exit_now(code),
    }
}

/// A second signal: every process group arbor started gets SIGKILL, then arbor exits.
pub fn exit_now(code: u8) -> ! {
    arbor_tools::process::registry::kill_all_now();
    std::process::exit(i32::from(code))
}

/// Resolves on SIGTERM (143), SIGHUP (129) or SIGINT (130) with the exit code.
pub async fn shutdown_signal() -> u8 {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut hup), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => 143,
        _ = hup.recv() => 129,
        _ = int.recv() => 130,
    }
}
