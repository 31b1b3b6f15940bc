//! What a key press did to a modal part of the UI (the `/tree` navigator, a picker, a prompt).
//! The app owns the overlays; an overlay only reports, so the app decides what a choice means.

/// The result of handing one key to an overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flow<T> {
    /// The key was used (or ignored); the overlay stays open.
    Pending,
    /// The user backed out (Esc): close the overlay, nothing chosen.
    Cancel,
    /// The user chose: close the overlay and act on the value.
    Done(T),
}

impl<T> Flow<T> {
    /// Whether the overlay should close after this key.
    pub fn closes(&self) -> bool {
        !matches!(self, Flow::Pending)
    }

    /// Maps a chosen value, keeping `Pending` and `Cancel`.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Flow<U> {
        match self {
            Flow::Pending => Flow::Pending,
            Flow::Cancel => Flow::Cancel,
            Flow::Done(v) => Flow::Done(f(v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pending_keeps_an_overlay_open() {
        assert!(!Flow::<u8>::Pending.closes());
        assert!(Flow::<u8>::Cancel.closes());
        assert_eq!(Flow::Done(2).map(|v| v * 2), Flow::Done(4));
        assert_eq!(Flow::<u8>::Cancel.map(|v| v * 2), Flow::Cancel);
    }
}
