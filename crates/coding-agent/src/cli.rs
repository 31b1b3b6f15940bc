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

    /// Use the sessions of a PostgreSQL store (postgres://user@host/db) instead of JSONL files
    /// (context, tree, list, fork). Sessions there are named by full id.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        conflicts_with = "session_dir"
    )]
    pub store: Option<String>,

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
    /// Copy v3 session files into a PostgreSQL store, each line kept verbatim (same ids).
    #[command(
        after_help = "Prints `<id>\t<entries>\t<file>` per file. Each file is one \
        transaction: a bad line (named by file:line) or an id already in the store imports \
        nothing of that file. v1/v2 files need `arbor session migrate` first."
    )]
    Import {
        /// The store: postgres://user@host/db.
        #[arg(long, value_name = "URL")]
        to: String,
        /// Session files.
        #[arg(value_name = "FILE", required = true)]
        files: Vec<PathBuf>,
    },
    /// Write a session of a PostgreSQL store to a JSONL file (pi's format, lines as stored).
    Export {
        /// The store: postgres://user@host/db.
        #[arg(long, value_name = "URL")]
        from: String,
        /// Session id (or location) in the store.
        #[arg(value_name = "ID")]
        session: String,
        /// The file to write (must not exist).
        #[arg(value_name = "OUT")]
        out: PathBuf,
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
