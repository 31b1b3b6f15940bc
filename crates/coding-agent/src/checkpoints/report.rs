//! The words every front end uses for what a restore changes (DECISIONS §27.21, §27.43): the
//! TUI's notices and confirmation, the CLI's lines on stderr. Counts agree with their nouns,
//! and the untracked files a restore removes or overwrites are named.

use arbor_checkpoint::{Change, ChangeStatus};

/// At most this many untracked files are named in one line; the rest are counted.
pub const MAX_NAMED: usize = 10;

/// `1 path changed`, `4 paths changed`.
pub fn paths_changed(n: usize) -> String {
    if n == 1 {
        "1 path changed".to_owned()
    } else {
        format!("{n} paths changed")
    }
}

/// `notes.txt, build/out.bin` (and `and 3 more` past [`MAX_NAMED`]).
pub fn name_list(paths: &[&str]) -> String {
    let mut text = paths
        .iter()
        .take(MAX_NAMED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > MAX_NAMED {
        text.push_str(&format!(" and {} more", paths.len() - MAX_NAMED));
    }
    text
}

/// What a restore does to untracked files, e.g. `removes untracked notes.txt, build/out.bin;
/// overwrites untracked cache.db` (`verb` "removes" / "removed"). `None` when it touches none.
pub fn untracked_effect(untracked: &[Change], past: bool) -> Option<String> {
    let removed: Vec<&str> = untracked
        .iter()
        .filter(|c| c.status == ChangeStatus::Deleted)
        .map(|c| c.path.as_str())
        .collect();
    let overwritten: Vec<&str> = untracked
        .iter()
        .filter(|c| c.status != ChangeStatus::Deleted)
        .map(|c| c.path.as_str())
        .collect();
    let (remove, overwrite) = if past {
        ("removed", "overwrote")
    } else {
        ("removes", "overwrites")
    };
    let mut parts = Vec::new();
    if !removed.is_empty() {
        parts.push(format!(
            "{remove} {} {}",
            noun(removed.len()),
            name_list(&removed)
        ));
    }
    if !overwritten.is_empty() {
        parts.push(format!(
            "{overwrite} {} {}",
            noun(overwritten.len()),
            name_list(&overwritten)
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// `1 path changed; removed untracked file notes.txt, kept in checkpoint 1a2b3c4d5e6f` for
/// the CLI's stderr line (no restore: `0 paths changed`).
pub fn restore_summary(report: &super::RestoreReport) -> String {
    let Some(r) = &report.restored else {
        return paths_changed(0);
    };
    let mut text = paths_changed(r.changed.len());
    if let Some(untracked) = untracked_effect(&r.untracked, true) {
        let kept = report.from.id.get(..12).unwrap_or(&report.from.id);
        text.push_str(&format!("; {untracked}, kept in checkpoint {kept}"));
    }
    text
}

fn noun(n: usize) -> &'static str {
    if n == 1 {
        "untracked file"
    } else {
        "untracked files"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(status: ChangeStatus, path: &str) -> Change {
        Change {
            status,
            path: path.into(),
        }
    }

    #[test]
    fn counts_agree_with_their_nouns() {
        assert_eq!(paths_changed(0), "0 paths changed");
        assert_eq!(paths_changed(1), "1 path changed");
        assert_eq!(paths_changed(4), "4 paths changed");
        assert_eq!(untracked_effect(&[], true), None);
        let one = [change(ChangeStatus::Deleted, "notes.txt")];
        assert_eq!(
            untracked_effect(&one, true).unwrap(),
            "removed untracked file notes.txt"
        );
        let mixed = [
            change(ChangeStatus::Deleted, "build/out.bin"),
            change(ChangeStatus::Modified, "cache.db"),
            change(ChangeStatus::Deleted, "notes.txt"),
        ];
        assert_eq!(
            untracked_effect(&mixed, false).unwrap(),
            "removes untracked files build/out.bin, notes.txt; overwrites untracked file cache.db"
        );
    }

    #[test]
    fn long_lists_are_cut_and_counted() {
        let names: Vec<String> = (0..13).map(|i| format!("f{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(
            name_list(&refs),
            "f0, f1, f2, f3, f4, f5, f6, f7, f8, f9 and 3 more"
        );
    }
}
