//! `edit`: exact-text replacements in one file (DECISIONS §22.41). Every `oldText` is matched
//! against the original content; when any needs it, all of them match in "fuzzy space"
//! (NFKC, trailing blanks dropped, typographic quotes/dashes/spaces made ASCII) and only the
//! touched lines are rewritten. Line endings (CRLF, CR) and a UTF-8 BOM survive the edit.

use serde::Deserialize;
use serde_json::{json, Value};
use similar::{DiffOp, TextDiff};
use unicode_normalization::UnicodeNormalization;

use super::{parse_args, path, BuiltinToolError, ToolEnv, ToolOutput, ToolResult, ToolSpec};

/// Context lines around each change in `details.diff` and `details.patch`.
const CONTEXT_LINES: usize = 4;

/// The `edit` tool's declaration.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "edit",
        label: "edit",
        description: "Change one file by replacing exact text. Each edits[].oldText has to occur exactly \
            once in the file as it is now and must not overlap another edit of the same call; all edits \
            are matched against the unchanged file. Merge changes that touch the same or neighbouring \
            lines into one edit, and keep oldText short rather than spanning long unchanged stretches."
            .to_owned(),
        parameters: json!({
            "type": "object",
            "required": ["path", "edits"],
            "properties": {
                "path": {"type": "string", "description": "File to edit, relative to the working directory or absolute"},
                "edits": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["oldText", "newText"],
                        "properties": {
                            "oldText": {"type": "string", "description": "Text to replace, exactly as it appears once in the file; it must not overlap any other edit's oldText."},
                            "newText": {"type": "string", "description": "The text that takes its place."}
                        }
                    },
                    "description": "The replacements, each matched against the original file (not one after another). No overlapping or nested edits: combine nearby changes into one."
                }
            }
        }),
        snippet: "Make exact-text replacements in a file, several disjoint ones per call if needed",
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
/// One `edits[]` item: a unique piece of the original and what replaces it.
pub struct Replace {
    /// The text to find; must occur exactly once in the original.
    pub old_text: String,
    /// What it becomes.
    pub new_text: String,
}

#[derive(Debug, Deserialize)]
struct Args {
    path: String,
    #[serde(default)]
    edits: Vec<Replace>,
}

/// Accepts the older argument shapes models still send: top-level `oldText`/`newText`, `edits`
/// as a JSON string, or a single edit object.
pub fn normalize_args(mut args: Value) -> Value {
    let Some(obj) = args.as_object_mut() else {
        return args;
    };
    if let Some(Value::String(s)) = obj.get("edits") {
        if let Ok(parsed) = serde_json::from_str::<Value>(s) {
            if parsed.is_array() || is_single_edit(&parsed) {
                obj.insert("edits".into(), parsed);
            }
        }
    }
    if let Some(single) = obj.get("edits").filter(|e| is_single_edit(e)).cloned() {
        obj.insert("edits".into(), Value::Array(vec![single]));
    }
    if let (Some(Value::String(o)), Some(Value::String(n))) =
        (obj.get("oldText"), obj.get("newText"))
    {
        let legacy = json!({"oldText": o, "newText": n});
        obj.remove("oldText");
        obj.remove("newText");
        match obj.get_mut("edits") {
            Some(Value::Array(list)) => list.push(legacy),
            _ => {
                obj.insert("edits".into(), Value::Array(vec![legacy]));
            }
        }
    }
    args
}

fn is_single_edit(v: &Value) -> bool {
    v.get("oldText").is_some_and(Value::is_string) && v.get("newText").is_some_and(Value::is_string)
}

