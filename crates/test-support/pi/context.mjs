// What the published pi package (PI_PKG) makes of a session file: for each FILE argument one
// JSON line {file, ok, leafId, model, thinkingLevel, activeToolNames, llm} or {file, ok:false, error}.
// pi's own projection is used as is, plus the two rules of DECISIONS §2 and §6 that pi lacks:
// a `leaf` entry moves the leaf to its targetId, and a compaction carrying `retainedTail`
// projects as [its systemMessage?, the summary, the retained tail, the entries after it].
import { readFileSync } from "node:fs";

const pkg = process.env.PI_PKG;
const sessions = await import(`${pkg}/dist/core/session-manager.js`);
const messages = await import(`${pkg}/dist/core/messages.js`);

function parse(file) {
  const rows = readFileSync(file, "utf8").split("\n").filter((line) => line.trim() !== "");
  if (rows.length === 0) throw new Error("missing session header");
  return rows.map((line, index) => {
    try {
      return JSON.parse(line);
    } catch {
      throw new Error(`line ${index + 1} is not valid JSON`);
    }
  });
}

function describe(file) {
  const all = parse(file);
  sessions.migrateSessionEntries(all);
  if (all[0]?.type !== "session") throw new Error("first line is not a valid session header");
  const entries = all.slice(1);
  const index = new Map();
  let leaf = null;
  for (const entry of entries) {
    if (typeof entry.id !== "string" || entry.id === "") throw new Error("entry is missing id");
    if (index.has(entry.id)) throw new Error(`duplicate entry id ${entry.id}`);
    index.set(entry.id, entry);
    leaf = entry.type === "leaf" ? entry.targetId : entry.id;
  }
  const path = [];
  let at = leaf ? index.get(leaf) : undefined;
  while (at) {
    path.unshift(at);
    at = at.parentId ? index.get(at.parentId) : undefined;
  }
  const toolChanges = path.filter((e) => e.type === "active_tools_change");
  const activeToolNames = toolChanges.length ? [...toolChanges[toolChanges.length - 1].activeToolNames] : null;
  const projection = sessions.buildSessionProjection(entries, leaf, index);
  let visible = projection.messages;
  const compactions = path.filter((e) => e.type === "compaction");
  const last = compactions[compactions.length - 1];
  if (last && Array.isArray(last.retainedTail)) {
    const later = path.slice(path.indexOf(last) + 1);
    const edits = new Map(later.filter((e) => e.type === "context_edit").map((e) => [e.targetId, e]));
    visible = [
      ...(last.systemMessage ? [last.systemMessage] : []),
      messages.createCompactionSummaryMessage(last.summary, last.tokensBefore, last.timestamp),
      ...last.retainedTail,
      ...later.flatMap((e) => sessions.projectContextEntry(e, edits.get(e.id))),
    ];
  }
  return {
    leafId: leaf,
    model: projection.model,
    thinkingLevel: projection.thinkingLevel,
    activeToolNames,
    llm: messages.convertToLlm(visible),
  };
}

for (const file of process.argv.slice(2)) {
  let line;
  try {
    line = { file, ok: true, ...describe(file) };
  } catch (error) {
    line = { file, ok: false, error: String(error?.message ?? error) };
  }
  process.stdout.write(JSON.stringify(line) + "\n");
}
