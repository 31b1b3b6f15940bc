//! A generator for wide, deep sessions: one long active path with many short side branches,
//! the shape where per-entry costs (not payload bytes) dominate.
//!
//! Written line by line with `format!` so generating 1,000,000 entries takes seconds and little
//! memory. Entries are pi v3 lines with realistic small payloads (~390 bytes on average): user
//! prompts, assistant replies with usage and a tool call, tool results. Side branches hang off
//! active-path entries (their `parentId` names one) and are written right after it, so the
//! file's last line is the active leaf, as in a session that was branched and then resumed.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// The shape to generate.
pub struct Shape {
    /// Entries on the root→leaf path.
    pub active_depth: usize,
    /// Side branches, spread evenly along the active path.
    pub branches: usize,
    /// Entries per side branch.
    pub branch_len: usize,
}

impl Shape {
    /// `entries` in the proportions of the 1,000,000-entry benchmark file: a fifth on the
    /// active path, the rest in side branches of 100 entries.
    pub fn scaled(entries: usize) -> Shape {
        let active_depth = (entries / 5).max(1);
        let branch_len = 100.min(entries.saturating_sub(active_depth).max(1));
        let branches = entries.saturating_sub(active_depth) / branch_len;
        Shape {
            active_depth,
            branches,
            branch_len,
        }
    }
}

/// What was written.
pub struct Made {
    pub entries: usize,
    pub active_depth: usize,
    pub branches: usize,
    pub bytes: u64,
}

struct Gen<W: Write> {
    out: W,
    n: usize,
    bytes: u64,
    ms: i64,
    rng: u64,
}

const WORDS: &[&str] = &[
    "fn", "let", "mut", "impl", "struct", "enum", "match", "Some", "None", "Ok", "Err", "async",
    "await", "pub", "use", "crate", "self", "vec", "string", "parse", "error", "result", "option",
    "iter", "map", "filter", "collect", "clone", "borrow",
];

impl<W: Write> Gen<W> {
    fn next(&mut self) -> u64 {
        // xorshift64*: deterministic, dependency-free.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn text(&mut self, words: usize) -> String {
        let mut s = String::with_capacity(words * 7);
        for i in 0..words {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(WORDS[(self.next() % WORDS.len() as u64) as usize]);
        }
        s
    }

    fn iso(&self) -> String {
        arbor_session::time::ms_to_iso(self.ms)
    }

    /// Writes one entry of the `k`-th kind of a four-entry turn; returns its id.
    fn entry(&mut self, parent: Option<&str>, k: usize) -> io::Result<String> {
        self.n += 1;
        self.ms += 1 + (self.next() % 3000) as i64;
        let id = format!("{:08x}", self.n);
        let parent = match parent {
            Some(p) => format!("\"{p}\""),
            None => "null".into(),
        };
        let ts = self.iso();
        let ms = self.ms;
        let line = match k % 4 {
            0 => {
                let words = 6 + (self.next() % 18) as usize;
                let text = self.text(words);
                format!(
                    r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{ts}","message":{{"role":"user","content":[{{"type":"text","text":"{text}"}}],"timestamp":{ms}}}}}"#
                )
            }
            1 => {
                let words = 4 + (self.next() % 10) as usize;
                let text = self.text(words);
                let input = 100 + self.next() % 5000;
                let output = 10 + self.next() % 800;
                format!(
                    r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{ts}","message":{{"role":"assistant","content":[{{"type":"text","text":"{text}"}},{{"type":"toolCall","id":"toolu_{id}","name":"read","arguments":{{"path":"src/mod{}.rs"}}}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{{"input":{input},"output":{output},"cacheRead":0,"cacheWrite":0,"totalTokens":{},"cost":{{"input":0.01,"output":0.02,"cacheRead":0,"cacheWrite":0,"total":0.03}}}},"stopReason":"toolUse","timestamp":{ms}}}}}"#,
                    self.n % 97,
                    input + output
                )
            }
            2 => {
                let words = 6 + (self.next() % 24) as usize;
                let text = self.text(words);
                format!(
                    r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{ts}","message":{{"role":"toolResult","toolCallId":"toolu_{:08x}","toolName":"read","content":[{{"type":"text","text":"{text}"}}],"isError":false,"timestamp":{ms}}}}}"#,
                    self.n - 1
                )
            }
            _ => {
                let words = 4 + (self.next() % 10) as usize;
                let text = self.text(words);
                format!(
                    r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{ts}","message":{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{{"input":120,"output":40,"cacheRead":0,"cacheWrite":0,"totalTokens":160,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":{ms}}}}}"#
                )
            }
        };
        self.out.write_all(line.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.bytes += line.len() as u64 + 1;
        Ok(id)
    }
}

/// Writes a session of `shape` to `path` (replacing it).
pub fn generate(path: &Path, shape: &Shape) -> io::Result<Made> {
    let mut g = Gen {
        out: BufWriter::with_capacity(1 << 20, File::create(path)?),
        n: 0,
        bytes: 0,
        ms: 1_781_967_600_000,
        rng: 0x9E37_79B9_7F4A_7C15,
    };
    let header = format!(
        r#"{{"type":"session","version":3,"id":"019a0000-0000-7000-8000-00000000wide","timestamp":"{}","cwd":"/work/project"}}"#,
        g.iso()
    );
    g.out.write_all(header.as_bytes())?;
    g.out.write_all(b"\n")?;
    g.bytes += header.len() as u64 + 1;
    let every = (shape.active_depth / shape.branches.max(1)).max(1);
    let mut parent: Option<String> = None;
    let mut branches = 0;
    for i in 0..shape.active_depth {
        let id = g.entry(parent.as_deref(), i)?;
        // A side branch re-asks from a user turn: it starts with a user message under the
        // entry before it.
        let due = branches < shape.branches && i % every == every / 2;
        if due {
            let mut side = id.clone();
            for k in 0..shape.branch_len {
                side = g.entry(Some(&side), k)?;
            }
            branches += 1;
        }
        parent = Some(id);
    }
    g.out.flush()?;
    Ok(Made {
        entries: g.n,
        active_depth: shape.active_depth,
        branches,
        bytes: g.bytes,
    })
}
