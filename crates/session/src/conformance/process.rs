//! The conformance case that needs a second process: "a second writer from another process is
//! refused" (DECISIONS §4.4, §25.8). Every backend except the in-memory one runs it.
//!
//! The test binary re-runs itself: the parent holds a session open for writing and starts the
//! same test with [`CHILD_ENV`] naming the session's location; the child reopens the
//! repository with the test's `reopen` function, tries `open`, prints what happened and exits.
//! [`crate::session_conformance_tests!`] wires this up given a `second_process: reopen` arm.

use super::CaseFailure;
use crate::entry::EntryKind;
use crate::error::SessionError;
use crate::storage::{CreateOptions, EntryDraft, SessionRepository, SessionStorage};
use std::future::Future;

/// Set in the child: the location to try to open.
pub const CHILD_ENV: &str = "ARBOR_CONFORMANCE_SECOND_WRITER";
/// The case's name (also the generated test's name).
pub const CASE: &str = "second_writer_from_another_process_is_refused";
/// The text every backend's refusal contains.
pub const REFUSAL: &str = "session is open for writing by another process";

const MARK: &str = "ARBOR-SECOND-WRITER:";

/// Runs the case, or (in the child) its other half. `module` is the generated test's
/// `module_path!()`; `reopen` builds a repository that can open a location made by `factory`'s
/// repository (for file backends: the same file or folder).
pub async fn run<R, F, Fut, O, OFut>(factory: F, module: &str, reopen: O)
where
    R: SessionRepository,
    F: Fn() -> Fut,
    Fut: Future<Output = super::Fixture<R>>,
    O: Fn(String) -> OFut,
    OFut: Future<Output = Result<R, SessionError>>,
{
    if let Ok(location) = std::env::var(CHILD_ENV) {
        print_report(&child_report(reopen(location.clone()).await, &location).await);
        return;
    }
    let fixture = factory().await;
    if let Err(e) = run_parent(&fixture.repo, |location| child(module, location)).await {
        panic!("conformance case {CASE} failed: {e}");
    }
}

/// The child half: what happened when this process's repository (`reopened`, or the error of
/// building it) tried to open `location` for writing.
pub async fn child_report<R: SessionRepository>(
    reopened: Result<R, SessionError>,
    location: &str,
) -> String {
    match reopened {
        Ok(repo) => match repo.open(location).await {
            Ok(_) => "opened".to_owned(),
            Err(e) => format!("refused {e}"),
        },
        Err(e) => format!("reopen failed {e}"),
    }
}

/// Prints a child's report where [`parse_report`] finds it (on a line of its own: the test
/// harness prints the test name before it).
pub fn print_report(report: &str) {
    println!("\n{MARK} {report}");
}

/// The report in a child's standard output, if it printed one.
pub fn parse_report(stdout: &str) -> Option<String> {
    stdout
        .lines()
        .find_map(|l| l.split_once(MARK).map(|(_, r)| r.trim().to_owned()))
}

/// The parent half, for any driver (the test harness, `cargo xtask conformance`): holds a new
/// session of `repo` open for writing while `child(location)` runs another process's attempt
/// (returning its [`child_report`]), then checks it was refused, and that after closing, it
/// is not.
pub async fn run_parent<R: SessionRepository, E: Into<CaseFailure>>(
    repo: &R,
    child: impl Fn(&str) -> Result<String, E>,
) -> super::CaseResult {
    let s = repo
        .create(CreateOptions {
            cwd: "/work/conformance".into(),
            ..CreateOptions::default()
        })
        .await
        .map_err(|e| format!("create: {e}"))?;
    let kind = EntryKind::from_fields(
        "custom",
        serde_json::json!({"customType": "held"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
    .map_err(|e| format!("entry: {e}"))?;
    s.append(EntryDraft::new(kind))
        .await
        .map_err(|e| format!("append: {e}"))?;
    let location = s.location();
    let held = child(&location).map_err(Into::into)?;
    if !(held.starts_with("refused") && held.contains(REFUSAL)) {
        return Err(format!(
            "while this process holds {location} for writing, another process got: {held}"
        )
        .into());
    }
    drop(s);
    let released = child(&location).map_err(Into::into)?;
    if released != "opened" {
        return Err(
            format!("after the writer closed {location}, another process got: {released}").into(),
        );
    }
    Ok(())
}

/// Runs this test in a child process and returns its report line.
fn child(module: &str, location: &str) -> Result<String, CaseFailure> {
    // `module_path!()` starts with the crate name, which test filters do not include.
    let path = match module.split_once("::") {
        Some((_, rest)) => format!("{rest}::{CASE}"),
        None => CASE.to_owned(),
    };
    let exe =
        std::env::current_exe().map_err(|e| CaseFailure(format!("current test binary: {e}")))?;
    let out = std::process::Command::new(exe)
        .args(["--exact", &path, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, location)
        .output()
        .map_err(|e| CaseFailure(format!("starting the child process: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    parse_report(&stdout).ok_or_else(|| {
        CaseFailure(format!(
            "the child ran no case (filter {path}); stdout: {stdout}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    })
}
