//! [`Kept`]: a field value that remembers whether its JSON source had the field.
//!
//! pi passes a message through as it was written: a message without `timestamp` or `usage`
//! stays without them in the projected context and in every file pi rewrites. Reading such a
//! field into a plain `i64` or [`crate::Usage`] would invent `0` or zero usage on the next write,
//! so those fields are `Kept<T>`: the value (its default when absent) plus whether the source
//! had it. Serialization skips an absent field (DECISIONS §25.40).

use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A value plus whether the source it was read from had it. Reads see the value (the type's
/// default when absent); any write through [`DerefMut`] or [`Kept::set`] makes it present.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kept<T> {
    value: T,
    present: bool,
}

impl<T> Kept<T> {
    /// A present value: what every value built in code is.
    pub const fn new(value: T) -> Self {
        Kept {
            value,
            present: true,
        }
    }

    /// Whether the source had the field (always true for values built in code).
    pub const fn is_present(&self) -> bool {
        self.present
    }

    /// For `skip_serializing_if`.
    pub const fn is_absent(&self) -> bool {
        !self.present
    }

    /// Replace the value; it is present from then on.
    pub fn set(&mut self, value: T) {
        self.value = value;
        self.present = true;
    }

    /// The value if the source had it.
    pub fn present(&self) -> Option<&T> {
        self.present.then_some(&self.value)
    }

    /// The value, whether or not the source had it.
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T: Default> Kept<T> {
    /// The field was missing from the source: reads see the default, writes leave it out.
    pub fn absent() -> Self {
        Kept {
            value: T::default(),
            present: false,
        }
    }
}

impl<T: Copy> Kept<T> {
    /// The value (the default when absent), for `Copy` values such as timestamps.
    pub const fn get(&self) -> T {
        self.value
    }
}

/// A value built in code is present: `Default` keeps today's "zero when unset" construction
/// (`..Default::default()` still writes `timestamp: 0`). Only deserialization makes it absent.
impl<T: Default> Default for Kept<T> {
    fn default() -> Self {
        Kept::new(T::default())
    }
}

impl<T> From<T> for Kept<T> {
    fn from(value: T) -> Self {
        Kept::new(value)
    }
}

impl<T> Deref for Kept<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> DerefMut for Kept<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.present = true;
        &mut self.value
    }
}

impl<T: Serialize> Serialize for Kept<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

/// A field that is there deserializes present; pair it with `#[serde(default = "Kept::absent",
/// skip_serializing_if = "Kept::is_absent")]` for the missing case.
impl<'de, T: Deserialize<'de>> Deserialize<'de> for Kept<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Kept::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Probe {
        #[serde(default = "Kept::absent", skip_serializing_if = "Kept::is_absent")]
        n: Kept<i64>,
    }

    #[test]
    fn an_absent_field_stays_absent_and_a_present_zero_stays_present() {
        let absent: Probe = serde_json::from_str("{}").unwrap();
        assert!(absent.n.is_absent());
        assert_eq!(absent.n.get(), 0);
        assert_eq!(serde_json::to_string(&absent).unwrap(), "{}");

        let zero: Probe = serde_json::from_str(r#"{"n":0}"#).unwrap();
        assert!(zero.n.is_present());
        assert_eq!(serde_json::to_string(&zero).unwrap(), r#"{"n":0}"#);
        assert_ne!(absent, zero);
    }

    #[test]
    fn writing_makes_it_present() {
        let mut p: Probe = serde_json::from_str("{}").unwrap();
        *p.n += 5;
        assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"n":5}"#);
        let mut q: Probe = serde_json::from_str("{}").unwrap();
        q.n.set(7);
        assert_eq!(q.n.present(), Some(&7));
    }

    #[test]
    fn built_in_code_is_present() {
        assert!(Kept::<i64>::default().is_present());
        assert!(Kept::from(3_i64).is_present());
    }
}
