//! Reads a pi or Arbor session file without touching it: prints the context the model would
//! see at the leaf, then the whole entry tree, then forks a copy of the file at an entry into a new
//! session file in OUT_DIR.
//!
//! `cargo run -p arbor-session --example inspect_session -- FILE [ENTRY_ID] [OUT_DIR]`
//! (the default is the first fixture of `testdata/pi-sessions`, a branched pi 1.6.0 session).

use std::path::PathBuf;

use arbor_session::context::convert_to_llm;
use arbor_session::context::ContextOptions;
use arbor_session::{ForkOptions, JsonlRepository, Session, SessionRepository, SessionStorage};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let file = args.next().map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
            "../../testdata/pi-sessions/v3-generated-branches-labels-branchsummary-compaction.pi-1.6.0.jsonl",
        )
    });
    let dir = file.parent().map(PathBuf::from).unwrap_or_default();

    // Read-only: no lock, no migration written back, the file stays byte for byte the same.
    let repo = JsonlRepository::flat(&dir);
    let storage = repo.open_read_only(&file.display().to_string()).await?;
    let session = Session::new(std::sync::Arc::new(storage));

    println!("== context at the leaf");
    let context = session.build_context(&ContextOptions::default()).await?;
    for message in convert_to_llm(&context.messages) {
        let text = serde_json::to_value(&message)?;
        let first = first_text(&text).unwrap_or_default();
        println!(
            "{:>10}: {}",
            message.role(),
            first.lines().next().unwrap_or("")
        );
    }

    println!("== tree");
    let tree = session.tree().await?;
    print!("{}", tree.render());
    let leaf = tree.leaf_id.clone();

    // Fork: a new session holding the path up to (and including) the chosen entry; the
    // source file is only read. Without OUT_DIR the fork goes to a temporary folder.
    let entry = args.next().or(leaf).ok_or("the session has no entries")?;
    let scratch = tempfile::tempdir()?;
    let out = args
        .next()
        .map_or(scratch.path().to_path_buf(), PathBuf::from);
    let fork = JsonlRepository::flat(&out)
        .fork(&file.display().to_string(), ForkOptions::at(entry.clone()))
        .await?;
    println!("== forked at {entry} into {}", fork.location());
    Ok(())
}

/// The first text block of a provider message, as JSON.
fn first_text(message: &serde_json::Value) -> Option<String> {
    match &message["content"] {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Array(blocks) => blocks
            .iter()
            .find_map(|b| b["text"].as_str().map(str::to_string)),
        _ => None,
    }
}
