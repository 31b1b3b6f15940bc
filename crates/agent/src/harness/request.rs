//! The model-visible messages of each request, kept across turns and runs (DECISIONS §20.13).
//!
//! A request carries the whole transcript, but only what was appended since the previous
//! request needs `convert_to_llm` and `transform_messages`: the session's projection cache says
//! (by its generation) whether its messages only grew, and the transform for one target model
//! is incremental ([`ModelTransform`]). Everything else — a navigation, a compaction, a context
//! edit, a model whose transform rules differ, entry transforms on the session — starts over
//! from the whole context. The list handed to a request is shared, not copied.

use arbor_ai::transform::ModelTransform;
use arbor_ai::{MessageList, Model};

use crate::context::convert::convert_one;
use crate::context::OrphanRepair;
use crate::message::AgentMessage;

/// The converted and transformed messages of the session context last seen.
#[derive(Debug, Default)]
pub(super) struct RequestCache {
    /// Generation of the session projection folded in (`None`: nothing reusable).
    generation: Option<u64>,
    /// How many of that projection's messages are folded in.
    consumed: usize,
    transform: Option<ModelTransform>,
    /// Orphaned tool results become user notes before the transform (DECISIONS §29.6).
    repair: OrphanRepair,
    /// Settled output followed by the open tail of the last call.
    out: MessageList,
    /// How much of `out` is settled (the rest is re-rendered every call).
    settled: usize,
}

impl RequestCache {
    /// The request messages for `model` of a session context whose projection has
    /// `generation` (`None`: untracked, converted from scratch).
    pub(super) fn messages(
        &mut self,
        context: &[AgentMessage],
        generation: Option<u64>,
        model: &Model,
    ) -> MessageList {
        let reusable = generation.is_some()
            && generation == self.generation
            && context.len() >= self.consumed
            && self.transform.as_ref().is_some_and(|t| t.fits(model));
        if !reusable {
            self.generation = generation;
            self.consumed = 0;
            self.transform = None;
            self.repair = OrphanRepair::default();
            self.out = MessageList::default();
            self.settled = 0;
        }
        let transform = self
            .transform
            .get_or_insert_with(|| ModelTransform::new(model));
        for m in &context[self.consumed..] {
            if let Some(llm) = convert_one(m) {
                transform.push(&self.repair.push(llm));
            }
        }
        self.consumed = context.len();
        let settled = transform.take_settled();
        let tail = transform.tail();
        // Unique unless a provider kept the previous request's list: then this copies once.
        // The list's own appends fold the token estimate's points (DECISIONS §20.20).
        let out = &mut self.out;
        out.truncate(self.settled);
        out.extend(settled);
        self.settled = out.len();
        out.extend(tail);
        // Transformed here, incrementally: the provider takes the list as it is (DECISIONS
        // §10.8).
        let mut list = self.out.clone();
        list.mark_transformed_for(model);
        list
    }
}
