//! `arbor session import/export` and `--store` against a PostgreSQL server
//! (`ARBOR_TEST_POSTGRES_URL`; skipped with a visible line when unset, failing when
//! `ARBOR_TEST_POSTGRES_REQUIRE` is set). Each test uses a scratch schema
//! (`ARBOR_POSTGRES_SCHEMA`).

use arbor_session_postgres::scratch::ScratchSchema;

use super::{arbor, fixture_files, Run};

fn server() -> Option<String> {
    match std::env::var("ARBOR_TEST_POSTGRES_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            assert!(
                std::env::var_os("ARBOR_TEST_POSTGRES_REQUIRE").is_none(),
                "ARBOR_TEST_POSTGRES_URL is not set but ARBOR_TEST_POSTGRES_REQUIRE is"
            );
            eprintln!("SKIPPED postgres CLI tests: ARBOR_TEST_POSTGRES_URL is not set");
            None
        }
    }
}

fn run(home: &std::path::Path, schema: &ScratchSchema, args: &[&str]) -> Run {
    arbor(home)
        .env("ARBOR_POSTGRES_SCHEMA", &schema.name)
        .args(args)
        .output()
        .expect("running arbor")
        .into()
}

#[test]
fn import_export_and_store_commands_round_trip() {
    let Some(url) = server() else { return };
    let schema = ScratchSchema::new(&url);
    let home = tempfile::tempdir().unwrap();
    let file = fixture_files("pi-sessions")
        .into_iter()
        .find(|p| p.to_string_lossy().contains("v3-generated-branches"))
        .unwrap();
    let f = file.to_str().unwrap();
    let imported = run(
        home.path(),
        &schema,
        &["session", "import", "--to", &url, f],
    );
    assert_eq!(imported.code, 0, "{}", imported.stderr);
    let id = imported.stdout.split('\t').next().unwrap().to_owned();
    assert!(
        imported.stdout.ends_with(&format!("\t{f}\n")),
        "{}",
        imported.stdout
    );

    let out = home.path().join("out.jsonl");
    let o = out.to_str().unwrap();
    let exported = run(
        home.path(),
        &schema,
        &["session", "export", "--from", &url, &id, o],
    );
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&file).unwrap());

    let from_store = run(
        home.path(),
        &schema,
        &["session", "context", "--json", "--store", &url, &id],
    );
    let from_file = run(home.path(), &schema, &["session", "context", "--json", f]);
    assert_eq!(from_store.code, 0, "{}", from_store.stderr);
    assert_eq!(from_store.stdout, from_file.stdout, "same projection");

    let listed = run(
        home.path(),
        &schema,
        &["session", "list", "--all", "--store", &url],
    );
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(listed.stdout.contains(&id), "{}", listed.stdout);

    let forked = run(
        home.path(),
        &schema,
        &["session", "fork", "--store", &url, &id],
    );
    assert_eq!(forked.code, 0, "{}", forked.stderr);
    assert!(forked.stdout.contains('#'), "{}", forked.stdout);
}

#[test]
fn store_errors_never_show_the_password() {
    let home = tempfile::tempdir().unwrap();
    let url = "postgres://bob:pa55word-xyz@127.0.0.1:1/agents";
    let out: Run = arbor(home.path())
        .args(["session", "list", "--store", url])
        .output()
        .unwrap()
        .into();
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("postgres://bob@127.0.0.1:1/agents"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("pa55word"), "{}", out.stderr);
}
