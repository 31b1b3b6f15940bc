//! Inline sizes of the values a session holds many of. A long session keeps several copies of
//! every message (the projection cache, the request cache, the provider's transcript), so a
//! field that makes one of these types larger costs that much per message per copy
//! (DECISIONS §22.60). The bounds fail when a large field is inlined again.

use arbor_ai::types::{AssistantMessage, ContentBlock, Extra, Message, Usage};
use arbor_session::message::AgentMessage;
use arbor_session::{EntryKind, SessionEntry};

#[test]
fn values_held_per_message_stay_small() {
    let sizes = [
        ("Extra", std::mem::size_of::<Extra>(), 8),
        ("Usage", std::mem::size_of::<Usage>(), 200),
        ("ContentBlock", std::mem::size_of::<ContentBlock>(), 200),
        (
            "AssistantMessage",
            std::mem::size_of::<AssistantMessage>(),
            460,
        ),
        ("Message", std::mem::size_of::<Message>(), 460),
        ("AgentMessage", std::mem::size_of::<AgentMessage>(), 460),
        ("EntryKind", std::mem::size_of::<EntryKind>(), 440),
        ("SessionEntry", std::mem::size_of::<SessionEntry>(), 512),
    ];
    let report: Vec<String> = sizes
        .iter()
        .map(|(name, size, bound)| format!("{name} {size} B (bound {bound})"))
        .collect();
    println!("{}", report.join("\n"));
    for (name, size, bound) in sizes {
        assert!(
            size <= bound,
            "{name} is {size} bytes, above {bound}:\n{}",
            report.join("\n")
        );
    }
}
