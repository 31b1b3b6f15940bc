//! `-e/--extension PATH` (pi's flag; DECISIONS §22.90). pi loads TypeScript modules; Arbor
//! runs no extension code, so an Arbor extension is a folder of the resources Arbor does load:
//! its `skills/` (as `--skill`), its `prompts/` (as `--prompt-template`) and a `SKILL.md` at
//! its top (the folder is then one skill). A pi extension file is refused with an error that
//! says what to use instead, rather than being ignored; `builtin:mcp` is accepted (MCP is
//! built in).

use std::path::Path;

use crate::error::CliError;

/// The skill and template paths the extensions add, in the order given.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ExtensionPaths {
    pub skills: Vec<String>,
    pub templates: Vec<String>,
}

/// Resolves each `-e` value against `cwd`.
pub fn resolve(extensions: &[String], cwd: &Path) -> Result<ExtensionPaths, CliError> {
    let mut out = ExtensionPaths::default();
    for raw in extensions {
        if raw == "builtin:mcp" {
            continue;
        }
        let fail = |why: &str| {
            Err(CliError::Startup(format!(
                "Error: --extension {raw}: {why}"
            )))
        };
        let path = arbor_tools::path::resolve(raw, cwd);
        let code = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "ts" | "js" | "mjs" | "cjs" | "mts" | "cts"));
        if code {
            return fail(
                "Arbor runs no TypeScript or JavaScript extensions; an Arbor extension is a \
                 folder with skills/, prompts/ or a SKILL.md (tools come from MCP servers, \
                 event handlers from hooks)",
            );
        }
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) => return fail(&format!("{}: {e}", path.display())),
        };
        let shown = |p: &Path| p.display().to_string();
        if meta.is_file() {
            if path.extension().is_some_and(|e| e == "md") {
                out.skills.push(shown(&path));
                continue;
            }
            return fail("not a folder or a SKILL.md file");
        }
        let before = out.skills.len() + out.templates.len();
        if path.join("SKILL.md").is_file() {
            out.skills.push(shown(&path));
        } else if path.join("skills").is_dir() {
            out.skills.push(shown(&path.join("skills")));
        }
        if path.join("prompts").is_dir() {
            out.templates.push(shown(&path.join("prompts")));
        }
        if out.skills.len() + out.templates.len() == before {
            return fail("the folder holds no skills/, prompts/ or SKILL.md");
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_add_their_skills_and_prompts_and_code_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ext = dir.path().join("review");
        std::fs::create_dir_all(ext.join("skills/lint")).unwrap();
        std::fs::create_dir_all(ext.join("prompts")).unwrap();
        let one = dir.path().join("one");
        std::fs::create_dir_all(&one).unwrap();
        std::fs::write(one.join("SKILL.md"), "---\nname: one\n---\n").unwrap();
        std::fs::write(dir.path().join("x.ts"), "export default 1").unwrap();
        std::fs::create_dir_all(dir.path().join("empty")).unwrap();
        let got = resolve(
            &["review".into(), "one".into(), "builtin:mcp".into()],
            dir.path(),
        )
        .unwrap();
        let p = |s: &str| dir.path().join(s).display().to_string();
        assert_eq!(got.skills, [p("review/skills"), p("one")]);
        assert_eq!(got.templates, [p("review/prompts")]);
        for (arg, says) in [
            ("x.ts", "runs no TypeScript"),
            ("empty", "holds no skills/"),
            ("missing", "No such file"),
        ] {
            let e = resolve(&[arg.into()], dir.path()).unwrap_err().to_string();
            assert!(e.starts_with(&format!("Error: --extension {arg}: ")), "{e}");
            assert!(e.contains(says), "{e}");
        }
    }
}
