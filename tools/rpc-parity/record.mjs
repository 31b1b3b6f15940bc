// Records what an agent answers in RPC mode and JSON mode for each scenario of
// crates/coding-agent/tests/data/rpc/scenarios/, driving it through pi's own RpcClient
// (`dist/modes/rpc/rpc-client.js` of the installed pi package) against a scripted
// chat-completions mock on 127.0.0.1. The recording is raw (paths, ids and times as seen);
// `cargo xtask rpc-parity` and the offline test normalize and compare recordings.
//
// usage: node record.mjs --agent pi|arbor --out DIR [--pi-pkg DIR] [--arbor BIN] [--node BIN] [SCENARIO...]

import { createServer } from "node:http";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { spawn } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, "../..");
const scenarioDir = join(repoRoot, "crates/coding-agent/tests/data/rpc/scenarios");

function parseArgs(argv) {
	const o = { agent: null, out: null, piPkg: process.env.PI_PKG, arbor: null, node: null, only: [] };
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if (a === "--agent") o.agent = argv[++i];
		else if (a === "--out") o.out = argv[++i];
		else if (a === "--pi-pkg") o.piPkg = argv[++i];
		else if (a === "--arbor") o.arbor = argv[++i];
		else if (a === "--node") o.node = argv[++i];
		else o.only.push(a);
	}
	if (!o.agent || !o.out || !o.piPkg) {
		throw new Error("usage: record.mjs --agent pi|arbor --out DIR --pi-pkg DIR [--arbor BIN] [--node BIN] [SCENARIO...]");
	}
	return o;
}

// ---- the scripted model -------------------------------------------------------------------

function sse(chunks) {
	return chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n";
}

/** The same chunks as arbor-test-support's `openai_text` / `openai_tool_calls`. */
function replyBody(reply) {
	if (reply.text !== undefined) {
		const id = "chatcmpl-1";
		return sse([
			{ id, object: "chat.completion.chunk", choices: [{ index: 0, delta: { role: "assistant", content: "" } }] },
			{ id, object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: reply.text } }] },
			{ id, object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
			{ id, object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 } },
		]);
	}
	const id = "chatcmpl-2";
	const chunks = [{ id, object: "chat.completion.chunk", choices: [{ index: 0, delta: { role: "assistant", content: null } }] }];
	reply.tools.forEach(([callId, name, args], index) => {
		chunks.push({ id, object: "chat.completion.chunk", choices: [{ index: 0, delta: { tool_calls: [{ index, id: callId, type: "function", function: { name, arguments: "" } }] } }] });
		chunks.push({ id, object: "chat.completion.chunk", choices: [{ index: 0, delta: { tool_calls: [{ index, function: { arguments: JSON.stringify(args) } }] } }] });
	});
	chunks.push({ id, object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] });
	chunks.push({ id, object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 120, completion_tokens: 20, total_tokens: 140 } });
	return sse(chunks);
}

function startModel(replies) {
	const queue = [...replies];
	const state = { requests: 0 };
	const server = createServer((req, res) => {
		let body = "";
		req.on("data", (d) => (body += d));
		req.on("end", () => {
			state.requests++;
			const reply = queue.shift();
			if (!reply) {
				res.writeHead(500, { "content-type": "application/json" });
				res.end(JSON.stringify({ error: { message: "mock: no scripted reply left" } }));
				return;
			}
			if (reply.status) {
				res.writeHead(reply.status, { "content-type": "application/json" });
				res.end(JSON.stringify({ error: { message: reply.error ?? "mock error" } }));
				return;
			}
			const send = () => {
				if (res.destroyed) return;
				res.writeHead(200, { "content-type": "text/event-stream" });
				res.end(replyBody(reply));
			};
			if (reply.delayMs) setTimeout(send, reply.delayMs);
			else send();
		});
	});
	return new Promise((ok) =>
		server.listen(0, "127.0.0.1", () => ok({ url: `http://127.0.0.1:${server.address().port}`, server, state })),
	);
}

// ---- the lab ------------------------------------------------------------------------------

function makeLab(scenario, modelUrl) {
	const dir = mkdtempSync(join(tmpdir(), "rpc-parity-"));
	const home = join(dir, "home");
	const repo = join(dir, "repo");
	mkdirSync(join(home, "user"), { recursive: true });
	mkdirSync(join(repo, ".git"), { recursive: true });
	writeFileSync(join(repo, "hello.txt"), "line one\nline two\n");
	const models = {
		providers: {
			mock: {
				baseUrl: `${modelUrl}/v1`,
				api: "openai-completions",
				apiKey: "test-key",
				models: [
					{ id: "mock-model", name: "Mock Model", contextWindow: 32000, maxTokens: 4096 },
					{ id: "mock-reasoner", name: "Mock Reasoner", reasoning: true, contextWindow: 32000, maxTokens: 4096 },
				],
			},
		},
	};
	writeFileSync(join(home, "models.json"), JSON.stringify(models));
	writeFileSync(join(home, "settings.json"), JSON.stringify(scenario.settings ?? {}));
	return { dir, home, repo };
}

