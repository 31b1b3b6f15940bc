//! [`MessageList`]: the messages of a request, shared behind a reference count.
//!
//! The harness keeps the model-visible transcript across turns and hands each request the same
//! list, so building a request costs no copy of the session (DECISIONS §20.13). Appending
//! through [`MessageList::push`] / [`MessageList::extend`] also folds the pre-request token
//! estimate's state per message ([`crate::estimate`]), so estimating the prompt size before
//! each request reads two points instead of the transcript (DECISIONS §20.20).

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::estimate::{fold_points, EstimatePoint};
use crate::types::{Message, Model};
use crate::work::{self, Work};

#[derive(Clone, Default)]
struct Inner {
    items: Vec<Message>,
    /// One estimate point per item, or none (a list built in one piece, or written through
    /// `DerefMut`): never a partial set.
    points: Vec<EstimatePoint>,
}

/// The messages of a request. Reads go through `Deref`; a write copies first only when another
/// holder still shares the list (counted as `Work::Copied`). The second field names the model
/// whose history transform the messages already went through, if any (DECISIONS §10.8); any
/// write clears it.
#[derive(Clone, Default)]
pub struct MessageList(Arc<Inner>, Option<TransformTarget>);

/// What a model's history transform depends on (API, provider, id and image input): a list
/// transformed for one model is transformed for every model with the same target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TransformTarget {
    api: String,
    provider: String,
    id: String,
    input: Vec<String>,
}

impl TransformTarget {
    pub(crate) fn of(model: &Model) -> Self {
        TransformTarget {
            api: model.api.clone(),
            provider: model.provider.clone(),
            id: model.id.clone(),
            input: model.input.clone(),
        }
    }

    /// Whether the transform for `model` is this one.
    pub(crate) fn fits(&self, model: &Model) -> bool {
        self.api == model.api
            && self.provider == model.provider
            && self.id == model.id
            && self.input == model.input
    }
}

impl MessageList {
    /// Records that the messages went through `model`'s history transform, so the provider
    /// takes them as they are instead of transforming them again (DECISIONS §10.8). Only a
    /// caller that ran `transform_messages` (or a `ModelTransform`) for `model` may say so.
    pub fn mark_transformed_for(&mut self, model: &Model) {
        self.1 = Some(TransformTarget::of(model));
    }

    /// Whether the messages already went through `model`'s history transform.
    pub fn is_transformed_for(&self, model: &Model) -> bool {
        self.1.as_ref().is_some_and(|target| target.fits(model))
    }

    /// The list for writing: unshared first (a copy when another holder keeps it). A write
    /// may change what the transform produced, so the mark goes.
    fn inner_mut(&mut self) -> &mut Inner {
        self.1 = None;
        if Arc::get_mut(&mut self.0).is_none() {
            work::add(Work::Copied, self.0.items.len());
        }
        Arc::make_mut(&mut self.0)
    }

    /// Appends one message.
    pub fn push(&mut self, message: Message) {
        self.extend(std::iter::once(message));
    }

    /// Appends messages, folding their estimate points (and, once, those of a list that had
    /// none).
    pub fn extend(&mut self, messages: impl IntoIterator<Item = Message>) {
        let inner = self.inner_mut();
        let from = if inner.points.len() == inner.items.len() {
            inner.items.len()
        } else {
            inner.points.clear();
            0
        };
        inner.items.extend(messages);
        let Inner { items, points } = inner;
        fold_points(points, &items[from..], from);
    }

    /// Keeps the first `len` messages (and their points).
    pub fn truncate(&mut self, len: usize) {
        if len >= self.0.items.len() {
            return;
        }
        let inner = self.inner_mut();
        inner.items.truncate(len);
        inner.points.truncate(len);
    }

    /// The estimate point of every message, when they were folded as the list grew.
    pub(crate) fn points(&self) -> Option<&[EstimatePoint]> {
        let Inner { items, points } = &*self.0;
        (points.len() == items.len() && !points.is_empty()).then_some(points.as_slice())
    }
}

impl std::fmt::Debug for MessageList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("MessageList").field(&self.0.items).finish()
    }
}

impl PartialEq for MessageList {
    fn eq(&self, other: &Self) -> bool {
        self.0.items == other.0.items
    }
}

impl std::ops::Deref for MessageList {
    type Target = Vec<Message>;
    fn deref(&self) -> &Vec<Message> {
        &self.0.items
    }
}

impl std::ops::DerefMut for MessageList {
    /// Any write drops the folded points (they are folded again, once, by the next
    /// [`MessageList::extend`]).
    fn deref_mut(&mut self) -> &mut Vec<Message> {
        let inner = self.inner_mut();
        inner.points.clear();
        &mut inner.items
    }
}

impl From<Vec<Message>> for MessageList {
    fn from(items: Vec<Message>) -> Self {
        MessageList(
            Arc::new(Inner {
                items,
                points: Vec::new(),
            }),
            None,
        )
    }
}

impl FromIterator<Message> for MessageList {
    fn from_iter<I: IntoIterator<Item = Message>>(iter: I) -> Self {
        MessageList::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl<'a> IntoIterator for &'a MessageList {
    type Item = &'a Message;
    type IntoIter = std::slice::Iter<'a, Message>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.items.iter()
    }
}

impl Serialize for MessageList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.items.as_slice().serialize(s)
    }
}

impl<'de> Deserialize<'de> for MessageList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<Message>::deserialize(d).map(MessageList::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Content, UserMessage};
    use crate::work::Tally;

    fn user(ts: i64) -> Message {
        Message::User(UserMessage {
            content: Content::Text("q".into()),
            timestamp: ts.into(),
            extra: Default::default(),
        })
    }

    #[test]
    fn appends_fold_points_and_writes_drop_them() {
        let mut list = MessageList::default();
        list.extend((0..3).map(user));
        assert_eq!(list.points().map(<[_]>::len), Some(3));
        list.truncate(1);
        assert_eq!(list.points().map(<[_]>::len), Some(1));
        list[0] = user(9);
        assert!(list.points().is_none());
        list.push(user(10));
        assert_eq!(list.points().map(<[_]>::len), Some(2));
    }

    #[test]
    fn a_write_copies_only_while_shared() {
        let mut list = MessageList::from(vec![user(1), user(2)]);
        let before = Tally::now();
        list.push(user(3));
        assert_eq!(Tally::now().since(&before).get(Work::Copied), 0);
        let held = list.clone();
        list.push(user(4));
        assert_eq!(Tally::now().since(&before).get(Work::Copied), 3);
        assert_eq!(held.len(), 3);
        assert_eq!(list.len(), 4);
    }
}
