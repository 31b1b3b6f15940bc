//! `arbor session compact` and `arbor session navigate`: compaction and branch summaries on a
//! session file, with a real model or as a dry run that prints the plan (the JSON pi's
//! `ref-plan.mjs` prints, so the two can be compared).

use std::io::{IsTerminal as _, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arbor_agent::branch_summary::branch_plan_json;
use arbor_agent::branch_summary::{
    branch_token_budget, collect_branch_entries, generate_branch_summary, prepare_branch_entries,
    BranchSummaryOptions, BranchSummaryResult,
};
use arbor_agent::compaction::compaction_plan_json;
use arbor_agent::compaction::{
    compact, prepare_compaction, CompactionSettings, SummaryEvent, SummaryOptions,
    DEFAULT_RESERVE_TOKENS,
};
use arbor_agent::context::projection::derive_state;
use arbor_agent::session::{
    EntryKind, JsonlRepository, JsonlStorage, Session, SessionEntry, SessionRepository,
    SessionStorage,
};
use arbor_agent::AgentMessage;
use arbor_ai::models::ModelRegistry;
use arbor_ai::{Content, Message, Model, ThinkingLevel};
use serde_json::json;

use crate::error::{CliError, Result};

/// What `compact` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct CompactArgs {
    pub keep_recent_tokens: Option<u64>,
    pub instructions: Option<String>,
    pub model: Option<String>,
    pub dry_run: bool,
    pub json: bool,
}

/// What `navigate` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct NavigateArgs {
    pub to: String,
    pub summarize: bool,
    pub instructions: Option<String>,
    pub replace_instructions: bool,
    pub model: Option<String>,
    pub token_budget: Option<u64>,
    pub dry_run: bool,
    pub json: bool,
}

fn repo_for(path: &Path) -> JsonlRepository {
    JsonlRepository::flat(path.parent().unwrap_or(Path::new(".")).to_path_buf())
}

fn path_arg(path: &Path) -> String {
    let text = path.display().to_string();
    if crate::lookup::looks_like_path(&text) {
        text
    } else {
        format!("./{text}")
    }
}

async fn open_read_only(path: &Path) -> Result<Session> {
    let storage = repo_for(path).open_read_only(&path_arg(path)).await?;
    Ok(Session::new(Arc::new(storage)))
}

/// Opens for writing: takes the session's lock, so a session another process is writing is
/// refused ("session is open for writing by another process").
async fn open_writable(path: &Path) -> Result<(Session, Arc<JsonlStorage>)> {
    let storage = Arc::new(repo_for(path).open(&path_arg(path)).await?);
    Ok((Session::new(storage.clone()), storage))
}

fn write_json(value: &serde_json::Value) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{value}")
        .and_then(|()| out.flush())
        .map_err(|e| CliError::io("stdout", e))
}

fn write_line(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| CliError::io("stdout", e))
}

/// The model catalogue: built in, plus `<arbor home>/models.json` when present.
fn registry() -> Result<ModelRegistry> {
    let mut registry = ModelRegistry::builtin().map_err(|e| CliError::Usage(e.to_string()))?;
    let user = arbor_agent::session::jsonl::layout::arbor_home().join("models.json");
    crate::models_json::load_models_json(&mut registry, &user)?;
    Ok(registry)
}

/// The app's provider, so keys come from the same places as in a run (auth.json,
/// models.json, the environment) and `!command` keys and headers run bounded (DECISIONS §28.6).
fn provider(registry: &ModelRegistry) -> Result<crate::provider::AppProvider> {
    let home = arbor_agent::session::jsonl::layout::arbor_home();
    Ok(crate::provider::AppProvider::new(
        Arc::new(registry.clone()),
        Arc::new(crate::auth::AuthStore::load(&home)?),
        None,
    ))
}

/// `--model`, else the session's current model (latest model_change or assistant).
fn resolve_model(
    registry: &ModelRegistry,
    flag: Option<&str>,
    path: &[SessionEntry],
) -> Result<Model> {
    if let Some(spec) = flag {
        return registry
            .find(spec)
            .cloned()
            .map_err(|e| CliError::Usage(format!("--model {spec}: {e}")));
    }
    let state = derive_state(path);
    let Some(m) = state.model else {
        return Err(CliError::Usage(
            "the session names no model yet; pass --model PROVIDER/ID".into(),
        ));
    };
    registry
        .get(&m.provider, &m.model_id)
        .cloned()
        .ok_or_else(|| {
            CliError::Usage(format!(
                "the session's model {}/{} is not in the model catalogue; pass --model PROVIDER/ID",
                m.provider, m.model_id
            ))
        })
}

