#!/usr/bin/env python3
"""The same three start-up measurements for pi 1.6.0 and for arbor, driven the same way
(docs/PERFORMANCE.md, "The coding agent"): `--version`; spawn -> first request byte of
`-p --no-session` against a loopback OpenAI-compatible stub; `-c -p` on a copy of a big session
(wall, user+sys CPU and peak RSS from /usr/bin/time). Each side gets a fresh agent directory with
the stub as provider `mock` and compaction off.

  python3 pi_beside.py pi NODE22 $PI_PKG/dist/cli.js BIG.jsonl [runs]
  python3 pi_beside.py arbor target/release/arbor - BIG.jsonl [runs]

pi 1.6.0 needs Node 22 (`npm install --prefix /tmp/node22 node@22` provides one).
BIG.jsonl: `python3 shared/tools/gen_big.py BIG.jsonl 100`."""
import json, os, socket, subprocess, sys, tempfile, time, statistics, shutil


kind, node, cli, big = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
runs = int(sys.argv[5]) if len(sys.argv) > 5 else 5
node = os.path.abspath(node) if os.path.exists(node) else node
cli = os.path.abspath(cli) if os.path.exists(cli) else cli
prog = [node, cli] if kind == "pi" else [node]
SSE = ('data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"ok"}}]}\n\n'
       'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
       'data: [DONE]\n\n')
tmp = tempfile.mkdtemp(prefix="pi-beside-")
agent = os.path.join(tmp, "agent"); cwd = os.path.join(tmp, "proj")
os.makedirs(agent); os.makedirs(cwd)
lst = socket.socket(); lst.bind(("127.0.0.1", 0)); lst.listen(16)
port = lst.getsockname()[1]
json.dump({"providers": {"mock": {"baseUrl": f"http://127.0.0.1:{port}/v1", "api": "openai-completions",
          "apiKey": "k", "models": [{"id": "mock-model", "contextWindow": 10000000, "maxTokens": 4096}]}}},
          open(os.path.join(agent, "models.json"), "w"))
json.dump({"compaction": {"enabled": False}}, open(os.path.join(agent, "settings.json"), "w"))
env = dict(os.environ, PI_CODING_AGENT_DIR=agent, PI_SKIP_VERSION_CHECK="1", PI_OFFLINE="1", HOME=tmp, ARBOR_HOME=agent)

def serve_one():
    """Accepts one request; returns when its first byte arrived, answers with a tiny stream."""
    s, _ = lst.accept()
    data = bytearray(s.recv(1 << 16)); first = time.monotonic()
    need = None
    while True:
        if need is None:
            h = data.find(b"\r\n\r\n")
            if h >= 0:
                n = 0
                for l in data[:h].decode("latin1").lower().split("\r\n"):
                    if l.startswith("content-length:"): n = int(l.split(":", 1)[1])
                need = h + 4 + n
        if need is not None and len(data) >= need: break
        more = s.recv(1 << 20)
        if not more: break
        data += more
    s.sendall(f"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {len(SSE)}\r\nconnection: close\r\n\r\n{SSE}".encode())
    s.close()
    return first

def med(v): return statistics.median(v) * 1000

vers = []
for _ in range(runs):
    t = time.monotonic(); subprocess.run(prog + ["--version"], env=env, cwd=cwd, stdout=subprocess.DEVNULL); vers.append(time.monotonic() - t)
print(f"{kind} --version: median {med(vers):.0f} ms (min {min(vers)*1000:.0f}) over {runs} runs", flush=True)

firsts, totals = [], []
for _ in range(runs):
    t = time.monotonic()
    p = subprocess.Popen(prog + ["-p", "--no-session", "--model", "mock/mock-model", "hi"], env=env, cwd=cwd,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    first = serve_one(); p.wait(); firsts.append(first - t); totals.append(time.monotonic() - t)
    if p.returncode != 0: print("pi -p failed:", p.stderr.read().decode()[-500:])
print(f"{kind} -p spawn to first request byte: median {med(firsts):.0f} ms (min {min(firsts)*1000:.0f}; whole run {med(totals):.0f} ms) over {runs} runs", flush=True)

enc = "--" + cwd.lstrip("/").replace("/", "-") + "--"
folder = os.path.join(agent, "sessions", enc); os.makedirs(folder)
dst = os.path.join(folder, "2026-12-01T00-00-00-000Z_019a0000-0000-7000-8000-000000000001.jsonl")
with open(big) as src, open(dst, "w") as out:
    h = json.loads(src.readline()); h["cwd"] = cwd; out.write(json.dumps(h) + "\n"); shutil.copyfileobj(src, out)
size = os.path.getsize(dst)
walls, rss, cpu = [], [], []
for _ in range(max(2, runs // 2)):
    t = time.monotonic()
    p = subprocess.Popen(["/usr/bin/time", "-f", "%e %U %S %M"] + prog + ["-c", "-p", "--model", "mock/mock-model", "next"], env=env, cwd=cwd,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    serve_one(); err = p.communicate()[1].decode(); walls.append(time.monotonic() - t)
    f = err.strip().splitlines()[-1].split(); rss.append(int(f[3])); cpu.append(float(f[1]) + float(f[2]))
    if p.returncode != 0: print("pi -c -p failed:", err[-500:])
print(f"{kind} -c -p on a {size/1048576:.1f} MB session: median {med(walls):.0f} ms wall, {med(cpu):.0f} ms CPU (user+sys), peak RSS {statistics.median(rss)/1024:.0f} MB ({len(walls)} runs)", flush=True)
shutil.rmtree(tmp)
