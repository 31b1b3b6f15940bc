//! The prompts a run starts with, read from its arguments: piped stdin, `@file` texts and
//! images, then the messages. Print, JSON and the TUI all start from these.

use std::path::Path;

use arbor_ai::ImageContent;

use crate::cli::AgentArgs;
use crate::error::CliError;

/// One prompt: text plus attached images.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompt {
    pub text: String,
    pub images: Vec<ImageContent>,
}

/// Builds the prompts: piped stdin, then `@file` texts, then the first message make the first
/// prompt (concatenated as they are); later messages follow one by one.
pub fn collect_prompts(
    args: &AgentArgs,
    stdin: Option<String>,
    cwd: &Path,
) -> Result<Vec<Prompt>, CliError> {
    let mut first = Prompt {
        text: stdin.unwrap_or_default(),
        images: Vec::new(),
    };
    let mut messages = Vec::new();
    for m in &args.messages {
        if let Some(raw) = m.strip_prefix('@') {
            let abs = arbor_tools::path::resolve_for_read(raw, cwd);
            // Bounded and regular files only (DECISIONS §30.5): `@/dev/zero` or `@fifo` is an
            // error naming the path, not a hang.
            let bytes = match arbor_tools::files::read_bounded(
                &abs,
                arbor_tools::files::FileKind::PROMPT_FILE,
            ) {
                Ok(Some(file)) => file.bytes,
                Ok(None) => {
                    return Err(CliError::Startup(format!(
                        "Error: File not found: {}",
                        abs.display()
                    )))
                }
                Err(err) => return Err(CliError::Startup(format!("Error: {err}"))),
            };
            if bytes.is_empty() {
                continue;
            }
            if let Some(mime) = arbor_tools::image::sniff(&bytes[..bytes.len().min(64)]) {
                first
                    .text
                    .push_str(&format!("<file name=\"{}\"></file>\n", abs.display()));
                if let Ok(p) = arbor_tools::image::prepare(&bytes, mime, true) {
                    first.images.push(ImageContent {
                        data: p.data,
                        mime_type: p.mime_type.to_owned(),
                        ..Default::default()
                    });
                }
            } else {
                let text = String::from_utf8_lossy(&bytes);
                first.text.push_str(&format!(
                    "<file name=\"{}\">\n{text}\n</file>\n",
                    abs.display()
                ));
            }
        } else {
            messages.push(m.clone());
        }
    }
    let mut rest = messages.into_iter();
    if let Some(m) = rest.next() {
        first.text.push_str(&m);
    }
    let mut out = Vec::new();
    if !first.text.is_empty() || !first.images.is_empty() {
        out.push(first);
    }
    out.extend(rest.map(|text| Prompt {
        text,
        images: Vec::new(),
    }));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_files_and_messages_make_the_prompts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "alpha").unwrap();
        std::fs::write(dir.path().join("empty.txt"), "").unwrap();
        let a = AgentArgs {
            messages: vec![
                "@a.txt".into(),
                "@empty.txt".into(),
                "first".into(),
                "second".into(),
            ],
            ..Default::default()
        };
        let p = collect_prompts(&a, Some("piped\n".into()), dir.path()).unwrap();
        let abs = dir.path().join("a.txt");
        assert_eq!(
            p[0].text,
            format!(
                "piped\n<file name=\"{}\">\nalpha\n</file>\nfirst",
                abs.display()
            )
        );
        assert_eq!(p[1].text, "second");
        let missing = AgentArgs {
            messages: vec!["@nope.txt".into()],
            ..Default::default()
        };
        let e = collect_prompts(&missing, None, dir.path())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "Error: File not found: {}",
                dir.path().join("nope.txt").display()
            )
        );
    }
}
