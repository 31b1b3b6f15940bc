//! `bash`: runs a command with the user's shell in its own process group (DECISIONS §22.44).
//! stdout and stderr merge in arrival order; the model sees the tail (2000 lines / 50 KiB) and,
//! once output outgrows that, the whole of it goes to a 0600 temp file named in the notice.
//! Abort and timeout kill the whole group, so `make` and the compilers it started all stop.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use crate::process::{Ending, ProcessGroup};

use super::truncate::{
    format_size, truncate_tail, Truncation, DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES,
};
use super::{parse_args, BuiltinToolError, Progress, ToolEnv, ToolOutput, ToolResult, ToolSpec};

/// The largest timeout accepted, in seconds (the most a JS timer holds; kept for parity).
pub const MAX_TIMEOUT_SECONDS: f64 = 2_147_483.647;
/// Partial results are sent at most this often (pi's `BASH_UPDATE_THROTTLE_MS`).
const UPDATE_INTERVAL: Duration = Duration::from_millis(100);
/// How often the run checks for a partial result held back by [`UPDATE_INTERVAL`].
const UPDATE_POLL: Duration = Duration::from_millis(20);
/// The most of the output `structuredContent.output` carries (pi's 1 MiB); longer output keeps
/// its head and tail halves.
const STRUCTURED_OUTPUT_MAX_BYTES: usize = 1024 * 1024;
/// After the shell exits, the pipes are read until they have been quiet this long (pi's 100 ms).
const PIPE_IDLE: Duration = Duration::from_millis(100);
const PIPE_POLL: Duration = Duration::from_millis(20);
/// Tail kept in memory: comfortably more than one result's byte limit.
const WINDOW_BYTES: usize = 2 * DEFAULT_MAX_BYTES;

/// The `bash` tool's declaration.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "bash",
        label: "bash",
        description: format!(
            "Run a shell command in the working directory and get its combined stdout and stderr. Only the \
             last {DEFAULT_MAX_LINES} lines or {}KB are returned (whichever is smaller); longer output is kept \
             in full in a temp file whose path is given. An optional timeout in seconds stops the command.",
            DEFAULT_MAX_BYTES / 1024
        ),
        parameters: json!({
            "type": "object",
            "required": ["command"],
            "properties": {
                "command": {"type": "string", "description": "The command line to run"},
                "timeout": {"type": "number", "description": "Seconds before the command is stopped (optional; has a default)"}
            }
        }),
        snippet: "Run shell commands (ls, rg, git, builds, tests...)",
    }
}

#[derive(Debug, Deserialize)]
struct Args {
    command: String,
    timeout: Option<f64>,
}

/// The shell to run commands with: the `shellPath` setting, else `/bin/bash`, `bash` on PATH,
/// then `sh`.
pub fn shell(setting: Option<&Path>) -> Result<PathBuf, BuiltinToolError> {
    if let Some(p) = setting {
        return if p.exists() {
            Ok(p.to_path_buf())
        } else {
            Err(BuiltinToolError::failed(format!(
                "Custom shell path not found: {}",
                p.display()
            )))
        };
    }
    if Path::new("/bin/bash").exists() {
        return Ok(PathBuf::from("/bin/bash"));
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            if dir.join("bash").is_file() {
                return Ok(dir.join("bash"));
            }
        }
    }
    Ok(PathBuf::from("sh"))
}

/// Output collected so far: a bounded tail window, counts, and the spill file once needed.
struct Collected {
    window: Vec<u8>,
    total_bytes: usize,
    newlines: usize,
    /// Length of the line being written at the end (for the "line is Y" notice).
    last_line_len: usize,
    spill: Option<(PathBuf, std::fs::File)>,
    /// Everything so far while no spill file exists (bounded by the limits).
    head: Vec<u8>,
    spill_error: Option<String>,
    /// When the last chunk arrived (the pipes count as drained once quiet after the exit).
    last_chunk: Instant,
    /// Where partial results go (the model's calls; `None` for the user's `!cmd`).
    progress: Option<Progress>,
    /// When the last partial result was sent, and whether output arrived since.
    last_update: Option<Instant>,
    dirty: bool,
}

