//! Command-line arguments (clap derive). Running them is [`crate::app`]'s job.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Arbor: a coding agent whose sessions are append-only entry trees.
#[derive(Debug, Parser)]
#[command(
    name = "arbor",
    version,
    about,
    long_about = "Arbor: a coding agent whose sessions are append-only entry trees.\n\n\
        Sessions are JSONL files in pi's v3 format under ~/.arbor/sessions/--<cwd>--/ \
        (ARBOR_HOME moves ~/.arbor). `arbor session` inspects, forks and migrates them; it \
        also reads pi's session directories through --session-dir.",
    propagate_version = true,
    arg_required_else_help = true
)]
pub struct Cli {
    /// Use session files in DIR instead of ~/.arbor/sessions (pi's session folders work too).
    #[arg(long, global = true, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inspect, fork and migrate sessions.
    #[command(subcommand, arg_required_else_help = true)]
    Session(SessionCommand),
}

/// `SESSION` is a file path, a full session id, or a unique id prefix.
#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Print the model-visible context of a session (at its leaf, or at --leaf).
    #[command(after_help = "Exit codes: 0 ok, 1 not found or other error, \
        2 the session file is invalid (with --json, {\"ok\":false,...} is still printed).")]
    Context {
        /// Session file, id or unique id prefix.
        #[arg(value_name = "SESSION")]
        session: String,
        /// Project the context at this entry instead of the current leaf.
        #[arg(long, value_name = "ID")]
        leaf: Option<String>,
        /// One JSON object: {ok, leafId, model, thinkingLevel, activeToolNames, llm}.
        #[arg(long)]
        json: bool,
        /// Do not shorten thinking, tool results and tool arguments in the transcript.
        #[arg(long, conflicts_with = "json")]
        full: bool,
    },
    /// Print the entry tree: one line per entry, `*` marks the active path.
    Tree {
        /// Session file, id or unique id prefix.
        #[arg(value_name = "SESSION")]
        session: String,
    },
    /// List sessions, newest first (default: those of the current directory).
    List {
        /// List the sessions of every working directory.
        #[arg(long)]
        all: bool,
    },
    /// Copy a session (or the path to one entry) into a new session; prints its id and path.
    #[command(
        after_help = "Without --entry the whole tree is copied. With --entry ID the path \
        from the root to the entry's parent is copied (the entry must be a user message); \
        --at includes the entry itself. --at without --entry copies the active path up to the \
        current leaf."
    )]
    Fork {
        /// Session file, id or unique id prefix.
        #[arg(value_name = "SESSION")]
        session: String,
        /// The entry to fork at.
        #[arg(long, value_name = "ID")]
        entry: Option<String>,
        /// Include the entry itself (fork "at" rather than "before" it).
        #[arg(long)]
        at: bool,
    },
    /// Summarize the older part of the active path into a compaction entry.
    #[command(
        after_help = "With --dry-run nothing is written and no model is called: it shows \
        what would be summarized (--json: {\"plan\": null | {firstKeptEntryId, isSplitTurn, \
        tokensBefore, previousSummary, messagesToSummarize, turnPrefixMessages, readFiles, \
        modifiedFiles, conversation, turnPrefixConversation}}). Otherwise the summary is written \
        by --model (default: the session's model; keys from the environment) and appended; \
        progress goes to stderr."
    )]
    Compact {
        /// Session file, id or unique id prefix.
        #[arg(value_name = "SESSION")]
        session: String,
        /// Tokens of recent conversation kept verbatim (default 20000).
        #[arg(long, value_name = "N")]
        keep_recent_tokens: Option<u64>,
        /// Extra focus for the summary.
        #[arg(long, value_name = "TEXT")]
        instructions: Option<String>,
        /// The model that writes the summary, as PROVIDER/ID.
        #[arg(long, value_name = "PROVIDER/ID")]
        model: Option<String>,
        /// Show the plan; write nothing, call no model.
        #[arg(long)]
        dry_run: bool,
        /// Print JSON (the plan with --dry-run, else the entry written).
        #[arg(long)]
        json: bool,
    },
    /// Move the leaf to another entry, optionally summarizing the branch left behind.
    #[command(
        after_help = "Navigating to a user message puts its text back for editing \
        (printed as editor text) and moves the leaf to its parent. --summarize writes a \
        branch_summary entry under the new leaf (model as for `compact`). With --dry-run \
        nothing is written; --summarize --dry-run --json prints {\"plan\": {commonAncestorId, \
        entryIds, messages, readFiles, modifiedFiles, totalTokens, conversation}} (budget: \
        --token-budget, default the model's context window minus 16384, 0 = no limit)."
    )]
    Navigate {
        /// Session file, id or unique id prefix.
        #[arg(value_name = "SESSION")]
        session: String,
        /// The entry to move to.
        #[arg(long, value_name = "ID")]
        to: String,
        /// Summarize the branch being left.
        #[arg(long)]
        summarize: bool,
        /// Extra focus for the branch summary.
        #[arg(long, value_name = "TEXT")]
        instructions: Option<String>,
        /// Use --instructions instead of the built-in summary prompt.
        #[arg(long, requires = "instructions")]
        replace_instructions: bool,
        /// The model that writes the summary, as PROVIDER/ID.
        #[arg(long, value_name = "PROVIDER/ID")]
        model: Option<String>,
        /// Token budget of the summarized transcript (dry run; 0 = no limit).
        #[arg(long, value_name = "N", requires = "dry_run")]
        token_budget: Option<u64>,
        /// Show what would happen; write nothing, call no model.
        #[arg(long)]
        dry_run: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Rewrite a v1/v2 session file as v3, keeping the original as <FILE>.v<N>.bak.
    Migrate {
        /// The session file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
