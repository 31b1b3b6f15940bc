//! The SSE decoder against `eventsource-stream` 0.2.3 as a test oracle (DECISIONS §9.17).
//!
//! Generated streams mix `\n`, `\r\n` and bare `\r` line ends, comments, `id:`/`retry:` and
//! unknown fields, multi-line data, data-less `event:` blocks, a leading BOM and an unterminated
//! last event, cut into random reads. Both decoders must agree on every event both deliver; the
//! cases where they differ on purpose (eventsource-stream's faults, §9.17) are excluded exactly
//! and each is pinned by its own test below.

use std::convert::Infallible;
use std::time::Instant;

use arbor_ai::stream::sse::{SseDecoder, SseEvent};
use eventsource_stream::EventStream;
use futures::StreamExt;
use proptest::prelude::*;

/// One event as both decoders can express it: (event name, data).
type Ev = (String, String);

/// Our decoder: events delivered while feeding, and those flushed by `finish`.
fn ours(chunks: &[Vec<u8>]) -> (Vec<(Option<String>, String)>, Vec<(Option<String>, String)>) {
    let mut fed = Vec::new();
    let mut dec = SseDecoder::without_raw();
    for c in chunks {
        dec.feed(c, &mut |e: SseEvent<'_>| -> Result<(), Infallible> {
            fed.push((e.event.map(str::to_string), e.data.to_string()));
            Ok(())
        })
        .unwrap();
    }
    let mut flushed = Vec::new();
    dec.finish(&mut |e: SseEvent<'_>| -> Result<(), Infallible> {
        flushed.push((e.event.map(str::to_string), e.data.to_string()));
        Ok(())
    })
    .unwrap();
    (fed, flushed)
}

/// eventsource-stream: its events, and whether it reported an error.
fn theirs(chunks: &[Vec<u8>]) -> (Vec<Ev>, bool) {
    let input = futures::stream::iter(chunks.iter().cloned().map(Ok::<Vec<u8>, Infallible>));
    futures::executor::block_on(async {
        let mut out = Vec::new();
        let mut failed = false;
        let mut stream = EventStream::new(input);
        while let Some(item) = stream.next().await {
            match item {
                Ok(e) => out.push((e.event, e.data)),
                Err(_) => failed = true,
            }
        }
        (out, failed)
    })
}

/// eventsource-stream names an unnamed event `message`; ours leaves the name out.
fn named(event: &(Option<String>, String)) -> Ev {
    let name = match event.0.as_deref() {
        None | Some("") => "message".to_string(),
        Some(n) => n.to_string(),
    };
    (name, event.1.clone())
}

#[derive(Debug, Clone)]
enum Line {
    Event(String),
    Data(String),
    /// `data` without a colon: one empty data line.
    BareData,
    Comment(String),
    Id(String),
    Retry(u32),
    Unknown(String),
}

#[derive(Debug, Clone)]
struct Block {
    lines: Vec<(Line, usize)>,
    /// The line end of the blank line that closes the block.
    end: usize,
}

impl Block {
    fn has_data(&self) -> bool {
        self.lines
            .iter()
            .any(|(l, _)| matches!(l, Line::Data(_) | Line::BareData))
    }
    fn has_event(&self) -> bool {
        self.lines.iter().any(|(l, _)| matches!(l, Line::Event(_)))
    }
    /// What a decoder following the spec's field rules yields for this block.
    fn expected(&self) -> (Option<String>, String) {
        let mut event = None;
        let mut data: Vec<&str> = Vec::new();
        for (line, _) in &self.lines {
            match line {
                Line::Event(e) => event = Some(e.clone()),
                Line::Data(d) => data.push(d),
                Line::BareData => data.push(""),
                _ => {}
            }
        }
        (event, data.join("\n"))
    }
}

const ENDS: [&str; 3] = ["\n", "\r\n", "\r"];

/// Field text: no line breaks; colons, leading spaces and non-ASCII included.
fn text() -> impl Strategy<Value = String> {
    "[ -~éü日本😀]{0,16}"
}