impl Collected {
    fn new(progress: Option<Progress>) -> Self {
        Collected {
            progress,
            last_update: None,
            dirty: false,
            window: Vec::new(),
            total_bytes: 0,
            newlines: 0,
            last_line_len: 0,
            spill: None,
            head: Vec::new(),
            spill_error: None,
            last_chunk: Instant::now(),
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.last_chunk = Instant::now();
        self.total_bytes += chunk.len();
        let nl = memchr::memchr_iter(b'\n', chunk).count();
        self.newlines += nl;
        match memchr::memrchr(b'\n', chunk) {
            Some(i) => self.last_line_len = chunk.len() - i - 1,
            None => self.last_line_len += chunk.len(),
        }
        self.window.extend_from_slice(chunk);
        if self.window.len() > 2 * WINDOW_BYTES {
            let cut = self.window.len() - WINDOW_BYTES;
            self.window.drain(..cut);
        }
        match &mut self.spill {
            Some((_, file)) => {
                if let Err(e) = file.write_all(chunk) {
                    self.spill_error.get_or_insert(e.to_string());
                }
            }
            None => {
                self.head.extend_from_slice(chunk);
                if self.total_bytes > DEFAULT_MAX_BYTES || self.newlines >= DEFAULT_MAX_LINES {
                    self.start_spill();
                }
            }
        }
        self.dirty = true;
        self.update(false);
    }

    /// Sends the output so far as a partial result when some arrived since the last one and
    /// the last one is [`UPDATE_INTERVAL`] old (`now`: regardless of its age), as pi's bash
    /// throttles its updates. Called under the lock, so updates leave in output order.
    fn update(&mut self, now: bool) {
        let due = now
            || self
                .last_update
                .is_none_or(|t| t.elapsed() >= UPDATE_INTERVAL);
        let Some(progress) = self.progress.clone().filter(|_| self.dirty && due) else {
            return;
        };
        self.dirty = false;
        self.last_update = Some(Instant::now());
        let (text, details) = format_output(self, "");
        let mut out = ToolOutput::text(text);
        // pi's update always carries `details` (its truncation fields, absent when not cut).
        out.details = Some(details.unwrap_or_else(|| json!({})));
        progress(out);
    }

    /// All of the output for `structuredContent.output`: whole up to
    /// [`STRUCTURED_OUTPUT_MAX_BYTES`], else its head and tail halves around a note of the bytes
    /// left out (pi's rule); whether it was cut.
    fn full_output(&mut self) -> (String, bool) {
        let Some((path, file)) = &mut self.spill else {
            return (String::from_utf8_lossy(&self.head).into_owned(), false);
        };
        let _ = file.flush();
        let bytes = match std::fs::read(path.as_path()) {
            Ok(b) => b,
            // The spill file is gone or unreadable: the window is what is left.
            Err(_) => return (String::from_utf8_lossy(&self.window).into_owned(), true),
        };
        if bytes.len() <= STRUCTURED_OUTPUT_MAX_BYTES {
            return (String::from_utf8_lossy(&bytes).into_owned(), false);
        }
        let head_len = STRUCTURED_OUTPUT_MAX_BYTES / 2;
        let tail_len = STRUCTURED_OUTPUT_MAX_BYTES - head_len;
        let head = &bytes[..utf8_prefix_len(&bytes[..head_len])];
        let mut tail = &bytes[bytes.len() - tail_len..];
        while tail.first().is_some_and(|b| b & 0xc0 == 0x80) {
            tail = &tail[1..];
        }
        let omitted = bytes.len() - head_len - tail_len;
        (
            format!(
                "{}\n\n[... {omitted} bytes omitted ...]\n\n{}",
                String::from_utf8_lossy(head),
                String::from_utf8_lossy(tail)
            ),
            true,
        )
    }

    fn start_spill(&mut self) {
        let name = format!("arbor-bash-{:016x}.log", rand::random::<u64>());
        let path = std::env::temp_dir().join(name);
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        match opts
            .open(&path)
            .and_then(|mut f| f.write_all(&self.head).map(|_| f))
        {
            Ok(f) => self.spill = Some((path, f)),
            Err(e) => self.spill_error = Some(format!("{}: {e}", path.display())),
        }
        self.head = Vec::new();
    }

    /// The text the model sees and the truncation record.
    fn snapshot(&self) -> (String, Truncation, Option<PathBuf>) {
        let mut text = String::from_utf8_lossy(&self.window).into_owned();
        let mut t = truncate_tail(&text, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
        // Counts are of the whole output, not the window.
        let total_lines = self.newlines + usize::from(self.last_line_len > 0);
        if self.window.len() < self.total_bytes {
            t.truncated = true;
        }
        t.total_lines = total_lines;
        t.total_bytes = self.total_bytes;
        text.clear();
        (
            t.content.clone(),
            t,
            self.spill.as_ref().map(|(p, _)| p.clone()),
        )
    }
}

/// Formats the output and notices the way pi's bash tool does.
fn format_output(c: &Collected, empty: &str) -> (String, Option<Value>) {
    let (content, t, path) = c.snapshot();
    let mut text = if content.is_empty() {
        empty.to_owned()
    } else {
        content
    };
    if !t.truncated {
        return (text, None);
    }
    let shown_path = path.as_ref().map_or_else(
        || {
            c.spill_error
                .clone()
                .map_or_else(|| "(not saved)".to_owned(), |e| format!("(not saved: {e})"))
        },
        |p| p.display().to_string(),
    );
    let start = t.total_lines.saturating_sub(t.output_lines) + 1;
    let end = t.total_lines;
    if t.last_line_partial {
        text.push_str(&format!(
            "\n\n[Showing last {} of line {end} (line is {}). Full output: {shown_path}]",
            format_size(t.output_bytes),
            format_size(c.last_line_len)
        ));
    } else if t.truncated_by == Some(super::truncate::TruncatedBy::Lines) {
        text.push_str(&format!(
            "\n\n[Showing lines {start}-{end} of {}. Full output: {shown_path}]",
            t.total_lines
        ));
    } else {
        text.push_str(&format!(
            "\n\n[Showing lines {start}-{end} of {} ({} limit). Full output: {shown_path}]",
            t.total_lines,
            format_size(DEFAULT_MAX_BYTES)
        ));
    }
    let details = json!({"truncation": t, "fullOutputPath": path.map(|p| p.display().to_string())});
    (text, Some(details))
}

fn with_status(text: &str, status: &str) -> String {
    if text.is_empty() {
        status.to_owned()
    } else {
        format!("{text}\n\n{status}")
    }
}

/// How a run ended.
enum End {
    Exited(std::process::ExitStatus),
    TimedOut(Ending),
    Aborted(Ending),
}

/// Reader tasks of the command's pipes, stopped when dropped: a dropped tool future must not
/// leave tasks reading pipes a background job holds open.
struct Readers(Vec<tokio::task::JoinHandle<()>>);

impl Readers {
    /// Waits until both pipes are closed, or — once the shell has exited — until they have been
    /// quiet for [`PIPE_IDLE`]: a background job holding them must not hold the tool
    /// (DECISIONS §28.4).
    async fn drained(&mut self, collected: &Mutex<Collected>) {
        loop {
            if self.0.iter().all(tokio::task::JoinHandle::is_finished) {
                return;
            }
            tokio::time::sleep(PIPE_POLL).await;
            let quiet = collected
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .last_chunk
                .elapsed();
            if quiet >= PIPE_IDLE {
                return;
            }
        }
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

/// Receives the command's output as it arrives (stdout and stderr chunks, whole UTF-8
/// characters only): RPC's `bash_execution_update` deltas.
pub type ChunkSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Runs one `bash` call: the command in its own process group, output streamed to `progress`,
/// the tail kept for the model and the rest spilled to a file.
pub async fn run(
    env: &ToolEnv,
    args: Value,
    cancel: CancellationToken,
    progress: Option<Progress>,
) -> ToolResult {
    run_streaming(env, args, cancel, progress, None).await
}

/// [`run`] that also hands every output chunk to `chunks`.
pub async fn run_streaming(
    env: &ToolEnv,
    args: Value,
    cancel: CancellationToken,
    progress: Option<Progress>,
    chunks: Option<ChunkSink>,
) -> ToolResult {
    let args: Args = parse_args("bash", &args)?;
    // pi's bash announces the call with an empty partial result before it checks or starts
    // anything.
    if let Some(p) = &progress {
        p(ToolOutput::default());
    }
    let timeout = match args.timeout {
        None => env
            .settings
            .bash_timeout_seconds
            .map(|t| t.min(MAX_TIMEOUT_SECONDS)),
        Some(t) if !t.is_finite() || t <= 0.0 => {
            return Err(BuiltinToolError::failed(
                "Invalid timeout: must be a finite number of seconds",
            ))
        }
        Some(t) if t > MAX_TIMEOUT_SECONDS => {
            return Err(BuiltinToolError::failed(format!(
                "Invalid timeout: maximum is {MAX_TIMEOUT_SECONDS} seconds"
            )))
        }
        Some(t) => Some(t),
    };
    if !env.cwd.is_dir() {
        return Err(BuiltinToolError::failed(format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            env.cwd.display()
        )));
    }
    let shell = shell(env.settings.shell_path.as_deref())?;
    let command = match &env.settings.shell_command_prefix {
        Some(prefix) => format!("{prefix}\n{}", args.command),
        None => args.command.clone(),
    };
    let mut cmd = tokio::process::Command::new(&shell);
    cmd.arg("-c")
        .arg(&command)
        .current_dir(&env.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    env.settings.env_policy.apply(&mut cmd);
    for (k, v) in &env.settings.env {
        cmd.env(k, v);
    }
    cmd.env("ARBOR_CODING_AGENT", "true")
        .env("AI_AGENT", "arbor");
    let mut child = cmd.spawn().map_err(|e| {
        BuiltinToolError::failed(format!("Failed to start {}: {e}", shell.display()))
    })?;
    // From here on the group is in the guard's charge: dropping this future ends it.
    let mut group = child.id().and_then(ProcessGroup::adopt);
    let collected = Arc::new(Mutex::new(Collected::new(progress.clone())));
    let mut readers = {
        let mut tasks = Vec::new();
        if let Some(out) = child.stdout.take() {
            tasks.push(tokio::spawn(pump(out, collected.clone(), chunks.clone())));
        }
        if let Some(err) = child.stderr.take() {
            tasks.push(tokio::spawn(pump(err, collected.clone(), chunks.clone())));
        }
        Readers(tasks)
    };
    let started = Instant::now();
    let deadline = timeout.map(|t| started + Duration::from_secs_f64(t));
    let mut ticker = tokio::time::interval(UPDATE_POLL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // `None` while the shell runs; its status once it exited (then only the pipes are read).
    let mut exited: Option<std::process::ExitStatus> = None;
    let end = loop {
        let sleep_until = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d.into()).await,
                None => std::future::pending().await,
            }
        };
        let waiting = async {
            match exited {
                None => Some(child.wait().await),
                Some(_) => {
                    readers.drained(&collected).await;
                    None
                }
            }
        };
        tokio::select! {
            r = waiting => match r {
                Some(Ok(status)) => exited = Some(status),
                Some(Err(e)) => return Err(BuiltinToolError::failed(format!("Failed to wait for the command: {e}"))),
                None => match exited {
                    Some(status) => break End::Exited(status),
                    None => continue,
                },
            },
            _ = sleep_until => break End::TimedOut(end_group(group.take(), &mut child, exited.is_some()).await),
            _ = cancel.cancelled() => break End::Aborted(end_group(group.take(), &mut child, exited.is_some()).await),
            // Output held back by the throttle goes out once it is due.
            _ = ticker.tick(), if progress.is_some() => {
                collected.lock().unwrap_or_else(std::sync::PoisonError::into_inner).update(false);
            }
        }
    };
    if let End::Exited(_) = end {
        // Jobs the command left running (`server &`) stay, as in pi; arbor's exit ends them
        // (DECISIONS §28.3).
        if let Some(g) = group.take() {
            g.release();
        }
    } else {
        // The group is gone, so the pipes close; whatever escaped it (`setsid`) is not waited for.
        let _ = tokio::time::timeout(Duration::from_secs(1), readers.drained(&collected)).await;
    }
    drop(readers);
    let mut guard = collected
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, f)) = &mut guard.spill {
        let _ = f.flush();
    }
    // The last output held back by the throttle, before the result (pi's final update).
    guard.update(true);
    match end {
        End::Aborted(ending) => {
            let (text, details) = format_output(&guard, "");
            // pi's text, then how the group ended (DECISIONS §31.13).
            Err(BuiltinToolError::Failed {
                message: with_status(&text, &format!("Command aborted; {}", ending.describe())),
                details,
            })
        }
        End::TimedOut(ending) => {
            let (text, details) = format_output(&guard, "");
            let secs = timeout.map_or_else(String::new, trim_float);
            Err(BuiltinToolError::Failed {
                message: with_status(
                    &text,
                    &format!(
                        "Command timed out after {secs} seconds; {}",
                        ending.describe()
                    ),
                ),
                details,
            })
        }
        End::Exited(status) => {
            let code = exit_code(status);
            let (text, details) = format_output(&guard, "(no output)");
            // What programmatic callers read (pi's `structuredContent`): the output, whole up to
            // 1 MiB, the exit code and the wall time in tenths of a second.
            let (output, cut) = guard.full_output();
            let mut structured = json!({"output": output, "truncated": cut});
            if let (true, Some((path, _))) = (cut, &guard.spill) {
                structured["full_output_path"] = json!(path.display().to_string());
            }
            structured["exit_code"] = json!(code);
            structured["wall_time_seconds"] =
                json!((started.elapsed().as_secs_f64() * 10.0).round() / 10.0);
            // A non-zero exit is a failed result that keeps its output and code, as pi's bash
            // returns it (not a thrown error; DECISIONS §31.14).
            let mut out = if code == 0 {
                ToolOutput::text(text)
            } else {
                ToolOutput::text(with_status(
                    &text,
                    &format!("Command exited with code {code}"),
                ))
                .failed()
            };
            out.details = details;
            Ok(out.with_structured_content(structured))
        }
    }
}

