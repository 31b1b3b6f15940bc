//! Reads a pi or Arbor session file without touching it: prints the context the model would
//! see at the leaf, then the whole entry tree, then forks a copy of the file at an entry into a new
//! session file in OUT_DIR.
//!
//! `cargo run -p arbor-session --example inspect_session -- FILE [ENTRY_ID] [OUT_DIR]`
//! (the default is the first fixture of `testdata/pi-sessions`, a branched pi 1.6.0 session).

use std::path::PathBuf;

use arbor_session::context::convert_to_llm;
use arbor_session::context::ContextOptions;
use arbor_session::{ForkOptions, ForkPosition, JsonlRepository, Session, SessionRepository};

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
    let leaf = tree.leaf_id.clone();
    for (index, depth) in tree.walk() {
        let node = &tree.nodes[index];
        let marker = if leaf.as_deref() == Some(node.id()) {
            " <- leaf"
        } else {
            ""
        };
        let label = node
            .label
            .as_deref()
            .map(|l| format!(" [{l}]"))
            .unwrap_or_default();
        println!(
            "{}{} {}{label}{marker}",
            "  ".repeat(depth),
            node.id(),
            kind_name(&node.row.kind)
        );
    }

    // Fork: a new session holding the path up to (and including) the chosen entry.
    let entry = args.next().or(leaf);
    let out = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("arbor-example-forks"));
    std::fs::create_dir_all(&out)?;
    let forks = JsonlRepository::flat(&out);
    let copy = out.join(file.file_name().unwrap_or_default());
    std::fs::copy(&file, &copy)?;
    let fork = forks
        .fork(&copy.display().to_string(), {
            let mut o = ForkOptions::default();
            o.entry_id = entry.clone();
            o.position = ForkPosition::At;
            o
        })
        .await?;
    let header = arbor_session::SessionStorage::header(&fork).await?;
    println!(
        "== forked at {} into session {}",
        entry.unwrap_or_default(),
        header.id
    );
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

fn kind_name(kind: &arbor_session::RowKind) -> &'static str {
    use arbor_session::RowKind;
    match kind {
        RowKind::Message(_) => "message",
        RowKind::ThinkingLevelChange { .. } => "thinking_level_change",
        RowKind::ModelChange { .. } => "model_change",
        RowKind::ActiveToolsChange { .. } => "active_tools_change",
        RowKind::Compaction { .. } => "compaction",
        RowKind::BranchSummary { .. } => "branch_summary",
        RowKind::Custom { .. } => "custom",
        RowKind::CustomMessage { .. } => "custom_message",
        RowKind::Label { .. } => "label",
        RowKind::SessionInfo { .. } => "session_info",
        RowKind::Leaf { .. } => "leaf",
        RowKind::ContextEdit { .. } => "context_edit",
        RowKind::Usage { .. } => "usage",
        RowKind::Other { .. } => "unknown entry type",
    }
}
