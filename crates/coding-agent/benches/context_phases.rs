//! Where `arbor session context FILE --json` spends its time, phase by phase.
//!
//! `cargo bench -p arbor-coding-agent --bench context_phases -- FILE [ITERATIONS]`
//! (default file: /tmp/big.jsonl from `gen_big.py /tmp/big.jsonl 100`). Prints the median of
//! each phase of the command's path (open, bounded branch, derived settings, projection, JSON
//! output) and, for comparison, what reading the full ancestry would cost. Whole-process
//! numbers next to pi's are in docs/PERFORMANCE.md.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use arbor_agent::context::projection::build_session_context_from_window;
use arbor_agent::context::{write_expected_json, ContextOptions, DerivedState, ModelRef};
use arbor_agent::session::{JsonlRepository, SessionStorage};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:>7.1} ms", d.as_secs_f64() * 1000.0)
}

#[derive(Default)]
struct Phases {
    open: Vec<Duration>,
    window: Vec<Duration>,
    settings: Vec<Duration>,
    project: Vec<Duration>,
    output: Vec<Duration>,
    total: Vec<Duration>,
    full_ancestry: Vec<Duration>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let file = PathBuf::from(args.first().map_or("/tmp/big.jsonl", String::as_str));
    let iterations: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(5);
    if !file.is_file() {
        eprintln!(
            "context_phases: {} not found; create it with `python3 shared/tools/gen_big.py {} 100`",
            file.display(),
            file.display()
        );
        return Ok(());
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let dir = file.parent().map(PathBuf::from).unwrap_or_default();
    let arg = file.display().to_string();
    let mut p = Phases::default();
    let (mut window_len, mut ancestry_len, mut out_len) = (0, 0, 0);
    for _ in 0..iterations {
        rt.block_on(async {
            let t0 = Instant::now();
            let storage = JsonlRepository::flat(&dir).open_read_only(&arg).await?;
            let leaf = storage.leaf_id().await?;
            let t1 = Instant::now();
            let window = storage.path_to_root_or_compaction(leaf.as_deref()).await?;
            let t2 = Instant::now();
            let settings = storage.derived_settings(leaf.as_deref()).await?;
            let t3 = Instant::now();
            window_len = window.len();
            let state = DerivedState {
                model: settings
                    .model
                    .map(|(provider, model_id)| ModelRef { provider, model_id }),
                thinking_level: settings.thinking_level.unwrap_or_else(|| "off".into()),
                active_tool_names: settings.active_tool_names,
            };
            let context =
                build_session_context_from_window(window, state, &ContextOptions::default());
            let t4 = Instant::now();
            let mut out = Vec::new();
            write_expected_json(&mut out, &context, leaf.as_deref())?;
            let t5 = Instant::now();
            out_len = out.len();
            std::hint::black_box(out);
            p.open.push(t1 - t0);
            p.window.push(t2 - t1);
            p.settings.push(t3 - t2);
            p.project.push(t4 - t3);
            p.output.push(t5 - t4);
            p.total.push(t5 - t0);
            Ok::<_, Box<dyn std::error::Error>>(())
        })?;
    }
    // The alternative the command avoids, measured separately so its 100 MB of parsed entries
    // do not disturb the phases above: parsing every entry on the path.
    for _ in 0..iterations {
        rt.block_on(async {
            let storage = JsonlRepository::flat(&dir).open_read_only(&arg).await?;
            let leaf = storage.leaf_id().await?;
            let t0 = Instant::now();
            let ancestry = storage.ancestry(leaf.as_deref()).await?;
            p.full_ancestry.push(t0.elapsed());
            ancestry_len = ancestry.len();
            Ok::<_, Box<dyn std::error::Error>>(())
        })?;
    }
    println!("{}, median of {iterations}:", file.display());
    println!("  open (scan + index)            {}", ms(median(p.open)));
    println!(
        "  bounded branch ({window_len:>5} entries) {}",
        ms(median(p.window))
    );
    println!(
        "  derived settings (index)       {}",
        ms(median(p.settings))
    );
    println!("  projection + convert           {}", ms(median(p.project)));
    println!(
        "  JSON output ({:>5} KB)          {}",
        out_len / 1024,
        ms(median(p.output))
    );
    println!("  total                          {}", ms(median(p.total)));
    println!(
        "not done by the command: full ancestry ({ancestry_len} entries) {}",
        ms(median(p.full_ancestry))
    );
    Ok(())
}
