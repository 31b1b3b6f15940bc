//! What turns a context list into bytes, entry by entry.

use crate::entry::SessionEntry;
use crate::error::Result;

/// Turns the entries of a context list into bytes for
/// [`render_context_entries`](super::entries::render_context_entries). `edit` sees every `context_edit` of the list
/// before any `render` call; `render` may then run on several threads at once, so it reads only
/// what `edit` left behind.
pub trait EntryRenderer {
    /// Takes a `context_edit` entry of the list.
    fn edit(&mut self, entry: SessionEntry) -> Result<()>;
    /// Appends what `entry` contributes to `out`; `opens` for the list's first entry after the
    /// edits (the newest compaction, when the list has one).
    fn render(&self, entry: SessionEntry, opens: bool, out: &mut Vec<u8>) -> Result<()>;
}
