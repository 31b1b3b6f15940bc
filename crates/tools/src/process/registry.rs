//! The process groups arbor started that may still have members: a tool call that finished
//! can leave `server &` running (as pi does), and a dropped guard's reaper thread may not get
//! to SIGKILL before arbor exits. [`end_all`] runs on every exit path — a normal end, a
//! signal, a panic — so nothing arbor started outlives it (DECISIONS §28.3).
//!
//! A pid stays reserved while it names a group with members (even zombies), so a registered
//! id cannot name someone else's group while it is alive; ids of empty groups are pruned.

use std::sync::Mutex;
use std::time::Instant;

use nix::sys::signal::Signal;

use super::probe::{alive, signal};
use super::KILL_GRACE;

static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn groups() -> std::sync::MutexGuard<'static, Vec<i32>> {
    GROUPS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Records the group led by `pid` (a child spawned with `process_group(0)`) so that arbor's
/// exit ends it; its group id, or `None` for a pid that is no valid group id.
pub fn track(pid: u32) -> Option<i32> {
    let pgid = i32::try_from(pid).ok().filter(|p| *p > 1)?;
    register(pgid);
    Some(pgid)
}

/// Records a new group; groups with no member left are forgotten on the way.
fn register(pgid: i32) {
    let mut g = groups();
    g.retain(|p| *p != pgid && alive(*p));
    g.push(pgid);
}

/// The registered groups that still have a running member.
pub fn live() -> Vec<i32> {
    let mut g = groups();
    g.retain(|p| alive(*p));
    g.clone()
}

/// Ends every group arbor started: SIGTERM to all, up to [`KILL_GRACE`] for them to exit,
/// SIGKILL to what is left. Returns how many groups were still running.
pub fn end_all() -> usize {
    let running = live();
    for pgid in &running {
        signal(*pgid, Signal::SIGTERM);
    }
    let deadline = Instant::now() + KILL_GRACE;
    let mut left: Vec<i32> = running.clone();
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        left.retain(|p| alive(*p));
    }
    for pgid in &left {
        signal(*pgid, Signal::SIGKILL);
    }
    groups().clear();
    running.len()
}

/// SIGKILL to every group at once: a second signal asked to exit now.
pub fn kill_all_now() {
    for pgid in live() {
        signal(pgid, Signal::SIGKILL);
    }
    groups().clear();
}
