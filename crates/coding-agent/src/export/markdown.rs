//! Markdown of a message as safe HTML for the export page (DECISIONS §35.2): raw HTML in the
//! text is shown as text, links keep only schemes that cannot run code, and images become
//! links, so an exported page loads nothing from anywhere and runs no script of the session's.

use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

/// Schemes a link in an exported page may keep; anything else (`javascript:`, `data:`,
/// `file:`) loses its link and keeps its text.
fn safe_destination(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    if lower.starts_with('#') {
        return true;
    }
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|scheme| lower.starts_with(scheme))
}

/// Renders `text` as HTML.
pub fn to_html(text: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_GFM;
    // Per open link or image: whether its start was kept (its end must match).
    let mut kept: Vec<bool> = Vec::new();
    let events = Parser::new_ext(text, options).filter_map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            let keep = safe_destination(&dest_url);
            kept.push(keep);
            keep.then_some(Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }))
        }
        Event::Start(Tag::Image {
            dest_url, title, ..
        }) => {
            // Never loaded: a remote image would leave the page, a `data:` one could be
            // anything. A web address stays reachable as a link with the alt text.
            let keep = safe_destination(&dest_url);
            kept.push(keep);
            keep.then_some(Event::Start(Tag::Link {
                link_type: LinkType::Inline,
                dest_url,
                title,
                id: CowStr::Borrowed(""),
            }))
        }
        Event::End(TagEnd::Link | TagEnd::Image) => kept
            .pop()
            .unwrap_or(false)
            .then_some(Event::End(TagEnd::Link)),
        other => Some(other),
    });
    let mut html = String::with_capacity(text.len() + text.len() / 4);
    pulldown_cmark::html::push_html(&mut html, events);
    html
}

#[cfg(test)]
mod tests {
    use super::to_html;

    #[test]
    fn raw_html_is_text() {
        let html = to_html("hi <script>alert(1)</script> <img src=x onerror=alert(2)>");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
    }

    #[test]
    fn html_blocks_are_text() {
        let html = to_html("<div onclick=\"x()\">\nblock\n</div>\n");
        assert!(!html.contains("<div"), "{html}");
        assert!(html.contains("&lt;div onclick=\"x()\"&gt;"), "{html}");
    }

    #[test]
    fn unsafe_links_keep_their_text_only() {
        let html = to_html("[click](javascript:alert(1)) and [site](https://example.org/a?b=1)");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(html.contains("click"), "{html}");
        assert!(
            html.contains("<a href=\"https://example.org/a?b=1\">site</a>"),
            "{html}"
        );
    }

    #[test]
    fn images_become_links_or_text() {
        let html = to_html("![chart](https://example.org/c.png) ![x](data:image/png;base64,AAA)");
        assert!(!html.contains("<img"), "{html}");
        assert!(
            html.contains("<a href=\"https://example.org/c.png\">chart</a>"),
            "{html}"
        );
        assert!(!html.contains("data:image"), "{html}");
        assert!(html.contains('x'), "{html}");
    }

    #[test]
    fn code_and_tables_render() {
        let html = to_html(
            "```rust\nfn main() { let a = 1 < 2; }\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        );
        assert!(
            html.contains("<pre><code class=\"language-rust\">fn main() { let a = 1 &lt; 2; }"),
            "{html}"
        );
        assert!(html.contains("<table>"), "{html}");
    }
}
