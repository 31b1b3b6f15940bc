//! One worker pool whose results come back in order (DECISIONS §25.112).
//!
//! Rows and the rendered context depend on one line or entry each, so a long log is cut into
//! chunks made on one worker per core, each worker reading through a line source of its own,
//! while the calling thread takes the chunks back in log order.

use crate::error::{Result, SessionError};
use crate::index::LineSource;

/// Lines per unit of work in [`ordered_rows`]: a few MB of a typical log, enough that a
/// worker's reads stay sequential through its window and the hand-over costs nothing.
const ROWS_CHUNK: usize = 8192;

/// Runs `one` over lines `0..n` and hands the results to `visit` in order (DECISIONS §25.112).
/// A row depends on its own line only, so on a large log the lines are summarized by one worker
/// per core, chunk by chunk, each through its own source (`make_src`), while the calling
/// thread puts the chunks back in order and visits them; a small log, or a machine with one
/// core, is read on the calling thread. The first failing line in log order is the error,
/// as in a sequential read, and no row after it is visited.
pub(crate) fn ordered_rows<S: LineSource, T: Send>(
    n: usize,
    make_src: &(dyn Fn() -> S + Sync),
    one: &(dyn Fn(&S, usize) -> Result<T> + Sync),
    visit: &mut dyn FnMut(T),
) -> Result<()> {
    ordered_rows_on(cores(), ROWS_CHUNK, n, make_src, one, visit)
}

pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// [`ordered_rows`] with the worker count and chunk size given (tests force several workers
/// on any machine).
pub(crate) fn ordered_rows_on<S: LineSource, T: Send>(
    cores: usize,
    chunk: usize,
    n: usize,
    make_src: &(dyn Fn() -> S + Sync),
    one: &(dyn Fn(&S, usize) -> Result<T> + Sync),
    visit: &mut dyn FnMut(T),
) -> Result<()> {
    let workers = cores.min(n / chunk.max(1));
    if workers < 2 {
        let src = make_src();
        for ix in 0..n {
            visit(one(&src, ix)?);
        }
        return Ok(());
    }
    let chunks = n.div_ceil(chunk);
    in_chunk_order(
        workers,
        chunks,
        make_src,
        &|src, c| {
            let lines = c * chunk..((c + 1) * chunk).min(n);
            let rows = lines.map(|ix| one(src, ix)).collect::<Result<Vec<_>>>();
            let failed = rows.is_err();
            (rows, failed)
        },
        &mut |rows| {
            for row in rows? {
                visit(row);
            }
            Ok(())
        },
        "reading row summaries",
    )
}

/// The worker pool of [`ordered_rows_on`] and [`ordered_chunks_on`]: chunk `c` of `0..chunks`
/// is made by `make(src, c)` on one of `workers` scoped threads, each with its own source from
/// `make_src`, and `take` gets the results on the calling thread in chunk order. A result
/// `make` marks as failed stops the workers from starting more chunks; an error from `take`
/// stops everything and is returned. Workers run at most a few chunks ahead (a bounded
/// channel), and the receiver lives in the scope, so returning early also frees a worker
/// waiting on a full channel before the scope waits for it.
pub(crate) fn in_chunk_order<S, T: Send>(
    workers: usize,
    chunks: usize,
    make_src: &(dyn Fn() -> S + Sync),
    make: &(dyn Fn(&S, usize) -> (T, bool) + Sync),
    take: &mut dyn FnMut(T) -> Result<()>,
    what: &str,
) -> Result<()> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let stop = || next.store(chunks, std::sync::atomic::Ordering::Relaxed);
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, T)>(workers * 2);
        for _ in 0..workers {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || {
                let src = make_src();
                loop {
                    let c = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if c >= chunks {
                        return;
                    }
                    let (made, failed) = make(&src, c);
                    // A closed channel means the caller stopped at an earlier chunk.
                    if tx.send((c, made)).is_err() || failed {
                        // No later chunk matters once one failed.
                        stop();
                        return;
                    }
                }
            });
        }
        drop(tx);
        let mut waiting: std::collections::BTreeMap<usize, T> = Default::default();
        for want in 0..chunks {
            let made = loop {
                if let Some(made) = waiting.remove(&want) {
                    break made;
                }
                match rx.recv() {
                    Ok((c, made)) => {
                        waiting.insert(c, made);
                    }
                    Err(_) => {
                        return Err(SessionError::Storage(format!(
                            "{what}: chunk {want} of {chunks} was never made"
                        )))
                    }
                }
            };
            if let Err(e) = take(made) {
                stop();
                return Err(e);
            }
        }
        Ok(())
    })
}

/// Renders the entries `range` of a list through a source into a buffer.
pub(crate) type RenderChunk<'a, S> =
    dyn Fn(&S, std::ops::Range<usize>, &mut Vec<u8>) -> Result<()> + Sync + 'a;

/// Runs `run` over `0..n` in chunks of `chunk` and hands each chunk's bytes to `out` in order:
/// on one worker per core for more than one chunk and core, else on the calling thread. A
/// chunk that fails hands over the bytes it made before failing, then its error is returned;
/// a failing `out` is returned as it is; either way no later chunk reaches `out`.
pub(crate) fn ordered_chunks_on<S: LineSource>(
    cores: usize,
    chunk: usize,
    n: usize,
    make_src: &(dyn Fn() -> S + Sync),
    run: &RenderChunk<'_, S>,
    out: &mut (dyn FnMut(&[u8]) -> Result<()> + Send),
) -> Result<()> {
    let chunk = chunk.max(1);
    let chunks = n.div_ceil(chunk);
    let range = |c: usize| c * chunk..((c + 1) * chunk).min(n);
    let workers = cores.min(chunks);
    if workers < 2 {
        let src = make_src();
        let mut buf = Vec::new();
        for c in 0..chunks {
            buf.clear();
            let ran = run(&src, range(c), &mut buf);
            out(&buf)?;
            ran?;
        }
        return Ok(());
    }
    in_chunk_order(
        workers,
        chunks,
        make_src,
        &|src, c| {
            let mut buf = Vec::new();
            let ran = run(src, range(c), &mut buf);
            let failed = ran.is_err();
            ((buf, ran), failed)
        },
        &mut |(buf, ran)| out(&buf).and(ran),
        "rendering the context",
    )
}