/// Summary options for a real request (the key and headers come from [`provider`]): the
/// session's thinking level, progress on stderr.
fn summary_options(
    model: &Model,
    path: &[SessionEntry],
    instructions: Option<String>,
) -> Result<SummaryOptions> {
    // The idle timeout and response limits of settings.json apply here as in a run
    // (DECISIONS §30.1): a summary request must not hang or flood either.
    let cwd = std::env::current_dir().map_err(|e| CliError::io("current directory", e))?;
    let settings =
        crate::config::Settings::load(&arbor_agent::session::jsonl::layout::arbor_home(), &cwd)?;
    let stream = settings.base_stream_options();
    let state = derive_state(path);
    Ok(SummaryOptions {
        custom_instructions: instructions,
        thinking_level: ThinkingLevel::parse(&state.thinking_level),
        retry: Some(arbor_ai::retry::RetryPolicy::default()),
        on_event: Some(progress_sink(format!("{}/{}", model.provider, model.id))),
        stream,
        ..Default::default()
    })
}

/// Shows the summary streaming in on stderr (a live character count on a terminal, one line
/// per request otherwise) and every retry.
fn progress_sink(model: String) -> arbor_agent::compaction::SummaryEventSink {
    let received = Arc::new(AtomicUsize::new(0));
    let tty = std::io::stderr().is_terminal();
    Arc::new(move |event: &SummaryEvent| {
        let mut err = std::io::stderr().lock();
        match event {
            SummaryEvent::RequestStart { kind, attempt } => {
                received.store(0, Ordering::Relaxed);
                let again = if *attempt > 0 { " (retry)" } else { "" };
                let _ = writeln!(
                    err,
                    "arbor: summarizing ({}) with {model}{again}...",
                    kind.label().to_lowercase()
                );
            }
            SummaryEvent::TextDelta { delta, .. } => {
                let n = received.fetch_add(delta.chars().count(), Ordering::Relaxed)
                    + delta.chars().count();
                if tty {
                    let _ = write!(err, "\rarbor: {n} characters received");
                    let _ = err.flush();
                }
            }
            SummaryEvent::RetryScheduled {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
                ..
            } => {
                let _ = writeln!(
                    err,
                    "\narbor: {error_message}; retry {attempt}/{max_attempts} in {} s",
                    delay_ms.div_ceil(1000)
                );
            }
            SummaryEvent::RetryFinished { .. } => {}
        }
        if tty && matches!(event, SummaryEvent::RequestStart { .. }) {
            let _ = err.flush();
        }
    })
}

fn end_progress_line() {
    if std::io::stderr().is_terminal() {
        eprintln!();
    }
}

/// `arbor session compact`.
pub async fn compact_command(path: &Path, args: CompactArgs) -> Result<()> {
    let settings = CompactionSettings {
        keep_recent_tokens: args
            .keep_recent_tokens
            .unwrap_or(CompactionSettings::default().keep_recent_tokens),
        ..Default::default()
    };
    if args.dry_run {
        let session = open_read_only(path).await?;
        let ancestry = session.ancestry(None).await?;
        let prep = prepare_compaction(&ancestry, &settings)?;
        if args.json {
            return write_json(&json!({ "plan": compaction_plan_json(prep.as_ref()) }));
        }
        return write_line(&match &prep {
            None => "nothing to compact (the session is too small or already compacted)".into(),
            Some(p) => {
                let lists = p.file_ops.file_lists();
                format!(
                    "would summarize {} messages{} and keep the path from entry {}\n\
                     tokens before: {}\nprevious summary: {}\nread files: {}\nmodified files: {}",
                    p.messages_to_summarize.len(),
                    if p.is_split_turn {
                        format!(
                            " plus a {}-message turn prefix (split turn)",
                            p.turn_prefix_messages.len()
                        )
                    } else {
                        String::new()
                    },
                    p.first_kept_entry_id,
                    p.tokens_before,
                    if p.previous_summary.is_some() {
                        "updated"
                    } else {
                        "none"
                    },
                    join_or_none(&lists.read_files),
                    join_or_none(&lists.modified_files),
                )
            }
        });
    }

    let (session, storage) = open_writable(path).await?;
    let ancestry = session.ancestry(None).await?;
    let Some(prep) = prepare_compaction(&ancestry, &settings)? else {
        eprintln!("arbor: nothing to compact (the session is too small or already compacted)");
        return if args.json {
            write_json(&json!({ "entry": null }))
        } else {
            Ok(())
        };
    };
    let registry = registry()?;
    let model = resolve_model(&registry, args.model.as_deref(), &ancestry)?;
    let options = summary_options(&model, &ancestry, args.instructions)?;
    let result = compact(&prep, &provider(&registry)?, &model, &options).await;
    end_progress_line();
    let result = result?;
    let id = session.append_compaction(result.to_draft()).await?;
    storage.save_point().await?;
    let entry = session.get_entry(&id).await?;
    if args.json {
        return write_json(&json!({ "entry": entry }));
    }
    write_line(&format!(
        "compacted: entry {id} summarizes everything before {} ({} tokens before)",
        result.first_kept_entry_id, result.tokens_before
    ))
}

