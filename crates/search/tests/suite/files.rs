//! Incremental refresh: appends cost their new lines; rewritten, deleted, torn and corrupt
//! files are noticed.

use arbor_search::{Query, SearchIndex};

use super::support::{ids, Sessions};

fn refresh(s: &Sessions) -> arbor_search::RefreshReport {
    let mut index = SearchIndex::open(&s.index_path()).unwrap();
    index.refresh(&s.files()).unwrap()
}

#[test]
fn an_append_reads_only_the_new_lines() {
    let s = Sessions::new();
    let mut a = s.session("019a0000-0000-7000-8000-0000000000f1");
    a.user("a1", "the heron question");
    let mut b = s.session("019a0000-0000-7000-8000-0000000000f2");
    b.user("b1", "unrelated");
    let first = refresh(&s);
    assert_eq!((first.indexed, first.appended, first.unchanged), (2, 0, 0));
    a.user("a2", "the heron answer");
    let second = refresh(&s);
    assert_eq!(
        (second.indexed, second.appended, second.unchanged),
        (0, 1, 1)
    );
    let out = s.search("heron");
    assert_eq!(out.hits.len(), 2);
    assert_eq!(out.report.unchanged, 2);
}

#[test]
fn rewritten_and_deleted_files_drop_their_old_hits() {
    let s = Sessions::new();
    let mut a = s.session("019a0000-0000-7000-8000-0000000000f3");
    a.user("a1", "the gecko plan").user("a2", "more gecko");
    let mut b = s.session("019a0000-0000-7000-8000-0000000000f4");
    b.user("b1", "the gecko plan elsewhere");
    assert_eq!(s.search("gecko").hits.len(), 3);
    // Rewrite a with other content of the same length and more.
    let a2 = s.session("019a0000-0000-7000-8000-0000000000f3");
    let mut a2 = a2;
    a2.user("z1", "the iguana plan, rewritten");
    let out = s.search("gecko");
    assert_eq!(ids(&out.hits), [("b1".to_owned(), "active")]);
    assert_eq!(s.search("iguana").hits.len(), 1);
    std::fs::remove_file(&b.path).unwrap();
    let gone = s.search("gecko");
    assert!(gone.hits.is_empty());
    assert_eq!(gone.report.removed, 1);
}

#[test]
fn a_corrupt_file_is_skipped_with_a_warning_naming_file_and_line() {
    let s = Sessions::new();
    let mut good = s.session("019a0000-0000-7000-8000-0000000000f5");
    good.user("g1", "the marmot notes");
    let mut bad = s.session("019a0000-0000-7000-8000-0000000000f6");
    bad.user("x1", "the marmot elsewhere")
        .raw("{not json}\n")
        .user("x3", "marmot after");
    let out = s.search("marmot");
    assert_eq!(ids(&out.hits), [("g1".to_owned(), "active")]);
    assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
    let w = &out.warnings[0];
    assert!(
        w.starts_with(&format!("{}: line 3: ", bad.path.display())),
        "{w}"
    );
    assert!(w.ends_with("; skipped by search"), "{w}");
    // Unchanged: the warning comes again without reading the file.
    let again = s.search("marmot");
    assert_eq!(again.warnings, out.warnings);
    assert_eq!(again.report.unchanged, 2);
}

#[test]
fn a_torn_last_line_keeps_the_lines_before_it_and_resumes_when_completed() {
    let s = Sessions::new();
    let mut f = s.session("019a0000-0000-7000-8000-0000000000f7");
    f.user("t1", "the newt log");
    f.raw(r#"{"type":"message","id":"t2","parentId":"t1","timestamp":"2026-06-20T15:09:00.000Z","message":{"role":"user","content":"newt tail"#);
    let out = s.search("newt");
    assert_eq!(ids(&out.hits), [("t1".to_owned(), "active")]);
    assert_eq!(out.warnings.len(), 1);
    assert!(
        out.warnings[0].contains("torn last line 3"),
        "{:?}",
        out.warnings
    );
    f.raw("\",\"timestamp\":1}}\n");
    let done = s.search("newt tail");
    assert_eq!(ids(&done.hits)[0], ("t2".to_owned(), "active"));
    assert!(done.warnings.is_empty(), "{:?}", done.warnings);
    assert_eq!(done.report.appended, 1);
}

#[test]
fn an_old_version_session_is_skipped_with_advice() {
    let s = Sessions::new();
    let path = s.dir.path().join("old.jsonl");
    std::fs::write(&path, "{\"type\":\"session\",\"id\":\"old\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n").unwrap();
    let out = s.query(Query {
        text: "anything".into(),
        ..Query::default()
    });
    assert_eq!(out.warnings.len(), 1);
    assert!(
        out.warnings[0].contains("run `arbor session migrate`"),
        "{:?}",
        out.warnings
    );
}
