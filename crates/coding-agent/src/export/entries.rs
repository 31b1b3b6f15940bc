//! One session entry as an `<article>` of the export page. Entries are read as their stored
//! JSON, so a role or block type this version does not know still shows (as its JSON) instead
//! of failing the export (DECISIONS §35.3).

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::markdown;
use super::page::escape;

/// Tool results longer than this many lines start folded.
const FOLD_LINES: usize = 24;

/// Image types a page may show inline, as `data:` addresses.
const INLINE_IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The `<article>` for `entry` (its stored JSON), or `None` for entries that only shape the
/// tree (labels, names, leaf moves, settings the tree shows anyway).
pub fn article(entry: &Value, on_active_path: bool) -> Option<String> {
    let id = entry.get("id").and_then(Value::as_str)?;
    let time = entry.get("timestamp").and_then(Value::as_str).unwrap_or("");
    let (class, title, body) = match entry.get("type").and_then(Value::as_str)? {
        "message" => {
            let message = entry.get("message")?.as_object()?;
            message_body(message)?
        }
        "compaction" => (
            "compaction",
            format!(
                "Compaction · {} tokens before",
                entry
                    .get("tokensBefore")
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            ),
            markdown::to_html(str_field(entry, "summary")),
        ),
        "branch_summary" => (
            "branch-summary",
            "Branch summary".to_owned(),
            markdown::to_html(str_field(entry, "summary")),
        ),
        "custom_message" => {
            if !entry
                .get("display")
                .and_then(Value::as_bool)
                .unwrap_or(false)
            {
                return None;
            }
            (
                "custom",
                str_field(entry, "customType").to_owned(),
                content_html(entry.get("content"), false),
            )
        }
        "model_change" => (
            "meta",
            "Model".to_owned(),
            format!(
                "<p>{}/{}</p>",
                escape(str_field(entry, "provider")),
                escape(str_field(entry, "modelId"))
            ),
        ),
        "thinking_level_change" => (
            "meta",
            "Thinking level".to_owned(),
            format!("<p>{}</p>", escape(str_field(entry, "thinkingLevel"))),
        ),
        _ => return None,
    };
    let mut html = String::with_capacity(body.len() + 256);
    let _ = write!(
        html,
        "<article class=\"entry {class}{off}\" id=\"e-{id}\" data-id=\"{id}\">\n\
         <header><span class=\"role\">{title}</span><time>{time}</time></header>\n\
         <div class=\"body\">{body}</div>\n</article>\n",
        off = if on_active_path { "" } else { " off" },
        id = escape(id),
        title = escape(&title),
        time = escape(time),
    );
    Some(html)
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The CSS class, heading and body of one message, by its role.
fn message_body(message: &Map<String, Value>) -> Option<(&'static str, String, String)> {
    let role = message.get("role").and_then(Value::as_str).unwrap_or("");
    let content = message.get("content");
    Some(match role {
        "user" => ("user", "User".to_owned(), content_html(content, false)),
        "assistant" => {
            let model = message.get("model").and_then(Value::as_str).unwrap_or("");
            let mut body = content_html(content, false);
            if let Some(error) = message.get("errorMessage").and_then(Value::as_str) {
                let _ = write!(body, "<p class=\"error\">{}</p>", escape(error));
            }
            let title = if model.is_empty() {
                "Assistant".to_owned()
            } else {
                format!("Assistant · {model}")
            };
            ("assistant", title, body)
        }
        "toolResult" => {
            let name = message
                .get("toolName")
                .and_then(Value::as_str)
                .unwrap_or("");
            let error = message
                .get("isError")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let title = if error {
                format!("{name} failed")
            } else {
                format!("{name} result")
            };
            let class = if error {
                "tool-result error"
            } else {
                "tool-result"
            };
            (class, title, content_html(content, true))
        }
        "bashExecution" => ("bash", "Shell".to_owned(), bash_body(message)),
        "custom" => {
            if !message
                .get("display")
                .and_then(Value::as_bool)
                .unwrap_or(false)
            {
                return None;
            }
            let kind = message
                .get("customType")
                .and_then(Value::as_str)
                .unwrap_or("custom");
            ("custom", kind.to_owned(), content_html(content, false))
        }
        "branchSummary" | "compactionSummary" => {
            let summary = message.get("summary").and_then(Value::as_str).unwrap_or("");
            (
                "branch-summary",
                "Summary".to_owned(),
                markdown::to_html(summary),
            )
        }
        "system" => ("meta", "System prompt".to_owned(), system_body(message)),
        // A role this version does not know: shown as its JSON.
        other => (
            "other",
            if other.is_empty() {
                "Message".to_owned()
            } else {
                other.to_owned()
            },
            format!(
                "<pre>{}</pre>",
                escape(&serde_json::to_string_pretty(message).unwrap_or_default())
            ),
        ),
    })
}

/// A stored system prompt (pi 1.6.0 keeps its named sections), folded: it is long and the
/// same in most sessions.
fn system_body(message: &Map<String, Value>) -> String {
    let mut text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    if let Some(Value::Object(sections)) = message.get("sections") {
        for (name, section) in sections {
            if let Some(section) = section.as_str().filter(|s| !s.is_empty()) {
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(&format!("[{name}]\n{section}"));
            }
        }
    }
    let lines = text.lines().count();
    format!(
        "<details><summary>{lines} lines</summary><pre>{}</pre></details>",
        escape(&text)
    )
}

/// `!cmd` / `!!cmd` output: the command, its output and how it ended.
fn bash_body(message: &Map<String, Value>) -> String {
    let command = message.get("command").and_then(Value::as_str).unwrap_or("");
    let output = message.get("output").and_then(Value::as_str).unwrap_or("");
    let mut html = format!(
        "<pre class=\"command\">$ {}</pre>{}",
        escape(command),
        folded_pre(output)
    );
    let ending = if message
        .get("cancelled")
        .and_then(Value::as_bool)
        .unwrap_or(false)
    {
        "cancelled".to_owned()
    } else {
        match message.get("exitCode").and_then(Value::as_i64) {
            Some(code) => format!("exit code {code}"),
            None => String::new(),
        }
    };
    let hidden = message
        .get("excludeFromContext")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let note = match (ending.is_empty(), hidden) {
        (true, false) => String::new(),
        (false, false) => ending,
        (true, true) => "not sent to the model".to_owned(),
        (false, true) => format!("{ending} · not sent to the model"),
    };
    if !note.is_empty() {
        let _ = write!(html, "<p class=\"note\">{}</p>", escape(&note));
    }
    html
}

/// A message's `content` (a string or a list of blocks). Tool output (`plain`) is kept as
/// preformatted text; everything else is Markdown.
fn content_html(content: Option<&Value>, plain: bool) -> String {
    let text_html = |text: &str| {
        if plain {
            folded_pre(text)
        } else {
            markdown::to_html(text)
        }
    };
    match content {
        Some(Value::String(text)) => text_html(text),
        Some(Value::Array(blocks)) => {
            let mut html = String::new();
            for block in blocks {
                html.push_str(&block_html(block, &text_html));
            }
            html
        }
        _ => String::new(),
    }
}

fn block_html(block: &Value, text_html: &dyn Fn(&str) -> String) -> String {
    match block.get("type").and_then(Value::as_str).unwrap_or("") {
        "text" => text_html(str_field(block, "text")),
        "thinking" => {
            let thinking = str_field(block, "thinking");
            if thinking.trim().is_empty() {
                return String::new();
            }
            format!(
                "<details class=\"thinking\"><summary>Thinking</summary>{}</details>",
                markdown::to_html(thinking)
            )
        }
        "toolCall" => tool_call_html(block),
        "image" => image_html(str_field(block, "mimeType"), str_field(block, "data")),
        _ => format!(
            "<pre class=\"unknown\">{}</pre>",
            escape(&serde_json::to_string_pretty(block).unwrap_or_default())
        ),
    }
}

/// A tool call: its name and arguments (a shell command as it would be typed).
fn tool_call_html(block: &Value) -> String {
    let name = str_field(block, "name");
    let args = block.get("arguments").cloned().unwrap_or(Value::Null);
    let shown = match (name, args.get("command").and_then(Value::as_str)) {
        ("bash", Some(command)) => format!("$ {command}"),
        _ => serde_json::to_string_pretty(&args).unwrap_or_default(),
    };
    format!(
        "<div class=\"tool-call\"><div class=\"tool-name\">{}</div><pre>{}</pre></div>",
        escape(name),
        escape(&shown)
    )
}

/// An image block inline when its type is one browsers show and its data is plain base64;
/// otherwise a line saying what it was (nothing of it reaches an attribute unchecked).
fn image_html(mime: &str, data: &str) -> String {
    let base64_only = data
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
    if INLINE_IMAGE_TYPES.contains(&mime) && base64_only && !data.is_empty() {
        format!("<img class=\"inline-image\" alt=\"image\" src=\"data:{mime};base64,{data}\">")
    } else {
        format!(
            "<p class=\"note\">[image: {}, {} base64 characters]</p>",
            escape(mime),
            data.len()
        )
    }
}

/// Preformatted text, folded behind a summary line when long.
fn folded_pre(text: &str) -> String {
    let lines = text.lines().count();
    let pre = format!("<pre>{}</pre>", escape(text));
    if lines > FOLD_LINES {
        format!("<details><summary>{lines} lines</summary>{pre}</details>")
    } else {
        pre
    }
}

#[cfg(test)]
mod tests {
    use super::article;
    use serde_json::json;

    #[test]
    fn user_text_is_markdown_and_escaped() {
        let entry = json!({"type": "message", "id": "a1", "parentId": null, "timestamp": "t",
            "message": {"role": "user", "content": "**bold** <b>raw</b>"}});
        let html = article(&entry, true).unwrap_or_default();
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(html.contains("&lt;b&gt;raw&lt;/b&gt;"), "{html}");
        assert!(html.contains("class=\"entry user\""), "{html}");
    }

    #[test]
    fn off_path_entries_are_marked() {
        let entry = json!({"type": "message", "id": "a1", "timestamp": "t",
            "message": {"role": "user", "content": "x"}});
        let html = article(&entry, false).unwrap_or_default();
        assert!(html.contains("class=\"entry user off\""), "{html}");
    }

    #[test]
    fn hostile_ids_and_images_stay_inert() {
        let entry = json!({"type": "message", "id": "\"><script>x</script>", "timestamp": "t",
            "message": {"role": "user", "content": [
                {"type": "image", "mimeType": "image/png\" onerror=\"x", "data": "AAAA"},
                {"type": "image", "mimeType": "image/png", "data": "AA\"onerror=x"},
                {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}]}});
        let html = article(&entry, true).unwrap_or_default();
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("\"onerror"), "{html}");
        assert_eq!(html.matches("<img").count(), 1, "{html}");
        assert!(
            html.contains("src=\"data:image/png;base64,iVBORw0KGgo=\""),
            "{html}"
        );
    }

    #[test]
    fn tree_only_entries_have_no_article() {
        for kind in ["label", "session_info", "leaf", "custom"] {
            let entry = json!({"type": kind, "id": "a1", "timestamp": "t"});
            assert_eq!(article(&entry, true), None, "{kind}");
        }
    }
}
