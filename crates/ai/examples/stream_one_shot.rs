//! One streamed answer from a model, printed as it arrives.
//!
//! `cargo run -p arbor-ai --example stream_one_shot -- "Name three rivers."` answers from the
//! scripted faux provider (offline, no key). With `ARBOR_EXAMPLE_MODEL=anthropic/claude-sonnet-4-5`
//! (any "provider/id" of the built-in catalogue) it asks that model instead, with the key from the
//! provider's environment variable (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...).

use std::sync::Arc;

use arbor_ai::faux::{FauxProvider, FauxResponse};
use arbor_ai::{
    register_api_provider, stream, AssistantMessageEvent, Context, Message, ModelRegistry,
    StreamOptions,
};
use futures::StreamExt;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let prompt = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "Name three rivers.".into());

    let model = match std::env::var("ARBOR_EXAMPLE_MODEL") {
        Ok(name) => ModelRegistry::builtin()?.find(&name)?.clone(),
        Err(_) => {
            // The faux provider plays back what it was given, like a real stream.
            let faux = FauxProvider::new();
            faux.push(FauxResponse::text("The Nile, the Amazon and the Danube."));
            register_api_provider(faux.api(), Arc::new(faux.clone()));
            faux.model()
        }
    };

    let context = Context {
        system_prompt: Some("You are terse.".into()),
        messages: vec![Message::user(prompt, 0)].into(),
        tools: None,
    };
    // No api_key: the provider's environment variable is used (none is needed for faux).
    let mut events = stream(&model, &context, StreamOptions::default());
    while let Some(event) = events.next().await {
        match event {
            AssistantMessageEvent::TextDelta { delta, .. } => print!("{delta}"),
            AssistantMessageEvent::Done { message, .. } => {
                println!(
                    "\n[{} input / {} output tokens]",
                    message.usage.input, message.usage.output
                );
            }
            AssistantMessageEvent::Error { error, .. } => {
                // Failures arrive as one final event, never as a panic or an Err.
                eprintln!("\nerror: {}", error.error_message.unwrap_or_default());
                std::process::exit(1);
            }
            _ => {}
        }
    }
    Ok(())
}
