//! Skills, prompt templates and project trust end to end (DECISIONS §32): the real binary in
//! print and RPC modes against the mock model server on 127.0.0.1.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use arbor_test_support::scripts::{openai_text, openai_tool_calls};
use arbor_test_support::MockServer;
use serde_json::{json, Value};

use super::agent_e2e::{lab, Lab};

fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const SKILL: &str = "---\nname: deploy\ndescription: Deploy the service. Use when asked to ship a release.\n---\n# Deploy\nRun ./ship.sh from the skill folder.\n";
const TEMPLATE: &str = "---\ndescription: Review a change\nargument-hint: \"<area> [depth]\"\n---\nReview $1 at ${2:-normal} depth (all: $@).\n";

/// A project with one skill, one template, project settings and a SYSTEM.md.
fn project(lab: &Lab) {
    put(&lab.repo.join(".arbor/skills/deploy/SKILL.md"), SKILL);
    put(&lab.repo.join(".arbor/prompts/review.md"), TEMPLATE);
    put(
        &lab.repo.join(".arbor/settings.json"),
        r#"{"defaultTools": ["read"]}"#,
    );
    put(&lab.repo.join(".arbor/SYSTEM.md"), "Project system prompt.");
}

fn user_text(body: &Value) -> String {
    let m = &body["messages"][1];
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        other => panic!("unexpected content {other}"),
    }
}

fn system_text(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn redacted(body: &[u8], lab: &Lab) -> Value {
    let text = String::from_utf8_lossy(body)
        .replace(&lab.repo.display().to_string(), "[REPO]")
        .replace(&lab.home.display().to_string(), "[HOME]");
    serde_json::from_str(&text).unwrap()
}

#[tokio::test]
async fn a_skill_is_advertised_and_read_and_a_template_expands_with_arguments() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    project(&lab);
    let skill_file = lab.repo.join(".arbor/skills/deploy/SKILL.md");
    server.push(openai_tool_calls(&[(
        "call_1",
        "read",
        json!({"path": skill_file.display().to_string()}),
    )]));
    server.push(openai_text("Reviewed."));
    let (code, stdout, stderr) = lab
        .run(&[
            "-p",
            "--approve",
            "--model",
            "mock/mock-model",
            "/review \"API compat\" deep",
        ])
        .await;
    assert_eq!(code, 0, "stderr: {stderr}");
    assert_eq!(stdout, "Reviewed.\n");
    assert!(stderr.contains("Skills (1): deploy"), "{stderr}");
    assert!(stderr.contains("Prompt templates (1): /review"), "{stderr}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let first = reqs[0].json();
    assert_eq!(
        user_text(&first),
        "Review API compat at deep depth (all: API compat deep).\n"
    );
    let system = system_text(&first);
    assert!(
        system.contains(&format!(
            "<skill name=\"deploy\" path=\"{}\">Deploy the service. Use when asked to ship a release.</skill>",
            skill_file.display()
        )),
        "{system}"
    );
    // The body is not in the prompt: the model reads it.
    assert!(!system.contains("ship.sh"), "{system}");
    // Trusted: the project's settings (defaultTools) and SYSTEM.md are in force.
    assert!(system.starts_with("Project system prompt."), "{system}");
    assert_eq!(tool_names(&first), ["read"]);
    let second = reqs[1].json();
    let msgs = second["messages"].as_array().unwrap();
    let result = msgs.last().unwrap()["content"].as_str().unwrap();
    assert!(
        result.contains("Run ./ship.sh from the skill folder."),
        "{result}"
    );
    insta::assert_json_snapshot!(
        "skill_advertised_template_expanded_request",
        redacted(&reqs[0].body, &lab)
    );
}

#[tokio::test]
async fn skill_commands_send_the_instructions_and_unknown_ones_are_refused() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    project(&lab);
    server.push(openai_text("Shipping."));
    let (code, stdout, stderr) = lab
        .run(&[
            "-p",
            "--approve",
            "--model",
            "mock/mock-model",
            "/skill:deploy version 2",
        ])
        .await;
    assert_eq!(code, 0, "stderr: {stderr}");
    assert_eq!(stdout, "Shipping.\n");
    let sent = user_text(&server.requests()[0].json());
    let dir = lab.repo.join(".arbor/skills/deploy");
    assert_eq!(
        sent,
        format!(
            "<skill name=\"deploy\" location=\"{}/SKILL.md\">\nPaths in this skill are relative to {}.\n\n# Deploy\nRun ./ship.sh from the skill folder.\n</skill>\n\nversion 2",
            dir.display(),
            dir.display()
        )
    );
    let (code, _, stderr) = lab
        .run(&[
            "-p",
            "--approve",
            "--model",
            "mock/mock-model",
            "/skill:nope x",
        ])
        .await;
    assert_eq!(code, 1);
    assert!(stderr.contains("Unknown skill: nope"), "{stderr}");
    assert_eq!(
        server.requests().len(),
        1,
        "nothing was sent for the unknown skill"
    );
}