#[cfg(test)]
mod tests {
    use super::ordered_rows_on;
    use crate::error::SessionError;
    use crate::index::MemSource;

    fn run(cores: usize, n: usize, fail: &[usize]) -> (Vec<usize>, Option<String>) {
        let mut seen = Vec::new();
        let r = ordered_rows_on(
            cores,
            7,
            n,
            &|| MemSource,
            &|_, i| {
                if fail.contains(&i) {
                    Err(SessionError::Storage(format!("line {i}")))
                } else {
                    Ok(i)
                }
            },
            &mut |i| seen.push(i),
        );
        (seen, r.err().map(|e| e.to_string()))
    }

    /// Every worker count visits every line once, in order.
    #[test]
    fn rows_come_back_in_log_order() {
        for cores in [1, 2, 3, 8] {
            for n in [0, 1, 6, 7, 8, 13, 14, 15, 500] {
                let (seen, err) = run(cores, n, &[]);
                assert_eq!(err, None);
                assert_eq!(seen, (0..n).collect::<Vec<_>>(), "cores {cores}, n {n}");
            }
        }
    }

    /// The first failing line in log order is the error, and nothing after it is visited, as
    /// in a sequential read, whichever worker fails first in time.
    #[test]
    fn the_first_failing_line_wins() {
        for cores in [1, 2, 4] {
            let (seen, err) = run(cores, 500, &[480, 123, 300]);
            assert!(
                err.as_deref().is_some_and(|e| e.contains("line 123")),
                "{err:?}"
            );
            // Lines before the failing one's chunk are all visited, and nothing past it.
            assert!(seen.len() <= 123 && seen.len() >= 119, "{}", seen.len());
            assert_eq!(seen, (0..seen.len()).collect::<Vec<_>>());
        }
    }

    /// [`super::ordered_chunks_on`] with chunks of 4 over `0..n`: each index rendered as one
    /// byte, `fail` failing in `run` and `out_fails` failing in `out` (at that many calls).
    fn chunks(
        cores: usize,
        n: usize,
        fail: Option<usize>,
        out_fails: Option<usize>,
    ) -> (Vec<u8>, usize, Option<String>) {
        let mut got = Vec::new();
        let mut calls = 0;
        let r = super::ordered_chunks_on(
            cores,
            4,
            n,
            &|| MemSource,
            &|_, range, buf| {
                for i in range {
                    if Some(i) == fail {
                        return Err(SessionError::Storage(format!("entry {i}")));
                    }
                    buf.push(i as u8);
                }
                Ok(())
            },
            &mut |bytes| {
                calls += 1;
                if Some(calls) == out_fails {
                    return Err(SessionError::Storage("out".into()));
                }
                got.extend_from_slice(bytes);
                Ok(())
            },
        );
        (got, calls, r.err().map(|e| e.to_string()))
    }

    /// Chunks reach `out` in order on any worker count; a failing entry's chunk hands over
    /// what came before it and nothing after; a failing `out` stops the rest.
    #[test]
    fn rendered_chunks_keep_order_and_stop_at_the_first_failure() {
        for cores in [1, 2, 3, 8] {
            for n in [0, 1, 4, 5, 9, 200] {
                let (got, _, err) = chunks(cores, n, None, None);
                assert_eq!(err, None);
                assert_eq!(
                    got,
                    (0..n).map(|i| i as u8).collect::<Vec<_>>(),
                    "{cores}/{n}"
                );
            }
            let (got, _, err) = chunks(cores, 200, Some(37), None);
            assert_eq!(
                err.as_deref(),
                Some("storage error: entry 37"),
                "cores {cores}"
            );
            assert_eq!(
                got,
                (0..37).map(|i| i as u8).collect::<Vec<_>>(),
                "cores {cores}"
            );
            let (got, calls, err) = chunks(cores, 200, None, Some(6));
            assert_eq!(err.as_deref(), Some("storage error: out"), "cores {cores}");
            assert_eq!((got.len(), calls), (20, 6), "cores {cores}");
        }
    }

    /// A visitor slower than the workers keeps the channel full; a failing chunk behind it
    /// still ends the walk, with the rows before it visited.
    #[test]
    fn a_failure_behind_a_slow_visitor_ends_the_walk() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut seen = 0usize;
            let r = ordered_rows_on(
                2,
                7,
                2_000,
                &|| MemSource,
                &|_, i| {
                    if i == 300 {
                        Err(SessionError::Storage(format!("line {i}")))
                    } else {
                        Ok(i)
                    }
                },
                &mut |_| {
                    seen += 1;
                    std::thread::sleep(std::time::Duration::from_micros(200));
                },
            );
            let _ = tx.send((seen, r.err().map(|e| e.to_string())));
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(60));
        assert_eq!(
            got.ok(),
            Some((294, Some("storage error: line 300".to_owned()))),
            "the walk must end with the first failure"
        );
    }
}
