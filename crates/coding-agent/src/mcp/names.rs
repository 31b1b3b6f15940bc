//! The names MCP tools get in front of the model: `mcp__<server>__<tool>`, every character other
//! than ASCII letters, digits and `_` replaced by `_` (pi's rule, DECISIONS §33.3). When two
//! tools of one server end up with the same name, each of them gets a short hash of its
//! original name, so no tool shadows another.

use sha2::{Digest, Sha256};

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The model-facing names of one server's tools, in the order given.
pub fn tool_names(server: &str, tools: &[String]) -> Vec<String> {
    let prefix = format!("mcp__{}__", sanitize(server));
    let plain: Vec<String> = tools
        .iter()
        .map(|t| format!("{prefix}{}", sanitize(t)))
        .collect();
    plain
        .iter()
        .zip(tools)
        .map(|(name, original)| {
            if plain.iter().filter(|n| *n == name).count() > 1 {
                let digest = Sha256::digest(original.as_bytes());
                let hash: String = digest.iter().take(3).map(|b| format!("{b:02x}")).collect();
                format!("{name}_{hash}")
            } else {
                name.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_sanitized_and_collisions_get_hashes() {
        let names = tool_names(
            "dev-radius",
            &["echo".into(), "get.item".into(), "get-item".into()],
        );
        assert_eq!(names[0], "mcp__dev_radius__echo");
        assert!(names[1].starts_with("mcp__dev_radius__get_item_"));
        assert!(names[2].starts_with("mcp__dev_radius__get_item_"));
        assert_ne!(names[1], names[2]);
        assert_eq!(names[1].len(), "mcp__dev_radius__get_item_".len() + 6);
    }
}
