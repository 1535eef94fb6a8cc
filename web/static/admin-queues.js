// The dashboard's queues: one section per queue, cloned from the template
// in admin.html, kept in step with the server's answers. A view holds a
// section's elements and what the server last said of its queue.

import { $, uniqueId } from './dom.js';
import { i18n, t } from './admin-messages.js';
import { num, secs, clock, ago } from './admin-format.js';
import { api, currentSession, authHeaders, canOperate } from './admin-api.js';
import { buildForms, syncForm, togglePause, toggleAdapt } from './admin-settings.js';
import { buildOpening, updateOpening } from './admin-opening.js';
import { buildText, updateText } from './admin-text.js';
import { buildSale, updateSale } from './admin-sale.js';
import { drawChart, chartWidth } from './admin-chart.js';
import { renderAudit } from './admin-audit.js';
import { buildSaleDay, updateSaleDay, refreshSchedule } from './admin-saleday.js';
import { refreshDefences, showDefences } from './admin-defences.js';

const AUDIT_SHOWN = 20; // the newest audit entries each queue shows

const sections = new Map(); // queue name -> per-queue view (see buildSection)

// renderQueues shows the queues of a GET /admin/v1/queues answer: new
// ones get a section, gone ones lose theirs.
export function renderQueues(data) {
  const list = (data && data.queues) || [];
  const seen = new Set();
  for (const q of list) {
    seen.add(q.queue);
    let view = sections.get(q.queue);
    if (!view) {
      view = buildSection(q.queue);
      sections.set(q.queue, view);
      $('queues').append(view.root);
    }
    updateSection(view, q);
  }
  for (const [name, view] of sections) {
    if (!seen.has(name)) {
      view.root.remove();
      sections.delete(name);
    }
  }
  $('no-queues').hidden = list.length > 0;
}

// clearQueues drops every section (signed out).
export function clearQueues() {
  sections.clear();
  $('queues').replaceChildren();
}

// refreshHistories reads each queue's ticks (the chart) and audit log,
// for session mine.
export async function refreshHistories(mine) {
  await Promise.all(Array.from(sections.keys(), async (name) => {
    const path = '/admin/v1/queues/' + encodeURIComponent(name);
    const [h, log] = await Promise.all([
      api('GET', path + '/history'),
      api('GET', path + '/audit?limit=' + AUDIT_SHOWN),
      sections.has(name) ? refreshSchedule(sections.get(name), mine) : null,
      sections.has(name) ? refreshDefences(sections.get(name), mine) : null,
    ]);
    const view = sections.get(name);
    if (mine !== currentSession() || !view) return;
    view.points = h.points || [];
    view.intervalMs = h.refill_interval_ms;
    view.lineStats = h.stats || null;
    view.laneStats = h.lanes || null; // each lane's time in line (admin-saleday.js)
    drawChart(view);
    showLineStats(view);
    renderAudit(view, log.entries || []);
  }));
}

// redrawQueues draws every section again from what it holds, in the
// language now chosen; the markup's own strings are i18n.apply's.
export function redrawQueues() {
  for (const view of sections.values()) {
    view.root.setAttribute('aria-label', t('queueLabel', { name: view.name }));
    if (view.last) showSection(view);
    showDefences(view);
    drawChart(view);
    showLineStats(view);
    renderAudit(view, view.auditEntries, true);
  }
}

// showLineStats shows what the line felt like over the last 10 minutes
// (the history's stats): each spread as "p50 / p90 (count)".
function showLineStats(view) {
  const st = view.lineStats;
  const set = (sel, text) => { view.root.querySelector(sel).textContent = text; };
  if (!st) return;
  const dur = (ms, signed) => (signed && ms > 0 ? '+' : '') + t('seconds', { s: secs(ms / 1000) });
  const spread = (s, signed) => (s.count > 0 ? t('lineSpread', { mid: dur(s.p50_ms, signed), high: dur(s.p90_ms, signed), count: num(s.count) }) : t('lineNoData'));
  set('.ls-line', spread(st.time_in_line, false));
  set('.ls-eta', spread(st.eta_error, true));
  set('.ls-inside', spread(st.time_inside, false));
  set('.ls-rates', t('lineRatesValue', { arrivals: num(st.arrivals_per_minute), admissions: num(st.admissions_per_minute) }));
  set('.ls-abandon', t('linePercent', { p: num(st.abandonment_rate * 100) }));
}