/// Ends the command's group (SIGTERM, then SIGKILL after the grace) while the shell is reaped,
/// so the record can say what it took (DECISIONS §28.2).
async fn end_group(
    group: Option<ProcessGroup>,
    child: &mut tokio::process::Child,
    shell_exited: bool,
) -> Ending {
    let Some(group) = group else {
        let _ = child.start_kill();
        return Ending::Killed;
    };
    let reap = async {
        if !shell_exited {
            let _ = child.wait().await;
        }
    };
    let (ending, ()) = tokio::join!(group.end(), reap);
    ending
}

/// `1` prints as `1`, `0.5` as `0.5`, as JavaScript prints numbers.
fn trim_float(t: f64) -> String {
    if t.fract() == 0.0 {
        format!("{}", t as i64)
    } else {
        format!("{t}")
    }
}

/// The exit code, or 128 + the signal number for a shell killed by a signal.
fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

async fn pump<R: tokio::io::AsyncRead + Unpin>(
    mut r: R,
    into: Arc<Mutex<Collected>>,
    chunks: Option<ChunkSink>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    // Bytes of a UTF-8 character cut by the read boundary, kept for the next chunk.
    let mut carry: Vec<u8> = Vec::new();
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                into.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(&buf[..n]);
                if let Some(sink) = &chunks {
                    carry.extend_from_slice(&buf[..n]);
                    let whole = utf8_prefix_len(&carry);
                    if whole > 0 {
                        sink(&String::from_utf8_lossy(&carry[..whole]));
                        carry.drain(..whole);
                    }
                }
            }
        }
    }
    if let (Some(sink), false) = (&chunks, carry.is_empty()) {
        sink(&String::from_utf8_lossy(&carry));
    }
}

/// How much of `bytes` can be decoded now: all of it unless it ends inside a UTF-8 character
/// (at most 3 bytes held back; invalid bytes are passed on and shown as U+FFFD).
fn utf8_prefix_len(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => bytes.len(),
    }
}
