//! Session files written line by line for the tests, in pi's v3 format.

use std::io::Write;
use std::path::{Path, PathBuf};

use arbor_search::{Hit, Outcome, Query, SearchIndex};
use serde_json::{json, Value};

/// Writes one session file entry by entry; each entry's parent is the previous entry unless
/// `from` says otherwise.
pub struct SessionFile {
    pub path: PathBuf,
    pub last: Option<String>,
    minute: u32,
}

impl SessionFile {
    pub fn create(dir: &Path, id: &str, cwd: &str) -> Self {
        let path = dir.join(format!("2026-06-20T15-00-00-000Z_{id}.jsonl"));
        let header = json!({"type": "session", "version": 3, "id": id,
            "timestamp": "2026-06-20T15:00:00.000Z", "cwd": cwd});
        std::fs::write(&path, format!("{header}\n")).unwrap();
        Self {
            path,
            last: None,
            minute: 0,
        }
    }

    /// Appends an entry of `fields` with id `id`, child of `from` (default: the last entry).
    pub fn entry(&mut self, id: &str, from: Option<&str>, mut fields: Value) -> &mut Self {
        self.minute += 1;
        let parent = from.map(str::to_owned).or_else(|| self.last.clone());
        let obj = fields.as_object_mut().unwrap();
        obj.insert("id".into(), json!(id));
        obj.insert("parentId".into(), json!(parent));
        obj.insert(
            "timestamp".into(),
            json!(format!(
                "2026-06-20T{:02}:{:02}:00.000Z",
                15 + self.minute / 60,
                self.minute % 60
            )),
        );
        self.raw(&format!("{fields}\n"));
        self.last = Some(id.to_owned());
        self
    }

    pub fn raw(&mut self, text: &str) -> &mut Self {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
        self
    }

    pub fn user(&mut self, id: &str, text: &str) -> &mut Self {
        self.entry(
            id,
            None,
            json!({"type": "message",
            "message": {"role": "user", "content": text, "timestamp": 1}}),
        )
    }

    pub fn user_from(&mut self, id: &str, from: &str, text: &str) -> &mut Self {
        self.entry(
            id,
            Some(from),
            json!({"type": "message",
            "message": {"role": "user", "content": text, "timestamp": 1}}),
        )
    }

    pub fn assistant(&mut self, id: &str, text: &str, calls: &[(&str, Value)]) -> &mut Self {
        let mut content = vec![json!({"type": "text", "text": text})];
        for (n, (name, args)) in calls.iter().enumerate() {
            content.push(json!({"type": "toolCall", "id": format!("call_{id}_{n}"),
                "name": name, "arguments": args}));
        }
        self.entry(id, None, json!({"type": "message", "message": {"role": "assistant",
            "content": content, "api": "anthropic-messages", "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}},
            "stopReason": "stop", "timestamp": 1}}))
    }

    pub fn tool_result(&mut self, id: &str, tool: &str, text: &str) -> &mut Self {
        self.entry(
            id,
            None,
            json!({"type": "message", "message": {"role": "toolResult",
            "toolCallId": "call", "toolName": tool,
            "content": [{"type": "text", "text": text}], "isError": false, "timestamp": 1}}),
        )
    }

    pub fn bash(&mut self, id: &str, command: &str, output: &str) -> &mut Self {
        self.entry(
            id,
            None,
            json!({"type": "message", "message": {"role": "bashExecution",
            "command": command, "output": output, "exitCode": 0, "cancelled": false,
            "truncated": false, "timestamp": 1}}),
        )
    }

    pub fn leaf(&mut self, id: &str, target: &str) -> &mut Self {
        self.entry(id, None, json!({"type": "leaf", "targetId": target}));
        self.last = Some(target.to_owned());
        self
    }
}

/// A sessions directory with its index file beside the sessions.
pub struct Sessions {
    pub dir: tempfile::TempDir,
}

impl Sessions {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn session(&self, id: &str) -> SessionFile {
        SessionFile::create(self.dir.path(), id, "/work/project")
    }

    pub fn index_path(&self) -> PathBuf {
        arbor_search::index_path(self.dir.path())
    }

    pub fn files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        files
    }

    pub fn search(&self, text: &str) -> Outcome {
        self.query(Query {
            text: text.into(),
            ..Query::default()
        })
    }

    pub fn query(&self, query: Query) -> Outcome {
        SearchIndex::search_files(&self.index_path(), &self.files(), &query).unwrap()
    }
}

/// `(entry id, branch state)` of each hit, in rank order.
pub fn ids(hits: &[Hit]) -> Vec<(String, &'static str)> {
    hits.iter()
        .map(|h| (h.entry_id.clone(), h.branch.as_str()))
        .collect()
}
