//! Session lines holding lone UTF-16 surrogate escapes (pi writes them when a string is cut
//! inside an emoji) open, read and project with the surrogate dropped (DECISIONS §25.8).
//! Fixtures are generated here: the escapes are the point, so they are written by hand.

use arbor_ai::types::Message;
use arbor_session::jsonl::JsonlRepository;
use arbor_session::AgentMessage;
use arbor_session::{EntryKind, SessionRepository, SessionStorage};

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-06-20T15:00:00.000Z","cwd":"/w"}"#;

fn session_with(lines: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("2026-06-20T15-00-00-000Z_s1.jsonl");
    let mut text = format!("{HEADER}\n");
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn tool_text(entry: &arbor_session::SessionEntry) -> String {
    match &entry.kind {
        EntryKind::Message(m) => match &m.message {
            AgentMessage::Llm(Message::ToolResult(r)) => r.content.joined_text(""),
            AgentMessage::Llm(Message::User(_)) => String::new(),
            other => panic!("unexpected {other:?}"),
        },
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn a_truncated_emoji_in_tool_output_opens_and_is_dropped() {
    let (dir, path) = session_with(&[
        r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-06-20T15:00:01.000Z","message":{"role":"user","content":"run it","timestamp":1}}"#,
        r#"{"type":"message","id":"t1","parentId":"u1","timestamp":"2026-06-20T15:00:02.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"done \ud83d"}],"isError":false,"timestamp":2}}"#,
        r#"{"type":"message","id":"t2","parentId":"t1","timestamp":"2026-06-20T15:00:03.000Z","message":{"role":"toolResult","toolCallId":"c2","toolName":"bash","content":[{"type":"text","text":"\udE00tail and a pair \ud83d\ude00"}],"isError":false,"timestamp":3}}"#,
    ]);
    let repo = JsonlRepository::flat(dir.path());
    for writable in [false, true] {
        let s = if writable {
            repo.open(path.to_str().unwrap()).await.unwrap()
        } else {
            repo.open_read_only(path.to_str().unwrap()).await.unwrap()
        };
        assert_eq!(s.leaf_id().await.unwrap().as_deref(), Some("t2"));
        let path_entries = s.ancestry(None).await.unwrap();
        let texts: Vec<String> = path_entries.iter().map(tool_text).collect();
        assert_eq!(texts, ["", "done ", "tail and a pair 😀"]);
    }
    // The file itself is left as pi wrote it.
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .contains(r"done \ud83d"));
}
