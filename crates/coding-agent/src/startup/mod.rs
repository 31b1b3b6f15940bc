//! Starting the agent (`startup`): settings, credentials and models, the session the flags ask for (DECISIONS §22.24),
//! the tools, the system prompt and the harness. The modes in
//! [`crate::modes`] only drive what this builds.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_agent::harness::{AgentHarness, HarnessOptions, QueueMode, SystemPrompt};
use arbor_agent::session::{
    CreateOptions, ForkOptions, ForkPosition, JsonlRepository, MemoryStorage, Session,
    SessionHeader, SessionRepository, SessionStorage,
};
use arbor_ai::models::{ApiKey, ModelRegistry};
use arbor_ai::{Model, ThinkingLevel};

use crate::auth::AuthStore;
use crate::checkpoints::{housekeeping, CheckpointHook, Recorder, RestoreMode};
use crate::cli::AgentArgs;
use crate::config::{arbor_home, Settings};
use crate::error::CliError;
use crate::provider::AppProvider;
use crate::resources::live::PromptInputs;
use crate::resources::{LiveResources, LoadOptions};
use crate::trust::{self, ProjectTrust, TrustStore};
use arbor_tools::{self as tools, ToolEnv, ToolSettings};

mod extensions;
mod flags;
mod model_choice;
mod session_lookup;

pub use flags::{active_tools, check_conflicts};
use model_choice::choose_model;
use session_lookup::{
    find_in_project, find_session, fork_point_state, missing_cwd, newest_in, session_location,
    session_store_url,
};

/// Everything a mode needs.
pub struct App {
    pub harness: AgentHarness,
    pub session: Arc<Session>,
    pub header: SessionHeader,
    /// `None` with `--no-session`.
    pub session_file: Option<PathBuf>,
    pub registry: Arc<ModelRegistry>,
    pub provider: Arc<AppProvider>,
    pub settings: Settings,
    pub cwd: PathBuf,
    /// The `--models` / `enabledModels` scope (empty: cycle through every usable model).
    pub scope: Vec<crate::scope::ScopedModel>,
    /// The repository the session came from (the TUI's `/resume` lists it).
    pub repo: JsonlRepository,
    /// The PostgreSQL store the run writes its sessions to (`--session-store` /
    /// `sessionStore`; `None` without one or with `--no-session`): `/search` and RPC `search`
    /// search it besides the files (DECISIONS §34.9), RPC `switch_session` opens its sessions.
    pub session_store: Option<String>,
    /// The workspace checkpoint hook added to the harness (`None`: checkpoints off, or
    /// `--no-session`). Pass it to [`crate::checkpoints::navigate`] for `/tree` and `/fork`.
    pub checkpoints: Option<Arc<CheckpointHook>>,
    /// The run's redactor and tool environment policy (DECISIONS §30.7–§30.9).
    pub secrets: crate::secrets::Secrets,
    /// The project trust decision for `cwd`: every loader of project resources (settings,
    /// skills, templates, MCP servers, hooks) asks it (DECISIONS §32.10).
    pub trust: ProjectTrust,
    /// Skills, prompt templates and the system prompt's files, shared with `/reload`.
    pub resources: LiveResources,
    /// The run's MCP servers (`None` with `--no-mcp`); `/mcp` drives it.
    pub mcp: Option<crate::mcp::McpManager>,
}

fn queue_mode(v: Option<String>) -> QueueMode {
    match v.as_deref() {
        Some("all") => QueueMode::All,
        _ => QueueMode::OneAtATime,
    }
}

/// The session an RPC session command (`new_session`, `switch_session`, `fork`, `clone`) asks
/// for in place of the one the flags chose.
#[derive(Debug, Clone)]
pub enum SessionChoice {
    /// A fresh session; `parent` goes to the header's `parentSession`.
    New { parent: Option<String> },
    /// An existing session file.
    Open(PathBuf),
    /// A session of the run's PostgreSQL store, by id or location (DECISIONS §34.22).
    OpenStored(String),
    /// A new session copied from `source` up to `entry_id` (before or at it).
    Fork {
        source: PathBuf,
        entry_id: String,
        position: ForkPosition,
    },
}