/// Runs one `edit` call: every replacement matched against the original, then one atomic write.
pub async fn run(
    env: &ToolEnv,
    args: Value,
    cancel: &tokio_util::sync::CancellationToken,
) -> ToolResult {
    let args: Args = parse_args("edit", &normalize_args(args))?;
    if args.edits.is_empty() {
        return Err(BuiltinToolError::failed(
            "Edit tool input is invalid. edits must contain at least one replacement.",
        ));
    }
    let shown = args.path.as_str();
    let abs = path::resolve(shown, &env.cwd);
    let _turn = env.mutations.lock(&abs).await;
    if cancel.is_cancelled() {
        return Err(super::aborted_unchanged(shown));
    }
    let code_of = |e: &std::io::Error| -> String {
        use std::io::ErrorKind::*;
        match e.kind() {
            NotFound => "ENOENT".into(),
            PermissionDenied => "EACCES".into(),
            IsADirectory => "EISDIR".into(),
            _ => e.to_string(),
        }
    };
    let cannot = |e: &std::io::Error| {
        BuiltinToolError::failed(format!(
            "Could not edit file: {shown}. Error code: {}.",
            code_of(e)
        ))
    };
    // The file must be readable and writable before anything is computed.
    let meta = tokio::fs::metadata(&abs).await.map_err(|e| cannot(&e))?;
    if meta.is_dir() {
        return Err(BuiltinToolError::failed(format!(
            "Could not edit file: {shown}. Error code: EISDIR."
        )));
    }
    if let Some(kind) = path::special_kind(&meta) {
        return Err(BuiltinToolError::failed(format!(
            "Could not edit file: {shown}. It is {kind}, not a regular file."
        )));
    }
    if meta.permissions().readonly() {
        return Err(BuiltinToolError::failed(format!(
            "Could not edit file: {shown}. Error code: EACCES."
        )));
    }
    let bytes = tokio::fs::read(&abs).await.map_err(|e| cannot(&e))?;
    let raw = String::from_utf8(bytes).map_err(|e| {
        BuiltinToolError::failed(format!(
            "Could not edit file: {shown}. It is not UTF-8 text (invalid byte at offset {}); edit it with bash instead.",
            e.utf8_error().valid_up_to()
        ))
    })?;
    let (bom, content) = match raw.strip_prefix('\u{FEFF}') {
        Some(rest) => ("\u{FEFF}", rest),
        None => ("", raw.as_str()),
    };
    let normalized = to_lf(content);
    let applied = apply_edits(&normalized, &args.edits, shown)?;
    let (diff, first_changed) = display_diff(&normalized, &applied.new_content);
    let patch = unified_patch(shown, &normalized, &applied.new_content);
    let final_content = if content == normalized {
        format!("{bom}{}", applied.new_content)
    } else {
        format!("{bom}{}", restore_endings(content, &applied.replacements))
    };
    // Temporary file, fsync, rename: never a half-written file (DECISIONS §28.7); an abort
    // before the rename leaves it as it was and says so, after it the edit is recorded as
    // applied (DECISIONS §28.8).
    let outcome = super::atomic_write::replace(&abs, final_content.into_bytes(), cancel)
        .await
        .map_err(|e| match e.io() {
            Some((err, _, _)) => cannot(err),
            None => BuiltinToolError::failed(format!("Could not edit file: {shown}. {e}")),
        })?;
    if outcome == super::atomic_write::Outcome::Abandoned {
        return Err(super::aborted_unchanged(shown));
    }
    Ok(ToolOutput::text(format!(
        "Successfully replaced {} block(s) in {shown}.",
        args.edits.len()
    ))
    .with_details(json!({"diff": diff, "patch": patch, "firstChangedLine": first_changed})))
}

/// CRLF and lone CR become LF (both keep or shrink lengths in a way [`restore_endings`] undoes).
pub fn to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// The comparison form of fuzzy matching.
pub fn fuzzy(text: &str) -> String {
    let nfkc: String = text.nfkc().collect();
    let trimmed: Vec<&str> = nfkc.split('\n').map(str::trim_end).collect();
    trimmed
        .join("\n")
        .chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            other => other,
        })
        .collect()
}

/// One replacement in byte offsets of the LF-normalized content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    /// Byte offset of the match.
    pub at: usize,
    /// Length of the matched text in bytes.
    pub len: usize,
    /// The replacement text.
    pub new_text: String,
}