fn line() -> impl Strategy<Value = Line> {
    prop_oneof![
        3 => text().prop_map(Line::Data),
        2 => "[a-z_]{0,8}".prop_map(Line::Event),
        1 => Just(Line::BareData),
        1 => text().prop_map(Line::Comment),
        1 => "[a-z0-9]{0,8}".prop_map(Line::Id),
        1 => any::<u32>().prop_map(Line::Retry),
        1 => text().prop_map(Line::Unknown),
    ]
}

fn block() -> impl Strategy<Value = Block> {
    (
        proptest::collection::vec((line(), 0..3usize), 0..5),
        0..3usize,
    )
        .prop_map(|(lines, end)| Block { lines, end })
}

/// Serializes blocks; `last_open` leaves the last block without its blank line.
fn serialize(blocks: &[Block], last_open: bool) -> String {
    let mut out = String::new();
    let mut prev_cr = false;
    for (i, b) in blocks.iter().enumerate() {
        for (line, end) in &b.lines {
            match line {
                Line::Event(e) => out.push_str(&format!("event: {e}")),
                Line::Data(d) => out.push_str(&format!("data: {d}")),
                Line::BareData => out.push_str("data"),
                Line::Comment(c) => out.push_str(&format!(":{c}")),
                Line::Id(id) => out.push_str(&format!("id: {id}")),
                Line::Retry(r) => out.push_str(&format!("retry: {r}")),
                Line::Unknown(v) => out.push_str(&format!("x-field: {v}")),
            }
            out.push_str(ENDS[*end]);
            prev_cr = *end == 2;
        }
        if last_open && i + 1 == blocks.len() {
            break;
        }
        // A blank line right after a bare `\r` must not start with `\n` (it would complete a
        // `\r\n` pair instead of ending the block).
        let end = if prev_cr { 2 } else { b.end };
        out.push_str(ENDS[end]);
        prev_cr = end == 2;
    }
    out
}

fn cut(bytes: &[u8], cuts: &[prop::sample::Index]) -> Vec<Vec<u8>> {
    let mut offsets: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
    offsets.sort_unstable();
    let mut chunks = Vec::new();
    let mut start = 0;
    for o in offsets {
        chunks.push(bytes[start..o].to_vec());
        start = o;
    }
    chunks.push(bytes[start..].to_vec());
    chunks
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Both decoders agree on every event both deliver, however the stream is cut.
    #[test]
    fn decoder_agrees_with_eventsource_stream(
        blocks in proptest::collection::vec(block(), 1..6),
        last_open in any::<bool>(),
        bom in any::<bool>(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..10),
    ) {
        let body = serialize(&blocks, last_open);
        let mut bytes = Vec::new();
        if bom {
            bytes.extend_from_slice("\u{FEFF}".as_bytes());
        }
        bytes.extend_from_slice(body.as_bytes());
        let chunks = cut(&bytes, &cuts);

        // Ours, against the model: every block with a name or data is delivered, the open
        // last one by `finish`.
        let (fed, flushed) = ours(&chunks);
        let terminated = if last_open { &blocks[..blocks.len() - 1] } else { &blocks[..] };
        let expected_fed: Vec<_> = terminated
            .iter()
            .filter(|b| b.has_event() || b.has_data())
            .map(Block::expected)
            .collect();
        prop_assert_eq!(&fed, &expected_fed);
        let expected_flushed: Vec<_> = blocks
            .last()
            .filter(|b| last_open && (b.has_event() || b.has_data()))
            .map(Block::expected)
            .into_iter()
            .collect();
        prop_assert_eq!(&flushed, &expected_flushed);

        // Theirs, minus the deliberate differences: no BOM (fault 2); data-less blocks are
        // ours only (§9.18); the open last block they never deliver (fault 1).
        let their_chunks = if bom { cut(body.as_bytes(), &cuts) } else { chunks.clone() };
        let (got, failed) = theirs(&their_chunks);
        prop_assert!(!failed);
        // A final bare `\r` never completes the last line for them (fault 4): when that line
        // is the blank one closing the last terminated block, they do not deliver it.
        let open_is_empty = !last_open || blocks.last().is_some_and(|b| b.lines.is_empty());
        let their_terminated = if open_is_empty && body.ends_with('\r') && !terminated.is_empty() {
            terminated.len() - 1
        } else {
            terminated.len()
        };
        let comparable: Vec<Ev> = terminated
            .iter()
            .enumerate()
            .filter(|(_, b)| b.has_event() || b.has_data())
            .zip(&fed)
            .filter(|((i, b), _)| *i < their_terminated && b.has_data())
            .map(|(_, e)| named(e))
            .collect();
        prop_assert_eq!(got, comparable);
    }
}

