import { weightChange } from '../core/index.ts';
import { UTC_TIME_OPTIONS } from '../pages/index.ts';

/**
 * The equity chart's value range: the data with a tenth of its span either side, and at least
 * half a percent of its level, so a flat or nearly flat equity shows its moves. uPlot's own
 * range for a flat 10,000 was 0 to 20,000 (trial 24). Run in the page too.
 */
export function equityRange(min: number | null, max: number | null): [number, number] {
  if (min === null || max === null) return [0, 1];
  const pad = Math.max((max - min) / 10, Math.max(Math.abs(min), Math.abs(max)) / 200, 0.01);
  return [min - pad, max + pad];
}

/**
 * When the feed dates an event: when it happened in the market (an announcement's time, a
 * rebalance's effective time), as fills are dated by the strategies' clock; when it was seen,
 * for what the API does not date. In the demo the market runs on a simulated clock, and the
 * feed read wall-clock times beside the fills' simulated ones (trial 25). Run in the page too.
 */
export function eventTime(event: { occurredAt?: number | null; detectedAt: number }): number {
  return typeof event.occurredAt === 'number' ? event.occurredAt : event.detectedAt;
}

/**
 * A sink's "last error" cell: a pending alert's failure, else why the last one given up was
 * (a give-up's reason is kept apart from a later retried failure's). Run in the page too.
 */
export function sinkError(a: { lastError: string | null; lastGiveUpError?: string | null }): string {
  return a.lastError || (a.lastGiveUpError ? `gave up: ${a.lastGiveUpError}` : '');
}

/**
 * The dashboard's own script, run in the browser. Every string from the server is put in the
 * page with textContent, never parsed as HTML. The token, if the server wants one, is asked
 * once, kept in sessionStorage and sent as a header (never in a URL); the live feed is read
 * with fetch streaming for the same reason (EventSource cannot send a header).
 */
