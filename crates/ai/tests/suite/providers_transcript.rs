//! The history transform runs once per request, in the provider (DECISIONS §10.8): a list
//! already transformed for the model is taken as it is, an unmarked one is transformed.

use arbor_ai::providers::build_request;
use arbor_ai::transform::transform_messages;
use arbor_ai::{Message, MessageList, StreamOptions};

use super::providers_common::*;

fn opts() -> StreamOptions {
    StreamOptions::default().with_api_key("sk-ant-test".into())
}

#[test]
fn a_list_marked_as_transformed_is_not_transformed_again() {
    let target = model(
        "anthropic-messages",
        "anthropic",
        "claude-test-4",
        "http://x",
    );
    // A foreign turn (its thinking, its tool-call id) whose call has no result: the transform
    // has work to do (ids, thinking, a synthetic result).
    let foreign = model("openai-responses", "openai", "gpt-test", "http://x");
    let mut context = history_context(&foreign, "sig", "call_1|fc_1");
    let messages: Vec<Message> = context
        .messages
        .iter()
        .filter(|m| !matches!(m, Message::ToolResult(_)))
        .cloned()
        .collect();
    context.messages = messages.clone().into();
    let once = build_request(&target, &context, &opts()).unwrap().body;

    // Transformed by the caller and marked: the same request as the provider's own transform.
    let mut transformed: MessageList = transform_messages(&messages, &target).into();
    transformed.mark_transformed_for(&target);
    assert!(transformed.is_transformed_for(&target));
    context.messages = transformed;
    assert_eq!(
        build_request(&target, &context, &opts()).unwrap().body,
        once
    );

    // The mark is trusted: an untransformed list marked as transformed goes out as it is.
    let mut untransformed: MessageList = messages.clone().into();
    untransformed.mark_transformed_for(&target);
    context.messages = untransformed;
    assert_ne!(
        build_request(&target, &context, &opts()).unwrap().body,
        once
    );

    // A mark for another model, or any write, does not count.
    let mut other: MessageList = messages.clone().into();
    other.mark_transformed_for(&foreign);
    assert!(!other.is_transformed_for(&target));
    let mut written: MessageList = messages.into();
    written.mark_transformed_for(&target);
    written.push(user("more"));
    assert!(!written.is_transformed_for(&target));
}
