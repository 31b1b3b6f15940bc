// Differential-test driver for pi-ai 1.6.0 (used by `cargo xtask parity`).
//
// Reads cases (one JSON object per line) from the file named on the command line, sends each
// through pi-ai's `streamSimple` and prints one JSON line per case: the request pi sent (URL,
// headers, parsed body) and the events it produced (without the live `partial`).
//
// Requests keep the model's real `baseUrl` (pi derives compat flags from it); the `fetch` option
// redirects them to a logging server on 127.0.0.1 run by this script, which answers with the
// case's scripted reply: status, headers, body split at the given offsets, and an ending
// (`complete`, or `cut` = the socket is destroyed before the final chunk).
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const piAi = process.env.PI_AI_DIR ??
  join(process.env.HOME, ".cache/arbor-pi-ref/node_modules/@earendil-works/pi-ai");
const { streamSimple } = await import(join(piAi, "dist/compat.js"));

const cases = readFileSync(process.argv[2], "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const byId = new Map(cases.map((c) => [String(c.id), c]));
const seen = new Map();

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const server = createServer((req, res) => {
  const parts = [];
  req.on("data", (d) => parts.push(d));
  req.on("end", async () => {
    const id = req.headers["x-parity-case"];
    const c = byId.get(String(id));
    const raw = Buffer.concat(parts).toString("utf8");
    let body;
    try { body = JSON.parse(raw); } catch { body = raw; }
    const headers = { ...req.headers };
    for (const h of ["x-parity-case", "x-parity-url", "host", "connection", "content-length", "accept-encoding", "transfer-encoding"]) delete headers[h];
    const list = seen.get(String(id)) ?? [];
    list.push({ url: req.headers["x-parity-url"], headers, body });
    seen.set(String(id), list);
    // Session cases queue their replies: one per request, in order.
    const reply = (c?.replies ? c.replies.shift() : c?.reply) ?? { status: 500, body: "no case" };
    res.socket.setNoDelay(true);
    res.writeHead(reply.status ?? 200, reply.headers ?? { "content-type": "text/event-stream" });
    const bytes = Buffer.from(reply.body ?? "", "utf8");
    const cuts = [...(reply.splits ?? []), bytes.length];
    let at = 0;
    for (const end of cuts) {
      if (end > at) {
        res.write(bytes.subarray(at, end));
        at = end;
        if (cuts.length > 1) await new Promise((r) => setImmediate(r));
      }
    }
    if (reply.ending === "cut") {
      await sleep(5);
      res.socket.destroy();
    } else {
      res.end();
    }
  });
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const port = server.address().port;

function redirectFetch(id) {
  return (input, init = {}) => {
    const original = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const url = new URL(original);
    const target = `http://127.0.0.1:${port}${url.pathname}${url.search}`;
    const headers = new Headers(init.headers ?? (typeof input === "object" && !(input instanceof URL) ? input.headers : undefined));
    headers.set("x-parity-case", String(id));
    headers.set("x-parity-url", original);
    return fetch(target, { ...init, headers });
  };
}

function strip(event) {
  const { partial, ...rest } = event;
  return rest;
}

// A session case runs its turns in order: each appends the previous turn's final message and
// the turn's new messages, so later requests of the session are what pi sends after replies.
async function runSession(c) {
  const options = { ...(c.options ?? {}), fetch: redirectFetch(c.id) };
  const context = structuredClone(c.context);
  const turns = [];
  for (const turn of c.turns) {
    context.messages.push(...(turn.append ?? []));
    if (turn.systemPrompt != null) context.systemPrompt = turn.systemPrompt;
    const events = [];
    let final;
    let thrown;
    try {
      for await (const event of streamSimple(c.model, context, options)) {
        events.push(strip(event));
        if (event.type === "done") final = event.message;
        if (event.type === "error") final = event.error;
      }
    } catch (err) {
      thrown = String(err?.message ?? err);
    }
    if (final) context.messages.push(final);
    turns.push({ final: final ?? null, thrown });
  }
  return { id: c.id, requests: seen.get(String(c.id)) ?? [], turns };
}

for (const c of cases) {
  if (c.turns) {
    process.stdout.write(JSON.stringify(await runSession(c)) + "\n");
    continue;
  }
  const options = { ...(c.options ?? {}), fetch: redirectFetch(c.id) };
  const events = [];
  let thrown;
  try {
    const stream = streamSimple(c.model, c.context, options);
    for await (const event of stream) events.push(strip(event));
  } catch (err) {
    thrown = String(err?.message ?? err);
  }
  const out = { id: c.id, requests: seen.get(String(c.id)) ?? [], events };
  if (thrown !== undefined) out.thrown = thrown;
  process.stdout.write(JSON.stringify(out) + "\n");
}
server.close();
