//! pi's flags Arbor took over late (DECISIONS §22.90, §23.159, §23.160): `-t`, `-e`,
//! `--theme`, `--verbose`, in `--help` and in a run against the mock model.

use arbor_test_support::scripts::openai_text;
use arbor_test_support::MockServer;

use super::agent_e2e::lab;

fn put(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn help_shows_the_pi_flags() {
    let out = super::run(&["--help"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The flags' own lines and their descriptions, as a user reads them.
    let mut keep = false;
    let mut lines = Vec::new();
    for line in out.stdout.lines() {
        let flag = line.trim_start().starts_with('-');
        if flag {
            keep = ["-t, --tools", "-e, --extension", "--theme", "--verbose"]
                .iter()
                .any(|f| line.trim_start().starts_with(f));
        }
        if keep && !line.trim().is_empty() {
            lines.push(line.trim_end());
        }
    }
    insta::assert_snapshot!(lines.join("\n"));
}

#[tokio::test]
async fn short_t_picks_the_tools_and_e_loads_an_extension_folder() {
    let server = MockServer::start().await.unwrap();
    server.push(openai_text("Done."));
    let lab = lab(&server);
    put(
        &lab.repo.join("ext/skills/lint/SKILL.md"),
        "---\nname: lint\ndescription: Lint the code. Use before a commit.\n---\nRun the linter.\n",
    );
    put(
        &lab.repo.join("ext/prompts/review.md"),
        "---\ndescription: Review a change\n---\nReview $1.\n",
    );
    // The template the extension brings expands like any other.
    let (code, out, err) = lab
        .run(&["-p", "-t", "read,ls", "-e", "ext", "/review src/parser.rs"])
        .await;
    assert_eq!((code, out.as_str()), (0, "Done.\n"), "{err}");
    let body = server.requests()[0].json();
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    let messages = body["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap_or_default();
    let user = messages.last().unwrap()["content"].to_string();
    let skill = system
        .lines()
        .find(|l| l.contains("<skill name=\"lint\""))
        .unwrap_or("(no lint skill in the system prompt)")
        .replace(&lab.repo.display().to_string(), "[repo]");
    insta::assert_snapshot!(format!("tools: {tools:?}\n{skill}\nuser message: {user}"));
}

#[tokio::test]
async fn pi_extension_files_and_empty_folders_are_refused_with_what_to_use() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    put(
        &lab.repo.join("review.ts"),
        "export default function () {}\n",
    );
    std::fs::create_dir_all(lab.repo.join("empty")).unwrap();
    let mut shown = Vec::new();
    for ext in ["review.ts", "empty", "missing"] {
        let (code, out, err) = lab.run(&["-p", "-e", ext, "hi"]).await;
        assert_eq!(code, 1, "{ext}: {err}");
        assert!(out.is_empty());
        shown.push(err.replace(&lab.repo.display().to_string(), "[repo]"));
    }
    assert!(
        server.requests().is_empty(),
        "no model call on a refused start"
    );
    insta::assert_snapshot!(shown.join(""));
}
