//! A short helper command whose output arbor needs before it can go on — a `!command` API key
//! in auth.json or models.json: run with `sh -c` in its own process group, bounded by a
//! timeout, the whole group ended when it is over (DECISIONS §28.6). It runs synchronously
//! (keys are looked up from synchronous code), so a command that hangs could otherwise hold
//! start-up or a request forever.

use std::io::Read;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::group::{end_blocking, ProcessGroup};

/// The most a key command may take (DECISIONS §28.6).
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a helper command gave no value.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    #[error("could not start `sh`: {0}")]
    /// `sh` could not be started.
    Spawn(#[source] std::io::Error),
    #[error("could not wait for the command: {0}")]
    /// Waiting for the command failed.
    Wait(#[source] std::io::Error),
    #[error("the command did not finish within {} s and was stopped", .0.as_secs())]
    /// The command ran past its bound and its group was ended.
    TimedOut(Duration),
    #[error("the command exited with {0}")]
    /// The command exited unsuccessfully.
    Failed(std::process::ExitStatus),
    #[error("the command printed nothing")]
    /// The command succeeded but printed nothing.
    Empty,
}

/// Runs `command` with `sh -c` and returns its trimmed stdout; stderr is discarded and stdin
/// is empty. After `timeout` the whole group is ended.
pub fn run_helper(command: &str, timeout: Duration) -> Result<String, HelperError> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(HelperError::Spawn)?;
    let group = ProcessGroup::adopt(child.id());
    // The pipe is read on a thread so a chatty command cannot fill it and stall.
    let reader = child.stdout.take().map(|mut out| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = out.read_to_end(&mut buf);
            buf
        })
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait().map_err(HelperError::Wait)? {
            Some(status) => break Some(status),
            None if Instant::now() >= deadline => break None,
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    let Some(status) = status else {
        if let Some(g) = group {
            let pgid = g.id();
            g.release();
            // The shell is reaped on a thread so the group's end is seen without a zombie.
            let _ = end_blocking(pgid);
        }
        let _ = child.kill();
        let _ = child.wait();
        return Err(HelperError::TimedOut(timeout));
    };
    // Background jobs of a key command have no reason to live on.
    if let Some(g) = group {
        let pgid = g.id();
        g.release();
        let _ = end_blocking(pgid);
    }
    let out = reader.and_then(|r| r.join().ok()).unwrap_or_default();
    if !status.success() {
        return Err(HelperError::Failed(status));
    }
    let text = String::from_utf8_lossy(&out).trim().to_owned();
    if text.is_empty() {
        return Err(HelperError::Empty);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_helper_prints_its_value() {
        assert_eq!(run_helper("echo ' sk-1 '", HELPER_TIMEOUT).unwrap(), "sk-1");
        assert!(matches!(
            run_helper("exit 3", HELPER_TIMEOUT),
            Err(HelperError::Failed(_))
        ));
        assert!(matches!(
            run_helper("true", HELPER_TIMEOUT),
            Err(HelperError::Empty)
        ));
    }

    #[test]
    fn a_hanging_helper_is_stopped_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let started = Instant::now();
        let err = run_helper(
            &format!("sleep 30 & echo $! > {}; sleep 30", pids.display()),
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(matches!(err, HelperError::TimedOut(_)), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
        let pid: i32 = std::fs::read_to_string(&pids)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = super::super::probe::state_and_group(&stat).map(|(s, _)| s);
        assert!(
            matches!(state, None | Some('Z')),
            "background job survives: {stat}"
        );
    }
}