export const DASHBOARD_SCRIPT = String.raw`
'use strict';
(function () {
  var TOKEN_KEY = 'indexbot-token';
  var FEED_MAX = 100;
  var charts = new Map();
  // As the report pages do: the charts, by strategy, for a page test to read their scales.
  window.indexbotCharts = charts;
  var lastSeq = 0;
  var pending;

  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }
  function clear(n) { while (n.firstChild) n.removeChild(n.firstChild); }
  ${weightChange.toString()}
  ${equityRange.toString()}
  ${eventTime.toString()}
  ${sinkError.toString()}
  function money(x) { return x === null || x === undefined ? 'n/a' : Number(x).toFixed(2); }
  // Quantities and prices as the backtest report shows them: six significant digits, no exponent.
  function amount(x) { return Number(x).toLocaleString('en-US', { maximumSignificantDigits: 6, useGrouping: false }); }
  function ago(s) { return s === null || s === undefined ? 'never' : s < 120 ? s + ' s ago' : s < 7200 ? Math.round(s / 60) + ' min ago' : Math.round(s / 3600) + ' h ago'; }
  function time(t) { return new Date(t).toISOString().replace('T', ' ').slice(0, 19); }
  function headers(extra) {
    var h = Object.assign({ Accept: 'application/json' }, extra || {});
    var token = sessionStorage.getItem(TOKEN_KEY);
    if (token) h.Authorization = 'Bearer ' + token;
    return h;
  }
  function setState(text) { $('state').textContent = text; }

  function askToken() {
    $('login').hidden = false;
    setState('this bot wants its token');
    // Nothing is connecting until the token is given (trial 30: "connecting" beside the form).
    $('live').textContent = '';
  }
  $('login').addEventListener('submit', function (ev) {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('token').value);
    $('token').value = '';
    $('login').hidden = true;
    start();
  });

  function api(path, init) {
    init = init || {};
    return fetch(path, { method: init.method || 'GET', headers: headers(init.headers), body: init.body, cache: 'no-store' }).then(function (res) {
      if (res.status === 401) { askToken(); throw new Error('unauthorized'); }
      if (!res.ok) throw new Error(path + ': HTTP ' + res.status);
      return res.json();
    });
  }

  function table(head, rows) {
    var t = el('table');
    var tr = el('tr');
    head.forEach(function (h) { tr.appendChild(el('th', null, h)); });
    t.appendChild(tr);
    rows.forEach(function (r) {
      var row = el('tr');
      r.forEach(function (c) { row.appendChild(el('td', null, c)); });
      t.appendChild(row);
    });
    return t;
  }

  function renderIndexes(list) {
    var box = $('indexes');
    clear(box);
    list.forEach(function (i) {
      var card = el('div', 'card');
      card.appendChild(el('h3', null, i.indexId));
      card.appendChild(el('p', 'muted', 'last poll ' + ago(i.lastPollAgeS) + (i.nav === null ? '' : ' · value ' + money(i.nav))));
      if (i.nextRebalance) {
        card.appendChild(el('p', 'warn', 'next rebalance ' + i.nextRebalance.id + ' at ' + time(Date.parse(i.nextRebalance.effectiveAt))));
        var ul = el('ul');
        var shown = i.nextRebalance.changes.slice(0, 8);
        shown.forEach(function (c) {
          ul.appendChild(el('li', null, c.action + ' ' + c.symbol + ' ' + weightChange(c.oldWeight, c.newWeight)));
        });
        if (i.nextRebalance.changes.length > shown.length) ul.appendChild(el('li', 'muted', (i.nextRebalance.changes.length - shown.length) + ' more'));
        card.appendChild(ul);
      } else card.appendChild(el('p', 'muted', 'no rebalance announced'));
      card.appendChild(el('p', 'muted', 'top: ' + i.top.map(function (t) { return t.symbol + ' ' + (t.weight * 100).toFixed(1) + '%'; }).join(', ')));
      box.appendChild(card);
    });
  }

  function drawEquity(name, box) {
    return api('/api/v1/strategies/' + encodeURIComponent(name) + '/equity').then(function (res) {
      var xs = res.points.map(function (p) { return p.t / 1000; });
      var ys = res.points.map(function (p) { return p.equity; });
      var width = Math.max(240, Math.min(box.clientWidth || 600, 900) - 24);
      var chart = charts.get(name);
      if (chart && chart.root.isConnected) chart.setData([xs, ys]);
      else {
        var opts = { ${UTC_TIME_OPTIONS}, width: width, height: 180, scales: { y: { range: function (u, min, max) { return equityRange(min, max); } } }, series: [{}, { label: 'equity USD', stroke: '#2f7ed8', width: 2 }], axes: [{}, { size: 70 }], legend: { show: false } };
        chart = new uPlot(opts, [xs, ys], box);
        charts.set(name, chart);
      }
      // One point (no fill yet, valued now): the two hours up to it, not an hour of future (trial 35).
      if (xs.length === 1) chart.setScale('x', { min: xs[0] - 7200, max: xs[0] });
    });
  }

  function renderStrategies(list) {
    var box = $('strategies');
    list.forEach(function (s) {
      var id = 'strategy-' + s.strategy.replace(/[^a-zA-Z0-9_-]/g, '_');
      var card = document.getElementById(id);
      if (!card) {
        card = el('div', 'card strategy');
        card.id = id;
        card.appendChild(el('h3'));
        card.appendChild(el('p', 'summary'));
        var actions = el('p', 'actions');
        var pause = el('button', 'pause');
        pause.type = 'button';
        pause.addEventListener('click', function () {
          var verb = pause.dataset.paused === 'true' ? 'resume' : 'pause';
          api('/api/v1/strategies/' + encodeURIComponent(s.strategy) + '/' + verb, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' }).then(refresh, report);
        });
        actions.appendChild(pause);
        card.appendChild(actions);
        card.appendChild(el('div', 'chart'));
        card.appendChild(el('div', 'positions'));
        card.appendChild(el('div', 'fills'));
        box.appendChild(card);
      }
      card.querySelector('h3').textContent = s.strategy + (s.paused ? ' (paused)' : '');
      card.querySelector('.summary').textContent = 'equity ' + money(s.equity) + ' · P&L ' + money(s.pnlUsd) + ' · cash ' + money(s.cash) + ' · fills ' + s.fills + ' · parked ' + s.parked.length;
      var button = card.querySelector('button.pause');
      button.dataset.paused = String(s.paused);
      button.textContent = s.paused ? 'Resume' : 'Pause';
      var positions = card.querySelector('.positions');
      clear(positions);
      positions.appendChild(table(['position', 'quantity', 'cost', 'value'], s.positions.map(function (p) { return [p.label, amount(p.quantity), money(p.costUsd), money(p.valueUsd)]; })));
      var fills = card.querySelector('.fills');
      clear(fills);
      fills.appendChild(table(['fill', 'side', 'quantity', 'price', 'at'], s.recentFills.map(function (f) { return [f.label, f.side, amount(f.quantity), amount(f.price), time(f.at)]; })));
      drawEquity(s.strategy, card.querySelector('.chart')).catch(report);
    });
  }

  function renderOutbox(list) {
    var box = $('outbox');
    clear(box);
    box.appendChild(table(['sink', 'pending', 'oldest pending', 'delivered', 'given up', 'last error'], list.map(function (a) {
      return [a.sink, a.pending, a.oldestPendingAgeS === null ? '' : ago(a.oldestPendingAgeS), a.delivered, a.givenUp, sinkError(a)];
    })));
  }

  function renderBudget(s) {
    var box = $('budget');
    clear(box);
    // A strategies runner has no client and no gates: what it watches is its event stream.
    if (s.rateGates.length === 0 && s.eventStream) {
      $('budget-title').textContent = 'Event stream';
      var e = s.eventStream;
      box.appendChild(table(['stream', 'group', 'lag', 'pending', 'last read'], [[e.stream, e.group, e.lag === null ? '?' : e.lag, e.pending === null ? '?' : e.pending, ago(e.lastReadAgeS)]]));
      return;
    }
    if (s.budget) box.appendChild(el('p', null, 'planned ' + s.budget.plannedPerMin.toFixed(1) + ' of ' + s.budget.budgetPerMin.toFixed(1) + ' requests/min'));
    box.appendChild(table(['gate', 'limit', 'remaining', 'queued', 'sent', '429s'], s.rateGates.map(function (g) {
      return [g.name, g.limit + '/' + g.windowMs / 1000 + ' s', g.remaining === undefined || g.remaining === null ? '?' : g.remaining, g.queued, g.sent, g.rateLimited];
    })));
  }

  function feedLine(kind, data) {
    var li = el('li', kind);
    if (kind === 'fill') li.textContent = time(data.at) + '  ' + data.strategy + ': ' + data.side + ' ' + amount(data.quantity) + ' ' + (data.label || data.instrument) + ' at ' + amount(data.price);
    else li.textContent = time(eventTime(data)) + '  #' + data.seq + ' ' + data.type + ' ' + data.indexId + (data.payload && data.payload.rebalanceId ? ' ' + data.payload.rebalanceId : '');
    var feed = $('feed');
    feed.insertBefore(li, feed.firstChild);
    while (feed.childNodes.length > FEED_MAX) feed.removeChild(feed.lastChild);
  }

  function report(e) { if (e && e.message !== 'unauthorized') setState('error: ' + e.message); }

  function refresh() {
    return Promise.all([api('/api/v1/status'), api('/api/v1/indexes'), api('/api/v1/strategies')]).then(function (r) {
      renderBudget(r[0]);
      renderOutbox(r[0].alerts);
      renderIndexes(r[1].indexes);
      renderStrategies(r[2].strategies);
      setState('updated ' + time(Date.now()) + ' UTC');
      return true;
    }, function (e) { report(e); return false; });
  }

  function stream() {
    var since = lastSeq;
    fetch('/api/v1/stream?since=' + since, { headers: headers({ Accept: 'text/event-stream' }), cache: 'no-store' }).then(function (res) {
      if (res.status === 401) { askToken(); return; }
      if (!res.ok || !res.body) throw new Error('stream: HTTP ' + res.status);
      $('live').textContent = 'live';
      var reader = res.body.getReader();
      var decoder = new TextDecoder();
      var buffer = '';
      function pump() {
        return reader.read().then(function (r) {
          if (r.done) throw new Error('stream ended');
          buffer += decoder.decode(r.value, { stream: true });
          var cut;
          while ((cut = buffer.indexOf('\n\n')) >= 0) {
            var block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            var kind = 'message';
            var data = '';
            block.split('\n').forEach(function (line) {
              if (line.indexOf('event: ') === 0) kind = line.slice(7);
              else if (line.indexOf('data: ') === 0) data += line.slice(6);
            });
            if (!data) continue;
            var parsed = JSON.parse(data);
            if (kind === 'event') lastSeq = Math.max(lastSeq, parsed.seq);
            feedLine(kind, parsed);
            // A fill changes a strategy's book: show it now rather than at the next refresh.
            if (kind === 'fill' && !pending) pending = setTimeout(function () { pending = undefined; refresh(); }, 500);
          }
          return pump();
        });
      }
      return pump();
    }).catch(function (e) {
      $('live').textContent = 'reconnecting';
      report(e);
      setTimeout(stream, 2000);
    });
  }

  var started = false;
  function start() {
    refresh().then(function (ok) {
      if (!ok || started) return;
      started = true;
      return api('/api/v1/events?limit=20&since=0&latest=1').then(function (r) {
        r.events.forEach(function (e) { feedLine('event', e); lastSeq = Math.max(lastSeq, e.seq); });
        stream();
        setInterval(refresh, 5000);
      });
    }).catch(report);
  }
  start();
})();
`;