/// What carries over when RPC replaces the session: the choice, and the model and thinking
/// level in use (a reopened or forked session restores its own, as `-c` does).
#[derive(Debug, Clone)]
pub struct Restart {
    pub choice: SessionChoice,
    pub model: Model,
    pub thinking: ThinkingLevel,
}

/// Builds the app for a run. `global_dir` is `--session-dir`.
pub async fn start(a: &AgentArgs, global_dir: Option<&Path>) -> Result<App, CliError> {
    start_with(a, global_dir, None).await
}

/// Builds the app again over the session `restart` names (RPC session commands). The flags
/// still decide everything else (tools, prompt, settings).
pub async fn restart(
    a: &AgentArgs,
    global_dir: Option<&Path>,
    restart: Restart,
) -> Result<App, CliError> {
    start_with(a, global_dir, Some(restart)).await
}

async fn start_with(
    a: &AgentArgs,
    global_dir: Option<&Path>,
    restart: Option<Restart>,
) -> Result<App, CliError> {
    check_conflicts(a)?;
    let cwd = std::env::current_dir().map_err(|e| CliError::io("current directory", e))?;
    let cwd_text = cwd.display().to_string();
    let home = arbor_home();
    // Trust first: project settings are among what it guards (DECISIONS §32.11).
    let trust = project_trust(a, &home, &cwd)?;
    let settings = Settings::load_with_trust(&home, &cwd, trust.is_trusted())?;
    let mut registry = ModelRegistry::builtin().map_err(|e| CliError::Config(e.to_string()))?;
    crate::models_json::load_models_json(&mut registry, &home.join("models.json"))?;
    let registry = Arc::new(registry);
    let auth = Arc::new(AuthStore::load(&home)?);
    let secrets = crate::secrets::Secrets::gather(&crate::secrets::SecretSources {
        registry: &registry,
        auth: Some(&auth),
        explicit_key: a.api_key.as_deref(),
        settings: &settings,
    })?;
    let provider = Arc::new(
        AppProvider::new(registry.clone(), auth, a.api_key.clone().map(ApiKey::new))
            .with_redactor(secrets.redactor.clone()),
    );

    // ---- the session ----
    let (dir, layout) = session_location(a, global_dir, &settings, &cwd, &home);
    // New session files appear with their first message (DECISIONS §29.5).
    let repo = if layout {
        JsonlRepository::new(dir.clone())
    } else {
        JsonlRepository::flat(dir.clone())
    }
    .with_file_on_first_message(true);
    let project_dir = if layout {
        repo.dir_for_cwd(&cwd_text)
    } else {
        dir.clone()
    };
    let mut opened_existing = false;
    let store_url = session_store_url(a, global_dir, &settings);
    let checkpoint_settings = housekeeping::load_settings(&home)?;
    let restore_mode = match a.restore.as_deref() {
        None => RestoreMode::ConversationOnly,
        Some(m) => RestoreMode::parse(m).ok_or_else(|| {
            CliError::Usage(format!(
                "--restore {m}: expected conversation, code or both"
            ))
        })?,
    };
    let mut fork_state = None;
    let mut forked_session = false;
    // Whether the session is one of the store's (it then has a location, not a file).
    let mut in_store = false;
    // A `--session` naming a session file opens that file even when a store is configured: a
    // store's sessions are named by id or location, never by a path (DECISIONS §34.22).
    let session_names_file = a.session.as_deref().is_some_and(|s| Path::new(s).is_file());
    let storage: Arc<dyn SessionStorage> = if let Some(r) = &restart {
        match &r.choice {
            SessionChoice::New { parent } if a.no_session => {
                let _ = parent;
                Arc::new(MemoryStorage::new(cwd_text.clone()))
            }
            SessionChoice::New { parent } => Arc::new(
                repo.create({
                    let mut o = CreateOptions::new(cwd_text.clone());
                    o.parent_session = parent.clone();
                    o
                })
                .await?,
            ),
            SessionChoice::Open(path) => {
                let header = crate::lookup::read_header(path)?;
                missing_cwd(&header, path, &cwd)?;
                opened_existing = true;
                Arc::new(repo.open(&path.display().to_string()).await?)
            }
            SessionChoice::OpenStored(session) => {
                let url = store_url.as_deref().ok_or_else(|| {
                    CliError::Usage(format!(
                        "{session}: no session store is configured to open it from"
                    ))
                })?;
                opened_existing = true;
                in_store = true;
                Arc::new(crate::pgstore::open_for_writing(url, session).await?)
            }
            SessionChoice::Fork {
                source,
                entry_id,
                position,
            } => {
                opened_existing = true;
                forked_session = true;
                Arc::new(
                    repo.fork(&source.display().to_string(), {
                        let mut o = ForkOptions::default().with_cwd(cwd_text.clone());
                        o.entry_id = Some(entry_id.clone());
                        o.position = *position;
                        o
                    })
                    .await?,
                )
            }
        }
    } else if a.no_session {
        Arc::new(MemoryStorage::new(cwd_text.clone()))
    } else if let Some(url) = store_url.as_ref().filter(|_| !session_names_file) {
        let (storage, existed) = crate::pgstore::agent_session(a, url, &cwd_text).await?;
        opened_existing = existed;
        in_store = true;
        Arc::new(storage)
    } else if let Some(src) = &a.fork {
        let path = find_session(src, &dir, layout, &cwd)?;
        if restore_mode.restores_code() {
            // Refused here, before a session file is written (DECISIONS §27.13).
            fork_state =
                Some(fork_point_state(&repo, &path, &cwd, &checkpoint_settings, &home).await?);
        }
        if restore_mode == RestoreMode::CodeOnly {
            Arc::new(
                repo.create({
                    let mut o = CreateOptions::new(cwd_text.clone());
                    o.id = a.session_id.clone();
                    o
                })
                .await?,
            )
        } else {
            let forked = repo
                .fork(&path.display().to_string(), {
                    let mut o = ForkOptions::default().with_cwd(cwd_text.clone());
                    o.id = a.session_id.clone();
                    o
                })
                .await?;
            opened_existing = true;
            forked_session = true;
            Arc::new(forked)
        }
    } else if let Some(s) = &a.session {
        let path = find_session(s, &dir, layout, &cwd)?;
        let header = crate::lookup::read_header(&path)?;
        missing_cwd(&header, &path, &cwd)?;
        opened_existing = true;
        Arc::new(repo.open(&path.display().to_string()).await?)
    } else if let Some(id) = &a.session_id {
        match find_in_project(&project_dir, id) {
            Some(path) => {
                opened_existing = true;
                Arc::new(repo.open(&path.display().to_string()).await?)
            }
            None => {
                crate::notices::info(format!(
                    "No project session found with id '{id}'; creating a new session with that id."
                ));
                Arc::new(
                    repo.create(CreateOptions::new(cwd_text.clone()).with_id(id.clone()))
                        .await?,
                )
            }
        }
    } else if a.continue_ || a.resume {
        match newest_in(&project_dir, &cwd_text, !layout) {
            Some(path) => {
                let header = crate::lookup::read_header(&path)?;
                missing_cwd(&header, &path, &cwd)?;
                opened_existing = true;
                Arc::new(repo.open(&path.display().to_string()).await?)
            }
            None if a.resume => return Err(CliError::NoSessionSelected),
            None => Arc::new(repo.create(CreateOptions::new(cwd_text.clone())).await?),
        }
    } else {
        Arc::new(repo.create(CreateOptions::new(cwd_text.clone())).await?)
    };
    let header = storage.header().await?;
    let stored = !a.no_session
        || restart
            .as_ref()
            .is_some_and(|r| !matches!(r.choice, SessionChoice::New { .. }));
    // A store session has a location (`postgres://user@host/db#id`), not a file.
    let session_file = (stored && !in_store).then(|| PathBuf::from(storage.location()));
    // Every entry passes the redactor before it is stored (DECISIONS §30.9).
    let storage: Arc<dyn SessionStorage> = Arc::new(crate::secrets::RedactingStorage::new(
        storage,
        secrets.redactor.clone(),
    ));
    let session = Arc::new(Session::new(storage));
    if opened_existing {
        // A session that fails validation is never written to (DECISIONS §29.7): the projection
        // the read-only commands run, before anything is appended (it also warms the context
        // the first turn uses).
        session
            .build_context(&arbor_agent::context::ContextOptions::default())
            .await?;
    }

    // ---- workspace checkpoints (DECISIONS §27) ----
    // Start-up notes go through the notice sink: stderr before a mode owns the terminal, the
    // transcript when the TUI starts another session (DECISIONS §23.172).
    let checkpoints = if a.no_session || !checkpoint_settings.enabled {
        None
    } else {
        match Recorder::open(&cwd, &header.id, &checkpoint_settings, &home) {
            Ok(Some(recorder)) => Some(Arc::new(CheckpointHook::new(
                Arc::new(recorder),
                session.clone(),
            ))),
            Ok(None) => None,
            Err(e) if fork_state.is_none() => {
                crate::notices::warn(format!("workspace checkpoints are off for this run: {e}"));
                None
            }
            Err(e) => return Err(e),
        }
    };
    if let Some(hook) = &checkpoints {
        if forked_session {
            if let Err(e) = hook.recorder().adopt_path(&session).await {
                crate::notices::warn(format!("the fork could not adopt its checkpoints: {e}"));
            }
        }
        if let Some((entry, state)) = fork_state.take() {
            let report = hook
                .recorder()
                .restore_to(&session, entry.clone(), state, restore_mode)
                .await?;
            crate::notices::info(format!(
                "Restored the workspace to the checkpoint of the fork point{} ({}; the files before it are checkpointed in this session)",
                entry.map(|e| format!(" (entry {e})")).unwrap_or_default(),
                crate::checkpoints::report::restore_summary(&report)
            ));
        }
        // At most once per `autoPruneHours`; a few git calls when due (DECISIONS §27.14).
        let now = std::time::SystemTime::now();
        if let Err(e) =
            housekeeping::auto_prune(&cwd, &repo, &checkpoint_settings, &home, now).await
        {
            crate::notices::warn(format!("automatic checkpoint pruning failed: {e}"));
        }
    }

    // ---- model, tools, prompt ----
    let patterns = a
        .models
        .as_deref()
        .map(crate::scope::split_patterns)
        .or_else(|| settings.enabled_models())
        .unwrap_or_default();
    let scope = if patterns.is_empty() {
        crate::scope::Scope::default()
    } else {
        let usable: Vec<Model> = registry
            .models()
            .filter(|m| crate::command::models::usable(&provider, m))
            .cloned()
            .collect();
        crate::scope::resolve(&patterns, &usable)
    };
    if restart.is_none() {
        for w in &scope.warnings {
            crate::notices::warn(w.to_string());
        }
    }
    let (model, flag_level) = match &restart {
        Some(r) => (r.model.clone(), Some(r.thinking)),
        // pi: without --model, a new session starts on the saved default when it is in the
        // scope, else on the scope's first model.
        None if a.model.is_none() && !opened_existing && !scope.models.is_empty() => {
            let saved = settings.default_model();
            let first = scope
                .models
                .iter()
                .find(|s| saved.as_deref() == Some(s.model.id.as_str()))
                .unwrap_or(&scope.models[0]);
            (first.model.clone(), first.thinking)
        }
        None => choose_model(a, &settings, &registry, &provider)?,
    };
    let level = flag_level
        .or_else(|| a.thinking.as_deref().and_then(ThinkingLevel::parse))
        .or_else(|| {
            settings
                .default_thinking_level()
                .as_deref()
                .and_then(ThinkingLevel::parse)
        });
    if let Some(t) = &a.thinking {
        if ThinkingLevel::parse(t).is_none() {
            return Err(CliError::Startup(format!(
                "Error: Invalid thinking level \"{t}\""
            )));
        }
    }
    let active = active_tools(a, &settings)?;
    let mut env_vars = vec![
        ("ARBOR_SESSION_ID".to_owned(), header.id.clone()),
        ("ARBOR_PROVIDER".to_owned(), model.provider.clone()),
        ("ARBOR_MODEL".to_owned(), model.id.clone()),
    ];
    if let Some(f) = &session_file {
        env_vars.push(("ARBOR_SESSION_FILE".to_owned(), f.display().to_string()));
    }
    let tool_env = ToolEnv::new(
        cwd.clone(),
        ToolSettings {
            shell_path: settings.shell_path(),
            shell_command_prefix: settings.shell_command_prefix(),
            no_image_resize: !settings.image_auto_resize(),
            bash_timeout_seconds: settings.bash_timeout_seconds(),
            env: env_vars,
            env_policy: secrets.env_policy.clone(),
        },
    );
    let mut load_options = LoadOptions::new(&home, &cwd, &trust);
    let added = extensions::resolve(&a.extensions, &cwd)?;
    load_options.skill_paths = a.skills.iter().cloned().chain(added.skills).collect();
    load_options.template_paths = (a.prompt_templates.iter().cloned())
        .chain(added.templates)
        .collect();
    // Bounded reads (DECISIONS §30.4): a device, FIFO or project file leading outside the
    // project is an error naming it, not a hang or a leak.
    let (resources, warnings) = LiveResources::load(
        load_options,
        PromptInputs {
            system_prompt: a.system_prompt.clone(),
            append_system_prompt: a.append_system_prompt.clone(),
            no_context_files: a.no_context_files,
        },
    )?;
    for warning in warnings {
        crate::notices::warn(warning.to_string());
    }
    let live = resources.clone();
    let system_prompt = SystemPrompt::callback(move |input| {
        live.system_prompt(
            input
                .active_tools
                .iter()
                .map(|t| t.name().to_owned())
                .collect(),
        )
    });
    let options = {
        let mut o = HarnessOptions::new(model.clone())
            .with_tools(tools::builtin_tools(&tool_env))
            .with_active_tool_names(Some(active))
            .with_system_prompt(system_prompt)
            .with_stream_options(settings.base_stream_options())
            .with_compaction({
                let c = settings.compaction();
                arbor_agent::compaction::CompactionSettings {
                    enabled: c.enabled,
                    reserve_tokens: c.reserve_tokens,
                    keep_recent_tokens: c.keep_recent_tokens,
                }
            })
            .with_steering_mode(queue_mode(settings.steering_mode()))
            .with_follow_up_mode(queue_mode(settings.follow_up_mode()))
            .with_models({
                let registry = registry.clone();
                Arc::new(move |r: &arbor_agent::context::projection::ModelRef| {
                    registry.get(&r.provider, &r.model_id).cloned()
                })
            });
        o.thinking_level = level;
        o.summary_retry = {
            let r = settings.retry();
            Some(
                arbor_ai::retry::RetryPolicy::default()
                    .with_enabled(r.enabled)
                    .with_max_retries(r.max_retries)
                    .with_base_delay_ms(r.base_delay_ms)
                    .with_max_agent_delay_ms(r.max_agent_delay_ms),
            )
        };
        o
    };
    let harness = if opened_existing && (a.model.is_none() || restart.is_some()) {
        let (h, report) = AgentHarness::resume(session.clone(), provider.clone(), options).await?;
        if let Some(m) = report.unknown_model {
            crate::notices::warn(format!(
                "Could not restore model {}/{}. Using {}/{}",
                m.provider, m.model_id, model.provider, model.id
            ));
        }
        h
    } else {
        AgentHarness::new(session.clone(), provider.clone(), options)?
    };
    if let Some(hook) = &checkpoints {
        harness.add_hook(hook.clone());
    }
    let mcp = integrations(
        a,
        &harness,
        // A project's own mcp.json and hooks run only in a trusted folder (DECISIONS §32.10).
        (&home, &cwd, trust.is_trusted()),
        &settings,
        &header.id,
        &session_file,
    );
    if let Some(name) = a.name.as_ref().filter(|_| restart.is_none()) {
        session.append_session_name(name.trim()).await?;
    }
    Ok(App {
        harness,
        session,
        header,
        session_file,
        registry,
        provider,
        settings,
        cwd,
        scope: scope.models,
        repo,
        session_store: store_url.filter(|_| !a.no_session),
        checkpoints,
        secrets,
        trust,
        resources,
        mcp,
    })
}

