//! `with_*` setters for the crate's `#[non_exhaustive]` option structs (DECISIONS §10.9):
//! other crates cannot build those by struct literal, so every public field gets a chained
//! setter.

/// Generates chained setters. `opt field => with_field: T` takes a `T` and stores `Some(value)`;
/// `val field => with_field: T` stores the value as is.
macro_rules! with_setters {
    ($ty:ty { $($kind:ident $field:ident => $name:ident : $fty:ty),* $(,)? }) => {
        impl $ty {
            $( $crate::setters::with_setters!(@one $kind $field $name $fty); )*
        }
    };
    (@one opt $field:ident $name:ident $fty:ty) => {
        #[doc = concat!("Sets `", stringify!($field), "` to `Some(value)`.")]
        #[must_use]
        pub fn $name(mut self, value: $fty) -> Self {
            self.$field = Some(value);
            self
        }
    };
    (@one val $field:ident $name:ident $fty:ty) => {
        #[doc = concat!("Sets `", stringify!($field), "`.")]
        #[must_use]
        pub fn $name(mut self, value: $fty) -> Self {
            self.$field = value;
            self
        }
    };
}

pub(crate) use with_setters;
