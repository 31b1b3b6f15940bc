//! Per-thread tallies of the per-message work done while building and sending requests.
//!
//! "Nothing per turn may be O(session)" is a property no timing test can pin down on a loaded
//! machine, so the request path counts what it does per message instead: how many messages it
//! converted, projected, estimated, transformed or copied. A test reads the tallies before and
//! after a turn (everything of one turn runs on the thread of a current-thread runtime) and
//! asserts the difference does not grow with the session (DECISIONS §20.21). Counting costs one
//! thread-local add per call, not per message.

use std::cell::Cell;

/// A kind of per-message work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Work {
    /// An agent message converted to an LLM message (`convert_to_llm`).
    Converted,
    /// An LLM message run through a model's history transform.
    Transformed,
    /// A message measured for the pre-request token estimate.
    Estimated,
    /// A session entry projected to context messages.
    Projected,
    /// A message cloned because a shared list was written while another holder kept it.
    Copied,
}

const KINDS: usize = 5;

fn slot(work: Work) -> usize {
    match work {
        Work::Converted => 0,
        Work::Transformed => 1,
        Work::Estimated => 2,
        Work::Projected => 3,
        Work::Copied => 4,
    }
}

thread_local! {
    static TALLY: [Cell<u64>; KINDS] = const { [const { Cell::new(0) }; KINDS] };
}

/// Adds `messages` to this thread's tally of `work`.
pub fn add(work: Work, messages: usize) {
    if messages == 0 {
        return;
    }
    TALLY.with(|t| {
        let c = &t[slot(work)];
        c.set(c.get().saturating_add(messages as u64));
    });
}

/// A snapshot of this thread's tallies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally([u64; KINDS]);

impl Tally {
    /// This thread's tallies now.
    pub fn now() -> Tally {
        Tally(TALLY.with(|t| std::array::from_fn(|i| t[i].get())))
    }

    /// The tally of one kind.
    pub fn get(&self, work: Work) -> u64 {
        self.0[slot(work)]
    }

    /// What was counted between `earlier` and `self`.
    pub fn since(&self, earlier: &Tally) -> Tally {
        Tally(std::array::from_fn(|i| {
            self.0[i].saturating_sub(earlier.0[i])
        }))
    }

    /// Every kind with its count, for assertion messages.
    pub fn entries(&self) -> [(Work, u64); KINDS] {
        [
            Work::Converted,
            Work::Transformed,
            Work::Estimated,
            Work::Projected,
            Work::Copied,
        ]
        .map(|w| (w, self.get(w)))
    }
}
