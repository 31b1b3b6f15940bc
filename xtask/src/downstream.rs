//! `cargo xtask downstream`: builds and runs the library crates' programs from a crate outside
//! the workspace, as a downstream developer would (issue 30's "done when").
//!
//! The crate is written to `target/downstream/` with its own `[workspace]` table, so nothing of
//! this workspace's feature unification, dev-dependencies or lints leaks into it. It depends by
//! path on `arbor-ai` (default features plus `faux`), `arbor-session`, `arbor-agent`,
//! `arbor-tools` and `arbor-session-sqlite`, and on the few crates the docs tell a user to add.
//! Its programs are, unchanged:
//! - every `examples/*.rs` of those crates;
//! - every ```` ```rust ```` block of docs/USAGE.md's "Library:" sections, turned into a program
//!   the way rustdoc turns a doc example into a test (hidden `# ` lines kept, a body without
//!   `fn main` wrapped in one).
//!
//! Each program is built and then run (offline: the faux provider, temporary folders); any
//! failure fails the command. The workspace's `Cargo.lock` is copied in so the versions are the
//! ones CI tested.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The crates a downstream user depends on by path, with the features the docs name.
const CRATES: &[(&str, &str, &str)] = &[
    ("arbor-ai", "crates/ai", r#", features = ["faux"]"#),
    ("arbor-session", "crates/session", ""),
    ("arbor-agent", "crates/agent", ""),
    ("arbor-tools", "crates/tools", ""),
    ("arbor-session-sqlite", "crates/session-sqlite", ""),
];

/// The other dependencies the docs tell a user to add (USAGE's "Library:" sections).
const OTHER_DEPENDENCIES: &str = r#"tokio = { version = "1", features = ["macros", "rt", "rt-multi-thread"] }
futures = "0.3"
serde = { version = "1", features = ["derive"] }
serde_json = "1"
schemars = "1"
tempfile = "3"
"#;

#[derive(Debug, thiserror::Error)]
enum DownstreamError {
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("docs/USAGE.md line {line}: a ```rust block is not closed")]
    UnclosedBlock { line: usize },
    #[error("`{command}` failed ({status})")]
    Command { command: String, status: String },
}

/// One program of the downstream crate.
struct Program {
    /// The binary's name.
    name: String,
    /// Where it comes from, for the report.
    origin: String,
    source: String,
    /// Arguments it is run with.
    args: Vec<String>,
}

pub fn run(args: &[String]) -> ExitCode {
    if let Some(extra) = args.first() {
        eprintln!("downstream takes no arguments (got {extra:?})");
        return ExitCode::FAILURE;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    match build_and_run(&root) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("downstream: {e}");
            ExitCode::FAILURE
        }
    }
}

fn build_and_run(root: &Path) -> Result<(), DownstreamError> {
    let programs = programs(root)?;
    let dir = root.join("target/downstream");
    write_crate(root, &dir, &programs)?;
    let target = dir.join("target");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    run_command(
        Command::new(&cargo)
            .args(["build", "--quiet", "--bins", "--manifest-path"])
            .arg(dir.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", &target),
    )?;
    println!("downstream crate {}: built", dir.display());
    for program in &programs {
        let bin = target.join("debug").join(&program.name);
        let output = Command::new(&bin)
            .args(&program.args)
            .current_dir(&dir)
            .output()
            .map_err(|source| DownstreamError::Io {
                what: "running",
                path: bin.clone(),
                source,
            })?;
        let lines = program.source.lines().count();
        if !output.status.success() {
            eprintln!("{}", String::from_utf8_lossy(&output.stdout));
            eprintln!("{}", String::from_utf8_lossy(&output.stderr));
            return Err(DownstreamError::Command {
                command: format!("{} ({})", program.name, program.origin),
                status: output.status.to_string(),
            });
        }
        println!(
            "  {:<24} {:>4} lines  ok  ({})",
            program.name, lines, program.origin
        );
    }
    Ok(())
}

fn read(path: &Path) -> Result<String, DownstreamError> {
    std::fs::read_to_string(path).map_err(|source| DownstreamError::Io {
        what: "reading",
        path: path.to_path_buf(),
        source,
    })
}

fn write(path: &Path, text: &str) -> Result<(), DownstreamError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| DownstreamError::Io {
            what: "creating",
            path: parent.to_path_buf(),
            source,
        })?;
    }
    std::fs::write(path, text).map_err(|source| DownstreamError::Io {
        what: "writing",
        path: path.to_path_buf(),
        source,
    })
}

/// The examples of the crates, then USAGE's library snippets.
fn programs(root: &Path) -> Result<Vec<Program>, DownstreamError> {
    let mut programs = Vec::new();
    for (_, dir, _) in CRATES {
        let examples = root.join(dir).join("examples");
        let Ok(listing) = std::fs::read_dir(&examples) else {
            continue;
        };
        let mut files: Vec<PathBuf> = listing
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .collect();
        files.sort();
        for file in files {
            let name = file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            // The session reader takes the file to read; a copy of the fixture it defaults
            // to inside the workspace (a downstream crate has no `../../testdata`).
            let args = if name == "inspect_session" {
                vec![root
                    .join("testdata/pi-sessions/v3-generated-branches-labels-branchsummary-compaction.pi-1.6.0.jsonl")
                    .display()
                    .to_string()]
            } else {
                Vec::new()
            };
            programs.push(Program {
                origin: format!("{dir}/examples/{name}.rs"),
                source: read(&file)?,
                name,
                args,
            });
        }
    }
    let usage = read(&root.join("docs/USAGE.md"))?;
    for (n, (line, block)) in usage_library_blocks(&usage)?.into_iter().enumerate() {
        programs.push(Program {
            name: format!("usage_snippet_{}", n + 1),
            origin: format!("docs/USAGE.md line {line}"),
            source: doctest_program(&block),
            args: Vec::new(),
        });
    }
    Ok(programs)
}

