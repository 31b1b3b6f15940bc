//! One process group: the child was spawned with `process_group(0)`, so its pid is the group
//! id and everything it starts (pipelines, `&` jobs, compilers) is a member unless it leaves
//! with `setsid`. Ending the group, not only the shell, is what stops `(sleep 3; echo late >
//! late.txt) &` from outliving an abort (DECISIONS §28.1, §28.2).

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::probe::{alive, signal};
use super::{registry, KILL_GRACE};

/// How often a group is looked at while it winds down.
const POLL: Duration = Duration::from_millis(20);

/// What ending a group took; tool results say it in these words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Nothing was left to end.
    AlreadyGone,
    /// Every member exited within the grace after SIGTERM.
    Terminated,
    /// Members were still alive after the grace and got SIGKILL.
    Killed,
}

impl Ending {
    /// The words a result records, e.g. "process group killed (SIGKILL after 2 s)".
    pub fn describe(self) -> String {
        match self {
            Ending::AlreadyGone => "no process was left running".to_owned(),
            Ending::Terminated => "process group ended by SIGTERM".to_owned(),
            Ending::Killed => format!(
                "process group killed (SIGKILL after {} s)",
                KILL_GRACE.as_secs()
            ),
        }
    }
}

/// A live process group; dropping it while armed ends the group (SIGTERM now, SIGKILL after
/// the grace on a helper thread), so a dropped tool future cannot leak processes.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: i32,
    armed: bool,
}

impl ProcessGroup {
    /// Takes charge of the group led by `pid` (a child spawned with `process_group(0)`) and
    /// registers it for arbor's exit. `None` for a pid that is no valid group id.
    pub fn adopt(pid: u32) -> Option<Self> {
        let pgid = registry::track(pid)?;
        Some(ProcessGroup { pgid, armed: true })
    }

    /// The process group id (the leader's pid).
    pub fn id(&self) -> i32 {
        self.pgid
    }

    /// Ends the group: SIGTERM, up to [`KILL_GRACE`] for every member to exit, then SIGKILL.
    /// The caller should keep reaping its direct child meanwhile (a zombie is not counted).
    pub async fn end(mut self) -> Ending {
        self.armed = false;
        end(self.pgid).await
    }

    /// The leader exited on its own: members it left running (`server &`) stay, as in pi, but
    /// the registry still ends them when arbor exits (DECISIONS §28.3).
    pub fn release(mut self) {
        self.armed = false;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if self.armed {
            end_detached(self.pgid);
        }
    }
}

/// Ends the group `pgid` (one of ours, see [`registry::track`]): SIGTERM, up to
/// [`KILL_GRACE`] for every member to exit, then SIGKILL.
pub async fn end(pgid: i32) -> Ending {
    if !alive(pgid) {
        return Ending::AlreadyGone;
    }
    signal(pgid, Signal::SIGTERM);
    let deadline = Instant::now() + KILL_GRACE;
    while Instant::now() < deadline {
        tokio::time::sleep(POLL).await;
        if !alive(pgid) {
            return Ending::Terminated;
        }
    }
    signal(pgid, Signal::SIGKILL);
    Ending::Killed
}

/// Ends a group without waiting: SIGTERM now; a helper thread sends SIGKILL once the grace is
/// over if anything is left.
pub fn end_detached(pgid: i32) {
    if !alive(pgid) {
        return;
    }
    signal(pgid, Signal::SIGTERM);
    let spawned = std::thread::Builder::new()
        .name("arbor-group-reaper".into())
        .spawn(move || end_blocking_after_term(pgid));
    if spawned.is_err() {
        signal(pgid, Signal::SIGKILL);
    }
}

/// Ends a group on the calling thread: SIGTERM, wait up to the grace, SIGKILL.
pub fn end_blocking(pgid: i32) -> Ending {
    if !alive(pgid) {
        return Ending::AlreadyGone;
    }
    signal(pgid, Signal::SIGTERM);
    end_blocking_after_term(pgid)
}

fn end_blocking_after_term(pgid: i32) -> Ending {
    let deadline = Instant::now() + KILL_GRACE;
    while Instant::now() < deadline {
        std::thread::sleep(POLL);
        if !alive(pgid) {
            return Ending::Terminated;
        }
    }
    signal(pgid, Signal::SIGKILL);
    Ending::Killed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt as _;

    #[tokio::test]
    async fn ending_a_group_reaches_its_background_members() {
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("sleep 30 & sleep 30")
            .process_group(0)
            .spawn()
            .unwrap();
        let group = ProcessGroup::adopt(child.id()).unwrap();
        let pgid = group.id();
        std::thread::sleep(Duration::from_millis(100));
        assert!(alive(pgid));
        let reaper = std::thread::spawn(move || child.wait());
        assert_eq!(group.end().await, Ending::Terminated);
        assert!(!alive(pgid));
        reaper.join().unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_group_that_ignores_sigterm_is_killed_after_the_grace() {
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("trap '' TERM; sleep 30 & trap '' TERM; wait")
            .process_group(0)
            .spawn()
            .unwrap();
        let group = ProcessGroup::adopt(child.id()).unwrap();
        let pgid = group.id();
        std::thread::sleep(Duration::from_millis(100));
        let reaper = std::thread::spawn(move || child.wait());
        let started = Instant::now();
        assert_eq!(group.end().await, Ending::Killed);
        assert!(started.elapsed() >= KILL_GRACE);
        reaper.join().unwrap().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(pgid));
    }
}