/// The trust decision for a run without asking anyone: `--approve` / `--no-approve`, the
/// saved decision, else `defaultProjectTrust` ("ask" loads nothing). The TUI asks before it
/// starts the app and passes its answer on as a saved decision or a flag.
pub fn project_trust(a: &AgentArgs, home: &Path, cwd: &Path) -> Result<ProjectTrust, CliError> {
    let global = Settings::load_global(home)?;
    let store =
        TrustStore::load(&home.join("trust.json")).map_err(|e| CliError::Config(e.to_string()))?;
    Ok(trust::resolve(trust_flag(a), &store, cwd, global.default_project_trust()).without_prompt())
}

/// `--approve` → `Some(true)`, `--no-approve` → `Some(false)`.
pub fn trust_flag(a: &AgentArgs) -> Option<bool> {
    if a.approve {
        Some(true)
    } else if a.no_approve {
        Some(false)
    } else {
        None
    }
}

/// MCP servers and hooks: both configured from files, neither on the start-up path (servers
/// start in the background, `session_start` hooks run in the background). Diagnostics go
/// through the notice sink (DECISIONS §23.172).
fn integrations(
    a: &AgentArgs,
    harness: &AgentHarness,
    (home, cwd, trusted): (&Path, &Path, bool),
    settings: &Settings,
    session_id: &str,
    session_file: &Option<PathBuf>,
) -> Option<crate::mcp::McpManager> {
    if !a.no_hooks {
        let set = crate::hooks::config::load(home, cwd, trusted);
        for d in &set.diagnostics {
            crate::notices::warn(d.to_string());
        }
        if !set.is_empty() {
            let hooks = Arc::new(crate::hooks::CommandHooks::new(
                set,
                cwd.to_path_buf(),
                session_id.to_owned(),
                crate::notices::warn_text,
            ));
            harness.add_hook(hooks.clone());
            let file = session_file.as_ref().map(|f| f.display().to_string());
            tokio::spawn(async move { hooks.session_start(file).await });
        }
    }
    if a.no_mcp {
        return None;
    }
    let timeout = settings.mcp_start_timeout();
    let manager = crate::mcp::start(home, cwd, trusted, timeout);
    for d in manager.diagnostics() {
        crate::notices::warn(d.to_string());
    }
    // Weak: the harness holds the manager (through the prompt gate); a strong handle here would
    // keep the harness, its session and a new session's pending file alive past the run.
    let h = harness.downgrade();
    manager.on_tools(move |tools| {
        if let Some(h) = h.upgrade() {
            h.set_extension_tools(tools);
        }
    });
    harness.add_hook(Arc::new(crate::mcp::gate::PromptGate {
        manager: manager.clone(),
        timeout,
    }));
    Some(manager)
}