// --- eventsource-stream's faults, each pinned (DECISIONS §9.17) -------------------------------

#[test]
fn fault_1_trailing_event_at_eof_is_lost_by_eventsource_stream() {
    let chunks = vec![b"data: a\n\ndata: tail".to_vec()];
    let (got, _) = theirs(&chunks);
    assert_eq!(got, vec![("message".to_string(), "a".to_string())]);
    let (fed, flushed) = ours(&chunks);
    assert_eq!(fed, vec![(None, "a".to_string())]);
    assert_eq!(flushed, vec![(None, "tail".to_string())]);
}

#[test]
fn fault_2_leading_bom_panics_eventsource_stream() {
    let chunks = vec!["\u{FEFF}data: a\n\n".as_bytes().to_vec()];
    let outcome = std::panic::catch_unwind(|| theirs(&chunks));
    assert!(
        outcome.is_err(),
        "eventsource-stream 0.2.3 slices into the BOM"
    );
    assert_eq!(ours(&chunks).0, vec![(None, "a".to_string())]);
}

#[test]
fn fault_3_one_invalid_utf8_byte_stops_eventsource_stream() {
    let chunks = vec![b"data: \xff\n\ndata: b\n\n".to_vec()];
    let (got, failed) = theirs(&chunks);
    assert!(failed);
    assert!(got.is_empty(), "nothing after the bad byte: {got:?}");
    assert_eq!(
        ours(&chunks).0,
        vec![(None, "\u{FFFD}".to_string()), (None, "b".to_string())]
    );
}

#[test]
fn fault_4_bare_cr_at_eof_loses_the_last_event_in_eventsource_stream() {
    // Its parser waits for the byte after a final `\r` (it could start a `\r\n`), which never
    // comes, so the closing blank line is never seen.
    let chunks = vec![b"data: a\r\rdata: b\r\r".to_vec()];
    let (got, failed) = theirs(&chunks);
    assert!(!failed);
    assert_eq!(got, vec![("message".to_string(), "a".to_string())]);
    assert_eq!(
        ours(&chunks).0,
        vec![(None, "a".to_string()), (None, "b".to_string())]
    );
}

/// DECISIONS §9.18: a block with an `event:` line and no `data:` line is delivered with empty
/// data (as the Anthropic SDK's decoder does); the spec's `EventSource` (and eventsource-stream) drop
/// it. Blocks with only comments, `id:` or `retry:` are never delivered.
#[test]
fn dataless_event_block_yields_the_name_with_empty_data() {
    let chunks = vec![b"event: ping\n\nid: 7\nretry: 10\n: c\n\nevent: a\ndata: 1\n\n".to_vec()];
    assert_eq!(
        ours(&chunks).0,
        vec![
            (Some("ping".to_string()), String::new()),
            (Some("a".to_string()), "1".to_string())
        ]
    );
    assert_eq!(theirs(&chunks).0, vec![("a".to_string(), "1".to_string())]);
}

/// Measures both decoders on one 1 MiB `data:` line read in 1 KiB pieces (fault 5). Run with
/// `cargo test -p arbor-ai --test all sse_oracle::long_line -- --ignored --nocapture`.
#[test]
#[ignore = "timing measurement, not a check"]
fn long_line_timing() {
    let mut body = b"data: ".to_vec();
    body.extend(std::iter::repeat_n(b'x', 1 << 20));
    body.extend_from_slice(b"\n\n");
    let chunks: Vec<Vec<u8>> = body.chunks(1024).map(<[u8]>::to_vec).collect();
    let t = Instant::now();
    let (fed, _) = ours(&chunks);
    let ours_time = t.elapsed();
    let t = Instant::now();
    let (got, _) = theirs(&chunks);
    let theirs_time = t.elapsed();
    assert_eq!(fed[0].1.len(), 1 << 20);
    assert_eq!(got[0].1.len(), 1 << 20);
    println!("1 MiB line in 1 KiB reads: arbor {ours_time:?}, eventsource-stream {theirs_time:?}");
}
