// Times pi 1.6.0's own prepareCompaction on a session's active path, beside Arbor's
// `cargo bench -p arbor-agent --bench compaction`. Loading and parsing the file is not timed.
//   PI_PKG=... node crates/agent/benches/pi_prepare_timing.mjs FILE [RUNS]
import { readFileSync } from "node:fs";
const pkg = process.env.PI_PKG;
const cmp = await import(`${pkg}/dist/core/compaction/index.js`);
const [file, runsArg] = process.argv.slice(2);
const entries = readFileSync(file, "utf8").split("\n").filter((l) => l.trim()).slice(1).map((l) => JSON.parse(l));
const byId = new Map(entries.map((e) => [e.id, e]));
let leaf = null;
for (const e of entries) leaf = e.type === "leaf" ? e.targetId : e.id;
const path = [];
for (let c = byId.get(leaf); c; c = c.parentId ? byId.get(c.parentId) : undefined) path.push(c);
path.reverse();
const settings = { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 };
const runs = Number(runsArg ?? 20);
const times = [];
let plan;
for (let i = 0; i < runs + 3; i++) {
  const t = process.hrtime.bigint();
  plan = cmp.prepareCompaction(path, settings);
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  if (i >= 3) times.push(ms);
}
times.sort((a, b) => a - b);
console.log(JSON.stringify({
  pathEntries: path.length,
  messagesToSummarize: plan?.messagesToSummarize.length ?? null,
  tokensBefore: plan?.tokensBefore ?? null,
  medianMs: times[Math.floor(times.length / 2)],
  minMs: times[0],
}));
