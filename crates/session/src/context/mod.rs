//! Context projection: from the session's entry log to what the model sees.
//!
//! - [`projection`]: the pure pipeline of DECISIONS §3 (paths, derived state, compaction
//!   window, entry transforms, custom projectors, context edits).
//! - [`convert`]: `convert_to_llm` and the four summary wrapper constants.
//! - `cache`: the same projection maintained incrementally per leaf, for `Session`.
//! - [`entries`]: the list the context is projected from, read from any backend, and
//!   [`renderer`]: how that list is turned into bytes (the streamed `session context --json`).
//! - [`stream`]: the context written as JSON without holding it.
//! - [`orphans`]: tool results without their call, repaired before a request.

pub(crate) mod cache;
pub mod convert;
pub mod entries;
pub mod orphans;
mod planned;
pub mod projection;
pub mod renderer;
pub mod stream;

/// The incremental projection cache behind `Session::build_context` (feature `internals`, for
/// tests; not a stable API).
#[cfg(feature = "internals")]
pub use cache::ProjectionCache;
pub use convert::{
    convert_to_llm, BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX, COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
};
pub use entries::{render_context_entries, visit_context_entries};
pub use orphans::OrphanRepair;
pub use projection::{
    build_session_context, build_session_context_owned, ContextOptions, CustomProjector,
    DerivedState, EntryTransform, ModelRef, SessionContext,
};
pub use renderer::EntryRenderer;
pub use stream::{write_context_json, ContextJsonWriter};

use serde_json::{json, Value};

/// The reference JSON shape of a projected context (`testdata/*/expected/*.json`):
/// `{"ok":true,"leafId","model","thinkingLevel","activeToolNames","llm"}`.
/// Numbers are written as JavaScript would (`0.0` in a file comes back as `0`), so the output
/// equals pi's byte for byte up to key order. Test and parity support (feature `internals`,
/// not a stable API).
#[cfg(feature = "internals")]
pub fn expected_json(context: &SessionContext, leaf_id: Option<&str>) -> Value {
    let mut llm = serde_json::to_value(convert_to_llm(&context.messages)).unwrap_or(Value::Null);
    js_numbers(&mut llm);
    json!({
        "ok": true,
        "leafId": leaf_id,
        "model": context.model,
        "thinkingLevel": context.thinking_level,
        "activeToolNames": context.active_tool_names,
        "llm": llm,
    })
}

/// [`expected_json`] written straight to `out`, one message at a time (no JSON tree of the
/// whole context is built), followed by a newline. Same content, same number formatting.
/// Test and bench support (feature `internals`, not a stable API).
#[cfg(feature = "internals")]
pub fn write_expected_json<W: std::io::Write>(
    mut out: W,
    context: &SessionContext,
    leaf_id: Option<&str>,
) -> std::io::Result<()> {
    write_head(
        &mut out,
        leaf_id,
        &context.model,
        &context.thinking_level,
        &context.active_tool_names,
    )?;
    let mut first = true;
    for m in context.messages.iter() {
        let Some(llm) = convert::convert_one(m) else {
            continue;
        };
        write_message(&mut out, &llm, first)?;
        first = false;
    }
    write_tail(out)
}

/// `{"ok":true,"leafId",…,"activeToolNames"` and the opening of the `llm` array.
pub(crate) fn write_head<W: std::io::Write>(
    out: &mut W,
    leaf_id: Option<&str>,
    model: &Option<ModelRef>,
    thinking_level: &str,
    active_tool_names: &Option<Vec<String>>,
) -> std::io::Result<()> {
    let head = json!({
        "ok": true,
        "leafId": leaf_id,
        "model": model,
        "thinkingLevel": thinking_level,
        "activeToolNames": active_tool_names,
    });
    let head = serde_json::to_string(&head).map_err(std::io::Error::other)?;
    // `{...}` without its closing brace, then the llm array.
    out.write_all(&head.as_bytes()[..head.len() - 1])?;
    out.write_all(b",\"llm\":[")
}

/// One element of the `llm` array (`first`: no comma before it).
pub(crate) fn write_message<W: std::io::Write>(
    out: &mut W,
    message: &arbor_ai::Message,
    first: bool,
) -> std::io::Result<()> {
    if !first {
        out.write_all(b",")?;
    }
    // Straight to the writer with JavaScript's number printing: no `Value` per message
    // (building one cost more than the rest of the write).
    let mut ser = serde_json::Serializer::with_formatter(&mut *out, JsNumbers);
    serde::Serialize::serialize(message, &mut ser).map_err(std::io::Error::other)
}

/// Closes the array and the object, ends the line and flushes.
pub(crate) fn write_tail<W: std::io::Write>(mut out: W) -> std::io::Result<()> {
    out.write_all(b"]}\n")?;
    out.flush()
}

/// The refusal shape of the same files: `{"ok":false,"error"}`.
pub fn refusal_json(error: &str) -> Value {
    json!({ "ok": false, "error": error })
}

/// The largest integer a JavaScript number holds exactly.
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// A compact JSON formatter that prints integral floats within JavaScript's safe range as
/// integers, as `JSON.stringify` does: the streaming twin of [`js_numbers`] (same bytes over every fixture: test
/// `tests/suite/agreement.rs`).
struct JsNumbers;

impl serde_json::ser::Formatter for JsNumbers {
    fn write_f64<W: ?Sized + std::io::Write>(&mut self, w: &mut W, f: f64) -> std::io::Result<()> {
        if f.fract() == 0.0 && f.abs() <= MAX_SAFE {
            // Exact: integral and within the exactly representable range.
            serde_json::ser::CompactFormatter.write_i64(w, f as i64)
        } else {
            serde_json::ser::CompactFormatter.write_f64(w, f)
        }
    }

    fn write_f32<W: ?Sized + std::io::Write>(&mut self, w: &mut W, f: f32) -> std::io::Result<()> {
        self.write_f64(w, f64::from(f))
    }
}

/// Rewrites integral floating-point numbers as integers, as `JSON.stringify` prints them.
pub fn js_numbers(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64() {
                if f.fract() == 0.0 && f.abs() <= MAX_SAFE {
                    // Exact: integral and within the exactly representable range.
                    let i = f as i64;
                    *v = Value::from(i);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(js_numbers),
        Value::Object(o) => o.values_mut().for_each(js_numbers),
        _ => {}
    }
}
