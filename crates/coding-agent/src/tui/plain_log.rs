//! A plain-text transcript the shell falls back to until `tui::transcript` (the rich widget:
//! markdown, diffs, collapsible thinking and tool output) is merged in. It shows user,
//! assistant, tool and notice lines as plain wrapped text, streams text deltas, and scrolls.

use arbor_agent::agent::AgentEvent;
use arbor_agent::message::AgentMessage;
use arbor_ai::{AssistantMessageEvent, Message};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use super::theme::Theme;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    User,
    Assistant,
    Tool,
    Notice,
    Error,
}

/// The transcript as blocks of text.
#[derive(Debug)]
pub struct PlainLog {
    theme: Theme,
    blocks: Vec<(Kind, String)>,
    /// Index of the assistant block receiving deltas.
    streaming: Option<usize>,
    /// Lines scrolled up from the bottom.
    scroll: usize,
}

impl PlainLog {
    pub fn new(theme: Theme) -> Self {
        Self {
            theme,
            blocks: Vec::new(),
            streaming: None,
            scroll: 0,
        }
    }

    /// Loads the messages of a resumed session.
    pub fn load(&mut self, messages: &[AgentMessage]) {
        for m in messages {
            self.message(m);
        }
    }

    fn message(&mut self, m: &AgentMessage) {
        match m {
            AgentMessage::Llm(Message::User(u)) => {
                self.blocks.push((Kind::User, u.content.joined_text("")));
            }
            AgentMessage::Llm(Message::Assistant(a)) => {
                let t = a.text();
                if !t.is_empty() {
                    self.blocks.push((Kind::Assistant, t));
                }
                if let Some(e) = &a.error_message {
                    self.blocks.push((Kind::Error, e.clone()));
                }
            }
            AgentMessage::BashExecution(b) => {
                self.blocks
                    .push((Kind::Tool, format!("$ {}\n{}", b.command, b.output)));
            }
            _ => {}
        }
    }

    pub fn notice(&mut self, text: &str) {
        self.blocks.push((Kind::Notice, text.to_owned()));
    }

    pub fn error(&mut self, text: &str) {
        self.blocks.push((Kind::Error, text.to_owned()));
    }

    pub fn apply(&mut self, e: &AgentEvent) {
        match e {
            AgentEvent::MessageStart { message } => match message {
                AgentMessage::Llm(Message::Assistant(_)) => {
                    self.blocks.push((Kind::Assistant, String::new()));
                    self.streaming = Some(self.blocks.len() - 1);
                }
                AgentMessage::Llm(Message::ToolResult(_)) => {}
                other => self.message(other),
            },
            AgentEvent::MessageUpdate {
                assistant_message_event: AssistantMessageEvent::TextDelta { delta, .. },
            } => {
                if let Some(i) = self.streaming {
                    self.blocks[i].1.push_str(delta);
                }
            }
            AgentEvent::MessageEnd {
                message: AgentMessage::Llm(Message::Assistant(a)),
            } => {
                if let Some(i) = self.streaming.take() {
                    self.blocks[i].1 = a.text();
                    if self.blocks[i].1.is_empty() {
                        self.blocks.remove(i);
                    }
                }
                if let Some(err) = &a.error_message {
                    self.blocks.push((Kind::Error, err.clone()));
                }
            }
            AgentEvent::ToolExecutionStart {
                tool_name, args, ..
            } => {
                self.blocks
                    .push((Kind::Tool, format!("{tool_name} {args}")));
            }
            AgentEvent::ToolExecutionEnd {
                result, is_error, ..
            } => {
                let text: String = result.content.iter().filter_map(|b| b.as_text()).collect();
                let short: Vec<&str> = text.lines().take(5).collect();
                let kind = if *is_error { Kind::Error } else { Kind::Tool };
                self.blocks.push((kind, short.join("\n")));
            }
            AgentEvent::SessionCompact { .. } => self.notice("[compacted]"),
            AgentEvent::SessionTree {
                summary_entry: Some(_),
                ..
            } => self.notice("[branch summary]"),
            _ => {}
        }
    }

    pub fn scroll_lines(&mut self, n: i32) {
        if n < 0 {
            self.scroll = self.scroll.saturating_add(n.unsigned_abs() as usize);
        } else {
            self.scroll = self.scroll.saturating_sub(n as usize);
        }
    }

    pub fn scroll_bottom(&mut self) {
        self.scroll = 0;
    }

    pub fn clear(&mut self) {
        self.blocks.clear();
        self.streaming = None;
        self.scroll = 0;
    }

    fn style(&self, k: Kind) -> (Style, &'static str) {
        match k {
            Kind::User => (self.theme.user, "› "),
            Kind::Assistant => (self.theme.assistant, ""),
            Kind::Tool => (self.theme.tool, "  "),
            Kind::Notice => (self.theme.dim, ""),
            Kind::Error => (self.theme.error, "! "),
        }
    }

    /// Draws the bottom of the transcript (minus the scroll offset). Only the last blocks that
    /// can be visible are laid out.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer) {
        if area.height == 0 || area.width == 0 {
            return;
        }
        let width = usize::from(area.width);
        let need = usize::from(area.height) + self.scroll;
        let mut lines: Vec<Line> = Vec::new();
        let mut rows = 0usize;
        for (kind, text) in self.blocks.iter().rev() {
            let (style, prefix) = self.style(*kind);
            let mut block: Vec<Line> = Vec::new();
            for (i, l) in text.split('\n').enumerate() {
                let p = if i == 0 { prefix } else { "  " };
                let p = if prefix.is_empty() { "" } else { p };
                rows += (p.len() + unicode_width::UnicodeWidthStr::width(l))
                    .div_ceil(width)
                    .max(1);
                block.push(Line::from(vec![
                    Span::styled(p.to_owned(), style),
                    Span::styled(l.to_owned(), style),
                ]));
            }
            block.push(Line::default());
            rows += 1;
            block.extend(lines);
            lines = block;
            if rows >= need {
                break;
            }
        }
        let max_scroll = rows.saturating_sub(usize::from(area.height));
        self.scroll = self.scroll.min(max_scroll);
        let top = rows.saturating_sub(usize::from(area.height) + self.scroll);
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((u16::try_from(top).unwrap_or(u16::MAX), 0))
            .render(area, buf);
    }
}
