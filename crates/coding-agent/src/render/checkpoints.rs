//! `arbor session checkpoints`: one line per checkpoint or restore on the active path, root
//! first, each followed by its changed paths.

use crate::checkpoints::inspect::PathMarker;
use crate::checkpoints::StateMarker;

/// Shown ids are shortened to this many characters (entry ids are 8 already).
const SHORT: usize = 12;

fn short(id: &str) -> &str {
    &id[..id.len().min(SHORT)]
}

pub fn render(markers: &[PathMarker]) -> String {
    let mut out = String::new();
    for m in markers {
        match &m.marker {
            StateMarker::Checkpoint(c) => {
                let head = c
                    .checkpoint
                    .head
                    .as_deref()
                    .map(|h| format!(" head {}", short(h)))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "{}  {}  checkpoint {} ({}, {}){head}  {} changed\n",
                    m.entry_id,
                    m.timestamp,
                    short(&c.checkpoint.id),
                    c.checkpoint.store.as_str(),
                    c.trigger,
                    c.changed_count
                ));
                for change in &c.changed {
                    out.push_str(&format!("    {} {}\n", change.status.letter(), change.path));
                }
                if c.changed_count > c.changed.len() {
                    out.push_str(&format!(
                        "    … and {} more\n",
                        c.changed_count - c.changed.len()
                    ));
                }
            }
            StateMarker::Restore(r) => {
                let target = r
                    .to_entry
                    .as_deref()
                    .map(|e| format!(" (state of entry {e})"))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "{}  {}  restore {} -> {}{target}, mode {}\n",
                    m.entry_id,
                    m.timestamp,
                    short(&r.from.id),
                    short(&r.to.id),
                    r.mode
                ));
            }
        }
    }
    out
}
