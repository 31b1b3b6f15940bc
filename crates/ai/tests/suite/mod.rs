mod providers_anthropic;
mod providers_common;
mod providers_google;
mod providers_openai_completions;
mod providers_openai_responses;
mod providers_pi_fixture;
mod providers_simple;
mod providers_stream;
