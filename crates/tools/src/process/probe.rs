//! Is a process group still running? The signal probe (`killpg(pgid, 0)`) says whether the
//! group has members, zombies included; on Linux `/proc` then tells whether any member is more
//! than a zombie (DECISIONS §28.1).

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// Sends `sig` to every member of the group (an empty group is no error worth reporting).
pub(super) fn signal(pgid: i32, sig: Signal) {
    let _ = killpg(Pid::from_raw(pgid), sig);
}

/// Whether any member of the group is still running. A zombie does not count: orphans are
/// reaped by PID 1, and in a container whose PID 1 never reaps they stay zombies forever.
pub fn alive(pgid: i32) -> bool {
    if killpg(Pid::from_raw(pgid), None).is_err() {
        return false;
    }
    live_member_on_linux(pgid).unwrap_or(true)
}

/// `Some(found)` from `/proc` on Linux; `None` where `/proc` cannot be read (then the signal
/// probe's answer stands).
fn live_member_on_linux(pgid: i32) -> Option<bool> {
    let dir = std::fs::read_dir("/proc").ok()?;
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((state, group)) = state_and_group(&stat) {
            if group == pgid && state != 'Z' && state != 'X' {
                return Some(true);
            }
        }
    }
    Some(false)
}

/// The state letter and process group of a `/proc/PID/stat` line (the command name, in
/// parentheses, may itself hold spaces and parentheses: fields follow the last `)`).
pub fn state_and_group(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_are_read_after_the_command_name() {
        let line = "42 (a) b (c)) S 1 4242 4242 0 -1";
        assert_eq!(state_and_group(line), Some(('S', 4242)));
        assert_eq!(state_and_group("7 (z) Z 1 9 9"), Some(('Z', 9)));
        assert_eq!(state_and_group("garbage"), None);
    }
}
