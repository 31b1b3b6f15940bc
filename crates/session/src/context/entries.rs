//! The entries the default context is projected from, read from any backend: planned from the
//! stored lines where the backend offers them ([`SessionStorage::lines`]), else from
//! [`SessionStorage::path_to_root_or_compaction`].

use crate::context::planned::{render_planned, visit_planned};
use crate::context::projection::visit_context_list;
use crate::context::renderer::EntryRenderer;
use crate::entry::{EntryKind, SessionEntry};
use crate::error::Result;
use crate::storage::SessionStorage;

/// The entries the default context at `leaf` (default: the current leaf) is projected from —
/// DECISIONS §3.3's list over [`SessionStorage::path_to_root_or_compaction`] — handed to
/// `visit` one at a time: first every `context_edit` of the list (so edits are known before
/// their targets), then every other entry in list order, the newest compaction first when
/// there is one. Lets a caller write a long context without holding it (the streamed
/// `session context --json`, DECISIONS §25.100). Without stored lines the whole window is read
/// first; with them the list is planned from the index and each entry parsed when handed
/// over. A failed read or a failing `visit` stops the walk with that error.
pub async fn visit_context_entries<S: SessionStorage + ?Sized>(
    storage: &S,
    leaf: Option<&str>,
    visit: &mut (dyn FnMut(SessionEntry) -> Result<()> + Send),
) -> Result<()> {
    if let Some(lines) = storage.lines() {
        return lines
            .read_lines(&mut |l| {
                let src = (l.sources)();
                visit_planned(l.index, &*src, leaf, visit)
            })
            .await;
    }
    let window = storage.path_to_root_or_compaction(leaf).await?;
    visit_context_list(window, visit)
}

/// [`visit_context_entries`]'s list turned into bytes: every `context_edit` goes to
/// [`EntryRenderer::edit`] first, then each other entry to [`EntryRenderer::render`] (told
/// whether it opens the list), and `out` receives what the entries rendered, in list order.
/// Over stored lines a long list is read, parsed and rendered on several threads, each entry
/// freed where it was made (DECISIONS §25.120); otherwise it is rendered on the caller's
/// thread. A failed read, render or `out` stops the walk with that error; everything before
/// it in list order has reached `out`.
pub async fn render_context_entries<S: SessionStorage + ?Sized>(
    storage: &S,
    leaf: Option<&str>,
    renderer: &mut (dyn EntryRenderer + Send + Sync),
    out: &mut (dyn for<'b> FnMut(&'b [u8]) -> Result<()> + Send),
) -> Result<()> {
    if let Some(lines) = storage.lines() {
        return lines
            .read_lines(&mut |l| render_planned(l.index, l.sources, leaf, renderer, out))
            .await;
    }
    let mut opens = true;
    let mut buf = Vec::new();
    visit_context_entries(storage, leaf, &mut |entry| {
        if matches!(entry.kind, EntryKind::ContextEdit(_)) {
            return renderer.edit(entry);
        }
        buf.clear();
        renderer.render(entry, std::mem::replace(&mut opens, false), &mut buf)?;
        out(&buf)
    })
    .await
}
