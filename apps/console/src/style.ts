/** The console's one stylesheet, served by the gateway at /console/console.css (CSP: style-src 'self'). */
export const consoleCss = `
:root { --ink: #1d232b; --muted: #5b6673; --line: #d8dee5; --bg: #f6f7f9; --accent: #8a5a00;
  --ok: #1d6b35; --warn: #8a5a00; --bad: #a8251c; --cheese: #f4c542; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: var(--bg); }
header { display: flex; align-items: center; gap: 1.5rem; padding: 0.6rem 1.5rem; background: #fff; border-bottom: 1px solid var(--line); }
header .brand { font-weight: 700; letter-spacing: 0.01em; }
header .brand::before { content: ""; display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.45em;
  background: var(--cheese); clip-path: polygon(0 100%, 100% 100%, 100% 30%); vertical-align: -0.05em; }
header nav { display: flex; gap: 1rem; flex: 1; }
header nav a { color: var(--muted); text-decoration: none; padding: 0.25rem 0; border-bottom: 2px solid transparent; }
header nav a[aria-current=page] { color: var(--ink); border-bottom-color: var(--cheese); }
header form { margin: 0; }
header .who { color: var(--muted); font-size: 0.85rem; }
main { max-width: 72rem; margin: 1.5rem auto; padding: 0 1.5rem; }
h1 { font-size: 1.45rem; margin: 0 0 1rem; }
h2 { font-size: 1.1rem; margin: 1.75rem 0 0.6rem; }
section.card > h2:first-child { margin-top: 0; }
section.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 1rem 1.25rem; margin-bottom: 1.25rem; }
table { width: 100%; border-collapse: collapse; background: #fff; border: 1px solid var(--line); border-radius: 8px; overflow: hidden; }
th, td { text-align: left; padding: 0.5rem 0.7rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #eef1f4; font-weight: 600; font-size: 0.85rem; color: var(--muted); }
tr:last-child td { border-bottom: none; }
td.num { font-variant-numeric: tabular-nums; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: 0.88em; }
a { color: #1f5fa8; }
.muted { color: var(--muted); }
.badge { white-space: nowrap; }
.badge { display: inline-block; padding: 0.05rem 0.5rem; border-radius: 999px; font-size: 0.8rem; font-weight: 600; background: #e8ecf0; }
.badge.active, .badge.delivered, .badge.approved { background: #dcf1e2; color: var(--ok); }
.badge.paused, .badge.retry_scheduled, .badge.pending, .badge.attempting, .badge.shipped { background: #fbefd0; color: var(--warn); }
.badge.disabled, .badge.dead_lettered, .badge.cancelled { background: #f8dcd9; color: var(--bad); }
.notice { padding: 0.7rem 1rem; border-radius: 6px; margin-bottom: 1rem; border: 1px solid; }
.notice.ok { background: #eaf6ee; border-color: #b9e0c5; }
.notice.problem { background: #fbeceb; border-color: #efc1bd; }
.notice ul { margin: 0.3rem 0 0; }
.secret { display: block; padding: 0.5rem; background: #fffbe8; border: 1px dashed var(--accent); word-break: break-all; }
form.inline { display: inline; }
form.stack label { display: block; margin: 0.55rem 0; }
form.stack input[type=text], form.stack input[type=url], form.stack input[type=password], form.stack input[type=datetime-local] {
  display: block; width: 100%; max-width: 32rem; padding: 0.4rem 0.5rem; border: 1px solid var(--line); border-radius: 5px; font: inherit; }
fieldset { border: 1px solid var(--line); border-radius: 6px; margin: 0.6rem 0; padding: 0.5rem 0.8rem; }
fieldset.kinds { display: grid; grid-template-columns: repeat(auto-fill, minmax(15rem, 1fr)); gap: 0.1rem 1rem; }
fieldset.kinds legend { padding: 0 0.3rem; }
form.stack fieldset.kinds label { margin: 0.15rem 0; font-size: 0.9rem; }
.row { display: flex; gap: 0.6rem; flex-wrap: wrap; align-items: end; }
.row label { margin: 0; }
.row input { padding: 0.3rem 0.4rem; border: 1px solid var(--line); border-radius: 5px; font: inherit; }
button { font: inherit; padding: 0.35rem 0.85rem; border-radius: 5px; border: 1px solid #b8c0c8; background: #fff; cursor: pointer; }
button.primary { background: var(--ink); color: #fff; border-color: var(--ink); }
button.danger { color: var(--bad); border-color: #e2b0ab; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.3rem 1.2rem; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
.actions { display: flex; gap: 0.5rem; flex-wrap: wrap; margin-top: 1rem; }
.pager { margin-top: 0.75rem; }
td pre { margin: 0.25rem 0 0; max-width: 32rem; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 0.85em; }
.sign-in { max-width: 26rem; margin: 4rem auto; }
pre.bytes { margin: 0.4rem 0; padding: 0.5rem; background: #f3f5f7; border: 1px solid var(--line); border-radius: 5px;
  white-space: pre-wrap; overflow-wrap: anywhere; font-size: 0.85em; max-height: 24rem; overflow: auto; }
table.headers th { width: 16rem; background: #fafbfc; color: var(--ink); font-weight: 500; }
h3 { font-size: 0.95rem; margin: 0.9rem 0 0.3rem; }
form.stack textarea { display: block; width: 100%; max-width: 48rem; padding: 0.4rem 0.5rem; border: 1px solid var(--line);
  border-radius: 5px; font: 0.88em ui-monospace, "SFMono-Regular", Menlo, monospace; }
form.stack textarea[aria-invalid=true] { border-color: var(--bad); }
.field-error { color: var(--bad); margin: -0.3rem 0 0.6rem; font-size: 0.9rem; }
.preview { margin: 0.4rem 0 0.8rem; }
.steer p { margin: 0.3rem 0; padding: 0.35rem 0.6rem; background: #fbefd0; border-radius: 5px; }
select { font: inherit; padding: 0.3rem 0.4rem; border: 1px solid var(--line); border-radius: 5px; }
`;