// downloadHistory saves the queue's history as CSV: fetched with the
// credential (a plain link could not send a token), then handed to the
// browser.
async function downloadHistory(view) {
  const err = view.root.querySelector('.csv-error');
  err.hidden = true;
  try {
    const res = await fetch('/admin/v1/queues/' + encodeURIComponent(view.name) + '/history?format=csv', {
      headers: authHeaders(),
      cache: 'no-store',
      credentials: 'same-origin',
    });
    if (!res.ok) throw new Error(String(res.status));
    const url = URL.createObjectURL(await res.blob());
    const a = document.createElement('a');
    a.href = url;
    a.download = 'waitroom-' + view.name + '-history.csv';
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) {
    err.textContent = t('csvFailed');
    err.hidden = false;
  }
}

function buildSection(name) {
  const root = $('queue-template').content.firstElementChild.cloneNode(true);
  i18n.translate(root);
  root.setAttribute('data-queue', name);
  // A role that may only read this queue sees none of its controls
  // (style.css hides them), and a note that says why.
  if (!canOperate(name)) root.setAttribute('data-readonly', '');
  const q = (sel) => root.querySelector(sel);
  const view = {
    name: name,
    root: root,
    charts: { waiting: q('svg.chart-waiting'), active: q('svg.chart-active'), ticks: q('svg.chart-ticks') },
    nows: { waiting: q('.now-waiting'), active: q('.now-active'), admitted: q('.now-admitted') },
    abandonedKey: q('.abandoned-key'),
    effectiveKey: q('.effective-key'),
    points: [], // the history of ticks, as the server last said
    windows: [], // the schedule's windows, as the server last said (admin-saleday.js)
    intervalMs: 0,
    lineStats: null, // the history's stats (the last 10 minutes), as the server last said
    laneStats: null, // its lanes'
    last: null, // the queue as the server last said
    auditEntries: [], // the audit log as the server last said
    defences: null, // the price in force and what people paid, as the server last said (admin-defences.js)
    drawnWidth: 0,
    state: q('.queue-state'),
    pause: q('.pause-btn'),
    pauseError: q('.pause-error'),
    adaptButton: q('.adapt-btn'),
    adaptError: q('.adapt-error'),
    adaptState: q('.adapt-state'),
    adapt: false,
    pausedNote: q('.paused-note'),
    routes: q('.routes'),
    paused: false, // as the server last said
    forms: [],
    update: (answer) => updateSection(view, answer), // after a change: the queue as the server answered it
    redraw: () => drawChart(view), // after the windows changed
  };
  view.forms = buildForms(view, root);
  view.opening = buildOpening(view, q('form.opening-form'));
  view.text = buildText(view, q('form.text-form'));
  view.sale = buildSale(view, q('.closed-note'), q('form.sale-form'));
  view.saleDay = buildSaleDay(view, q('.saleday'));
  q('.queue-name').textContent = name;
  root.setAttribute('aria-label', t('queueLabel', { name: name }));
  view.pauseError.id = uniqueId('pause-error');
  view.pause.setAttribute('aria-describedby', view.pauseError.id);
  view.pause.addEventListener('click', () => togglePause(view));
  q('.csv-btn').addEventListener('click', () => downloadHistory(view));
  view.adaptError.id = uniqueId('adapt-error');
  view.adaptButton.setAttribute('aria-describedby', view.adaptError.id);
  view.adaptButton.addEventListener('click', () => toggleAdapt(view));
  // The chart is drawn at its width in CSS pixels: draw again when that
  // changes (a phone turned, a window resized).
  if (typeof ResizeObserver === 'function') {
    new ResizeObserver(() => {
      if (chartWidth(view) !== view.drawnWidth) drawChart(view);
    }).observe(view.charts.waiting);
  }
  return view;
}

// updateSection takes the server's word on a queue (q) and shows it.
function updateSection(view, q) {
  view.last = q;
  showSection(view);
}