#[derive(Debug)]
/// The result of matching every edit: the new content and where it changed.
pub struct Applied {
    /// The whole content after every replacement.
    pub new_content: String,
    /// The replacements, in content order.
    pub replacements: Vec<Replacement>,
}

/// Matches every edit against `content` (LF-normalized) and applies them from the end.
pub fn apply_edits(
    content: &str,
    edits: &[Replace],
    shown: &str,
) -> Result<Applied, BuiltinToolError> {
    let many = edits.len() > 1;
    let edits: Vec<(String, String)> = edits
        .iter()
        .map(|e| (to_lf(&e.old_text), to_lf(&e.new_text)))
        .collect();
    for (i, (old, _)) in edits.iter().enumerate() {
        if old.is_empty() {
            return Err(BuiltinToolError::failed(if many {
                format!("edits[{i}].oldText must not be empty in {shown}.")
            } else {
                format!("oldText must not be empty in {shown}.")
            }));
        }
    }
    let use_fuzzy = edits.iter().any(|(old, _)| !content.contains(old.as_str()));
    let fuzzy_content;
    let base: &str = if use_fuzzy {
        fuzzy_content = fuzzy(content);
        &fuzzy_content
    } else {
        content
    };
    // Uniqueness is judged in fuzzy space, so near-duplicates count too.
    let fuzzy_haystack = if use_fuzzy { None } else { Some(fuzzy(base)) };
    let haystack = fuzzy_haystack.as_deref().unwrap_or(base);
    let mut matched: Vec<(usize, Replacement)> = Vec::with_capacity(edits.len());
    for (i, (old, new)) in edits.iter().enumerate() {
        let (needle, at) = match base.find(old.as_str()) {
            Some(at) => (old.clone(), at),
            None => {
                let f = fuzzy(old);
                match base.find(f.as_str()) {
                    Some(at) => (f, at),
                    None => {
                        return Err(BuiltinToolError::failed(if many {
                            format!("Could not find edits[{i}] in {shown}. The oldText must match exactly including all whitespace and newlines.")
                        } else {
                            format!("Could not find the exact text in {shown}. The old text must match exactly including all whitespace and newlines.")
                        }))
                    }
                }
            }
        };
        let fuzzy_needle = fuzzy(old);
        let occurrences = haystack.matches(fuzzy_needle.as_str()).count();
        if occurrences > 1 {
            return Err(BuiltinToolError::failed(if many {
                format!("Found {occurrences} occurrences of edits[{i}] in {shown}. Each oldText must be unique. Please provide more context to make it unique.")
            } else {
                format!("Found {occurrences} occurrences of the text in {shown}. The text must be unique. Please provide more context to make it unique.")
            }));
        }
        matched.push((
            i,
            Replacement {
                at,
                len: needle.len(),
                new_text: new.clone(),
            },
        ));
    }
    matched.sort_by_key(|(_, r)| r.at);
    for pair in matched.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if a.1.at + a.1.len > b.1.at {
            return Err(BuiltinToolError::failed(format!(
                "edits[{}] and edits[{}] overlap in {shown}. Merge them into one edit or target disjoint regions.",
                a.0, b.0
            )));
        }
    }
    let matched: Vec<Replacement> = matched.into_iter().map(|(_, r)| r).collect();
    let replacements = if use_fuzzy {
        widen_to_lines(content, base, &matched)?
    } else {
        matched
    };
    let new_content = splice(content, &replacements);
    if new_content == content {
        return Err(BuiltinToolError::failed(if many {
            format!("No changes made to {shown}. The replacements produced identical content.")
        } else {
            format!("No changes made to {shown}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.")
        }));
    }
    Ok(Applied {
        new_content,
        replacements,
    })
}

fn splice(content: &str, replacements: &[Replacement]) -> String {
    let mut out = String::with_capacity(content.len());
    let mut pos = 0;
    for r in replacements {
        out.push_str(&content[pos..r.at]);
        out.push_str(&r.new_text);
        pos = r.at + r.len;
    }
    out.push_str(&content[pos..]);
    out
}