#[tokio::test]
async fn malformed_skills_and_templates_are_named_with_their_line_and_the_run_goes_on() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    put(
        &lab.home.join("skills/broken/SKILL.md"),
        "---\nname: broken\ndescription: [oops\n---\nBody\n",
    );
    put(
        &lab.home.join("skills/Shouty/SKILL.md"),
        "---\ndescription: Loud.\n---\n",
    );
    put(
        &lab.home.join("prompts/bad.md"),
        "---\ndescription: fine\nargument-hint: a: b: c\n---\nBody\n",
    );
    put(&lab.home.join("prompts/good.md"), "Say $1.\n");
    server.push(openai_text("Fine."));
    let (code, stdout, stderr) = lab
        .run(&["-p", "--model", "mock/mock-model", "/good hello"])
        .await;
    assert_eq!(code, 0, "stderr: {stderr}");
    assert_eq!(stdout, "Fine.\n");
    let home = lab.home.display();
    for want in [
        "Skills (1): Shouty".to_owned(),
        "Prompt templates (1): /good".to_owned(),
        format!("Warning: {home}/skills/Shouty/SKILL.md:1: name may hold only lowercase a-z, 0-9 and hyphens"),
        format!("Warning: {home}/skills/broken/SKILL.md:4: invalid YAML frontmatter"),
        format!("Warning: {home}/prompts/bad.md:3: invalid YAML frontmatter"),
    ] {
        assert!(stderr.contains(&want), "missing {want:?} in:\n{stderr}");
    }
    assert_eq!(user_text(&server.requests()[0].json()), "Say hello.\n");
}

#[tokio::test]
async fn an_untrusted_projects_resources_load_only_once_trusted() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    project(&lab);
    let ask = |args: &[&'static str]| {
        let mut all = vec!["-p", "--model", "mock/mock-model"];
        all.extend_from_slice(args);
        all.push("/review area");
        all
    };
    let check_untrusted = |body: &Value| {
        assert_eq!(user_text(body), "/review area");
        let system = system_text(body);
        assert!(!system.contains("<skills>"), "{system}");
        assert!(!system.contains("Project system prompt."), "{system}");
        assert!(tool_names(body).len() > 1, "project defaultTools ignored");
    };
    let check_trusted = |body: &Value| {
        assert_eq!(
            user_text(body),
            "Review area at normal depth (all: area).\n"
        );
        assert!(system_text(body).contains("<skill name=\"deploy\""));
        assert_eq!(tool_names(body), ["read"]);
    };
    // No decision, defaultProjectTrust "ask" (the default): print mode loads nothing.
    for args in [&[][..], &["--no-approve"][..]] {
        server.push(openai_text("ok"));
        let (code, _, stderr) = lab.run(&ask(args)).await;
        assert_eq!(code, 0, "{stderr}");
        assert!(!stderr.contains("deploy"), "{stderr}");
        check_untrusted(&server.requests().last().unwrap().json());
    }
    // defaultProjectTrust "always" in the global settings trusts it...
    put(
        &lab.home.join("settings.json"),
        r#"{"defaultProjectTrust": "always"}"#,
    );
    server.push(openai_text("ok"));
    let (code, _, stderr) = lab.run(&ask(&[])).await;
    assert_eq!(code, 0, "{stderr}");
    check_trusted(&server.requests().last().unwrap().json());
    // ...unless a saved decision for the folder says no; --approve overrides both.
    let key = std::fs::canonicalize(&lab.repo).unwrap();
    put(
        &lab.home.join("trust.json"),
        &json!({key.display().to_string(): false}).to_string(),
    );
    server.push(openai_text("ok"));
    let (code, _, stderr) = lab.run(&ask(&[])).await;
    assert_eq!(code, 0, "{stderr}");
    check_untrusted(&server.requests().last().unwrap().json());
    server.push(openai_text("ok"));
    let (code, _, stderr) = lab.run(&ask(&["--approve"])).await;
    assert_eq!(code, 0, "{stderr}");
    check_trusted(&server.requests().last().unwrap().json());
    // A broken trust file stops the start with its name rather than guessing.
    put(&lab.home.join("trust.json"), "{\"/x\": \"yes\"}");
    let (code, _, stderr) = lab.run(&ask(&[])).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("trust.json"), "{stderr}");
}

