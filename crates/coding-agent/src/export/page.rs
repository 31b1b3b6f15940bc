//! The export page's frame: escaping, the style sheet and the small script that switches
//! branches. Everything is inline and the page's Content-Security-Policy allows nothing else
//! (no network, no frames, images only as `data:`), so the file is whole on its own
//! (DECISIONS §35.1).

/// Text escaped for HTML element content and quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Scripts and styles only from the page itself; images only inline.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; img-src data:; \
     style-src 'unsafe-inline'; script-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

/// The page's style sheet: the tree on the left, the conversation on the right; print shows
/// only the conversation.
pub const STYLE: &str = r#"
:root { --fg:#1f2328; --muted:#656d76; --line:#d0d7de; --bg:#ffffff; --side:#f6f8fa;
  --user:#ddf4ff; --assistant:#ffffff; --tool:#f6f8fa; --error:#ffebe9; --accent:#0969da; }
* { box-sizing: border-box; }
html, body { margin: 0; height: 100%; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  background: var(--bg); display: flex; }
#sidebar { width: 380px; min-width: 220px; height: 100vh; overflow: auto; background: var(--side);
  border-right: 1px solid var(--line); padding: 0.75rem; resize: horizontal; }
#sidebar h2 { font-size: 0.95rem; margin: 0 0 0.5rem; }
#tree-search { width: 100%; padding: 0.3rem 0.5rem; margin-bottom: 0.5rem; border: 1px solid var(--line);
  border-radius: 6px; font: inherit; }
#tree { list-style: none; margin: 0; padding: 0; font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; }
#tree li { white-space: pre; overflow: hidden; text-overflow: ellipsis; color: var(--muted); }
#tree li.path { color: var(--fg); }
#tree li.path > a { font-weight: 600; }
#tree li.selected > a { background: var(--accent); color: #fff; border-radius: 3px; }
#tree li.selected .kind { color: #fff; }
#tree li.hidden-by-search { display: none; }
#tree li.detached-heading { margin-top: 0.5rem; font-style: italic; }
#tree a { color: inherit; text-decoration: none; padding: 0 2px; }
#tree a:hover { text-decoration: underline; }
#tree .kind { color: var(--accent); }
#tree .label { color: #8250df; }
#tree .leaf-mark { color: #1a7f37; }
main { flex: 1; height: 100vh; overflow: auto; padding: 1.25rem 2rem 4rem; }
main > header h1 { font-size: 1.3rem; margin: 0 0 0.25rem; }
main > header p { margin: 0 0 1rem; color: var(--muted); font-size: 0.9rem; }
article.entry { border: 1px solid var(--line); border-radius: 8px; margin: 0 0 0.9rem; max-width: 62rem; }
article.entry.off { display: none; }
article.entry > header { display: flex; justify-content: space-between; gap: 1rem; padding: 0.35rem 0.8rem;
  border-bottom: 1px solid var(--line); font-size: 0.8rem; color: var(--muted); }
article.entry > header .role { font-weight: 600; color: var(--fg); }
article.entry .body { padding: 0.5rem 0.8rem; overflow-x: auto; }
article.user { background: var(--user); }
article.assistant { background: var(--assistant); }
article.tool-result, article.bash { background: var(--tool); }
article.error, p.error { background: var(--error); }
article.meta, article.compaction, article.branch-summary { border-style: dashed; }
article.meta .body p { margin: 0.2rem 0; }
pre { background: #f0f3f6; padding: 0.6rem 0.8rem; border-radius: 6px; overflow-x: auto;
  font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; white-space: pre-wrap; word-break: break-word; }
code { font: 13px ui-monospace, SFMono-Regular, Menlo, monospace; background: #eff1f3; padding: 0 0.2em; border-radius: 4px; }
pre code { background: none; padding: 0; }
.tool-call { border-left: 3px solid var(--accent); padding-left: 0.6rem; margin: 0.5rem 0; }
.tool-call .tool-name { font-weight: 600; font-size: 0.85rem; }
details.thinking { color: var(--muted); margin: 0.4rem 0; }
p.note { color: var(--muted); font-size: 0.85rem; }
img.inline-image { max-width: 100%; max-height: 28rem; border: 1px solid var(--line); border-radius: 4px; }
table { border-collapse: collapse; } td, th { border: 1px solid var(--line); padding: 0.2rem 0.5rem; }
@media print { #sidebar { display: none; } main { height: auto; overflow: visible; } body { display: block; } }
"#;

/// Switches the conversation to the branch ending at a clicked tree row (`#leaf=ID` in the
/// address, so a branch can be linked to), and filters the tree as the user types.
pub const SCRIPT: &str = r#"
(function () {
  var rows = new Map();
  document.querySelectorAll('#tree li[data-id]').forEach(function (li) { rows.set(li.dataset.id, li); });
  var articles = document.querySelectorAll('article.entry');
  function select(id, scroll) {
    if (!rows.has(id)) { return; }
    var path = new Set();
    var cur = id;
    while (cur && rows.has(cur) && !path.has(cur)) { path.add(cur); cur = rows.get(cur).dataset.parent; }
    var last = null;
    articles.forEach(function (a) {
      var on = path.has(a.dataset.id);
      a.classList.toggle('off', !on);
      if (on) { last = a; }
    });
    rows.forEach(function (li, rid) {
      li.classList.toggle('path', path.has(rid));
      li.classList.toggle('selected', rid === id);
    });
    document.body.dataset.selected = id;
    var target = document.getElementById('e-' + id) || last;
    if (scroll && target) { target.scrollIntoView({ block: 'start' }); }
  }
  function fromAddress() {
    var m = /^#leaf=(.+)$/.exec(location.hash);
    if (m) { select(decodeURIComponent(m[1]), true); }
  }
  window.addEventListener('hashchange', fromAddress);
  var search = document.getElementById('tree-search');
  search.addEventListener('input', function () {
    var q = search.value.toLowerCase();
    rows.forEach(function (li) {
      li.classList.toggle('hidden-by-search', q !== '' && li.textContent.toLowerCase().indexOf(q) < 0);
    });
  });
  fromAddress();
})();
"#;
