//! Fields a struct does not model, kept in file order and written back after the known ones.
//!
//! Almost every message, block, usage and entry has none, so the map is boxed and absent until
//! a field arrives: an inline `serde_json::Map` costs 72 bytes in each of them, and a session
//! holds several copies of every message (DECISIONS §22.60). Reads see an empty map when there
//! is none; a write allocates it.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::LazyLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// What reads of an absent `Extra` see.
static EMPTY: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);

/// Unknown fields of a value, in input order; 8 bytes when there are none.
#[derive(Clone, Default)]
pub struct Extra(Option<Box<Map<String, Value>>>);

impl Extra {
    /// No fields (no allocation).
    pub const fn new() -> Self {
        Extra(None)
    }

    /// The fields as a plain map.
    pub fn into_map(self) -> Map<String, Value> {
        self.0.map(|m| *m).unwrap_or_default()
    }
}

impl Deref for Extra {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Map<String, Value> {
        match &self.0 {
            Some(map) => map,
            None => &EMPTY,
        }
    }
}

impl DerefMut for Extra {
    fn deref_mut(&mut self) -> &mut Map<String, Value> {
        self.0.get_or_insert_with(Default::default)
    }
}

impl From<Map<String, Value>> for Extra {
    fn from(map: Map<String, Value>) -> Self {
        if map.is_empty() {
            Extra(None)
        } else {
            Extra(Some(Box::new(map)))
        }
    }
}

impl From<Extra> for Map<String, Value> {
    fn from(extra: Extra) -> Self {
        extra.into_map()
    }
}

impl FromIterator<(String, Value)> for Extra {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Self {
        Extra::from(iter.into_iter().collect::<Map<String, Value>>())
    }
}

impl IntoIterator for Extra {
    type Item = (String, Value);
    type IntoIter = serde_json::map::IntoIter;

    fn into_iter(self) -> Self::IntoIter {
        self.into_map().into_iter()
    }
}

impl<'a> IntoIterator for &'a Extra {
    type Item = (&'a String, &'a Value);
    type IntoIter = serde_json::map::Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.deref().iter()
    }
}

/// Equal as maps: an absent map equals one that became empty.
impl PartialEq for Extra {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Extra {}

impl fmt::Debug for Extra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Extra {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Map::<String, Value>::deserialize(deserializer).map(Extra::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_until_written_and_equal_to_empty() {
        let mut a = Extra::new();
        assert!(a.is_empty());
        assert_eq!(std::mem::size_of::<Extra>(), 8);
        let b = Extra::from(Map::new());
        assert_eq!(a, b);
        a.insert("k".into(), json!(1));
        assert_eq!(a.get("k"), Some(&json!(1)));
        assert_ne!(a, b);
        a.remove("k");
        assert_eq!(a, b, "an emptied map equals an absent one");
    }

    #[test]
    fn serializes_as_the_map_it_holds() {
        let e: Extra = [("z".to_owned(), json!(1)), ("a".to_owned(), json!(2))]
            .into_iter()
            .collect();
        assert_eq!(
            serde_json::to_string(&e).ok().as_deref(),
            Some(r#"{"z":1,"a":2}"#)
        );
        let back: Extra = serde_json::from_str(r#"{"z":1,"a":2}"#).unwrap_or_default();
        assert_eq!(back, e);
        assert_eq!(
            serde_json::to_string(&Extra::new()).ok().as_deref(),
            Some("{}")
        );
    }
}