/// `(start, end)` byte spans of each line including its `\n`.
fn line_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (i, b) in text.bytes().enumerate() {
        if b == b'\n' {
            spans.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < text.len() {
        spans.push((start, text.len()));
    }
    spans
}

/// Turns replacements found in the fuzzy form `base` into replacements of whole lines of the
/// real `content`: touched lines are rewritten from `base`, every other line keeps its bytes.
fn widen_to_lines(
    content: &str,
    base: &str,
    matched: &[Replacement],
) -> Result<Vec<Replacement>, BuiltinToolError> {
    let orig = line_spans(content);
    let fz = line_spans(base);
    if orig.len() != fz.len() {
        return Err(BuiltinToolError::failed(
            "Cannot preserve unchanged lines because the base content has a different line count.",
        ));
    }
    let outside = || BuiltinToolError::failed("Replacement range is outside the base content.");
    struct Group<'a> {
        first: usize,
        end: usize,
        reps: Vec<&'a Replacement>,
    }
    let mut groups: Vec<Group> = Vec::new();
    for r in matched {
        let first = fz
            .iter()
            .position(|&(s, e)| r.at >= s && r.at < e)
            .ok_or_else(outside)?;
        let mut last = first;
        while last < fz.len() && fz[last].1 < r.at + r.len {
            last += 1;
        }
        if last >= fz.len() {
            return Err(outside());
        }
        let end = last + 1;
        match groups.last_mut() {
            Some(g) if first < g.end => {
                g.end = g.end.max(end);
                g.reps.push(r);
            }
            _ => groups.push(Group {
                first,
                end,
                reps: vec![r],
            }),
        }
    }
    Ok(groups
        .into_iter()
        .map(|g| {
            let (gs, ge) = (fz[g.first].0, fz[g.end - 1].1);
            let mut text = String::new();
            let mut pos = gs;
            for r in &g.reps {
                text.push_str(&base[pos..r.at]);
                text.push_str(&r.new_text);
                pos = r.at + r.len;
            }
            text.push_str(&base[pos..ge]);
            Replacement {
                at: orig[g.first].0,
                len: orig[g.end - 1].1 - orig[g.first].0,
                new_text: text,
            }
        })
        .collect())
}

/// Applies replacements (offsets in the LF form of `original`) to `original` itself, so lines
/// outside them keep their endings; new line breaks take the ending of the line they start in.
pub fn restore_endings(original: &str, replacements: &[Replacement]) -> String {
    // Where each CRLF's LF sits in the LF form; an offset there maps back by adding the CRLFs
    // before it.
    let lf_positions: Vec<usize> = original
        .match_indices("\r\n")
        .enumerate()
        .map(|(k, (i, _))| i - k)
        .collect();
    let to_original = |offset: usize| offset + lf_positions.partition_point(|&p| p < offset);
    let mut out = String::with_capacity(original.len());
    let mut pos = 0;
    for r in replacements {
        let start = to_original(r.at);
        push_part(&mut out, &original[pos..start]);
        let ending = line_ending_at(original, start);
        let text = if ending == "\n" {
            r.new_text.clone()
        } else {
            r.new_text.replace('\n', ending)
        };
        push_part(&mut out, &text);
        pos = to_original(r.at + r.len);
    }
    push_part(&mut out, &original[pos..]);
    out
}

/// Appends `part`, keeping a CR at the end of `out` from swallowing the part's leading LF.
fn push_part(out: &mut String, part: &str) {
    if part.is_empty() {
        return;
    }
    if out.ends_with('\r') && part.starts_with('\n') {
        out.push('\n');
    }
    out.push_str(part);
}

fn line_ending_at(content: &str, offset: usize) -> &'static str {
    let lf = content[offset..]
        .find('\n')
        .map(|i| i + offset)
        .or_else(|| content[..offset].rfind('\n'));
    match lf {
        None if content.contains('\r') => "\r",
        None => "\n",
        Some(i) if i > 0 && content.as_bytes()[i - 1] == b'\r' => "\r\n",
        Some(_) => "\n",
    }
}

