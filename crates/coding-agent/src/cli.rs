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
    args_conflicts_with_subcommands = true
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
    pub command: Option<Command>,

    #[command(flatten)]
    pub agent: AgentArgs,
}

/// The agent's flags (pi's names; DECISIONS §22.24).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AgentArgs {
    /// Messages to send, in order; `@file` attaches a file's contents to the first one.
    #[arg(value_name = "MESSAGE")]
    pub messages: Vec<String>,
    /// Print mode: send the messages, print the final answer, exit.
    #[arg(short = 'p', long = "print")]
    pub print: bool,
    /// Output mode: text (print mode without a terminal), json (JSONL events) or rpc.
    #[arg(long, value_name = "MODE", value_parser = ["text", "json", "rpc"])]
    pub mode: Option<String>,
    /// Continue the newest session of this directory (a new one if there is none).
    #[arg(short = 'c', long = "continue")]
    pub continue_: bool,
    /// Pick a session to resume (without a terminal: the newest one, else "No session selected").
    #[arg(short = 'r', long)]
    pub resume: bool,
    /// Open this session: a file path, a session id or a unique id prefix.
    #[arg(long, value_name = "PATH|ID")]
    pub session: Option<String>,
    /// Open the project session with this id, or create one with it.
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// Copy a session (all branches) into a new session of this directory and continue there.
    #[arg(long, value_name = "PATH|ID")]
    pub fork: Option<String>,
    /// With --fork, what comes from the fork point (the source's leaf): `conversation` (the
    /// default: the files stay), `both` (the files go back to the fork point's checkpoint too)
    /// or `code` (only the files; a new empty session starts).
    #[arg(long, value_name = "MODE", requires = "fork", value_parser = ["conversation", "code", "both"])]
    pub restore: Option<String>,
    /// Keep the session in memory only; nothing is written.
    #[arg(long)]
    pub no_session: bool,
    /// Keep the agent's session in a PostgreSQL store (postgres://user@host/db) instead of a
    /// JSONL file; overrides the sessionStore setting. --session, --fork and --session-id then
    /// name sessions of that store by id.
    #[arg(long, value_name = "URL", conflicts_with = "session_dir")]
    pub session_store: Option<String>,
    /// Name the session (a session_info entry).
    #[arg(short = 'n', long, value_name = "NAME")]
    pub name: Option<String>,
    /// Provider of the model (e.g. anthropic, openai, or one from models.json).
    #[arg(long, value_name = "ID")]
    pub provider: Option<String>,
    /// Model as provider/id or id, optionally with :thinking (e.g. openai/gpt-5:high).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Thinking level: off, minimal, low, medium, high, xhigh.
    #[arg(long, value_name = "LEVEL")]
    pub thinking: Option<String>,
    /// API key for this run (overrides auth.json and environment; never stored).
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// Models for cycle_model (RPC) / Ctrl+P: comma-separated patterns (provider/id, id,
    /// fuzzy text or globs, each with an optional :thinking), e.g. sonnet:high,haiku:low.
    #[arg(long, value_name = "PATTERNS")]
    pub models: Option<String>,
    /// List the models that have credentials (optionally filtered) and exit.
    #[arg(long, value_name = "SEARCH", num_args = 0..=1, default_missing_value = "")]
    pub list_models: Option<String>,
    /// Tools to enable: a,b (allowlist, * patterns) or +x,-y (change the default set).
    #[arg(short = 't', long, value_name = "LIST")]
    pub tools: Option<String>,
    /// Disable every tool.
    #[arg(long)]
    pub no_tools: bool,
    /// Tools to disable.
    #[arg(long, value_name = "LIST")]
    pub exclude_tools: Option<String>,
    /// Replace the system prompt (text, or a file to read).
    #[arg(long, value_name = "TEXT|FILE")]
    pub system_prompt: Option<String>,
    /// Add to the system prompt (text or file; repeatable).
    #[arg(long, value_name = "TEXT|FILE")]
    pub append_system_prompt: Vec<String>,
    /// Do not load AGENTS.md / CLAUDE.md files.
    #[arg(long)]
    pub no_context_files: bool,
    /// Trust this folder's project resources for this run (DECISIONS §32.10).
    #[arg(long, conflicts_with = "no_approve")]
    pub approve: bool,
    /// Do not load this folder's project resources for this run.
    #[arg(long)]
    pub no_approve: bool,
    /// Load a skill (a SKILL.md, a Markdown file or a folder of skills); repeatable.
    #[arg(long = "skill", value_name = "PATH")]
    pub skills: Vec<String>,
    /// Load a prompt template (a Markdown file or a folder of them); repeatable.
    #[arg(long = "prompt-template", value_name = "PATH")]
    pub prompt_templates: Vec<String>,
    /// Load an extension folder: its skills/ and prompts/ (as --skill and --prompt-template)
    /// and its SKILL.md; repeatable. pi's TypeScript extensions do not run in Arbor.
    #[arg(short = 'e', long = "extension", value_name = "PATH")]
    pub extensions: Vec<String>,
    /// The terminal UI's colours: `default`, `mono` (no colour), or a JSON theme file
    /// ({"colors": {"accent": "#5fd7ff", …}}).
    #[arg(long, value_name = "NAME|FILE")]
    pub theme: Option<String>,
    /// Show what the terminal UI loaded at start (model, session file, tools, trust, skills,
    /// templates, MCP servers).
    #[arg(long)]
    pub verbose: bool,
    /// Start no MCP server this run (mcp.json files are not read).
    #[arg(long)]
    pub no_mcp: bool,
    /// Run no hook command this run (the `hooks` settings are not read).
    #[arg(long)]
    pub no_hooks: bool,
    /// No network access except to the model (Arbor makes no other requests anyway).
    #[arg(long)]
    pub offline: bool,
    /// Write a self-contained HTML transcript of SESSION_FILE to OUT (default: next to it).
    #[arg(long, value_name = "FILE", num_args = 1..=2)]
    pub export: Option<Vec<String>>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inspect, fork and migrate sessions.
    #[command(subcommand, arg_required_else_help = true)]
    Session(SessionCommand),
    /// Add, list and remove MCP servers (mcp.json).
    #[command(subcommand, arg_required_else_help = true)]
    Mcp(McpCommand),
}

