//! `--help`, `--version` and argument errors.

use super::{arbor, run, Run};

#[test]
fn version_names_the_binary_and_crate_version() {
    let out = run(&["--version"]);
    assert_eq!(out.code, 0);
    assert_eq!(out.stdout, format!("arbor {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn help_lists_the_session_commands() {
    let out = run(&["session", "--help"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for cmd in ["context", "tree", "list", "fork", "migrate"] {
        assert!(
            out.stdout.contains(cmd),
            "missing {cmd} in:\n{}",
            out.stdout
        );
    }
    let top = run(&["--help"]);
    assert_eq!(top.code, 0);
    assert!(top.stdout.contains("--session-dir"));
    assert!(top.stdout.contains("ARBOR_HOME"));
}

#[test]
fn no_arguments_and_no_stdin_is_an_error_without_side_effects() {
    let home = tempfile::tempdir().unwrap();
    let out: Run = arbor(home.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
        .into();
    assert_eq!(out.code, 1);
    assert!(out.stdout.is_empty());
    assert!(
        out.stderr.starts_with("Error: no message given"),
        "{}",
        out.stderr
    );
    assert!(
        !home.path().join("sessions").exists(),
        "no session may be created"
    );
}

#[test]
fn unknown_flags_are_usage_errors() {
    let out = run(&["session", "context", "x", "--bogus"]);
    assert_eq!(out.code, 2);
    assert!(out.stdout.is_empty());
    assert!(out.stderr.contains("--bogus"), "{}", out.stderr);
}

#[test]
fn agent_flag_errors_use_pis_texts_and_exit_1() {
    let cases: [(&[&str], &str); 6] = [
        (&["-x"], "Error: Unknown option: -x\n"),
        (
            &["--frobnicate", "-p", "hi"],
            "Error: Unknown option: --frobnicate\n",
        ),
        (
            &["--frob=1", "--bar", "value", "-p", "hi"],
            "Error: Unknown options: --frob, --bar\n",
        ),
        (
            &["--mode", "xml"],
            "Error: Invalid mode \"xml\". Valid values: text, json, rpc\n",
        ),
        (&["--mode"], "Error: --mode requires text, json, or rpc\n"),
        (&["-p", "hi", "--models"], ""),
    ];
    for (args, want) in cases {
        let home = tempfile::tempdir().unwrap();
        let out = super::run_in(home.path(), args);
        if want.is_empty() {
            // A known flag without its value stays clap's usage error (exit 2).
            assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
            continue;
        }
        assert_eq!(out.code, 1, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr, want, "{args:?}");
        assert!(out.stdout.is_empty());
        assert!(
            !home.path().join("sessions").exists(),
            "{args:?}: nothing written"
        );
    }
}
