//! Change detection between captures (DECISIONS §27.60, §27.70): the stat watch of everything
//! the last capture depended on, change notification standing in for its stat pass, and the
//! ignore rules that decide which directories the watch may skip.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Instant;

use super::{os, GitStore, IndexStamp};
use crate::error::Result;
use crate::notify::{Drained, Lost, Notify};
use crate::stat_watch::{self, Ignored, Unwatchable, Verdict, Watch};

impl GitStore {
    /// The watch's verdict: `Unknown` when there is none or the private index is not the one
    /// it describes. The first check after a `git status` builds the watch (and arms change
    /// notification as it walks). Later ones read the notification queue and, when it names
    /// only files changed in place, check just those; otherwise (no notification, a lost one,
    /// the safety net due) they make the full stat check, arming a new notification first.
    pub(super) fn quick_check(&mut self) -> Verdict {
        let pending = self.quick.pending_watch.take();
        let Some(tree) = self.private_tree.clone() else {
            return Verdict::Unknown;
        };
        if IndexStamp::of(&self.private_index) != self.quick.watched_index {
            return Verdict::Unknown;
        }
        if let Some((stamp, built_for)) = pending {
            if built_for != tree {
                return Verdict::Unknown;
            }
            self.build_watch(stamp, &tree);
            let q = &mut *self.quick;
            q.stats.stat_passes += 1;
            q.last_stat_pass = Some(Instant::now());
            return match (&mut q.watch, &q.ignored) {
                (Some(watch), Some(ignored)) => watch.first_verdict(ignored),
                _ => Verdict::Unknown,
            };
        }
        let q = &mut *self.quick;
        let (Some(watch), Some(ignored)) = (&mut q.watch, &q.ignored) else {
            return Verdict::Unknown;
        };
        if watch.tree != tree {
            return Verdict::Unknown;
        }
        let due = q
            .last_stat_pass
            .is_none_or(|at| at.elapsed() >= q.stat_pass_every);
        let named = match q.notify.as_mut().map(Notify::drain) {
            Some(Drained::Files(named)) if !due => {
                q.stats.notified += 1;
                return watch.notified(ignored, &named);
            }
            Some(Drained::Files(named)) => {
                q.stats.safety_passes += 1;
                named
            }
            Some(Drained::Lost(why)) => {
                match why {
                    Lost::Directory => q.stats.directory_events += 1,
                    Lost::Overflow => q.stats.overflows += 1,
                    Lost::Unwatched => q.stats.unwatched += 1,
                }
                q.notify = None;
                Vec::new()
            }
            None => Vec::new(),
        };
        if q.notify.is_none() && !q.notify_refused && cfg!(target_os = "linux") {
            // Armed before the stat pass, so that from here on it can take over.
            let armed = Notify::new().and_then(|mut notify| {
                let all = watch.arm_all(&mut notify);
                all.then_some(notify)
            });
            if armed.is_none() {
                q.stats.arm_failures += 1;
                q.notify_refused = true;
            }
            q.notify = armed;
        }
        q.stats.stat_passes += 1;
        q.last_stat_pass = Some(Instant::now());
        watch.check(ignored, &named)
    }

    /// A new watch of the worktree `git status` staged as `tree` (`stamp` written before it
    /// looked). Failing to build one only means the next capture asks git again.
    fn build_watch(&mut self, stamp: (i64, i64), tree: &str) {
        if let Some(old) = self.quick.watch.take() {
            self.quick.stats.index_lstats += old.lstats;
        }
        self.quick.notify = None;
        self.quick.notify_refused = false;
        let mut ignored = match self.quick.ignored.take().filter(Ignored::still_valid) {
            Some(ignored) => ignored,
            None => match self.excludes_file() {
                Ok(excludes) => Ignored::new(self.guard_paths(excludes), stamp),
                Err(_) => return,
            },
        };
        // Each round classifies one more level of directories the walk has not seen, and arms
        // a new notification: the last round's walk is the one whose watch is kept.
        for _ in 0..32 {
            let mut notify = if cfg!(target_os = "linux") {
                let notify = Notify::new();
                if notify.is_none() {
                    self.quick.stats.arm_failures += 1;
                }
                notify
            } else {
                None
            };
            match Watch::build(
                &self.toplevel,
                &self.private_index,
                tree,
                stamp,
                &mut ignored,
                notify.as_mut(),
            ) {
                Ok(watch) => {
                    match notify {
                        Some(n) if n.failed() => {
                            self.quick.stats.arm_failures += 1;
                            self.quick.notify_refused = true;
                        }
                        Some(n) => self.quick.notify = Some(n),
                        None => self.quick.notify_refused = true,
                    }
                    self.quick.watch = Some(watch);
                    self.quick.ignored = Some(ignored);
                    return;
                }
                Err(Unwatchable::Never) => {
                    self.quick.ignored = Some(ignored);
                    return;
                }
                Err(Unwatchable::Unclassified(dirs)) => {
                    if dirs.is_empty() {
                        continue;
                    }
                    let Ok(ignored_ones) = self.check_ignore(&dirs) else {
                        return;
                    };
                    ignored.learn(dirs, &ignored_ones);
                }
            }
        }
    }

    /// Which of `dirs` an ignore rule matches, so that `git status` does not look inside
    /// (one `git check-ignore` for the whole list).
    fn check_ignore(&self, dirs: &[Vec<u8>]) -> Result<HashSet<Vec<u8>>> {
        // `check-ignore` refuses literal pathspecs; a leading `./` keeps `:x` from being
        // read as magic (git echoes each path as given).
        let mut input = Vec::new();
        for d in dirs {
            input.extend_from_slice(b"./");
            input.extend_from_slice(d);
            input.push(0);
        }
        let args = os(&["check-ignore", "-z", "--stdin"]);
        let out = self
            .git
            .run_raw(&args, Some(&self.private_index), Some(&input))?;
        // 0: some are ignored, 1: none is.
        if out.status != 0 && out.status != 1 {
            return Err(self.git.failure(&args, out.stderr));
        }
        Ok(stat_watch::parse_nul_list(&out.stdout))
    }

    /// `core.excludesFile`, when the configuration names one.
    fn excludes_file(&self) -> Result<Option<PathBuf>> {
        let out = self.git.run_raw(
            &os(&["config", "-z", "--path", "--get", "core.excludesFile"]),
            None,
            None,
        )?;
        Ok((out.status == 0)
            .then(|| {
                let text = String::from_utf8_lossy(&out.stdout);
                text.trim_end_matches('\0').to_string()
            })
            .filter(|p| !p.is_empty())
            .map(PathBuf::from))
    }

    /// The files whose contents change what git ignores or how it reads the worktree.
    fn guard_paths(&self, excludes: Option<PathBuf>) -> Vec<PathBuf> {
        let mut paths = vec![
            self.common_dir.join("info").join("exclude"),
            self.common_dir.join("config"),
            self.common_dir.join("config.worktree"),
            self.git_dir.join("config.worktree"),
            PathBuf::from("/etc/gitconfig"),
        ];
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".config")));
        if let Some(home) = &home {
            paths.push(home.join(".gitconfig"));
        }
        if let Some(xdg) = &xdg {
            paths.push(xdg.join("git").join("config"));
            paths.push(xdg.join("git").join("ignore"));
        }
        for var in ["GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"] {
            if let Some(p) = std::env::var_os(var).filter(|v| !v.is_empty()) {
                paths.push(PathBuf::from(p));
            }
        }
        if let Some(p) = excludes {
            paths.push(if p.is_absolute() {
                p
            } else {
                self.toplevel.join(p)
            });
        }
        paths
    }
}
