//! The in-memory index shared by the memory and JSONL backends.
//!
//! Each entry is kept as its raw JSON line (in memory, or as an offset into the session file)
//! plus the few envelope facts the tree needs. Full `SessionEntry` values are parsed only when a
//! caller reads them, which keeps opening a large session close to the cost of reading it.

use crate::error::{Result, SessionError};
use crate::line::envelope::{probe, LineEnvelope, UsageProbe};
use crate::line::envelope_scan::{Role, Skim, FULL_TYPES};
use hashbrown::{DefaultHashBuilder, HashTable};
use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::OnceLock;

/// An id that no longer fits the index's id buffer (its offsets are 32-bit).
#[derive(Debug, thiserror::Error)]
#[error("entry {0}: the session's ids exceed 4 GiB")]
struct IdsFull(String);

/// Where an entry's line lives.
#[derive(Clone)]
pub(crate) enum Raw {
    /// `len` bytes at `offset` in the session file (no trailing newline).
    File { offset: u64, len: u32 },
    /// The line itself (memory backend, migrated files).
    Mem(Box<str>),
}

/// Reads raw lines back (the file handle for JSONL, nothing for memory).
pub(crate) trait LineSource {
    fn read<'a>(&'a self, raw: &'a Raw) -> Result<Cow<'a, str>>;

    /// Hands the line to `f` without copying it where the source can (a file line inside the
    /// read window is lent from it); the default reads it. `f` must not read this source.
    fn with_line(&self, raw: &Raw, f: &mut dyn FnMut(&str) -> Result<()>) -> Result<()> {
        f(&self.read(raw)?)
    }
}

/// A boxed source reads as the source it holds (the line views make one per worker).
impl<T: LineSource + ?Sized> LineSource for Box<T> {
    fn read<'a>(&'a self, raw: &'a Raw) -> Result<Cow<'a, str>> {
        (**self).read(raw)
    }

    fn with_line(&self, raw: &Raw, f: &mut dyn FnMut(&str) -> Result<()>) -> Result<()> {
        (**self).with_line(raw, f)
    }
}

/// A source for sessions whose lines all live in memory.
pub(crate) struct MemSource;

