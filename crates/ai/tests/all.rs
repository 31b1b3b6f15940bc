// `cfg(test)` lets clippy apply the allow-unwrap/expect-in-tests settings to the helpers too.
#[cfg(test)]
mod suite;