fn join_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// Where the leaf goes when navigating to `target` (the harness's rule): a user message or a
/// custom message is put back in the editor and the leaf goes to its parent; anything else
/// becomes the leaf.
fn landing(target: &SessionEntry) -> (Option<String>, Option<String>) {
    let text = |c: &Content| c.joined_text("");
    match &target.kind {
        EntryKind::Message(m) => match &m.message {
            AgentMessage::Llm(Message::User(u)) => {
                (target.parent_id.clone(), Some(text(&u.content)))
            }
            _ => (Some(target.id.clone()), None),
        },
        EntryKind::CustomMessage(c) => (target.parent_id.clone(), Some(text(&c.content))),
        _ => (Some(target.id.clone()), None),
    }
}

/// `arbor session navigate`.
pub async fn navigate_command(path: &Path, args: NavigateArgs) -> Result<()> {
    if !args.summarize && (args.instructions.is_some() || args.replace_instructions) {
        return Err(CliError::Usage("--instructions needs --summarize".into()));
    }
    let session = if args.dry_run {
        open_read_only(path).await?
    } else {
        open_writable(path).await?.0
    };
    let Some(target) = session.get_entry(&args.to).await? else {
        return Err(CliError::NotFound(format!(
            "no entry '{}' in {}",
            args.to,
            path.display()
        )));
    };
    let old_leaf = session.leaf_id().await?;
    let old_path = session.ancestry(None).await?;
    let target_path = session.ancestry(Some(&args.to)).await?;
    let collection = match &old_leaf {
        Some(_) => collect_branch_entries(&old_path, &target_path),
        None => arbor_agent::branch_summary::BranchSummaryCollection {
            common_ancestor_id: None,
            entries: Vec::new(),
        },
    };
    let (new_leaf, editor_text) = landing(&target);

    if args.dry_run {
        if args.summarize {
            let budget = match args.token_budget {
                Some(b) => b,
                None => {
                    let model = registry()
                        .ok()
                        .and_then(|r| resolve_model(&r, args.model.as_deref(), &old_path).ok());
                    let window_model = model.unwrap_or_default();
                    branch_token_budget(&window_model, DEFAULT_RESERVE_TOKENS)
                }
            };
            let prep = prepare_branch_entries(&collection.entries, budget);
            if args.json {
                return write_json(&json!({ "plan": branch_plan_json(&collection, &prep) }));
            }
            return write_line(&format!(
                "would summarize {} messages ({} tokens) from {} abandoned entries; common ancestor {}\nnew leaf: {}",
                prep.messages.len(),
                prep.total_tokens,
                collection.entries.len(),
                collection.common_ancestor_id.as_deref().unwrap_or("none"),
                new_leaf.as_deref().unwrap_or("(root)")
            ));
        }
        return print_navigation(args.json, new_leaf.as_deref(), editor_text.as_deref(), None);
    }

    if old_leaf.as_deref() == Some(args.to.as_str()) {
        return print_navigation(args.json, old_leaf.as_deref(), None, None);
    }
    let summary: Option<BranchSummaryResult> = if args.summarize && !collection.entries.is_empty() {
        let registry = registry()?;
        let model = resolve_model(&registry, args.model.as_deref(), &old_path)?;
        let options = BranchSummaryOptions {
            summary: summary_options(&model, &old_path, args.instructions)?,
            replace_instructions: args.replace_instructions,
            reserve_tokens: DEFAULT_RESERVE_TOKENS,
        };
        let r =
            generate_branch_summary(&collection.entries, &provider(&registry)?, &model, &options)
                .await;
        end_progress_line();
        Some(r?)
    } else {
        None
    };
    let summary_id = session
        .move_to(
            new_leaf.as_deref(),
            summary.as_ref().map(BranchSummaryResult::to_draft),
        )
        .await?;
    session.storage().save_point().await?;
    let leaf = session.leaf_id().await?;
    print_navigation(
        args.json,
        leaf.as_deref(),
        editor_text.as_deref(),
        summary_id.as_deref(),
    )
}

fn print_navigation(
    json_out: bool,
    leaf: Option<&str>,
    editor_text: Option<&str>,
    summary_id: Option<&str>,
) -> Result<()> {
    if json_out {
        return write_json(&json!({
            "leafId": leaf,
            "editorText": editor_text,
            "summaryEntryId": summary_id,
        }));
    }
    let mut text = format!("leaf: {}", leaf.unwrap_or("(root)"));
    if let Some(id) = summary_id {
        text.push_str(&format!("\nbranch summary: entry {id}"));
    }
    if let Some(t) = editor_text {
        text.push_str(&format!("\neditor text:\n{t}"));
    }
    write_line(&text)
}
