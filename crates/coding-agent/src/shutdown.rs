//! Ending a run in order on SIGTERM or SIGHUP, shared by every mode: the run is aborted and
//! allowed to write its last entries; a second signal exits at once.

/// Aborts the run (tools are cancelled, bash process groups killed) and waits for it to write
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
        code = shutdown_signal() => std::process::exit(i32::from(code)),
    }
}

/// Resolves on SIGTERM (143) or SIGHUP (129) with the exit code.
pub async fn shutdown_signal() -> u8 {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => 143,
        _ = hup.recv() => 129,
    }
}