/// The ```rust blocks under the "## Library:" headings, with the line each starts on; a block
/// indented under a list item loses its fence's indentation.
fn usage_library_blocks(usage: &str) -> Result<Vec<(usize, String)>, DownstreamError> {
    let mut blocks = Vec::new();
    let mut in_library = false;
    let mut open: Option<(usize, usize, String)> = None;
    for (i, line) in usage.lines().enumerate() {
        if let Some((start, indent, body)) = open.as_mut() {
            if line.trim_start().starts_with("```") {
                blocks.push((*start, std::mem::take(body)));
                open = None;
            } else {
                let cut = line.len() - line.trim_start().len();
                body.push_str(&line[cut.min(*indent)..]);
                body.push('\n');
            }
            continue;
        }
        if let Some(heading) = line.strip_prefix("## ") {
            in_library = heading.starts_with("Library:");
        } else if in_library && line.trim() == "```rust" {
            let indent = line.len() - line.trim_start().len();
            open = Some((i + 1, indent, String::new()));
        }
    }
    match open {
        Some((line, _, _)) => Err(DownstreamError::UnclosedBlock { line }),
        None => Ok(blocks),
    }
}

/// A doc example as rustdoc compiles it: `# ` hides a line from the reader but not from the
/// compiler, and a body without `fn main` runs inside one.
fn doctest_program(block: &str) -> String {
    let code: String = block
        .lines()
        .map(|l| match l.strip_prefix('#') {
            Some(rest) if rest.is_empty() || rest.starts_with(' ') => {
                rest.strip_prefix(' ').unwrap_or(rest)
            }
            _ => l,
        })
        .fold(String::new(), |mut acc, l| {
            acc.push_str(l);
            acc.push('\n');
            acc
        });
    if code.contains("fn main") {
        format!("#![allow(unused)]\n{code}")
    } else {
        format!("#![allow(unused)]\nfn main() {{\n{code}}}\n")
    }
}

fn write_crate(root: &Path, dir: &Path, programs: &[Program]) -> Result<(), DownstreamError> {
    let mut manifest = String::from(
        "# Written by `cargo xtask downstream`: a crate outside the Arbor workspace.\n\
         [package]\nname = \"arbor-downstream\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         publish = false\n\n[workspace]\n\n[dependencies]\n",
    );
    for (name, path, features) in CRATES {
        manifest.push_str(&format!(
            "{name} = {{ path = {:?}{features} }}\n",
            root.join(path).display().to_string()
        ));
    }
    manifest.push_str(OTHER_DEPENDENCIES);
    for program in programs {
        manifest.push_str(&format!(
            "\n[[bin]]\nname = \"{0}\"\npath = \"src/bin/{0}.rs\"\n",
            program.name
        ));
    }
    let bins = dir.join("src/bin");
    if bins.exists() {
        std::fs::remove_dir_all(&bins).map_err(|source| DownstreamError::Io {
            what: "clearing",
            path: bins.clone(),
            source,
        })?;
    }
    write(&dir.join("Cargo.toml"), &manifest)?;
    let lock = read(&root.join("Cargo.lock"))?;
    write(&dir.join("Cargo.lock"), &lock)?;
    for program in programs {
        write(&bins.join(format!("{}.rs", program.name)), &program.source)?;
    }
    Ok(())
}

fn run_command(command: &mut Command) -> Result<(), DownstreamError> {
    let status = command.status().map_err(|source| DownstreamError::Io {
        what: "starting",
        path: PathBuf::from(command.get_program()),
        source,
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(DownstreamError::Command {
            command: format!("{command:?}"),
            status: status.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_lines_are_compiled_and_a_body_gets_a_main() {
        let program = doctest_program("use a::b;\n# let x = 1;\n#[derive(Debug)]\nstruct S;\n");
        assert_eq!(
            program,
            "#![allow(unused)]\nfn main() {\nuse a::b;\nlet x = 1;\n#[derive(Debug)]\nstruct S;\n}\n"
        );
        let with_main = doctest_program("# fn main() {}\n");
        assert_eq!(with_main, "#![allow(unused)]\nfn main() {}\n");
    }

    #[test]
    fn only_library_sections_give_programs() {
        let usage = "## Other\n```rust\nnot_this();\n```\n## Library: x\ntext\n```rust\nthis();\n```\n```sh\nnot sh\n```\n";
        let blocks = usage_library_blocks(usage).unwrap();
        assert_eq!(blocks, vec![(7, "this();\n".to_string())]);
        let indented =
            usage_library_blocks("## Library: z\n- item\n\n  ```rust\n  # a();\n    b();\n  ```\n");
        assert_eq!(indented.unwrap(), vec![(4, "# a();\n  b();\n".to_string())]);
        assert!(matches!(
            usage_library_blocks("## Library: y\n```rust\nopen();\n"),
            Err(DownstreamError::UnclosedBlock { line: 2 })
        ));
    }
}
