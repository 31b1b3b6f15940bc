//! Cost of a reply from the model's per-million prices (tiers, one-hour cache writes).

use crate::json::Num;
use crate::types::{Model, Usage};

/// Fills `usage.cost` from the model's per-million prices. When the prompt (input + cache
/// read + cache write) exceeds a tier's `inputTokensAbove`, the whole request is priced at the
/// highest such tier. One-hour cache writes cost twice the input price.
pub fn calculate_cost(model: &Model, usage: &mut Usage) {
    let prompt_tokens = usage.input + usage.cache_read + usage.cache_write;
    let base = &model.cost;
    let (mut input, mut output, mut cache_read, mut cache_write) =
        (base.input, base.output, base.cache_read, base.cache_write);
    let mut threshold: Option<u64> = None;
    for tier in base.tiers.iter().flatten() {
        let above = tier.input_tokens_above;
        if prompt_tokens > above && threshold.is_none_or(|t| above > t) {
            threshold = Some(above);
            (input, output, cache_read, cache_write) =
                (tier.input, tier.output, tier.cache_read, tier.cache_write);
        }
    }
    let long_write = usage.cache_write_1h.unwrap_or(0).min(usage.cache_write);
    let short_write = usage.cache_write - long_write;
    let c_input = input / 1e6 * usage.input as f64;
    let c_output = output / 1e6 * usage.output as f64;
    let c_read = cache_read / 1e6 * usage.cache_read as f64;
    let c_write = (cache_write * short_write as f64 + input * 2.0 * long_write as f64) / 1e6;
    let cost = &mut usage.cost;
    cost.input = Num::new(c_input);
    cost.output = Num::new(c_output);
    cost.cache_read = Num::new(c_read);
    cost.cache_write = Num::new(c_write);
    cost.total = Num::new(c_input + c_output + c_read + c_write);
    cost.total_from_provider = Some(false);
}
