//! Which entries are on the active path: one `active` flag per entry, moved with the leaf.
//!
//! When a session's leaf moves, only the entries between the old and the new leaf and their
//! common ancestor change state (DECISIONS §34.4): walking up from the new leaf marks entries
//! active until it meets one that already is (the junction); walking up from the old leaf
//! clears entries until it reaches that junction. An append (new leaf below the old one)
//! costs one step per new entry; a full build costs one step per entry of the path.

use rusqlite::{params, OptionalExtension, Transaction};

/// Moves the active path of file `file_id` from `old` to `new` (either may be `None`: no
/// entries or a leaf before the first entry). A walk that meets a missing parent stops there;
/// one that would loop (a `parentId` cycle) stops after `limit` steps (the file's line count,
/// which bounds its entry count).
pub(crate) fn move_leaf(
    tx: &Transaction<'_>,
    file_id: i64,
    old: Option<&str>,
    new: Option<&str>,
    limit: i64,
) -> rusqlite::Result<()> {
    if old == new {
        return Ok(());
    }
    let mut lookup = tx.prepare_cached(
        "SELECT parent_id, active FROM entries WHERE file_id = ?1 AND entry_id = ?2",
    )?;
    let mut set =
        tx.prepare_cached("UPDATE entries SET active = ?3 WHERE file_id = ?1 AND entry_id = ?2")?;
    // Up from the new leaf: mark active until an already active entry (the junction).
    let mut junction = None;
    let mut at = new.map(str::to_owned);
    let mut steps = 0;
    while let Some(id) = at.take() {
        let Some((parent, active)) = lookup
            .query_row(params![file_id, id], |r| {
                Ok((r.get::<_, Option<String>>(0)?, r.get::<_, bool>(1)?))
            })
            .optional()?
        else {
            break;
        };
        if active {
            junction = Some(id);
            break;
        }
        set.execute(params![file_id, id, true])?;
        steps += 1;
        if steps > limit {
            break;
        }
        at = parent;
    }
    // Up from the old leaf: clear until the junction.
    let mut at = old.map(str::to_owned);
    let mut steps = 0;
    while let Some(id) = at.take() {
        if junction.as_deref() == Some(id.as_str()) {
            break;
        }
        let Some(parent) = lookup
            .query_row(params![file_id, id], |r| r.get::<_, Option<String>>(0))
            .optional()?
        else {
            break;
        };
        set.execute(params![file_id, id, false])?;
        steps += 1;
        if steps > limit {
            break;
        }
        at = parent;
    }
    Ok(())
}
