//! Compat flags (`model.compat`), read by the request builders and the thinking mapping.

use serde_json::Value;

use crate::types::Model;

/// `model.compat[key]` as a bool.
pub fn compat_bool(model: &Model, key: &str) -> Option<bool> {
    model.compat.as_ref()?.get(key)?.as_bool()
}

/// `model.compat[key]` as a string.
pub fn compat_str<'a>(model: &'a Model, key: &str) -> Option<&'a str> {
    model.compat.as_ref()?.get(key)?.as_str()
}

/// `model.compat[key]` as it stands.
pub fn compat_value<'a>(model: &'a Model, key: &str) -> Option<&'a Value> {
    model.compat.as_ref()?.get(key)
}