function agentEnv(agent, lab) {
	const env = { HOME: join(lab.home, "user"), OPENAI_API_KEY: "", ANTHROPIC_API_KEY: "" };
	if (agent === "pi") Object.assign(env, { PI_CODING_AGENT_DIR: lab.home, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" });
	else env.ARBOR_HOME = lab.home;
	return env;
}

// ---- RPC mode -----------------------------------------------------------------------------

/** A string field `$step[N]/json/pointer` takes that value from step N's response. */
function bind(command, stepResponses) {
	const out = {};
	for (const [k, v] of Object.entries(command)) {
		const m = typeof v === "string" ? /^\$step\[(\d+)\](\/.*)$/.exec(v) : null;
		if (!m) {
			out[k] = v;
			continue;
		}
		let x = stepResponses[Number(m[1])];
		for (const part of m[2].split("/").slice(1)) x = x?.[part];
		out[k] = x;
	}
	return out;
}

async function recordRpc(o, RpcClient, scenario, lab, model) {
	const cliPath = o.agent === "pi" ? join(o.piPkg, "dist/cli.js") : join(here, "arbor-shim.mjs");
	const env = agentEnv(o.agent, lab);
	if (o.agent === "arbor") env.ARBOR_BIN = o.arbor;
	const client = new RpcClient({ cliPath, cwd: lab.repo, env, provider: "mock", model: scenario.model ?? "mock-model", args: scenario.args ?? [] });
	const log = [];
	const waiters = [];
	let cursor = 0;
	client.onEvent((e) => {
		// A response without a pending id (a bad line's) reaches listeners too; it is logged as
		// a response below.
		if (e.type !== "response") log.push({ event: e });
		for (const w of [...waiters]) w();
	});
	const originalHandle = client.handleLine.bind(client);
	client.handleLine = (line) => {
		try {
			const v = JSON.parse(line);
			if (v.type === "response") log.push({ response: v });
		} catch {}
		originalHandle(line);
	};
	const waitFor = (type, timeoutMs = 30000) =>
		new Promise((ok, fail) => {
			const check = () => {
				for (let i = cursor; i < log.length; i++) {
					if (log[i].event?.type === type) {
						cursor = i + 1;
						waiters.splice(waiters.indexOf(check), 1);
						clearTimeout(timer);
						ok();
						return true;
					}
				}
				return false;
			};
			const timer = setTimeout(() => {
				waiters.splice(waiters.indexOf(check), 1);
				fail(new Error(`timeout waiting for ${type}`));
			}, timeoutMs);
			waiters.push(check);
			check();
		});
	const stepResponses = [];
	await client.start();
	for (const [i, step] of scenario.steps.entries()) {
		log.push({ step: i });
		if (step.raw !== undefined) {
			client.process.stdin.write(step.raw + "\n");
			await new Promise((r) => setTimeout(r, step.settleMs ?? 300));
		} else if (step.send) {
			const pending = client
				.send(bind(step.send, stepResponses))
				.then((r) => (stepResponses[i] = r))
				.catch((e) => log.push({ failure: String(e.message ?? e) }));
			if (!step.noWait) await pending;
		} else if (step.wait) {
			await waitFor(step.wait).catch((e) => log.push({ failure: e.message }));
		} else if (step.sleepMs) {
			await new Promise((r) => setTimeout(r, step.sleepMs));
		}
		if (step.then) await waitFor(step.then).catch((e) => log.push({ failure: e.message }));
	}
	await new Promise((r) => setTimeout(r, scenario.tailMs ?? 400));
	await client.stop();
	return log;
}

// ---- JSON mode ----------------------------------------------------------------------------

function recordJson(o, scenario, lab) {
	const env = { ...process.env, ...agentEnv(o.agent, lab) };
	const args = ["--mode", "json", "--provider", "mock", "--model", scenario.model ?? "mock-model", ...(scenario.args ?? []), ...scenario.prompts];
	const [cmd, argv] = o.agent === "pi" ? [process.execPath, [join(o.piPkg, "dist/cli.js"), ...args]] : [o.arbor, args];
	return new Promise((ok) => {
		const child = spawn(cmd, argv, { cwd: lab.repo, env, stdio: ["ignore", "pipe", "pipe"] });
		let out = "";
		let err = "";
		child.stdout.on("data", (d) => (out += d));
		child.stderr.on("data", (d) => (err += d));
		child.on("exit", (code) => {
			const lines = out.split("\n").filter((l) => l.trim() !== "").map((l) => {
				try {
					return JSON.parse(l);
				} catch {
					return { unparsed: l };
				}
			});
			ok({ exitCode: code, lines, stderr: err.length > 0 });
		});
	});
}

// ---- main ---------------------------------------------------------------------------------

async function main() {
	const o = parseArgs(process.argv.slice(2));
	const { RpcClient } = await import(pathToFileURL(join(o.piPkg, "dist/modes/rpc/rpc-client.js")).href);
	mkdirSync(o.out, { recursive: true });
	const names = readdirSync(scenarioDir).filter((f) => f.endsWith(".json")).map((f) => f.slice(0, -5)).sort();
	for (const name of names) {
		if (o.only.length > 0 && !o.only.includes(name)) continue;
		const scenario = JSON.parse(readFileSync(join(scenarioDir, `${name}.json`), "utf8"));
		const model = await startModel(scenario.replies ?? []);
		const lab = makeLab(scenario, model.url);
		let recording;
		try {
			if (scenario.prompts) recording = { mode: "json", ...(await recordJson(o, scenario, lab)) };
			else recording = { mode: "rpc", log: await recordRpc(o, RpcClient, scenario, lab, model) };
		} finally {
			model.server.close();
		}
		recording.lab = lab.dir;
		recording.modelRequests = model.state.requests;
		writeFileSync(join(o.out, `${name}.${o.agent}.json`), JSON.stringify(recording, null, 1) + "\n");
		rmSync(lab.dir, { recursive: true, force: true });
		console.log(`${o.agent}: ${name}: recorded`);
	}
}

main().catch((e) => {
	console.error(e);
	process.exit(1);
});