// showSection shows what the server last said of view's queue.
function showSection(view) {
  const q = view.last;
  const set = (sel, text) => { view.root.querySelector(sel).textContent = text; };
  set('.waiting', ofCap(q.waiting, q.max_waiting));
  view.root.querySelector('.waiting').classList.toggle('at-cap', q.max_waiting > 0 && q.waiting >= q.max_waiting);
  set('.active', ofCap(q.active, q.max_active));
  view.root.querySelector('.active').classList.toggle('at-cap', q.max_active > 0 && q.active >= q.max_active);
  set('.tokens', num(q.tokens));
  set('.refill-size', num(q.refill_size));
  // What an interval admits now: below the refill size while the order
  // page's health holds the rate back.
  set('.refill-effective', q.adapt_enabled ? t('effectiveAuto', { n: num(q.refill_effective) }) : t('effectiveOff', { n: num(q.refill_effective) }));
  view.root.querySelector('.refill-effective').classList.toggle('at-cap', q.adapt_enabled && q.refill_effective < q.refill_size);
  set('.interval', secs(q.refill_interval_ms / 1000));
  set('.per-minute', num(q.admitted_last_minute));
  set('.abandoned', num(q.abandoned_last_interval || 0));
  set('.abandon-after', q.abandon_after_ms > 0 ? t('seconds', { s: secs(q.abandon_after_ms / 1000) }) : t('abandonNever'));
  set('.pow', q.challenge_difficulty > 0 ? t('difficulty', { d: num(q.challenge_difficulty) }) : t('powOff'));
  set('.last-tick', q.last_tick_at_ms ? t('lastTick', { time: clock(new Date(q.last_tick_at_ms)), ago: ago(q.last_tick_at_ms) }) : t('lastTickNever'));
  // Requests the gate let through unchecked while Redis was away
  // (WAITROOM_GATE_FAIL=open): kept after the outage, so it is seen.
  set('.fail-open', q.gate_fail_open_last_at_ms
    ? t('failOpen', { n: num(q.gate_fail_open_requests), time: clock(new Date(q.gate_fail_open_last_at_ms)), ago: ago(q.gate_fail_open_last_at_ms) })
    : t('failOpenNever'));
  view.root.querySelector('.fail-open').classList.toggle('at-cap', q.gate_fail_open_last_at_ms > 0);
  showRoutes(view.routes, q.routes || []);

  view.paused = q.paused === true;
  view.root.setAttribute('data-paused', String(view.paused));
  view.state.textContent = view.paused ? t('paused') : t('admitting');
  view.state.classList.toggle('badge-paused', view.paused);
  view.pausedNote.hidden = !view.paused;
  view.pause.textContent = view.paused ? t('resume') : t('pause');
  view.pause.classList.toggle('btn-primary', view.paused);
  view.pause.classList.toggle('btn-secondary', !view.paused);

  view.adapt = q.adapt_enabled === true;
  view.adaptState.textContent = view.adapt ? t('adaptOn') : t('adaptOff');
  view.adaptButton.textContent = view.adapt ? t('adaptTurnOff') : t('adaptTurnOn');

  for (const form of view.forms) syncForm(form, q);
  updateOpening(view.opening, q);
  updateText(view.text, q);
  updateSale(view.sale, q);
  updateSaleDay(view, q);
  showDefences(view); // the price in force, over the queue's own challenge
}

// showRoutes lists a queue's gate routes ("shop.example/sale/"), each as
// code: they are paths to type, not prose.
function showRoutes(el, routes) {
  if (routes.length === 0) {
    el.textContent = t('routesNone');
    return;
  }
  el.replaceChildren(...routes.map((r) => {
    const code = document.createElement('code');
    code.className = 'route';
    code.textContent = r;
    return code;
  }));
}

// ofCap is a count under its cap: "3 / 50" ("(full)" at it: nobody more
// gets in, or newcomers are told to come back later), "3 (no cap)"
// without one.
function ofCap(n, cap) {
  if (!(cap > 0)) return t('noCap', { n: num(n) });
  return t(n >= cap ? 'ofCapFull' : 'ofCap', { n: num(n), cap: num(cap) });
}
