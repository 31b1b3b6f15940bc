//! Change notification for the stat watch (DECISIONS §27.70).
//!
//! On Linux a [`Notify`] holds one inotify watch per directory the stat watch tracks. The
//! kernel queues an event before the system call that caused it returns, so reading the queue
//! (non-blocking, at capture time, on the capturing thread) tells exactly what happened since
//! the watch was armed: nothing, some files changed in place, or something a list of files
//! cannot express (a directory changed, the queue overflowed, a watch went away). Only the
//! first two spare the capture its `lstat` pass; the last sends it to the stat check.
//! Elsewhere [`Notify::new`] returns `None` and every capture makes the stat check.

/// Why the notification could not name what changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // only the stub's one is made there
pub(crate) enum Lost {
    /// An entry was created, removed or renamed in a watched directory, or a directory's own
    /// attributes changed.
    Directory,
    /// The kernel dropped events (`IN_Q_OVERFLOW`).
    Overflow,
    /// A watch was removed by the kernel (its directory deleted, moved or unmounted), or the
    /// queue could not be read.
    Unwatched,
}

/// What the queue held.
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) enum Drained {
    /// Only files changed in place (written, truncated, chmod'ed, closed after writing):
    /// their paths relative to the top, sorted, each once. Empty: nothing happened.
    Files(Vec<Vec<u8>>),
    /// Something the stat check has to sort out.
    Lost(Lost),
}

#[cfg(target_os = "linux")]
pub(crate) use linux::Notify;

