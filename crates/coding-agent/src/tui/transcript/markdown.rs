//! Assistant markdown (pulldown-cmark) to styled, wrapped lines. The markup that carries
//! structure stays visible as text (`#` before headings, list markers, `│` before quotes, code
//! fences with their language) so the output reads the same without colour (DECISIONS §23.42).

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::wrap::{str_width, Mode, Wrapper};
use crate::tui::theme::Theme;

/// A block that prefixes the lines inside it.
enum Container {
    /// `start`: lines written before the quote began (its first block needs no gap).
    Quote {
        start: usize,
    },
    List {
        next: Option<u64>,
    },
    Item {
        marker: String,
        used: bool,
    },
}

struct Table {
    rows: Vec<Vec<Vec<Span<'static>>>>,
    header_rows: usize,
}

struct Renderer<'t> {
    theme: &'t Theme,
    width: usize,
    base: Style,
    out: Vec<Line<'static>>,
    inline: Vec<Span<'static>>,
    styles: Vec<Style>,
    containers: Vec<Container>,
    code: Option<(String, String)>,
    links: Vec<(String, usize)>,
    table: Option<Table>,
}

/// Renders `text` as markdown into lines of at most `width` cells, `base` being the style of
/// plain text.
pub(crate) fn render(text: &str, width: usize, theme: &Theme, base: Style) -> Vec<Line<'static>> {
    let mut r = Renderer {
        theme,
        width,
        base,
        out: Vec::new(),
        inline: Vec::new(),
        styles: vec![base],
        containers: Vec::new(),
        code: None,
        links: Vec::new(),
        table: None,
    };
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        r.event(event);
    }
    r.flush();
    r.out
}

