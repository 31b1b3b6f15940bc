//! JSONL ↔ PostgreSQL: every v3 fixture imported and exported again is byte-for-byte the
//! original (blank lines aside) and projects the same context from the store as from the file.

use std::path::Path;

use arbor_session::{JsonlRepository, SessionRepository, SessionStorage};
use arbor_test_support::fixtures::fixture_files;

use super::{repo, session, user};

fn v3_fixtures() -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = fixture_files("pi-sessions")
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("v3-"))
        .collect();
    files.extend(fixture_files("generated/sessions").into_iter().take(20));
    files
}

fn without_blank_lines(bytes: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let mut out = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        out.push_str(line);
        out.push('\n');
    }
    out.into_bytes()
}

async fn jsonl(path: &Path) -> arbor_session::JsonlStorage {
    JsonlRepository::flat(path.parent().unwrap().to_path_buf())
        .open_read_only(&path.display().to_string())
        .await
        .unwrap()
}

#[tokio::test]
async fn fixtures_round_trip_byte_for_byte_with_equal_projections() {
    let url = crate::pg!();
    let (_schema, repo) = repo(&url).await;
    let out = tempfile::tempdir().unwrap();
    let files = v3_fixtures();
    assert!(files.len() >= 20, "fixtures found: {}", files.len());
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy();
        let imported = repo.import_jsonl(file).await.unwrap();
        let src = jsonl(file).await;
        assert_eq!(imported.entries, src.entry_count().await.unwrap(), "{name}");

        let exported = out.path().join(format!("{name}"));
        let n = repo.export_jsonl(&imported.id, &exported).await.unwrap();
        assert_eq!(n, imported.entries, "{name}");
        assert_eq!(
            std::fs::read(&exported).unwrap(),
            without_blank_lines(&std::fs::read(file).unwrap()),
            "{name}: export differs from the imported file"
        );

        let pg = repo.open_read_only(&imported.id).await.unwrap();
        assert_eq!(
            pg.header().await.unwrap(),
            src.header().await.unwrap(),
            "{name}"
        );
        assert_eq!(
            pg.leaf_id().await.unwrap(),
            src.leaf_id().await.unwrap(),
            "{name}"
        );
        assert_eq!(
            pg.path_to_root_or_compaction(None).await.unwrap(),
            src.path_to_root_or_compaction(None).await.unwrap(),
            "{name}: context window"
        );
        assert_eq!(
            pg.derived_settings(None).await.unwrap(),
            src.derived_settings(None).await.unwrap(),
            "{name}: settings"
        );
        assert_eq!(
            pg.stats().await.unwrap(),
            src.stats().await.unwrap(),
            "{name}"
        );
        assert_eq!(
            pg.session_name().await.unwrap(),
            src.session_name().await.unwrap()
        );
        let reread = jsonl(&exported).await;
        assert_eq!(
            reread.ancestry(None).await.unwrap(),
            src.ancestry(None).await.unwrap(),
            "{name}: the exported file reads back as the source"
        );
    }
}

#[tokio::test]
async fn a_session_made_in_the_store_exports_as_a_readable_file() {
    let url = crate::pg!();
    let (_schema, repo) = repo(&url).await;
    let s = session(&repo).await;
    let a = s.append(user("first")).await.unwrap();
    s.append(user("second")).await.unwrap();
    s.set_leaf(Some(&a.id)).await.unwrap();
    s.append(user("branch")).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    assert_eq!(repo.export_jsonl(s.id(), &out).await.unwrap(), 4);
    let file = jsonl(&out).await;
    assert_eq!(
        file.ancestry(None).await.unwrap(),
        s.ancestry(None).await.unwrap()
    );
    assert_eq!(file.leaf_id().await.unwrap(), s.leaf_id().await.unwrap());

    let err = repo.export_jsonl(s.id(), &out).await.unwrap_err();
    assert!(err.to_string().contains("never overwrites"), "{err}");
}

#[tokio::test]
async fn import_refuses_old_formats_bad_lines_and_duplicates_naming_them() {
    let url = crate::pg!();
    let (_schema, repo) = repo(&url).await;
    let v1 = fixture_files("pi-sessions")
        .into_iter()
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("v1-"))
        .unwrap();
    let err = repo.import_jsonl(&v1).await.unwrap_err();
    assert!(err.to_string().contains("arbor session migrate"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    let good = v3_fixtures()[0].clone();
    let mut text = std::fs::read_to_string(&good).unwrap();
    text.push_str("{not json\n");
    std::fs::write(&bad, &text).unwrap();
    let err = repo.import_jsonl(&bad).await.unwrap_err();
    let lines = text.lines().count();
    assert!(
        err.to_string().contains(&format!("bad.jsonl:{lines}")),
        "names file and line: {err}"
    );
    assert!(
        repo.list().await.unwrap().sessions.is_empty(),
        "nothing half-imported"
    );

    repo.import_jsonl(&good).await.unwrap();
    let err = repo.import_jsonl(&good).await.unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
}
