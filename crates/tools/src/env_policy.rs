//! Which environment variables reach the commands Arbor runs for the model and the user (bash
//! tool, `!` commands), in the spirit of Codex's `shell_environment_policy`: by default the
//! variables that hold the keys Arbor itself uses are taken out, so `env` or
//! `cat /proc/self/environ` cannot put a key into the session. Settings
//! (`toolEnvironment.exclude` / `.include`, globs on names) take out more or put back
//! (DECISIONS §30.7).

use std::collections::BTreeSet;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// A `toolEnvironment` pattern that is not a valid glob.
#[derive(Debug, thiserror::Error)]
#[error("settings {key}: {problem}")]
pub struct EnvPolicyError {
    /// The setting the pattern came from (`toolEnvironment.exclude` or `.include`).
    pub key: &'static str,
    /// What is wrong, naming the pattern.
    pub problem: String,
    #[source]
    source: globset::Error,
}

/// The variables a tool command does not get.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvPolicy {
    removed: BTreeSet<String>,
}

/// What the policy is built from.
#[derive(Debug, Default)]
pub struct EnvPolicyInput<'a> {
    /// Names of the variables holding keys Arbor uses (providers' key variables and every
    /// variable models.json or auth.json names).
    pub key_variables: BTreeSet<String>,
    /// `toolEnvironment.exclude`: more names to take out (globs, case-insensitive).
    pub exclude: &'a [String],
    /// `toolEnvironment.include`: names to keep even when listed above (wins over both).
    pub include: &'a [String],
}

fn glob_set(patterns: &[String], key: &'static str) -> Result<GlobSet, EnvPolicyError> {
    let mut set = GlobSetBuilder::new();
    for p in patterns {
        let glob = GlobBuilder::new(p)
            .case_insensitive(true)
            .build()
            .map_err(|source| EnvPolicyError {
                key,
                problem: format!("invalid pattern {p:?}: {source}"),
                source,
            })?;
        set.add(glob);
    }
    set.build().map_err(|source| EnvPolicyError {
        key,
        problem: source.to_string(),
        source,
    })
}

impl EnvPolicy {
    /// Builds the policy against `environment` (the names the process has).
    pub fn build(
        input: &EnvPolicyInput<'_>,
        environment: impl IntoIterator<Item = String>,
    ) -> Result<EnvPolicy, EnvPolicyError> {
        let exclude = glob_set(input.exclude, "toolEnvironment.exclude")?;
        let include = glob_set(input.include, "toolEnvironment.include")?;
        let mut removed: BTreeSet<String> = input.key_variables.clone();
        removed.extend(
            environment
                .into_iter()
                .filter(|name| exclude.is_match(name)),
        );
        removed.retain(|name| !include.is_match(name));
        Ok(EnvPolicy { removed })
    }

    /// The names taken out, sorted.
    pub fn removed(&self) -> impl Iterator<Item = &str> {
        self.removed.iter().map(String::as_str)
    }

    /// Takes the policy's variables out of `command`'s environment.
    pub fn apply(&self, command: &mut tokio::process::Command) {
        for name in &self.removed {
            command.env_remove(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn key_variables_go_exclusions_add_and_inclusions_win() {
        let exclude = names(&["AWS_*", "*token*"]);
        let include = names(&["AWS_REGION", "OPENAI_API_KEY"]);
        let policy = EnvPolicy::build(
            &EnvPolicyInput {
                key_variables: ["OPENAI_API_KEY", "MY_GATEWAY_KEY"]
                    .map(str::to_owned)
                    .into(),
                exclude: &exclude,
                include: &include,
            },
            names(&["PATH", "AWS_SECRET", "AWS_REGION", "GH_TOKEN", "HOME"]),
        )
        .unwrap();
        assert_eq!(
            policy.removed().collect::<Vec<_>>(),
            ["AWS_SECRET", "GH_TOKEN", "MY_GATEWAY_KEY"]
        );
    }

    #[test]
    fn a_bad_pattern_names_the_setting() {
        let bad = names(&["a[b"]);
        let err = EnvPolicy::build(
            &EnvPolicyInput {
                exclude: &bad,
                ..Default::default()
            },
            Vec::new(),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("settings toolEnvironment.exclude: invalid pattern \"a[b\""),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_command_does_not_see_removed_variables() {
        let policy = EnvPolicy {
            removed: ["ARBOR_TEST_POLICY_SECRET".to_owned()].into(),
        };
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c")
            .arg("echo \"[$ARBOR_TEST_POLICY_SECRET][$ARBOR_TEST_POLICY_KEPT]\"")
            .env("ARBOR_TEST_POLICY_SECRET", "s3cr3t")
            .env("ARBOR_TEST_POLICY_KEPT", "kept");
        policy.apply(&mut cmd);
        let out = cmd.output().await.unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "[][kept]\n");
    }
}
