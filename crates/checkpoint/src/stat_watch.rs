//! The in-process change check that runs before any git process (DECISIONS §27.60).
//!
//! After a capture, [`Watch`] remembers the `lstat` of every path in the private index, of
//! every directory git would read for untracked files, and of the files that decide what is
//! ignored. The next capture compares those first: when nothing differs, the worktree still
//! holds the tree of the last capture and no git process runs; when only some files' stat
//! changed (and no directory did, so no entry was created, removed or renamed anywhere),
//! only those paths go to `git add`. Anything else asks `git status`, as before.
//!
//! A remembered stat is trusted only when the path's ctime is older than a marker file
//! written just before git looked at the worktree (the marker's own ctime, so the file
//! system's clock is compared with itself). A path changed at or after that moment may have
//! changed after git read it, so it is re-checked by git on every capture until it is old.
//!
//! Where change notification works (`notify.rs`, DECISIONS §27.70) the walk that builds a
//! watch arms it directory by directory, each before the directory is read, and a capture
//! then replaces the `lstat` of every index path by the list of files the kernel reported.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{CheckpointError, Result};
use crate::notify::Notify;

/// More suspect paths than this go to `git status` rather than to one long pathspec list.
const MAX_SUSPECTS: usize = 256;

/// The stat fields git's own stat cache compares (`core.checkStat=default`), plus nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key {
    dev: u64,
    ino: u64,
    mode: u32,
    uid: u32,
    gid: u32,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Key {
    #[cfg(unix)]
    fn of(meta: &fs::Metadata) -> Key {
        use std::os::unix::fs::MetadataExt;
        Key {
            dev: meta.dev(),
            ino: meta.ino(),
            mode: meta.mode(),
            uid: meta.uid(),
            gid: meta.gid(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// `lstat` of `path`; `None` when nothing is there (or it cannot be read: then the next
    /// look differs or git decides).
    fn lstat(path: &Path) -> Option<Key> {
        #[cfg(unix)]
        {
            fs::symlink_metadata(path).ok().map(|m| Key::of(&m))
        }
        #[cfg(not(unix))]
        {
            let _ = path;
            None
        }
    }

    /// Last changed strictly before `stamp` (ctime cannot be set back by `touch`; mtime is
    /// checked too in case a file system keeps them apart).
    fn older_than(&self, stamp: (i64, i64)) -> bool {
        self.ctime < stamp && self.mtime < stamp
    }
}

/// One watched path: what `lstat` said, and whether that can be trusted to mean "what git saw".
#[derive(Debug, Clone)]
struct Watched {
    path: PathBuf,
    key: Option<Key>,
    trusted: bool,
}

impl Watched {
    fn new(path: PathBuf, key: Option<Key>, stamp: (i64, i64)) -> Watched {
        // A path that was absent is trusted: anything appearing there later differs.
        let trusted = key.is_none_or(|k| k.older_than(stamp));
        Watched { path, key, trusted }
    }

    /// Still exactly as recorded, and the record is trusted.
    fn holds(&self) -> bool {
        self.trusted && Key::lstat(&self.path) == self.key
    }
}

/// Which directories git does not look into (an ignore rule matches them) and which it does,
/// as `git check-ignore` answered, valid while the files that decide ignoring keep their
/// stat: the config and exclude files, and every `.gitignore` in a watched directory.
#[derive(Debug)]
pub(crate) struct Ignored {
    ignored: HashSet<Vec<u8>>,
    clear: HashSet<Vec<u8>>,
    guards: Vec<Watched>,
}

impl Ignored {
    /// Nothing classified yet; `guards` are the config and exclude files to watch (the walk
    /// of [`Watch::build`] adds every `.gitignore`).
    pub(crate) fn new(guards: Vec<PathBuf>, stamp: (i64, i64)) -> Self {
        let guards = guards
            .into_iter()
            .map(|p| {
                let key = Key::lstat(&p);
                Watched::new(p, key, stamp)
            })
            .collect();
        Ignored {
            ignored: HashSet::new(),
            clear: HashSet::new(),
            guards,
        }
    }

    pub(crate) fn still_valid(&self) -> bool {
        self.guards.iter().all(Watched::holds)
    }

    /// Records git's answer for `asked`: those in `ignored_ones` are ignored, the rest not.
    pub(crate) fn learn(&mut self, asked: Vec<Vec<u8>>, ignored_ones: &HashSet<Vec<u8>>) {
        for dir in asked {
            if ignored_ones.contains(&dir) {
                self.ignored.insert(dir);
            } else {
                self.clear.insert(dir);
            }
        }
    }

    /// Forgets what was classified below `rel` (a new `.gitignore` there may change it);
    /// true when there was something to forget.
    fn forget_below(&mut self, rel: &[u8]) -> bool {
        let below =
            |d: &Vec<u8>| rel.is_empty() || (d.starts_with(rel) && d.get(rel.len()) == Some(&b'/'));
        let before = self.ignored.len() + self.clear.len();
        self.ignored.retain(|d| !below(d));
        self.clear.retain(|d| !below(d));
        self.ignored.len() + self.clear.len() != before
    }

    fn is_guard(&self, path: &Path) -> bool {
        self.guards.iter().any(|g| g.path == path)
    }
}

/// What the in-process check concluded.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Every watched path is as git last saw it.
    Unchanged,
    /// No directory changed; only these index paths (relative, as git spells them) may differ.
    Files(Vec<Vec<u8>>),
    /// Something only `git status` can sort out.
    Unknown,
}

/// The stat of everything a capture depends on, as of the capture that wrote `tree`.
#[derive(Debug)]
pub(crate) struct Watch {
    pub(crate) tree: String,
    /// Paths of the private index, relative, in the index's order.
    files: Vec<(Vec<u8>, Watched)>,
    /// Every directory git reads for untracked files, with its relative path (`""`: the top).
    dirs: Vec<(Vec<u8>, Watched)>,
    /// The suspects of the last verdict (file index, key as seen then), for [`Watch::refresh`].
    seen: Vec<(usize, Option<Key>)>,
    /// `files` is sorted by path (as git writes an index), so a reported name can be looked up.
    sorted: bool,
    /// Index paths in directories that are not watched (force-added files under an ignored
    /// directory): no notification covers them, so they are `lstat`ed on every capture.
    unwatched: Vec<usize>,
    /// How many index paths this watch has `lstat`ed, for [`crate::WatchStats`].
    pub(crate) lstats: u64,
}

/// Why a watch could not be built.
#[derive(Debug)]
pub(crate) enum Unwatchable {
    /// The walk met directories (relative paths) not yet classified: ask git, then retry.
    Unclassified(Vec<Vec<u8>>),
    /// Something the check cannot follow (submodules, nested repositories, sparse or unmerged
    /// entries, an index this parser does not read): every capture asks git.
    Never,
}

impl Watch {
    /// Compares every watched path with its record. Cheap: one `lstat` per path, in process.
    /// `named` (sorted) are paths a notification reported, suspects whatever their stat says.
    pub(crate) fn check(&mut self, ignored: &Ignored, named: &[Vec<u8>]) -> Verdict {
        self.seen.clear();
        if !ignored.still_valid() || !self.dirs.iter().all(|(_, w)| w.holds()) {
            return Verdict::Unknown;
        }
        let now = lstat_all(self.files.iter().map(|(_, w)| w.path.as_path()).collect());
        self.lstats += now.len() as u64;
        let mut suspects = Vec::new();
        for (i, ((rel, w), now)) in self.files.iter().zip(now).enumerate() {
            if !w.trusted || now != w.key || named.binary_search(rel).is_ok() {
                if suspects.len() == MAX_SUSPECTS {
                    self.seen.clear();
                    return Verdict::Unknown;
                }
                suspects.push(rel.clone());
                self.seen.push((i, now));
            }
        }
        if suspects.is_empty() {
            Verdict::Unchanged
        } else {
            Verdict::Files(suspects)
        }
    }

    /// The verdict from a notification that reported only in-place changes of `named` (sorted):
    /// no `lstat` of the other index paths. The suspects are the reported index paths and
    /// those whose record is not trusted yet (§27.60's rule holds here too); a reported path
    /// not in the index is an ignored file (any other file would be in the index after the
    /// last capture, or would have been created since, which is a directory event).
    pub(crate) fn notified(&mut self, ignored: &Ignored, named: &[Vec<u8>]) -> Verdict {
        self.seen.clear();
        if !self.sorted {
            return self.check(ignored, named);
        }
        if !ignored.still_valid() {
            return Verdict::Unknown;
        }
        let mut picked: Vec<usize> = named
            .iter()
            .filter_map(|rel| self.files.binary_search_by(|(p, _)| p.cmp(rel)).ok())
            .collect();
        picked.extend(
            self.files
                .iter()
                .enumerate()
                .filter(|(_, (_, w))| !w.trusted)
                .map(|(i, _)| i),
        );
        for &i in &self.unwatched {
            if let Some((_, w)) = self.files.get(i) {
                self.lstats += 1;
                if Key::lstat(&w.path) != w.key {
                    picked.push(i);
                }
            }
        }
        picked.sort_unstable();
        picked.dedup();
        if picked.len() > MAX_SUSPECTS {
            return Verdict::Unknown;
        }
        let mut suspects = Vec::with_capacity(picked.len());
        for i in picked {
            if let Some((rel, w)) = self.files.get(i) {
                self.seen.push((i, Key::lstat(&w.path)));
                suspects.push(rel.clone());
            }
        }
        self.lstats += suspects.len() as u64;
        if suspects.is_empty() {
            Verdict::Unchanged
        } else {
            Verdict::Files(suspects)
        }
    }

    /// Arms `notify` on every watched directory (before a stat check that it is to take over
    /// from). False when a watch could not be added.
    pub(crate) fn arm_all(&self, notify: &mut Notify) -> bool {
        self.sorted && self.dirs.iter().all(|(rel, w)| notify.arm(&w.path, rel))
    }

    /// The verdict of a watch [`Watch::build`] just made: its keys are the worktree now, so
    /// what matters is whether each can be trusted.
    pub(crate) fn first_verdict(&mut self, ignored: &Ignored) -> Verdict {
        self.seen = self
            .files
            .iter()
            .enumerate()
            .filter(|(_, (_, w))| !w.trusted)
            .map(|(i, (_, w))| (i, w.key))
            .collect();
        if !ignored.guards.iter().all(|w| w.trusted) || !self.dirs.iter().all(|(_, w)| w.trusted) {
            return Verdict::Unknown;
        }
        let suspects: Vec<Vec<u8>> = self
            .seen
            .iter()
            .filter_map(|(i, _)| self.files.get(*i).map(|(rel, _)| rel.clone()))
            .collect();
        match suspects.len() {
            0 => Verdict::Unchanged,
            n if n > MAX_SUSPECTS => Verdict::Unknown,
            _ => Verdict::Files(suspects),
        }
    }

    /// Makes the next [`Watch::check`] answer `Unknown` (the worktree is being changed by us).
    pub(crate) fn invalidate(&mut self) {
        self.tree.clear();
        self.seen.clear();
    }

    /// After `git add` of the suspects of the last [`Verdict::Files`] with `stamp` written
    /// before it: their keys as the verdict saw them, trusted against `stamp`.
    pub(crate) fn refresh(&mut self, stamp: (i64, i64), tree: String) {
        for (i, key) in std::mem::take(&mut self.seen) {
            if let Some((_, w)) = self.files.get_mut(i) {
                *w = Watched::new(w.path.clone(), key, stamp);
            }
        }
        self.tree = tree;
    }

    /// A watch of the worktree as it is now, whose private index (at `index_path`, holding
    /// `tree`) git wrote, `stamp` having been written before git looked. Every key is taken
    /// now: one the check saw earlier could hide a change made after git looked.
    /// The walk skips the directories `ignored` knows to be ignored; those it does not know
    /// yet are returned for classification (not entered). A `.gitignore` that is not yet a
    /// guard becomes one, and voids every classification below the top.
    /// `notify` is armed on each directory before the directory is looked at (§27.70).
    pub(crate) fn build(
        root: &Path,
        index_path: &Path,
        tree: &str,
        stamp: (i64, i64),
        ignored: &mut Ignored,
        mut notify: Option<&mut Notify>,
    ) -> std::result::Result<Watch, Unwatchable> {
        if cfg!(not(unix)) {
            return Err(Unwatchable::Never);
        }
        let mut dirs = Vec::new();
        let mut unclassified = Vec::new();
        let mut todo = vec![(root.to_path_buf(), Vec::new())];
        while let Some((dir, rel)) = todo.pop() {
            if let Some(notify) = notify.as_deref_mut() {
                notify.arm(&dir, &rel);
            }
            let key = Key::lstat(&dir);
            dirs.push((rel.clone(), Watched::new(dir.clone(), key, stamp)));
            let entries = fs::read_dir(&dir).map_err(|_| Unwatchable::Never)?;
            for entry in entries {
                let entry = entry.map_err(|_| Unwatchable::Never)?;
                let name = entry.file_name();
                if name == ".git" {
                    if rel.is_empty() {
                        continue; // the repository itself
                    }
                    return Err(Unwatchable::Never); // a nested repository or submodule
                }
                let path = entry.path();
                if name == ".gitignore" && !ignored.is_guard(&path) {
                    let key = Key::lstat(&path);
                    ignored.guards.push(Watched::new(path.clone(), key, stamp));
                    if ignored.forget_below(&rel) {
                        return Err(Unwatchable::Unclassified(Vec::new()));
                    }
                }
                let is_dir = entry.file_type().map_err(|_| Unwatchable::Never)?.is_dir();
                if !is_dir {
                    continue;
                }
                let mut child = rel.clone();
                if !child.is_empty() {
                    child.push(b'/');
                }
                child.extend_from_slice(os_bytes(&name).ok_or(Unwatchable::Never)?);
                if ignored.ignored.contains(&child) {
                    continue;
                }
                if ignored.clear.contains(&child) {
                    todo.push((path, child));
                } else {
                    unclassified.push(child);
                }
            }
        }
        if !unclassified.is_empty() {
            return Err(Unwatchable::Unclassified(unclassified));
        }
        let bytes = fs::read(index_path).map_err(|_| Unwatchable::Never)?;
        let hash_len = tree.len() / 2;
        let paths = index_paths(&bytes, hash_len).ok_or(Unwatchable::Never)?;
        let mut full = Vec::with_capacity(paths.len());
        for rel in &paths {
            full.push(root.join(rel_path(rel).ok_or(Unwatchable::Never)?));
        }
        let keys = lstat_all(full.iter().map(PathBuf::as_path).collect());
        let lstats = keys.len() as u64;
        let sorted = paths.windows(2).all(|w| w[0] < w[1]);
        let watched: HashSet<&[u8]> = dirs.iter().map(|(rel, _)| rel.as_slice()).collect();
        let unwatched = paths
            .iter()
            .enumerate()
            .filter(|(_, rel)| {
                let parent = rel
                    .iter()
                    .rposition(|b| *b == b'/')
                    .map_or(&[][..], |at| &rel[..at]);
                !watched.contains(parent)
            })
            .map(|(i, _)| i)
            .collect();
        let files = paths
            .into_iter()
            .zip(full)
            .zip(keys)
            .map(|((rel, path), key)| (rel, Watched::new(path, key, stamp)))
            .collect();
        Ok(Watch {
            tree: tree.to_string(),
            files,
            dirs,
            seen: Vec::new(),
            sorted,
            unwatched,
            lstats,
        })
    }
}

/// Below this many paths one thread does the `lstat`s.
const PARALLEL_FROM: usize = 2_000;

/// `lstat` of every path, in order, spread over the machine's cores for large lists: the
/// system calls are the whole cost of a check (≈ 3 µs each on the bench VM), and git's own
/// `core.preloadIndex` spreads them the same way.
fn lstat_all(paths: Vec<&Path>) -> Vec<Option<Key>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get().min(4))
        .unwrap_or(1);
    if threads < 2 || paths.len() < PARALLEL_FROM {
        return paths.into_iter().map(Key::lstat).collect();
    }
    let chunk = paths.len().div_ceil(threads);
    let stat = |part: &[&Path]| part.iter().map(|p| Key::lstat(p)).collect::<Vec<_>>();
    std::thread::scope(|scope| {
        let mut parts = paths.chunks(chunk);
        let first = parts.next().unwrap_or(&[]);
        let rest: Vec<_> = parts.map(|part| scope.spawn(move || stat(part))).collect();
        let mut keys = stat(first);
        for handle in rest {
            match handle.join() {
                Ok(more) => keys.extend(more),
                // A thread that could not finish: its paths count as changed (re-checked).
                Err(_) => keys.extend(std::iter::repeat_n(None, chunk)),
            }
        }
        keys.truncate(paths.len());
        keys
    })
}

