//! Where `arbor session context FILE --json` spends its time, phase by phase.
//!
//! `cargo bench -p arbor-coding-agent --bench context_phases -- FILE [ITERATIONS]`
//! (default file: /tmp/big.jsonl from `gen_big.py /tmp/big.jsonl 100`). Prints the median of
//! each phase: open (envelope scan + index), ancestry (reading and parsing every entry on the
//! leaf's path), projection (derived state, compaction window, convert_to_llm) and output
//! serialization. Whole-process numbers are in docs/parts/cli-perf.md.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use arbor_agent::context::{build_session_context, expected_json, ContextOptions};
use arbor_agent::session::{JsonlRepository, SessionStorage};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
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
    let (mut open, mut ancestry, mut project, mut output, mut total) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut bounded, mut settings) = (Vec::new(), Vec::new());
    let (mut entries_on_path, mut entries_bounded) = (0, 0);
    for _ in 0..iterations {
        rt.block_on(async {
            let t0 = Instant::now();
            let storage = JsonlRepository::flat(&dir).open_read_only(&arg).await?;
            let t1 = Instant::now();
            let leaf = storage.leaf_id().await?;
            let path = storage.ancestry(leaf.as_deref()).await?;
            let t2 = Instant::now();
            let context = build_session_context(&path, &ContextOptions::default());
            let value = expected_json(&context, leaf.as_deref());
            let t3 = Instant::now();
            let bytes = serde_json::to_vec(&value)?;
            let t4 = Instant::now();
            std::hint::black_box(bytes);
            // What a boundary-aware projection would need: the branch from the newest
            // compaction's boundary, plus the derived settings of the full path (the store
            // answers these from its index).
            let t5 = Instant::now();
            let branch = storage.path_to_root_or_compaction(leaf.as_deref()).await?;
            let t6 = Instant::now();
            std::hint::black_box(storage.derived_settings(leaf.as_deref()).await?);
            let t7 = Instant::now();
            bounded.push(t6 - t5);
            settings.push(t7 - t6);
            entries_bounded = branch.len();
            entries_on_path = path.len();
            open.push(t1 - t0);
            ancestry.push(t2 - t1);
            project.push(t3 - t2);
            output.push(t4 - t3);
            total.push(t4 - t0);
            Ok::<_, Box<dyn std::error::Error>>(())
        })?;
    }
    println!(
        "{} ({} entries on the active path), median of {iterations}:",
        file.display(),
        entries_on_path
    );
    println!("  open (scan + index)        {}", ms(median(open)));
    println!("  ancestry (read + parse)    {}", ms(median(ancestry)));
    println!("  projection + convert       {}", ms(median(project)));
    println!("  serialize JSON             {}", ms(median(output)));
    println!("  total                      {}", ms(median(total)));
    println!("for comparison, reading only what the projection uses:");
    println!(
        "  bounded branch ({entries_bounded} entries)  {}",
        ms(median(bounded))
    );
    println!("  derived_settings (index)   {}", ms(median(settings)));
    Ok(())
}