#[tokio::test]
async fn rpc_get_commands_lists_templates_and_skills_as_pi_does() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    project(&lab);
    let mut child = lab
        .cmd()
        .args(["--mode", "rpc", "--approve", "--model", "mock/mock-model"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stdin, b"{\"type\":\"get_commands\",\"id\":\"c1\"}\n")
        .await
        .unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let reply: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["id"] == "c1")
        .unwrap_or_else(|| panic!("no reply in {stdout}"));
    let repo = lab.repo.display();
    assert_eq!(
        reply["data"]["commands"],
        json!([
            {"name": "review", "description": "Review a change", "source": "prompt",
             "sourceInfo": {"path": format!("{repo}/.arbor/prompts/review.md"), "source": "local",
                            "scope": "project", "origin": "top-level", "baseDir": format!("{repo}/.arbor/prompts")}},
            {"name": "skill:deploy", "description": "Deploy the service. Use when asked to ship a release.",
             "source": "skill",
             "sourceInfo": {"path": format!("{repo}/.arbor/skills/deploy/SKILL.md"), "source": "local",
                            "scope": "project", "origin": "top-level", "baseDir": format!("{repo}/.arbor/skills/deploy")}}
        ])
    );
}

#[tokio::test]
async fn rpc_prompts_expand_templates_and_skills_and_refuse_an_unknown_skill() {
    let server = MockServer::start().await.unwrap();
    let lab = lab(&server);
    project(&lab);
    let mut rpc = super::rpc_replay::Rpc::start(&lab, &["--approve", "--no-session"]);
    server.push(openai_text("Reviewed."));
    let resp = rpc
        .call(r#"{"id":"t","type":"prompt","message":"/review \"API compat\" deep"}"#)
        .await;
    assert_eq!(resp["success"], true, "{resp}");
    assert_eq!(
        user_text(&server.requests()[0].json()),
        "Review API compat at deep depth (all: API compat deep).\n"
    );
    server.push(openai_text("Deploying."));
    let resp = rpc
        .call(r#"{"id":"s","type":"prompt","message":"/skill:deploy to staging"}"#)
        .await;
    assert_eq!(resp["success"], true, "{resp}");
    let body = server.requests()[1].json();
    let sent = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .unwrap();
    assert!(sent.contains("<skill name=\\\"deploy\\\""), "{sent}");
    assert!(
        sent.contains("Run ./ship.sh from the skill folder."),
        "{sent}"
    );
    assert!(sent.contains("to staging"), "{sent}");
    let resp = rpc
        .call(r#"{"id":"u","type":"prompt","message":"/skill:nope now"}"#)
        .await;
    assert_eq!(resp["success"], false, "{resp}");
    assert!(
        resp["error"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Unknown skill: nope"),
        "{resp}"
    );
    assert_eq!(
        server.requests().len(),
        2,
        "nothing was sent for the unknown skill"
    );
    // As in pi, the interactive-only commands are not RPC commands: the line goes to the model.
    server.push(openai_text("Noted."));
    let resp = rpc
        .call(r#"{"id":"r","type":"prompt","message":"/reload"}"#)
        .await;
    assert_eq!(resp["success"], true, "{resp}");
    let body = server.requests()[2].json();
    let last_user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .to_string();
    assert!(last_user.contains("/reload"), "{last_user}");
    rpc.finish().await;
}