/// The display diff (`+<n> line`, `-<n> line`, ` <n> line`, ` <pad> ...`) and the first changed
/// line of the new text.
pub fn display_diff(old: &str, new: &str) -> (String, Option<usize>) {
    let width = (old.split('\n').count().max(new.split('\n').count()))
        .to_string()
        .len();
    let diff = TextDiff::configure().diff_lines(old, new);
    let old_lines: Vec<&str> = diff.old_slices().to_vec();
    let new_lines: Vec<&str> = diff.new_slices().to_vec();
    // Runs in jsdiff's shape: equal, removed, added (a replace is removed then added).
    enum Run<'a> {
        Same(Vec<&'a str>),
        Removed(Vec<&'a str>),
        Added(Vec<&'a str>),
    }
    let strip = |s: &&str| s.strip_suffix('\n').unwrap_or(s).to_owned();
    let mut runs: Vec<Run> = Vec::new();
    for op in diff.ops() {
        match *op {
            DiffOp::Equal { old_index, len, .. } => {
                runs.push(Run::Same(old_lines[old_index..old_index + len].to_vec()))
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => runs.push(Run::Removed(
                old_lines[old_index..old_index + old_len].to_vec(),
            )),
            DiffOp::Insert {
                new_index, new_len, ..
            } => runs.push(Run::Added(
                new_lines[new_index..new_index + new_len].to_vec(),
            )),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                runs.push(Run::Removed(
                    old_lines[old_index..old_index + old_len].to_vec(),
                ));
                runs.push(Run::Added(
                    new_lines[new_index..new_index + new_len].to_vec(),
                ));
            }
        }
    }
    let pad = |n: usize| format!("{n:>width$}");
    let skip = format!(" {} ...", " ".repeat(width));
    let mut out: Vec<String> = Vec::new();
    let (mut old_no, mut new_no) = (1usize, 1usize);
    let mut first = None;
    let mut last_was_change = false;
    for (i, run) in runs.iter().enumerate() {
        match run {
            Run::Removed(lines) | Run::Added(lines) => {
                first.get_or_insert(new_no);
                let added = matches!(run, Run::Added(_));
                for l in lines {
                    if added {
                        out.push(format!("+{} {}", pad(new_no), strip(l)));
                        new_no += 1;
                    } else {
                        out.push(format!("-{} {}", pad(old_no), strip(l)));
                        old_no += 1;
                    }
                }
                last_was_change = true;
            }
            Run::Same(lines) => {
                let next_change = matches!(runs.get(i + 1), Some(Run::Removed(_) | Run::Added(_)));
                let n = lines.len();
                let show = |range: std::ops::Range<usize>,
                            out: &mut Vec<String>,
                            old_no: &mut usize,
                            new_no: &mut usize| {
                    for l in &lines[range] {
                        out.push(format!(" {} {}", pad(*old_no), strip(l)));
                        *old_no += 1;
                        *new_no += 1;
                    }
                };
                if last_was_change && next_change {
                    if n <= CONTEXT_LINES * 2 {
                        show(0..n, &mut out, &mut old_no, &mut new_no);
                    } else {
                        show(0..CONTEXT_LINES, &mut out, &mut old_no, &mut new_no);
                        out.push(skip.clone());
                        let skipped = n - 2 * CONTEXT_LINES;
                        old_no += skipped;
                        new_no += skipped;
                        show(n - CONTEXT_LINES..n, &mut out, &mut old_no, &mut new_no);
                    }
                } else if last_was_change {
                    let shown = n.min(CONTEXT_LINES);
                    show(0..shown, &mut out, &mut old_no, &mut new_no);
                    if n > shown {
                        out.push(skip.clone());
                        old_no += n - shown;
                        new_no += n - shown;
                    }
                } else if next_change {
                    let skipped = n.saturating_sub(CONTEXT_LINES);
                    if skipped > 0 {
                        out.push(skip.clone());
                        old_no += skipped;
                        new_no += skipped;
                    }
                    show(skipped..n, &mut out, &mut old_no, &mut new_no);
                } else {
                    old_no += n;
                    new_no += n;
                }
                last_was_change = false;
            }
        }
    }
    (out.join("\n"), first)
}

/// A unified diff with `--- path` / `+++ path` headers and 4 context lines.
pub fn unified_patch(shown: &str, old: &str, new: &str) -> String {
    let diff = TextDiff::from_lines(old, new);
    diff.unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(shown, shown)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(o: &str, n: &str) -> Replace {
        Replace {
            old_text: o.into(),
            new_text: n.into(),
        }
    }

    #[test]
    fn diff_and_patch_match_pis_transcript() {
        let old = "line one\nline two\nline three\n";
        let new = "line 1\nline two\nline three\n";
        assert_eq!(
            display_diff(old, new),
            (
                "-1 line one\n+1 line 1\n 2 line two\n 3 line three".into(),
                Some(1)
            )
        );
        assert_eq!(
            unified_patch("hello.txt", old, new),
            "--- hello.txt\n+++ hello.txt\n@@ -1,3 +1,3 @@\n-line one\n+line 1\n line two\n line three\n"
        );
        let two = apply_edits(
            new,
            &[rep("line 1", "L1"), rep("line three", "L3")],
            "hello.txt",
        )
        .unwrap();
        assert_eq!(
            display_diff(new, &two.new_content).0,
            "-1 line 1\n+1 L1\n 2 line two\n-3 line three\n+3 L3"
        );
    }

    #[test]
    fn long_unchanged_runs_are_skipped_with_a_marker() {
        let old: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l10\n", "X\n");
        let (diff, first) = display_diff(&old, &new);
        assert_eq!(first, Some(10));
        assert_eq!(diff, "    ...\n  6 l6\n  7 l7\n  8 l8\n  9 l9\n-10 l10\n+10 X\n 11 l11\n 12 l12\n 13 l13\n 14 l14\n    ...");
    }

    #[test]
    fn fuzzy_matching_rewrites_only_touched_lines() {
        let content = "keep  \nsay “hi” — now   \ntail\t\n";
        let out = apply_edits(content, &[rep("say \"hi\" - now", "say hello")], "f").unwrap();
        assert_eq!(out.new_content, "keep  \nsay hello\ntail\t\n");
    }

    #[test]
    fn errors_name_the_edit() {
        let c = "a\nb\na\n";
        let e = |edits: &[Replace]| apply_edits(c, edits, "f.txt").unwrap_err().to_string();
        assert_eq!(e(&[rep("a", "x")]), "Found 2 occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique.");
        assert_eq!(e(&[rep("b", "x"), rep("zz", "y")]), "Could not find edits[1] in f.txt. The oldText must match exactly including all whitespace and newlines.");
        assert_eq!(e(&[rep("a\nb", "x"), rep("b\na", "y")]), "edits[0] and edits[1] overlap in f.txt. Merge them into one edit or target disjoint regions.");
        assert_eq!(e(&[rep("", "x")]), "oldText must not be empty in f.txt.");
        assert_eq!(e(&[rep("b", "b")]), "No changes made to f.txt. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.");
    }

    #[test]
    fn crlf_lines_keep_their_endings() {
        let original = "one\r\ntwo\r\nthree\r\n";
        let lf = to_lf(original);
        let out = apply_edits(&lf, &[rep("two\nthree", "2\n3")], "f").unwrap();
        assert_eq!(
            restore_endings(original, &out.replacements),
            "one\r\n2\r\n3\r\n"
        );
    }

    #[test]
    fn legacy_argument_shapes_are_accepted() {
        let v = normalize_args(json!({"path": "p", "oldText": "a", "newText": "b"}));
        assert_eq!(
            v,
            json!({"path": "p", "edits": [{"oldText": "a", "newText": "b"}]})
        );
        let v = normalize_args(
            json!({"path": "p", "edits": "[{\"oldText\":\"a\",\"newText\":\"b\"}]"}),
        );
        assert_eq!(v["edits"][0]["oldText"], "a");
        let v = normalize_args(json!({"path": "p", "edits": {"oldText": "a", "newText": "b"}}));
        assert!(v["edits"].is_array());
    }
}
