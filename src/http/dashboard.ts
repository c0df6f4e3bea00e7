import { randomBytes } from 'node:crypto';
import { uplotAssets } from '../pages/index.ts';
import { DASHBOARD_SCRIPT } from './dashboard-script.ts';

const STYLE = `
:root { color-scheme: light dark; font: 15px/1.4 system-ui, sans-serif; }
body { margin: 0 auto; padding: 12px; max-width: 1200px; }
header { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: baseline; }
h1 { font-size: 1.3em; margin: 0; }
h2 { font-size: 1.1em; margin: 20px 0 8px; }
h3 { font-size: 1em; margin: 0 0 4px; }
.grid { display: grid; gap: 12px; grid-template-columns: repeat(auto-fill, minmax(280px, 1fr)); }
.card { border: 1px solid #8884; border-radius: 6px; padding: 10px; overflow-x: auto; }
.muted { opacity: 0.7; margin: 2px 0; }
.warn { color: #c60; margin: 2px 0; }
table { border-collapse: collapse; font-size: 0.9em; margin: 6px 0; }
th, td { text-align: left; padding: 2px 8px 2px 0; white-space: nowrap; }
#feed { list-style: none; padding: 0; margin: 0; max-height: 360px; overflow-y: auto; font-family: ui-monospace, monospace; font-size: 0.85em; }
#feed li { padding: 2px 0; border-bottom: 1px solid #8882; overflow-wrap: anywhere; }
#feed li.fill { color: #2a7; }
#strategies .card { margin-bottom: 12px; }
form#login { margin: 12px 0; }
@media (max-width: 700px) { body { padding: 6px; } .grid { grid-template-columns: 1fr; } }
`;

/**
 * The dashboard page, with a fresh nonce per response. It holds no data: everything it shows
 * comes from the API after the page loads, so the page itself needs no token. `csp` is the
 * Content-Security-Policy that goes with it: only this response's script and style run.
 */
export function dashboardPage(): { html: string; csp: string } {
  const nonce = randomBytes(16).toString('base64');
  const { js, css } = uplotAssets();
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>indexbot</title>
<style nonce="${nonce}">${css}${STYLE}</style>
</head>
<body>
<header><h1>indexbot</h1><span id="state" class="muted">loading</span><span id="live" class="muted">connecting</span></header>
<form id="login" hidden><label>Token <input id="token" type="password" autocomplete="off"></label> <button type="submit">Open</button></form>
<h2>Indexes</h2><div id="indexes" class="grid"></div>
<h2>Live events</h2><ul id="feed"></ul>
<h2>Strategies</h2><div id="strategies"></div>
<h2>Alert outbox</h2><div id="outbox" class="card"></div>
<h2 id="budget-title">Rate budget</h2><div id="budget" class="card"></div>
<script nonce="${nonce}">${js}</script>
<script nonce="${nonce}">${DASHBOARD_SCRIPT}</script>
</body>
</html>
`;
  const csp = `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`;
  return { html, csp };
}

/** For every other response: nothing may run or load. */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'";
