// For each session file given, prints one JSON line with the entry ids pi's own `/tree`
// selector shows under each filter mode and under a search (env PI_TREE_QUERY, in the `all`
// mode): {"file": …, "leafId": …, "default": [ids…], …, "search": [ids…]}. Used by
// tests/suite/tui_tree.rs to compare the navigator's filters with pi's. Needs PI_PKG.
const pkg = process.env.PI_PKG;
const { SessionManager } = await import(`${pkg}/dist/core/session-manager.js`);
const { initTheme } = await import(`${pkg}/dist/modes/interactive/theme/theme.js`);
const { TreeSelectorComponent } = await import(
  `${pkg}/dist/modes/interactive/components/tree-selector.js`
);
initTheme("dark", false);
const noop = () => {};
const query = process.env.PI_TREE_QUERY ?? "";
const sessionDir = process.env.PI_TREE_SESSION_DIR ?? "/tmp/pi-tree-filters";
for (const file of process.argv.slice(2)) {
  const sm = SessionManager.open(file, sessionDir);
  const tree = sm.getTree();
  const leaf = sm.getLeafId();
  const out = { file, leafId: leaf };
  for (const mode of ["default", "no-tools", "user-only", "labeled-only", "all"]) {
    const c = new TreeSelectorComponent(tree, leaf, 40, noop, noop, noop, undefined, mode);
    out[mode] = c.treeList.filteredNodes.map((n) => n.node.entry.id);
  }
  const c = new TreeSelectorComponent(tree, leaf, 40, noop, noop, noop, undefined, "all");
  c.treeList.searchQuery = query;
  c.treeList.applyFilter();
  out.search = c.treeList.filteredNodes.map((n) => n.node.entry.id);
  console.log(JSON.stringify(out));
}