impl LineSource for MemSource {
    fn read<'a>(&'a self, raw: &'a Raw) -> Result<Cow<'a, str>> {
        match raw {
            Raw::Mem(s) => Ok(Cow::Borrowed(s)),
            Raw::File { .. } => Err(SessionError::Storage(
                "entry line is stored in a file but this session has no file".into(),
            )),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Parent {
    Root,
    At(u32),
    /// The parentId names no entry of the session (kept in `Index::missing_parents`).
    Missing,
}

pub(crate) struct Slot {
    /// The id's place in [`Index::ids`] (one buffer for all ids: no allocation per entry,
    /// DECISIONS §25.111); read it with [`Index::id`].
    id: IdAt,
    pub parent: Parent,
    pub ty: u32,
    /// 1-based physical line in the file; 0 when the entry has no file line.
    pub line: u32,
    /// A `message` entry whose role is `assistant` (it carries a provider and model); `None`
    /// when the open's skim could not tell (the entry is read to decide).
    pub assistant: Option<bool>,
    pub raw: Raw,
}

#[derive(Clone, Copy)]
struct IdAt {
    start: u32,
    len: u32,
}

struct CompactionInfo {
    first_kept: Option<Box<str>>,
    retained_tail: bool,
}

/// One id-table entry: a slot number and 32 bits of its id's hash. A probe that meets another
/// id's entry is turned away by `tag` without reading that slot and its id (two cache misses
/// each on a table of a million ids), and growing the table rehashes from `tag` alone
/// (DECISIONS §25.115).
#[derive(Clone, Copy)]
struct Keyed {
    ix: u32,
    tag: u32,
}

/// The table's hash of an id with hash tag `tag`: the tag repeated in both halves, so
/// hashbrown's control byte (the top 7 bits) and its bucket index (the low bits) both come
/// from the part a [`Keyed`] keeps.
#[inline]
fn table_hash(tag: u32) -> u64 {
    let t = u64::from(tag);
    t | (t << 32)
}

/// Makes the hash tags of the id table; a copy hashes ids on another thread the same way (a
/// load's reading side, DECISIONS §25.116).
#[derive(Clone, Default)]
pub(crate) struct IdHasher(DefaultHashBuilder);

impl IdHasher {
    /// The 32 bits of `id`'s hash the id table keeps.
    #[inline]
    pub fn tag(&self, id: &str) -> u32 {
        // The low half; truncation is the point.
        self.0.hash_one(id) as u32
    }
}

/// The id at `at` in `ids`; empty if out of range (never: ids only grow).
#[inline]
fn id_in(ids: &str, at: IdAt) -> &str {
    let start = at.start as usize;
    ids.get(start..start + at.len as usize).unwrap_or("")
}

/// Running totals for `SessionStats` (pi G1 rules, plus `usage` entries).
#[derive(Default, Clone, Copy, Debug, PartialEq)]
pub(crate) struct StatsAcc {
    pub message_count: u64,
    pub cached: f64,
    pub uncached: f64,
    pub total: f64,
    pub cost: f64,
}

impl StatsAcc {
    pub(crate) fn add(&mut self, usage: &UsageProbe) {
        if let Some((cached, uncached, total, cost)) = usage.counted() {
            self.cached += cached;
            self.uncached += uncached;
            self.total += total;
            self.cost += cost;
        }
    }
}

enum LeafTarget {
    None,
    At(u32),
    /// A `leaf` entry (slot `by`) named an id not seen yet; resolved when loading finishes.
    Pending {
        target: Box<str>,
        by: u32,
    },
}

pub(crate) struct Index {
    /// Names the session in error messages (file path or `memory:<id>`).
    origin: String,
    slots: Vec<Slot>,
    /// Every slot's id, back to back.
    ids: String,
    /// Slot numbers, hashed by their slot's id: the id is stored once, in its slot; each
    /// entry keeps 32 bits of the id's hash beside the slot number (DECISIONS §25.115).
    by_id: HashTable<Keyed>,
    hasher: IdHasher,
    types: Vec<Box<str>>,
    missing_parents: HashMap<u32, Box<str>>,
    pending_parents: Vec<(u32, Box<str>)>,
    compactions: HashMap<u32, CompactionInfo>,
    labels: HashMap<Box<str>, String>,
    name: Option<String>,
    leaf: LeafTarget,
    /// Usage totals, computed at the first `stats()` call (not at open: they need payloads,
    /// DECISIONS §25.22) and kept current by appends from then on.
    stats: OnceLock<StatsAcc>,
}

/// What the index keeps of one line, from the skim or the full probe.
struct Facts<'a> {
    ty: &'a str,
    id: &'a str,
    parent_id: Option<&'a str>,
    assistant: Option<bool>,
}

impl<'a> Facts<'a> {
    fn of(env: &'a LineEnvelope<'_>) -> Facts<'a> {
        Facts {
            ty: &env.ty,
            id: &env.id,
            parent_id: env.parent_id.as_ref().and_then(|p| p.as_deref()),
            assistant: Some(
                env.ty == "message" && env.message.role.as_deref() == Some("assistant"),
            ),
        }
    }

    fn skimmed(s: &Skim<'a>) -> Facts<'a> {
        Facts {
            ty: s.ty,
            id: s.id,
            parent_id: s.parent_id,
            assistant: match s.role {
                Role::Assistant => Some(true),
                Role::Other => Some(false),
                Role::Unknown => None,
            },
        }
    }
}

/// Adds one entry's counted usage to `stats` (pi G1 rules, plus `usage` entries).
pub(crate) fn fold_usage(stats: &mut StatsAcc, env: &LineEnvelope<'_>) {
    match env.ty.as_ref() {
        "message" => {
            stats.message_count += 1;
            if env.message.role.as_deref() == Some("assistant") {
                stats.add(&env.message.usage);
            }
        }
        "compaction" | "branch_summary" | "usage" => stats.add(&env.usage),
        _ => {}
    }
}

/// Checks the envelope rules of DECISIONS §4.1 and returns a reason when they fail.
pub(crate) fn envelope_problem(env: &LineEnvelope<'_>) -> Option<String> {
    if env.id.is_empty() {
        return Some("entry id is empty".into());
    }
    if env.parent_id.is_none() {
        return Some(format!(
            "entry {} has no parentId (must be a string or null)",
            env.id
        ));
    }
    if env.ty == "leaf" && env.target_id.is_none() {
        return Some(format!("leaf entry {} has no targetId", env.id));
    }
    None
}

impl Index {
    pub fn new(origin: impl Into<String>) -> Index {
        Index {
            origin: origin.into(),
            slots: Vec::new(),
            ids: String::new(),
            by_id: HashTable::new(),
            hasher: IdHasher::default(),
            types: Vec::new(),
            missing_parents: HashMap::new(),
            pending_parents: Vec::new(),
            compactions: HashMap::new(),
            labels: HashMap::new(),
            name: None,
            leaf: LeafTarget::None,
            stats: OnceLock::new(),
        }
    }

    /// Room in the id table for about `entries` more entries (a load's estimate from the
    /// file's size: growing a large table rehashes every id already in it).
    pub fn reserve(&mut self, entries: usize) {
        self.by_id.reserve(entries, |k| table_hash(k.tag));
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn slot(&self, ix: u32) -> &Slot {
        &self.slots[ix as usize]
    }

    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    pub fn contains(&self, id: &str) -> bool {
        self.find(id).is_some()
    }

    pub fn resolve(&self, id: &str) -> Option<u32> {
        self.find(id)
    }

    pub fn type_tag(&self, ty: &str) -> Option<u32> {
        self.types.iter().position(|t| &**t == ty).map(|t| t as u32)
    }

    pub fn label(&self, target: &str) -> Option<&str> {
        self.labels.get(target).map(String::as_str)
    }

    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The usage totals; `compute` folds every counted entry's usage (it reads their lines)
    /// and runs at most once per open.
    pub fn stats(&self, compute: impl FnOnce(&Index) -> Result<StatsAcc>) -> Result<StatsAcc> {
        if let Some(s) = self.stats.get() {
            return Ok(*s);
        }
        let s = compute(self)?;
        Ok(*self.stats.get_or_init(|| s))
    }

    /// " (line N)" for entries that came from a file line.
    pub fn at_line(&self, ix: u32) -> String {
        match self.slots[ix as usize].line {
            0 => String::new(),
            n => format!(" (line {n})"),
        }
    }

    pub fn leaf(&self) -> Option<u32> {
        match self.leaf {
            LeafTarget::At(ix) => Some(ix),
            _ => None,
        }
    }

    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf().map(|ix| self.id(ix))
    }

    /// The id of slot `ix`.
    pub fn id(&self, ix: u32) -> &str {
        id_in(&self.ids, self.slots[ix as usize].id)
    }

    fn find(&self, id: &str) -> Option<u32> {
        self.find_tagged(self.tag_of(id), id)
    }

    #[inline]
    fn tag_of(&self, id: &str) -> u32 {
        self.hasher.tag(id)
    }

    /// A copy of the hasher behind the id table's tags.
    pub fn hasher(&self) -> IdHasher {
        self.hasher.clone()
    }

    fn find_tagged(&self, tag: u32, id: &str) -> Option<u32> {
        self.by_id
            .find(table_hash(tag), |k| {
                k.tag == tag && id_in(&self.ids, self.slots[k.ix as usize].id) == id
            })
            .map(|k| k.ix)
    }

    fn intern(&mut self, ty: &str) -> u32 {
        // A session has a handful of types: a scan beats hashing every line's type.
        if let Some(t) = self.type_tag(ty) {
            return t;
        }
        let t = self.types.len() as u32;
        self.types.push(ty.into());
        t
    }

    /// Adds one line read from a file (log order). Parents may refer forward; they are resolved
    /// by `finish_load`. Duplicate ids refuse the load.
    pub fn load(&mut self, env: &LineEnvelope<'_>, raw: Raw, line: u32) -> Result<()> {
        if let Some(problem) = envelope_problem(env) {
            return Err(SessionError::Line {
                file: self.origin.clone(),
                line: line as usize,
                message: problem,
            });
        }
        let tag = self.tag_of(&env.id);
        self.load_facts(&Facts::of(env), tag, Some(env), raw, line)
    }

    /// [`Index::load`] for a line the skim read (its envelope rules hold by construction).
    pub fn load_skimmed(&mut self, skim: &Skim<'_>, raw: Raw, line: u32) -> Result<()> {
        let tag = self.tag_of(skim.id);
        self.load_facts(&Facts::skimmed(skim), tag, None, raw, line)
    }

    /// [`Index::load_skimmed`] with the id's tag made by a copy of [`Index::hasher`].
    pub fn load_skimmed_tagged(
        &mut self,
        skim: &Skim<'_>,
        tag: u32,
        raw: Raw,
        line: u32,
    ) -> Result<()> {
        debug_assert_eq!(tag, self.tag_of(skim.id));
        self.load_facts(&Facts::skimmed(skim), tag, None, raw, line)
    }

    fn load_facts(
        &mut self,
        facts: &Facts<'_>,
        tag: u32,
        env: Option<&LineEnvelope<'_>>,
        raw: Raw,
        line: u32,
    ) -> Result<()> {
        self.id_room(facts.id).map_err(|e| SessionError::Line {
            file: self.origin.clone(),
            line: line as usize,
            message: e.to_string(),
        })?;
        if let Some(first) = self.find_tagged(tag, facts.id) {
            return Err(SessionError::Line {
                file: self.origin.clone(),
                line: line as usize,
                message: format!(
                    "duplicate entry id {} (first used{})",
                    facts.id,
                    self.at_line(first)
                ),
            });
        }
        let ix = self.slots.len() as u32;
        let parent = match facts.parent_id {
            None => Parent::Root,
            // Most entries continue the line before them: comparing with that id (still in
            // cache) spares a hash probe into a table too big for the cache.
            Some(p) => match ix.checked_sub(1).filter(|&q| self.id(q) == p) {
                Some(prev) => Parent::At(prev),
                None => match self.find(p) {
                    Some(pix) => Parent::At(pix),
                    None => {
                        self.pending_parents.push((ix, p.into()));
                        Parent::Missing
                    }
                },
            },
        };
        self.push(facts, tag, env, raw, line, parent);
        Ok(())
    }

    /// Adds entry `ix` of `src`, copied verbatim into this index's file as `raw` (a fork,
    /// DECISIONS §25.92): its envelope facts come from `src`, so the line is not parsed again,
    /// except for the types whose payload feeds the index (`text` is probed, as at open).
    pub fn load_copy(
        &mut self,
        src: &Index,
        ix: u32,
        text: &str,
        raw: Raw,
        line: u32,
    ) -> Result<()> {
        let slot = src.slot(ix);
        let ty = src.types.get(slot.ty as usize).map_or("", |t| &**t);
        let parent_id = match slot.parent {
            Parent::Root => Some(None),
            Parent::At(p) => Some(Some(src.id(p))),
            Parent::Missing => src.missing_parents.get(&ix).map(|p| Some(&**p)),
        };
        match parent_id {
            Some(parent_id) if !FULL_TYPES.contains(&ty) => self.load_facts(
                &Facts {
                    ty,
                    id: src.id(ix),
                    parent_id,
                    assistant: slot.assistant,
                },
                self.tag_of(src.id(ix)),
                None,
                raw,
                line,
            ),
            _ => {
                let env = probe(text).map_err(|e| SessionError::Line {
                    file: self.origin.clone(),
                    line: line as usize,
                    message: format!("not a valid entry: {e}"),
                })?;
                self.load(&env, raw, line)
            }
        }
    }

    /// Resolves forward references after the last line and checks the recovered leaf.
    pub fn finish_load(&mut self) -> Result<()> {
        for (ix, pid) in std::mem::take(&mut self.pending_parents) {
            match self.find(&pid) {
                Some(p) => self.slots[ix as usize].parent = Parent::At(p),
                None => {
                    self.missing_parents.insert(ix, pid);
                }
            }
        }
        if let LeafTarget::Pending { target, by } = &self.leaf {
            match self.find(target) {
                Some(t) => self.leaf = LeafTarget::At(t),
                None => {
                    return Err(SessionError::InvalidSession(format!(
                        "{}: leaf entry {}{} points at unknown entry {}",
                        self.origin,
                        self.id(*by),
                        self.at_line(*by),
                        target
                    )))
                }
            }
        }
        Ok(())
    }

    /// Appends an entry that `check_append` accepted (its parent and targets exist).
    pub fn append(&mut self, env: &LineEnvelope<'_>, raw: Raw, line: u32) {
        let parent = match env.parent_id.as_ref().and_then(|p| p.as_deref()) {
            None => Parent::Root,
            Some(p) => match self.find(p) {
                Some(pix) => Parent::At(pix),
                None => Parent::Missing,
            },
        };
        let ix = self.slots.len() as u32;
        if parent == Parent::Missing {
            if let Some(p) = env.parent_id.as_ref().and_then(|p| p.as_deref()) {
                self.missing_parents.insert(ix, p.into());
            }
        }
        if let Some(stats) = self.stats.get_mut() {
            fold_usage(stats, env);
        }
        let facts = Facts::of(env);
        let tag = self.tag_of(facts.id);
        self.push(&facts, tag, Some(env), raw, line, parent);
    }

    fn push(
        &mut self,
        facts: &Facts<'_>,
        tag: u32,
        env: Option<&LineEnvelope<'_>>,
        raw: Raw,
        line: u32,
        parent: Parent,
    ) {
        let ix = self.slots.len() as u32;
        let ty = self.intern(facts.ty);
        let id = IdAt {
            start: u32::try_from(self.ids.len()).unwrap_or(u32::MAX),
            len: u32::try_from(facts.id.len()).unwrap_or(u32::MAX),
        };
        self.ids.push_str(facts.id);
        self.by_id
            .insert_unique(table_hash(tag), Keyed { ix, tag }, |k| table_hash(k.tag));
        let assistant = facts.assistant;
        self.slots.push(Slot {
            id,
            parent,
            ty,
            line,
            assistant,
            raw,
        });
        // Leaf recovery (DECISIONS §2.3): ordinary entries move the leaf to themselves, `leaf`
        // entries to their target. Types with index-relevant payloads always come with the full
        // probe (the skim refuses them).
        let Some(env) = env else {
            self.leaf = LeafTarget::At(ix);
            return;
        };
        match env.ty.as_ref() {
            "leaf" => {
                let target = env.target_id.as_ref().and_then(|t| t.as_deref());
                self.leaf = match target {
                    None => LeafTarget::None,
                    Some(t) => match self.find(t) {
                        Some(tix) => LeafTarget::At(tix),
                        None => LeafTarget::Pending {
                            target: t.into(),
                            by: ix,
                        },
                    },
                };
            }
            _ => self.leaf = LeafTarget::At(ix),
        }
        match env.ty.as_ref() {
            "compaction" => {
                self.compactions.insert(
                    ix,
                    CompactionInfo {
                        first_kept: env.first_kept_entry_id.0.as_deref().map(Into::into),
                        retained_tail: env.retained_tail.0,
                    },
                );
            }
            "label" => {
                if let Some(Some(target)) = &env.target_id {
                    let label = env.label.0.as_deref().map(str::trim).unwrap_or("");
                    if label.is_empty() {
                        self.labels.remove(target.as_ref());
                    } else {
                        self.labels.insert(target.as_ref().into(), label.to_owned());
                    }
                }
            }
            "session_info" => {
                let name = env.name.0.as_deref().map(str::trim).unwrap_or("");
                self.name = (!name.is_empty()).then(|| name.to_owned());
            }
            _ => {}
        }
    }

    /// Whether `id` still fits the id buffer's 32-bit offsets (4 GiB of ids: no real session).
    fn id_room(&self, id: &str) -> std::result::Result<(), IdsFull> {
        if self.ids.len() + id.len() > u32::MAX as usize {
            return Err(IdsFull(id.to_owned()));
        }
        Ok(())
    }

    /// Validates an entry about to be appended (no state changes): unique id, existing parent,
    /// existing `leaf`/`label` targets. `context_edit` rules need entry payloads and are
    /// checked by the caller.
    pub fn check_append(&self, env: &LineEnvelope<'_>) -> Result<()> {
        if let Some(problem) = envelope_problem(env) {
            return Err(SessionError::InvalidEntry(problem));
        }
        self.id_room(&env.id)
            .map_err(|e| SessionError::InvalidEntry(e.to_string()))?;
        if self.contains(&env.id) {
            return Err(SessionError::InvalidEntry(format!(
                "duplicate entry id {} in {}",
                env.id, self.origin
            )));
        }
        if let Some(Some(p)) = &env.parent_id {
            if !self.contains(p) {
                return Err(SessionError::InvalidEntry(format!(
                    "entry {} has parentId {p}, which is not in {}",
                    env.id, self.origin
                )));
            }
        }
        match env.ty.as_ref() {
            "leaf" | "label" | "context_edit" => match &env.target_id {
                Some(Some(t)) if !self.contains(t) => {
                    Err(SessionError::NotFound(format!("Entry not found: {t}")))
                }
                Some(None) if env.ty != "leaf" => Err(SessionError::InvalidEntry(format!(
                    "{} entry {} needs a targetId",
                    env.ty, env.id
                ))),
                None if env.ty != "leaf" => Err(SessionError::InvalidEntry(format!(
                    "{} entry {} needs a targetId",
                    env.ty, env.id
                ))),
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// The parent of `ix`, failing on a parentId that names no entry.
    pub fn parent(&self, ix: u32) -> Result<Option<u32>> {
        match self.slots[ix as usize].parent {
            Parent::Root => Ok(None),
            Parent::At(p) => Ok(Some(p)),
            Parent::Missing => Err(SessionError::InvalidSession(format!(
                "{}: entry {}{} has parentId {}, which is not in the session",
                self.origin,
                self.id(ix),
                self.at_line(ix),
                self.missing_parents.get(&ix).map(|s| &**s).unwrap_or("?")
            ))),
        }
    }

    fn cycle_error(&self, ix: u32) -> SessionError {
        SessionError::InvalidSession(format!(
            "{}: the parentId chain through entry {}{} forms a cycle",
            self.origin,
            self.id(ix),
            self.at_line(ix)
        ))
    }

    /// Root..=leaf. A missing parent or a cycle is `invalid_session`.
    pub fn ancestry(&self, leaf: Option<u32>) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        let mut cur = leaf;
        while let Some(ix) = cur {
            if out.len() > self.slots.len() {
                return Err(self.cycle_error(ix));
            }
            out.push(ix);
            cur = self.parent(ix)?;
        }
        out.reverse();
        Ok(out)
    }

    /// The last `max` entries of root..=leaf, in path order (walks only those, plus a cycle
    /// check bounded by the session size).
    pub fn path_tail(&self, leaf: Option<u32>, max: usize) -> Result<Vec<u32>> {
        let mut out = Vec::with_capacity(max.min(self.slots.len()));
        let mut cur = leaf;
        while let Some(ix) = cur {
            if out.len() == max {
                break;
            }
            if out.len() > self.slots.len() {
                return Err(self.cycle_error(ix));
            }
            out.push(ix);
            cur = self.parent(ix)?;
        }
        out.reverse();
        Ok(out)
    }

    /// DECISIONS §3.1: walk up from `leaf`; the first compaction met fixes the boundary (itself
    /// when it has a `retainedTail`, else its `firstKeptEntryId`); older ones do not move it.
    pub fn path_to_root_or_compaction(&self, leaf: Option<u32>) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        let mut stop_at: Option<&str> = None;
        let mut boundary_fixed = false;
        let mut cur = leaf;
        while let Some(ix) = cur {
            if out.len() > self.slots.len() {
                return Err(self.cycle_error(ix));
            }
            out.push(ix);
            if !boundary_fixed {
                if let Some(c) = self.compactions.get(&ix) {
                    boundary_fixed = true;
                    if c.retained_tail {
                        break;
                    }
                    stop_at = c.first_kept.as_deref();
                }
            }
            // A compaction that kept nothing names itself as the first kept entry.
            if stop_at.is_some_and(|stop| self.id(ix) == stop) {
                break;
            }
            cur = self.parent(ix)?;
        }
        out.reverse();
        Ok(out)
    }

    /// Children of `parent` (`None` = roots), in log order.
    pub fn children(&self, parent: Option<u32>) -> Vec<u32> {
        let want = match parent {
            None => Parent::Root,
            Some(p) => Parent::At(p),
        };
        (0..self.slots.len() as u32)
            .filter(|ix| self.slots[*ix as usize].parent == want)
            .collect()
    }

    /// Every entry of one type, in log order.
    pub fn of_type(&self, ty: &str) -> Vec<u32> {
        match self.type_tag(ty) {
            None => Vec::new(),
            Some(t) => (0..self.slots.len() as u32)
                .filter(|ix| self.slots[*ix as usize].ty == t)
                .collect(),
        }
    }
}
