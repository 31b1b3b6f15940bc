//! The command's one-shot projection (bounded branch + the store's derived settings) equals
//! `Session::build_context_at` over the full ancestry, at every entry of every fixture.

use std::sync::Arc;

use arbor_agent::context::{expected_json, ContextOptions};
use arbor_agent::session::{JsonlRepository, Session, SessionStorage};
use arbor_coding_agent::store;

use super::fixture_files;

#[test]
fn window_projection_equals_full_ancestry_at_every_entry() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut files = fixture_files("generated/sessions");
    files.extend(
        fixture_files("pi-sessions")
            .into_iter()
            // v1/v2 files get fresh ids on every (in-memory) migration.
            .filter(|f| f.file_name().unwrap().to_str().unwrap().starts_with("v3-")),
    );
    let mut checked = 0;
    rt.block_on(async {
        for file in &files {
            let dir = file.parent().unwrap().to_path_buf();
            let storage = JsonlRepository::flat(dir)
                .open_read_only(file.to_str().unwrap())
                .await
                .unwrap();
            let page = storage.entries(None, None).await.unwrap();
            let all: Vec<String> = page.entries.iter().map(|(_, e)| e.id.clone()).collect();
            // Up to 12 leaves per file, spread over the log, always including the last entry.
            let step = all.len().div_ceil(12).max(1);
            let mut ids: Vec<&String> = all.iter().step_by(step).collect();
            ids.extend(all.last());
            let session = Session::new(Arc::new(storage));
            for id in &ids {
                let full = session
                    .build_context_at(Some(id), &ContextOptions::default())
                    .await
                    .unwrap();
                let want = expected_json(&full, Some(id));
                let got = store::context_json(file, Some(id)).await.unwrap();
                let got = expected_json(&got.context, got.leaf.as_deref());
                assert_eq!(got, want, "{} at {id}", file.display());
                checked += 1;
            }
        }
    });
    assert!(checked > 800, "only {checked} leaves checked");
}
