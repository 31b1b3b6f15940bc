//! The context JSON of `arbor session context --json`, written entry by entry from the storage
//! (DECISIONS §25.100–§25.102): each path entry is parsed, projected, converted and written,
//! then dropped, so a 200,000-entry context costs the index plus one entry in memory instead
//! of every parsed entry and message at once. Same bytes as
//! `write_expected_json` (feature `internals`) over the projected context.

use std::collections::HashMap;
use std::io::Write;

use serde_json::Value;

use crate::context::convert::convert_into;
use crate::context::entries::render_context_entries;
use crate::context::projection::{apply_edit, entry_messages_owned, DerivedState};
use crate::context::renderer::EntryRenderer;
use crate::context::{write_head, write_message, write_tail};
use crate::entry::{EntryKind, SessionEntry};
use crate::error::{Result, SessionError};
use crate::storage::SessionStorage;

/// Writes a context's JSON from the entries of its list, in the order
/// [`visit_context_entries`](crate::context::visit_context_entries) hands them over: `context_edit` entries first,
/// then the others in list order. Default projection only (no entry transforms or custom
/// projectors: `custom` entries project nothing, as with empty [`ContextOptions`]).
///
/// [`ContextOptions`]: crate::context::ContextOptions
#[derive(Debug)]
pub struct ContextJsonWriter<W: Write> {
    out: W,
    /// Target id → replacement of the latest `context_edit` seen (later ones win, as in
    /// `latest_edits`).
    edits: HashMap<String, Value>,
    /// Entries other than edits projected so far: the next one's position in the list, where
    /// only position 0 matters (the compaction that opens the context speaks there).
    projected: usize,
    /// Messages written so far (the next needs a comma before it).
    written: usize,
}

impl<W: Write> ContextJsonWriter<W> {
    /// Writes everything before the first message: `ok`, `leafId`, the derived settings and
    /// the opening of the `llm` array.
    pub fn start(mut out: W, state: &DerivedState, leaf_id: Option<&str>) -> std::io::Result<Self> {
        write_head(
            &mut out,
            leaf_id,
            &state.model,
            &state.thinking_level,
            &state.active_tool_names,
        )?;
        Ok(ContextJsonWriter {
            out,
            edits: HashMap::new(),
            projected: 0,
            written: 0,
        })
    }

    /// Projects one entry of the list and writes its model-visible messages. A `context_edit`
    /// after the first projected entry breaks the visiting order (its target may already be
    /// written) and is refused.
    pub fn entry(&mut self, entry: SessionEntry) -> std::io::Result<()> {
        if let EntryKind::ContextEdit(edit) = entry.kind {
            if self.projected > 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "context_edit {} arrived after the entries it may edit were written",
                        entry.id
                    ),
                ));
            }
            self.edits.insert(edit.target_id, edit.replacement);
            return Ok(());
        }
        let edit = self.edits.remove(&entry.id);
        let position = self.projected;
        self.projected += 1;
        for llm in llm_messages(entry, position, edit.as_ref()) {
            write_message(&mut self.out, &llm, self.written == 0)?;
            self.written += 1;
        }
        Ok(())
    }

    /// Closes the JSON, ends the line and flushes; returns the writer.
    pub fn finish(mut self) -> std::io::Result<W> {
        write_tail(&mut self.out)?;
        Ok(self.out)
    }
}

/// The context at `leaf` (default: the current leaf) as `session context --json` prints it,
/// streamed into `out`: derived settings from the storage's walk (DECISIONS §3.2), messages
/// rendered by [`render_context_entries`]. Returns `out`, flushed.
///
/// Bytes reach `out` before the whole path is read, so a broken entry found late leaves a
/// partial line behind: a caller that must answer with a refusal instead holds the output
/// until it is complete (the CLI holds the first MiB, DECISIONS §25.102). Write errors are
/// [`SessionError::Io`] with the path `context output`.
pub async fn write_context_json<S, W>(storage: &S, leaf: Option<&str>, out: W) -> Result<W>
where
    S: SessionStorage + ?Sized,
    W: Write + Send,
{
    let leaf_id = match leaf {
        Some(id) => Some(id.to_owned()),
        None => storage.leaf_id().await?,
    };
    let settings = storage.derived_settings(leaf_id.as_deref()).await?;
    let state = DerivedState::from_settings(settings);
    let mut out = out;
    write_head(
        &mut out,
        leaf_id.as_deref(),
        &state.model,
        &state.thinking_level,
        &state.active_tool_names,
    )
    .map_err(output_error)?;
    let mut renderer = MessagesJson::default();
    let mut first = true;
    render_context_entries(storage, leaf_id.as_deref(), &mut renderer, &mut |bytes| {
        // Every rendered message starts with its comma; the array's first does not.
        let bytes = match bytes.split_first() {
            Some((_, rest)) if first => {
                first = false;
                rest
            }
            _ => bytes,
        };
        out.write_all(bytes).map_err(output_error)
    })
    .await?;
    write_tail(&mut out).map_err(output_error)?;
    Ok(out)
}

/// The [`EntryRenderer`] of [`write_context_json`]: an entry's model-visible messages, as
/// [`ContextJsonWriter::entry`] writes them, each after a comma. Stateless once the edits are
/// in, so the storage may render entries on several threads (DECISIONS §25.120).
#[derive(Default)]
struct MessagesJson {
    /// Target id → replacement of the latest `context_edit` of the list.
    edits: HashMap<String, Value>,
}

impl EntryRenderer for MessagesJson {
    fn edit(&mut self, entry: SessionEntry) -> Result<()> {
        if let EntryKind::ContextEdit(edit) = entry.kind {
            self.edits.insert(edit.target_id, edit.replacement);
        }
        Ok(())
    }

    fn render(&self, entry: SessionEntry, opens: bool, out: &mut Vec<u8>) -> Result<()> {
        let edit = self.edits.get(&entry.id);
        // Only a compaction reads its position, and only whether it is the first.
        for llm in llm_messages(entry, usize::from(!opens), edit) {
            write_message(out, &llm, false).map_err(output_error)?;
        }
        Ok(())
    }
}

/// What one entry of the list puts in the context: its projected messages at `position`, the
/// list's edit of it applied, converted for the model (both writers' step).
fn llm_messages(
    entry: SessionEntry,
    position: usize,
    edit: Option<&Value>,
) -> impl Iterator<Item = arbor_ai::Message> {
    let messages = entry_messages_owned(entry, position, &HashMap::new());
    let messages = match edit {
        Some(replacement) => apply_edit(messages, replacement),
        None => messages,
    };
    messages.into_iter().filter_map(convert_into)
}

/// Where [`write_context_json`]'s write errors say they happened.
pub const OUTPUT: &str = "context output";

fn output_error(e: std::io::Error) -> SessionError {
    SessionError::io(OUTPUT, e)
}