#[cfg(not(target_os = "linux"))]
pub(crate) use other::Notify;

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashMap;
    use std::io::ErrorKind;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    use inotify::{EventMask, Inotify, WatchMask};

    use super::{Drained, Lost};

    /// Never take more than this share of the user's `max_user_watches`: editors and file
    /// watchers of the same user need theirs.
    const SHARE_OF_USER_WATCHES: usize = 4;
    /// And never more than this many directories: beyond it the stat check is used.
    const MAX_DIRS: usize = 8_192;

    /// One inotify instance and the directory each of its watches stands for.
    pub(crate) struct Notify {
        inotify: Inotify,
        /// Watch descriptor → directory relative to the top (`""` for the top).
        dirs: HashMap<i32, Vec<u8>>,
        limit: usize,
        failed: bool,
        buffer: Vec<u8>,
    }

    impl std::fmt::Debug for Notify {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Notify")
                .field("dirs", &self.dirs.len())
                .field("failed", &self.failed)
                .finish()
        }
    }

    impl Notify {
        /// A new instance with no watch yet; `None` when the kernel refuses one (no inotify,
        /// or `max_user_instances` reached).
        pub(crate) fn new() -> Option<Notify> {
            let inotify = Inotify::init().ok()?;
            let user_watches = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok())
                .unwrap_or(8_192);
            Some(Notify {
                inotify,
                dirs: HashMap::new(),
                limit: (user_watches / SHARE_OF_USER_WATCHES).min(MAX_DIRS),
                failed: false,
                // Room for many events at once; the kernel wants at least one name's worth.
                buffer: vec![0; 16 * 1024],
            })
        }

        /// Watches `dir` (relative path `rel`). Must happen before `dir` is read or `lstat`ed
        /// for the check this watch will stand in for. False (and every later call false)
        /// when it could not be added: the instance is then useless.
        pub(crate) fn arm(&mut self, dir: &Path, rel: &[u8]) -> bool {
            if self.failed {
                return false;
            }
            if self.dirs.len() >= self.limit {
                self.failed = true;
                return false;
            }
            let mask = WatchMask::MODIFY
                | WatchMask::ATTRIB
                | WatchMask::CLOSE_WRITE
                | WatchMask::CREATE
                | WatchMask::DELETE
                | WatchMask::MOVED_FROM
                | WatchMask::MOVED_TO
                | WatchMask::DELETE_SELF
                | WatchMask::MOVE_SELF
                | WatchMask::ONLYDIR
                | WatchMask::DONT_FOLLOW;
            match self.inotify.watches().add(dir, mask) {
                Ok(wd) => {
                    self.dirs.insert(wd.get_watch_descriptor_id(), rel.to_vec());
                    true
                }
                Err(_) => {
                    self.failed = true;
                    false
                }
            }
        }

        /// True when some [`Notify::arm`] failed.
        pub(crate) fn failed(&self) -> bool {
            self.failed
        }

        /// Reads everything queued so far, without waiting (DECISIONS §27.75). The `inotify` crate panics on an
        /// event bit it does not know (a kernel newer than it): that is taken as events lost,
        /// so the capture falls back to the stat check instead of failing.
        pub(crate) fn drain(&mut self) -> Drained {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.drain_queue()))
                .unwrap_or(Drained::Lost(Lost::Unwatched))
        }

        fn drain_queue(&mut self) -> Drained {
            let mut names = Vec::new();
            let mut lost = None;
            loop {
                let events = match self.inotify.read_events(&mut self.buffer) {
                    Ok(events) => events,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(_) => {
                        lost = Some(Lost::Unwatched);
                        break;
                    }
                };
                // The queue is read to its end even once something is lost, so that what is
                // left in it afterwards happened after this capture looked.
                for event in events {
                    if lost.is_some() {
                        continue;
                    }
                    let dir = self.dirs.get(&event.wd.get_watch_descriptor_id());
                    let name = event.name.map(OsStrExt::as_bytes);
                    match classify(event.mask, dir.map(Vec::as_slice), name) {
                        Seen::File(path) => names.push(path),
                        Seen::Nothing => {}
                        Seen::Lost(why) => lost = Some(why),
                    }
                }
            }
            if let Some(why) = lost {
                return Drained::Lost(why);
            }
            names.sort_unstable();
            names.dedup();
            Drained::Files(names)
        }
    }

    enum Seen {
        File(Vec<u8>),
        Nothing,
        Lost(Lost),
    }

    /// What one event means to a capture.
    fn classify(mask: EventMask, dir: Option<&[u8]>, name: Option<&[u8]>) -> Seen {
        if mask.contains(EventMask::Q_OVERFLOW) {
            return Seen::Lost(Lost::Overflow);
        }
        if mask.intersects(
            EventMask::IGNORED | EventMask::UNMOUNT | EventMask::DELETE_SELF | EventMask::MOVE_SELF,
        ) {
            return Seen::Lost(Lost::Unwatched);
        }
        let (Some(dir), Some(name)) = (dir, name) else {
            // An event on a watched directory itself (its mode, say), or from a watch this
            // instance does not know.
            return Seen::Lost(Lost::Directory);
        };
        let structural = mask.intersects(
            EventMask::CREATE | EventMask::DELETE | EventMask::MOVED_FROM | EventMask::MOVED_TO,
        );
        if dir.is_empty() && name == b".git" && !structural {
            // The repository itself: what of it matters is checked by other means.
            return Seen::Nothing;
        }
        if structural || mask.contains(EventMask::ISDIR) {
            return Seen::Lost(Lost::Directory);
        }
        let mut path = dir.to_vec();
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(name);
        Seen::File(path)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn lost(seen: Seen) -> Option<Lost> {
            match seen {
                Seen::Lost(why) => Some(why),
                _ => None,
            }
        }

        #[test]
        fn events_are_sorted_into_files_and_losses() {
            let file = classify(EventMask::MODIFY, Some(b"src"), Some(b"a.rs"));
            assert!(matches!(file, Seen::File(p) if p == b"src/a.rs"));
            let top = classify(EventMask::ATTRIB, Some(b""), Some(b"a.rs"));
            assert!(matches!(top, Seen::File(p) if p == b"a.rs"));
            let git = classify(
                EventMask::ATTRIB | EventMask::ISDIR,
                Some(b""),
                Some(b".git"),
            );
            assert!(matches!(git, Seen::Nothing));
            let sub_git = classify(EventMask::ATTRIB, Some(b"sub"), Some(b".git"));
            assert!(matches!(sub_git, Seen::File(_)));
            for mask in [
                EventMask::CREATE,
                EventMask::DELETE,
                EventMask::MOVED_FROM,
                EventMask::MOVED_TO,
                EventMask::ATTRIB | EventMask::ISDIR,
            ] {
                let seen = classify(mask, Some(b"src"), Some(b"x"));
                assert_eq!(lost(seen), Some(Lost::Directory), "{mask:?}");
            }
            let created_git = classify(EventMask::CREATE, Some(b""), Some(b".git"));
            assert_eq!(lost(created_git), Some(Lost::Directory));
            let own = classify(EventMask::ATTRIB, Some(b"src"), None);
            assert_eq!(lost(own), Some(Lost::Directory));
            let overflow = classify(EventMask::Q_OVERFLOW, None, None);
            assert_eq!(lost(overflow), Some(Lost::Overflow));
            let gone = classify(EventMask::IGNORED, Some(b"src"), None);
            assert_eq!(lost(gone), Some(Lost::Unwatched));
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod other {
    use std::path::Path;

    use super::Drained;

    /// No change notification on this platform: the stat check runs every capture.
    #[derive(Debug)]
    pub(crate) struct Notify;

    impl Notify {
        pub(crate) fn new() -> Option<Notify> {
            None
        }

        pub(crate) fn arm(&mut self, _dir: &Path, _rel: &[u8]) -> bool {
            false
        }

        pub(crate) fn failed(&self) -> bool {
            true
        }

        pub(crate) fn drain(&mut self) -> Drained {
            Drained::Lost(super::Lost::Unwatched)
        }
    }
}