impl Renderer<'_> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or(self.base)
    }

    fn push_style(&mut self, patch: Style) {
        let s = self.style().patch(patch);
        self.styles.push(s);
    }

    fn pop_style(&mut self) {
        if self.styles.len() > 1 {
            self.styles.pop();
        }
    }

    fn text(&mut self, text: &str, style: Style) {
        if let Some(table) = &mut self.table {
            if let Some(cell) = table.rows.last_mut().and_then(|r| r.last_mut()) {
                cell.push(Span::styled(text.to_owned(), style));
            }
            return;
        }
        self.inline.push(Span::styled(text.to_owned(), style));
    }

    /// The prefixes of the next block's first and following lines.
    fn prefixes(&mut self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = Vec::new();
        let mut rest = Vec::new();
        let quote = Span::styled("│ ", self.theme.dim);
        for c in &mut self.containers {
            match c {
                Container::Quote { .. } => {
                    first.push(quote.clone());
                    rest.push(quote.clone());
                }
                Container::List { .. } => {}
                Container::Item { marker, used } => {
                    let pad = " ".repeat(str_width(marker));
                    if *used {
                        first.push(Span::raw(pad.clone()));
                    } else {
                        first.push(Span::styled(marker.clone(), self.theme.accent));
                        *used = true;
                    }
                    rest.push(Span::raw(pad));
                }
            }
        }
        (first, rest)
    }

    /// Starts a block: a blank line separates it from what came before, except at the start of
    /// a list item and for a list nested right under its item's text.
    fn gap(&mut self, nested_list: bool) {
        if self.out.is_empty() {
            return;
        }
        match self.containers.last() {
            Some(Container::Quote { start }) if *start == self.out.len() => return,
            Some(Container::Item { used: false, .. }) => return,
            Some(Container::Item { .. }) if nested_list => return,
            _ => {}
        }
        let bars: Vec<Span<'static>> = self
            .containers
            .iter()
            .filter(|c| matches!(c, Container::Quote { .. }))
            .map(|_| Span::styled("│", self.theme.dim))
            .collect();
        self.out.push(Line::from(bars));
    }

    /// Writes the collected inline text as one wrapped block.
    fn flush(&mut self) {
        if self.inline.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.inline);
        let (first, rest) = self.prefixes();
        let mut w = Wrapper::new(self.width, &first, &rest, Mode::Words, &mut self.out);
        for s in &spans {
            w.push(&s.content, s.style);
        }
        w.finish();
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => {
                if let Some((_, code)) = &mut self.code {
                    code.push_str(&t);
                } else {
                    let s = self.style();
                    self.text(&t, s);
                }
            }
            Event::Code(t) => {
                let s = self.style().patch(self.theme.code);
                if self.theme.color {
                    self.text(&t, s);
                } else {
                    self.text(&format!("`{t}`"), s);
                }
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                let s = self.style().patch(self.theme.code);
                self.text(&t, s);
            }
            // Block HTML keeps its line breaks (the trailing one ends the block).
            Event::Html(t) => {
                let s = self.theme.dim;
                self.text(&t, s);
            }
            Event::InlineHtml(t) => {
                let s = self.style();
                self.text(&t, s);
            }
            Event::SoftBreak => {
                let s = self.style();
                self.text(" ", s);
            }
            Event::HardBreak => {
                let s = self.style();
                self.text("\n", s);
            }
            Event::Rule => {
                self.flush();
                self.gap(false);
                let (first, _) = self.prefixes();
                let used: usize = first.iter().map(|s| str_width(&s.content)).sum();
                let mut spans = first;
                spans.push(Span::styled(
                    "─".repeat(self.width.saturating_sub(used).max(1)),
                    self.theme.dim,
                ));
                self.out.push(Line::from(spans));
            }
            Event::FootnoteReference(name) => {
                let s = self.style();
                self.text(&format!("[^{name}]"), s);
            }
            Event::TaskListMarker(done) => {
                let s = self.theme.accent;
                self.text(if done { "[x] " } else { "[ ] " }, s);
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock => {
                self.flush();
                self.gap(false);
            }
            Tag::Heading { level, .. } => {
                self.flush();
                self.gap(false);
                let n = match level {
                    HeadingLevel::H1 => 1,
                    HeadingLevel::H2 => 2,
                    HeadingLevel::H3 => 3,
                    HeadingLevel::H4 => 4,
                    HeadingLevel::H5 => 5,
                    HeadingLevel::H6 => 6,
                };
                self.push_style(self.theme.heading);
                let s = self.style();
                self.text(&format!("{} ", "#".repeat(n)), s);
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.gap(false);
                let start = self.out.len();
                self.containers.push(Container::Quote { start });
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                self.gap(false);
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                self.flush();
                self.gap(true);
                self.containers.push(Container::List { next: start });
            }
            Tag::Item => {
                self.flush();
                let marker = match self.containers.last_mut() {
                    Some(Container::List { next: Some(n) }) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "- ".to_owned(),
                };
                self.containers.push(Container::Item {
                    marker,
                    used: false,
                });
            }
            Tag::Emphasis => self.push_style(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => {
                self.push_style(Style::new().add_modifier(Modifier::CROSSED_OUT));
            }
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.push_style(self.theme.link);
                let at = self.inline.len();
                self.links.push((dest_url.into_string(), at));
            }
            Tag::Table(_) => {
                self.flush();
                self.gap(false);
                self.table = Some(Table {
                    rows: Vec::new(),
                    header_rows: 0,
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(t) = &mut self.table {
                    t.rows.push(Vec::new());
                }
            }
            Tag::TableCell => {
                if let Some(row) = self.table.as_mut().and_then(|t| t.rows.last_mut()) {
                    row.push(Vec::new());
                }
            }
            Tag::FootnoteDefinition(name) => {
                self.flush();
                self.gap(false);
                let s = self.theme.dim;
                self.text(&format!("[^{name}]: "), s);
            }
            Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::Superscript
            | Tag::Subscript
            | Tag::MetadataBlock(_) => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::HtmlBlock => {
                if let Some(last) = self.inline.last_mut() {
                    let kept = last.content.trim_end_matches('\n').len();
                    last.content.to_mut().truncate(kept);
                }
                self.flush();
            }
            TagEnd::Paragraph | TagEnd::FootnoteDefinition => self.flush(),
            TagEnd::Heading(_) => {
                self.flush();
                self.pop_style();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    self.code_block(&lang, &code);
                }
            }
            TagEnd::List(_) | TagEnd::Item => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => self.pop_style(),
            TagEnd::Link | TagEnd::Image => {
                self.pop_style();
                if let Some((dest, at)) = self.links.pop() {
                    let shown: String = self.inline[at.min(self.inline.len())..]
                        .iter()
                        .map(|s| s.content.as_ref())
                        .collect();
                    if !dest.is_empty() && shown != dest && format!("mailto:{shown}") != dest {
                        let s = self.theme.dim;
                        self.text(&format!(" ({dest})"), s);
                    }
                }
            }
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    t.header_rows = t.rows.len();
                }
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.table_block(t);
                }
            }
            _ => {}
        }
    }

    fn code_block(&mut self, lang: &str, code: &str) {
        let (first, rest) = self.prefixes();
        let fence = |p: &[Span<'static>], text: String, style: Style| {
            let mut spans = p.to_vec();
            spans.push(Span::styled(text, style));
            Line::from(spans)
        };
        self.out
            .push(fence(&first, format!("```{lang}"), self.theme.dim));
        let code = code.strip_suffix('\n').unwrap_or(code);
        for line in code.split('\n') {
            let mut w = Wrapper::new(self.width, &rest, &rest, Mode::Chars, &mut self.out);
            w.push(line, self.theme.code);
            w.finish();
        }
        self.out
            .push(fence(&rest, "```".to_owned(), self.theme.dim));
    }

    fn table_block(&mut self, table: Table) {
        let cols = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0usize; cols];
        for row in &table.rows {
            for (i, cell) in row.iter().enumerate() {
                let w: usize = cell.iter().map(|s| str_width(&s.content)).sum();
                widths[i] = widths[i].max(w);
            }
        }
        let (first, rest) = self.prefixes();
        let sep = Span::styled(" │ ", self.theme.dim);
        for (r, row) in table.rows.iter().enumerate() {
            let prefix = if r == 0 { &first } else { &rest };
            let mut w = Wrapper::new(self.width, prefix, &rest, Mode::Chars, &mut self.out);
            for (i, width) in widths.iter().enumerate() {
                if i > 0 {
                    w.push(&sep.content, sep.style);
                }
                let cell = row.get(i).map(Vec::as_slice).unwrap_or(&[]);
                let mut used = 0;
                for s in cell {
                    let style = if r < table.header_rows {
                        s.style.add_modifier(Modifier::BOLD)
                    } else {
                        s.style
                    };
                    w.push(&s.content, style);
                    used += str_width(&s.content);
                }
                if i + 1 < cols {
                    w.push(&" ".repeat(width.saturating_sub(used)), self.base);
                }
            }
            w.finish();
            if r + 1 == table.header_rows {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                let mut spans = rest.clone();
                spans.push(Span::styled(rule.join("─┼─"), self.theme.dim));
                self.out.push(Line::from(spans));
            }
        }
    }
}
