//! Context projection: from the session's entry log to what the model sees.
//!
//! - [`projection`]: the pure pipeline of DECISIONS §3 (paths, derived state, compaction
//!   window, entry transforms, custom projectors, context edits).
//! - [`convert`]: `convert_to_llm` and the four summary wrapper constants.
//! - [`cache`]: the same projection maintained incrementally per leaf, for `Session`.

pub mod cache;
pub mod convert;
pub mod projection;

pub use cache::ProjectionCache;
pub use convert::{
    convert_to_llm, BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX, COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
};
pub use projection::{
    build_session_context, ContextOptions, CustomProjector, DerivedState, EntryTransform,
    ModelRef, SessionContext,
};

use serde_json::{json, Value};

/// The reference JSON shape of a projected context (`shared/fixtures/*/expected/*.json`):
/// `{"ok":true,"leafId","model","thinkingLevel","activeToolNames","llm"}`.
pub fn expected_json(context: &SessionContext, leaf_id: Option<&str>) -> Value {
    let llm = convert_to_llm(&context.messages);
    json!({
        "ok": true,
        "leafId": leaf_id,
        "model": context.model,
        "thinkingLevel": context.thinking_level,
        "activeToolNames": context.active_tool_names,
        "llm": llm,
    })
}

/// The refusal shape of the same files: `{"ok":false,"error"}`.
pub fn refusal_json(error: &str) -> Value {
    json!({ "ok": false, "error": error })
}