/// `arbor mcp …`: edits Arbor's own mcp.json (user level, or the project's with --local).
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Add a server: `arbor mcp add NAME -- COMMAND ARGS…` (stdio) or `arbor mcp add NAME
    /// --url URL` (streamable HTTP).
    Add {
        /// Server name: letters, digits, '_' and '-'.
        name: String,
        /// Streamable HTTP endpoint (instead of a command).
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// Environment for a stdio server, KEY=VALUE (repeatable; ${VAR} is expanded at start).
        #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// HTTP header, "Name: value" (repeatable).
        #[arg(long = "header", value_name = "NAME: VALUE")]
        headers: Vec<String>,
        /// Write the project's .arbor/mcp.json instead of the user file.
        #[arg(short = 'l', long)]
        local: bool,
        /// The command and its arguments (after `--`).
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Connect to every enabled server and print its state and tools; exit 1 when an entry is
    /// invalid or an enabled server does not connect.
    List,
    /// Remove a server from Arbor's user file (or the project's with --local).
    Remove {
        name: String,
        #[arg(short = 'l', long)]
        local: bool,
    },
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
    /// Search every session, on every branch: ranked hits with a snippet, session, entry id,
    /// date and branch state (active path or abandoned branch).
    #[command(
        after_help = "All words must occur in an entry; entries holding them as an exact \
        phrase rank first. Searched: messages, tool calls and their arguments (paths, commands), \
        tool results, ! commands, compaction and branch summaries, labels and session names. \
        The index (search-index.sqlite beside the sessions) is updated before each search."
    )]
    Search(SearchArgs),
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
        /// What comes from the fork point: `conversation` (default), `both` (the files of the
        /// session's directory too) or `code` (only the files; nothing is forked).
        #[arg(long, value_name = "MODE", value_parser = ["conversation", "code", "both"])]
        restore: Option<String>,
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
    /// List the workspace checkpoints (and restores) along the active path, with changed files.
    Checkpoints {
        /// Session file, id or unique id prefix.
        #[arg(value_name = "SESSION")]
        session: String,
    },
    /// Show the code difference between two entries of the tree as a unified diff.
    #[command(
        after_help = "Each entry's code is the nearest checkpoint at or above it (e.g. the \
        tips of two branches). The checkpoints are read from the session's working directory: \
        its git repository, or the snapshot store under ~/.arbor/checkpoints."
    )]
    Diff {
        /// Session file, id or unique id prefix.
        #[arg(value_name = "SESSION")]
        session: String,
        /// The entry whose code is the old side.
        #[arg(long, value_name = "ID")]
        from: String,
        /// The entry whose code is the new side.
        #[arg(long, value_name = "ID")]
        to: String,
    },
    /// Delete the workspace checkpoints of deleted sessions and those beyond the limits.
    #[command(
        after_help = "Prunes the checkpoints of the git repository around DIR (default: \
        the current directory), or the snapshot store under ~/.arbor/checkpoints outside git. \
        Limits come from settings.json `checkpoints` (maxPerSession, maxAgeDays) in ARBOR_HOME. \
        Git objects are freed by git's own garbage collection later."
    )]
    PruneCheckpoints {
        /// The directory whose checkpoint store is pruned.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
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

/// `arbor session search`'s arguments (also with `--store`).
#[derive(Debug, Clone, clap::Args)]
pub struct SearchArgs {
    /// The words to find.
    #[arg(value_name = "QUERY")]
    pub query: String,
    /// Print every hit (default: the best 20).
    #[arg(long)]
    pub all: bool,
    /// Print the hits as one JSON array.
    #[arg(long)]
    pub json: bool,
    /// Only hits on the active path, only on abandoned branches, or any.
    #[arg(long, value_name = "STATE", default_value = "any")]
    pub branch: String,
    /// Only entries from this date on (YYYY-MM-DD or an ISO date-time, UTC).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Only the sessions of the current directory.
    #[arg(long)]
    pub cwd: bool,
}
