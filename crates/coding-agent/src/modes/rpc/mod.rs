//! RPC mode: one JSON command per line on stdin (LF framing, a CR before the LF dropped),
//! parsed into a typed [`Command`], run by [`execute`] and answered on stdout as
//! `{id?, type:"response", command, success, data?|error}`, between the JSON-mode events.
//! `prompt` answers once the run has started; the run continues as events. stdin EOF or
//! SIGTERM/SIGHUP shut down in order (abort, answer what is in flight, exit).
//!
//! Every command is answered concurrently, as in pi, so `abort`, `abort_bash`, `get_state` or
//! `steer` reach a `compact`, `bash` or run in progress. Session commands (`new_session`,
//! `switch_session`, `fork`, `clone`) build the app again over the new session with the same
//! flags ([`crate::startup::restart`]); the commands sent after one wait for it.

mod host;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, RwLock};

use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::json::emit_line;
use crate::cli::AgentArgs;
use crate::command::{execute, Command, CommandError, Gate, Reply};
use crate::error::CliError;
use crate::startup::App;
use host::{Call, Rpc};

/// pi's response line: `{id?, type:"response", command, success, data?|error}`.
fn respond(
    id: Option<&Value>,
    command: &str,
    result: Result<Option<Reply>, CommandError>,
) -> Value {
    let result = result.and_then(|r| {
        r.map(|r| serde_json::to_value(r).map_err(CommandError::Encode))
            .transpose()
    });
    let mut obj = Map::new();
    if let Some(id) = id {
        obj.insert("id".into(), id.clone());
    }
    obj.insert("type".into(), Value::from("response"));
    obj.insert("command".into(), Value::from(command));
    match result {
        Ok(data) => {
            obj.insert("success".into(), Value::Bool(true));
            if let Some(d) = data {
                obj.insert("data".into(), d);
            }
        }
        Err(e) => {
            obj.insert("success".into(), Value::Bool(false));
            obj.insert("error".into(), Value::from(e.to_string()));
        }
    }
    Value::Object(obj)
}

/// One command being answered; the loop polls every one of them beside stdin.
type InFlight = std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>;

fn answer(rpc: &Arc<Rpc>, line: String) -> InFlight {
    let rpc = rpc.clone();
    Box::pin(async move {
        if let Some(resp) = answer_line(&rpc, &line).await {
            emit_line(&resp);
        }
    })
}

/// Node 22 follows V8's "… at position N" with " (line L column C)" (1-based, UTF-16 units).
fn with_line_column(message: &str, text: &str) -> String {
    let Some(pos) = message
        .rsplit_once("at position ")
        .and_then(|(_, n)| n.parse::<usize>().ok())
    else {
        return message.to_owned();
    };
    let (mut line, mut column, mut units) = (1, 1, 0);
    for c in text.chars() {
        if units >= pos {
            break;
        }
        units += c.len_utf16();
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += c.len_utf16();
        }
    }
    format!("{message} (line {line} column {column})")
}

/// Answers one input line (already without its LF); `None` for a blank line.
async fn answer_line(rpc: &Rpc, line: &str) -> Option<Value> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.trim().is_empty() {
        return None;
    }
    let value: Value = match serde_json::from_str(line) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            let e = CommandError::Parse("expected a JSON object".into());
            return Some(respond(None, "parse", Err(e)));
        }
        Err(e) => {
            // pi reports JavaScript's JSON.parse wording; serde's text when there is no
            // equivalent.
            let why = arbor_ai::json_error::js_json_parse_error(line)
                .map(|m| with_line_column(&m, line))
                .unwrap_or_else(|| e.to_string());
            return Some(respond(None, "parse", Err(CommandError::Parse(why))));
        }
    };
    let id = value.get("id").cloned();
    // The response names the `type` as sent (an unknown one too).
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let command = match Command::from_value(&value) {
        Ok(Some(c)) => c,
        Ok(None) => return Some(respond(id.as_ref(), "unknown", Err(CommandError::NoType))),
        Err(e) => return Some(respond(id.as_ref(), kind, Err(e))),
    };
    let call = Call {
        rpc,
        id: id.clone(),
    };
    let result = match command.gate() {
        Gate::None => execute(&call, command, kind).await,
        Gate::Exclusive => {
            let _exclusive = rpc.gate.write().await;
            execute(&call, command, kind).await
        }
        Gate::Shared => {
            let _shared = rpc.gate.read().await;
            execute(&call, command, kind).await
        }
    };
    Some(respond(id.as_ref(), kind, result))
}

pub async fn run(
    app: App,
    args: AgentArgs,
    session_dir: Option<PathBuf>,
) -> Result<ExitCode, CliError> {
    let control = Arc::new(crate::policy::control(&app.settings));
    let rpc = Arc::new(Rpc {
        args,
        session_dir,
        app: RwLock::new(Arc::new(app)),
        subscription: Mutex::new(None),
        events: Mutex::new(Arc::default()),
        running: Mutex::new(None),
        control,
        bash: Mutex::new(Vec::new()),
        gate: tokio::sync::RwLock::new(()),
    });
    rpc.attach(&rpc.app());
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let signal = crate::shutdown::shutdown_signal();
    tokio::pin!(signal);
    // Every command is answered concurrently, as pi does (DECISIONS §22.31): a long one
    // (`compact`, `abort` waiting for idle, `bash`) does not hold up the next. Polling the
    // commands in flight before reading the next line keeps quick answers in input order.
    let mut in_flight: FuturesUnordered<InFlight> = FuturesUnordered::new();
    let code = loop {
        tokio::select! {
            biased;
            Some(()) = in_flight.next(), if !in_flight.is_empty() => {}
            c = &mut signal => break c,
            line = lines.next_line() => match line {
                Ok(Some(l)) => in_flight.push(answer(&rpc, l)),
                Ok(None) | Err(_) => break 0u8,
            },
        }
    };
    // Orderly shutdown (DECISIONS §22.33): stop the run and every bash command, then let each
    // command in flight write its answer (a cancelled bash still reports its output). A second
    // signal exits at once.
    rpc.cancel_bash();
    let drain = async {
        let answers = async { while in_flight.next().await.is_some() {} };
        tokio::join!(rpc.stop_run(), answers);
    };
    tokio::select! {
        () = drain => Ok(ExitCode::from(code)),
        again = crate::shutdown::shutdown_signal() => crate::shutdown::exit_now(again),
    }
}