/// Writes the marker `path` and returns its ctime: the file system's "now", taken before git
/// looks at the worktree.
pub(crate) fn stamp(path: &Path) -> Result<(i64, i64)> {
    use std::io::Write as _;
    let mut file = fs::File::create(path).map_err(|e| CheckpointError::io(path, e))?;
    file.write_all(b"arbor capture stamp\n")
        .map_err(|e| CheckpointError::io(path, e))?;
    let meta = file.metadata().map_err(|e| CheckpointError::io(path, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok((meta.ctime(), meta.ctime_nsec()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Ok((i64::MIN, 0))
    }
}

/// The paths `git check-ignore -z` printed (those that are ignored), each asked for as
/// `./path`.
pub(crate) fn parse_nul_list(out: &[u8]) -> HashSet<Vec<u8>> {
    out.split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| p.strip_prefix(b"./").unwrap_or(p).to_vec())
        .collect()
}

#[cfg(unix)]
fn rel_path(rel: &[u8]) -> Option<&Path> {
    use std::os::unix::ffi::OsStrExt;
    Some(Path::new(std::ffi::OsStr::from_bytes(rel)))
}

#[cfg(not(unix))]
fn rel_path(rel: &[u8]) -> Option<&Path> {
    std::str::from_utf8(rel).ok().map(Path::new)
}

#[cfg(unix)]
fn os_bytes(name: &std::ffi::OsStr) -> Option<&[u8]> {
    use std::os::unix::ffi::OsStrExt;
    Some(name.as_bytes())
}

#[cfg(not(unix))]
fn os_bytes(name: &std::ffi::OsStr) -> Option<&[u8]> {
    name.to_str().map(str::as_bytes)
}

/// The paths of a git index file (versions 2–4), in order. `None` for anything the check
/// cannot follow: another version or a damaged file, unmerged entries, submodules (gitlinks),
/// skip-worktree or sparse-directory entries (git does not look at their files), and a split
/// index (some entries live in another file).
pub(crate) fn index_paths(bytes: &[u8], hash_len: usize) -> Option<Vec<Vec<u8>>> {
    if bytes.get(0..4)? != b"DIRC" || !(hash_len == 20 || hash_len == 32) {
        return None;
    }
    let version = be32(bytes, 4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = be32(bytes, 8)? as usize;
    let mut at = 12;
    let mut paths: Vec<Vec<u8>> = Vec::with_capacity(count);
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at;
        let mode = be32(bytes, start + 24)?;
        let flags_at = start + 40 + hash_len;
        let flags = u16::from_be_bytes([*bytes.get(flags_at)?, *bytes.get(flags_at + 1)?]);
        let mut name_at = flags_at + 2;
        if flags & 0x4000 != 0 {
            if version < 3 {
                return None;
            }
            let extended = u16::from_be_bytes([*bytes.get(name_at)?, *bytes.get(name_at + 1)?]);
            if extended & 0x4000 != 0 {
                return None; // skip-worktree
            }
            name_at += 2;
        }
        let stage = (flags >> 12) & 0x3;
        if stage != 0 || mode & 0o170000 == 0o160000 || mode & 0o170000 == 0o040000 {
            return None;
        }
        let path = if version == 4 {
            let (strip, after) = varint(bytes, name_at)?;
            let end = after + bytes.get(after..)?.iter().position(|b| *b == 0)?;
            let keep = previous.len().checked_sub(strip)?;
            let mut path = previous[..keep].to_vec();
            path.extend_from_slice(&bytes[after..end]);
            at = end + 1;
            path
        } else {
            let end = name_at + bytes.get(name_at..)?.iter().position(|b| *b == 0)?;
            let path = bytes[name_at..end].to_vec();
            // Entries are NUL-padded to a multiple of 8 bytes (at least one NUL).
            at = start + ((name_at - start + path.len() + 8) & !7);
            path
        };
        if path.is_empty() {
            return None;
        }
        previous.clone_from(&path);
        paths.push(path);
    }
    // Extensions follow until the trailing checksum. A split index (`link`: the other entries
    // live in a shared file) or a sparse one (`sdir`) is not followed.
    let end = bytes.len().checked_sub(hash_len)?;
    while at < end {
        let signature = bytes.get(at..at + 4)?;
        if signature == b"link" || signature == b"sdir" {
            return None;
        }
        at = at
            .checked_add(8)?
            .checked_add(be32(bytes, at + 4)? as usize)?;
    }
    (at == end).then_some(paths)
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// Git's offset varint (index v4 path prefixes): returns the value and the next offset.
fn varint(bytes: &[u8], mut at: usize) -> Option<(usize, usize)> {
    let mut c = *bytes.get(at)?;
    at += 1;
    let mut value = (c & 0x7f) as usize;
    while c & 0x80 != 0 {
        value = value.checked_add(1)?.checked_mul(128)?;
        c = *bytes.get(at)?;
        at += 1;
        value = value.checked_add((c & 0x7f) as usize)?;
    }
    Some((value, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_lists_split_into_paths() {
        let mut dirs: Vec<_> = parse_nul_list(b"./target\0./a/b c\0").into_iter().collect();
        dirs.sort();
        assert_eq!(dirs, vec![b"a/b c".to_vec(), b"target".to_vec()]);
        assert!(parse_nul_list(b"").is_empty());
    }

    #[test]
    fn only_a_path_changed_before_the_stamp_is_trusted() {
        // A change in the stamp's own clock tick (or later) may not have been seen by git.
        let key = |ctime: (i64, i64), mtime: (i64, i64)| Key {
            dev: 1,
            ino: 2,
            mode: 0o100644,
            uid: 0,
            gid: 0,
            size: 5,
            mtime,
            ctime,
        };
        let stamp = (100, 500);
        let w = |k| Watched::new(PathBuf::from("x"), Some(k), stamp).trusted;
        assert!(w(key((100, 499), (100, 499))));
        assert!(!w(key((100, 500), (100, 400))), "same tick as the stamp");
        assert!(!w(key((101, 0), (90, 0))), "changed after the stamp");
        assert!(!w(key((90, 0), (200, 0))), "mtime in the future");
        assert!(Watched::new(PathBuf::from("x"), None, stamp).trusted);
    }

    #[test]
    fn varints_decode_as_git_writes_them() {
        assert_eq!(varint(&[0x05], 0), Some((5, 1)));
        // git encodes 128 as 0x80 0x00 (one is added per continuation byte).
        assert_eq!(varint(&[0x80, 0x00], 0), Some((128, 2)));
        assert_eq!(varint(&[0x80], 0), None);
    }

    #[test]
    fn damaged_indexes_are_refused() {
        assert_eq!(index_paths(b"", 20), None);
        assert_eq!(index_paths(b"DIRC\0\0\0\x05\0\0\0\0", 20), None);
        let mut header = b"DIRC\0\0\0\x02\0\0\0\x01".to_vec();
        header.extend_from_slice(&[0; 30]);
        assert_eq!(index_paths(&header, 20), None);
    }
}
