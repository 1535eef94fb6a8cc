// The live chart of a queue: three panels on one time axis, each on its
// own scale: people waiting (a line), active users (a line, at each
// tick, as the server's history has them) and people admitted per tick (bars, with those dropped as abandoned stacked on
// them). A tick admitting 1 beside a line of 10,000 is a bar of its own
// panel's height, never a sliver under the line.
//
// Each SVG is drawn at its width in CSS pixels (viewBox = width × height),
// so one unit is one pixel and the 12px labels (style.css) stay 12px on a
// phone and on a wide screen; the queue's section draws again when the
// width changes (chartWidth).

import { t } from './admin-messages.js';
import { num, clock } from './admin-format.js';

export const CHART_WINDOW_MS = 10 * 60 * 1000; // the chart shows the last 10 minutes

const SVG_NS = 'http://www.w3.org/2000/svg';
const PLOT_H = { waiting: 96, active: 56, ticks: 72 }; // px of each panel's plot
const PAD_TOP = 8; // room for the top row's label
const PAD_BOTTOM = 6;
const TIME_AXIS_H = 20; // the times under the last panel
const PAD_RIGHT = 10;
const CHAR_PX = 7.2; // about the width of a digit of a 12px label
const ROW_PX = 24; // the least room between two labels of a y axis
const MIN_BAR_PX = 2; // a nonzero count is never thinner than this
const MIN_SPAN_MS = 10000; // the shortest time axis, when there is hardly any data

function el(name, attrs, text) {
  const node = document.createElementNS(SVG_NS, name);
  for (const k in attrs) node.setAttribute(k, attrs[k]);
  if (text !== undefined) node.textContent = text;
  return node;
}

// niceStep picks 1, 2 or 5 × 10^k so axis labels are round numbers.
function niceStep(raw) {
  if (!(raw > 0)) return 1;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const f = raw / mag;
  const step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  return Math.max(1, step); // counts of people are whole numbers
}

// scale is a y axis from 0 covering max, in round steps, with at most as
// many rows as fit plotH.
function scale(max, plotH) {
  const step = niceStep(max / Math.max(1, Math.floor(plotH / ROW_PX)));
  const rows = Math.max(1, Math.ceil(max / step));
  return { step: step, rows: rows, top: step * rows, plotH: plotH };
}

// chartWidth is the width the view's chart is laid out at (CSS pixels).
export function chartWidth(view) {
  return Math.floor(view.charts.waiting.getBoundingClientRect().width);
}

// drawChart redraws the three panels from the view's history (points,
// intervalMs) and last answer (admin-queues.js).
export function drawChart(view) {
  const width = chartWidth(view);
  view.drawnWidth = width;
  const W = width > 0 ? width : 640; // not laid out: any width, drawn again when it is

  const t1 = view.points.length ? view.points[view.points.length - 1].at_ms : 0;
  const points = view.points.filter((p) => p.at_ms > t1 - CHART_WINDOW_MS);
  // Each tick's bar covers the interval that ended at the tick.
  const slot = view.intervalMs > 0 ? view.intervalMs : 1000;
  let t0 = points.length ? points[0].at_ms - slot : Infinity;
  if (!(t1 - t0 >= MIN_SPAN_MS)) t0 = t1 - MIN_SPAN_MS;
  const span = { t0: t0, t1: t1 };

  const abandoned = (p) => p.abandoned || 0;
  const maxOf = (list, f) => list.reduce((m, p) => Math.max(m, f(p)), 0);
  const scales = {
    waiting: scale(maxOf(points, (p) => p.waiting), PLOT_H.waiting),
    active: scale(maxOf(points, (p) => p.active || 0), PLOT_H.active),
    ticks: scale(maxOf(points, (p) => Math.max(p.admitted + abandoned(p), p.refill_effective || 0)), PLOT_H.ticks),
  };
  // One left margin for all three, so their time axes line up.
  let chars = 1;
  for (const k in scales) chars = Math.max(chars, num(scales[k].top).length);
  const left = Math.ceil(chars * CHAR_PX) + 10;

  const now = view.last;
  const lastPoint = points[points.length - 1];
  view.nows.waiting.textContent = now ? t('nowValue', { n: num(now.waiting) }) : '';
  view.nows.active.textContent = now ? t('nowValue', { n: num(now.active) }) : '';
  view.nows.admitted.textContent = lastPoint ? t('lastTickValue', { n: num(lastPoint.admitted) }) : '';
  view.abandonedKey.hidden = !points.some((p) => abandoned(p) > 0);
  const budgets = points.filter((p) => p.refill_effective > 0);
  view.effectiveKey.hidden = budgets.length === 0;

  // People waiting.
  let f = frame(view.charts.waiting, W, left, span, scales.waiting, false);
  line(view.charts.waiting, f, points.map((p) => [p.at_ms, p.waiting]), 'waiting', t('noTicksYet'));
  view.charts.waiting.setAttribute('aria-label', !points.length ? t('noTicksLabel')
    : t('waitingChartLabel', { minutes: minutes(span), last: num(lastPoint.waiting), max: num(maxOf(points, (p) => p.waiting)) }));

  // Active users at each tick, as the server recorded them.
  f = frame(view.charts.active, W, left, span, scales.active, false);
  line(view.charts.active, f, points.map((p) => [p.at_ms, p.active || 0]), 'active', t('noTicksYet'));
  view.charts.active.setAttribute('aria-label', !points.length ? t('noTicksLabel')
    : t('activeServerLabel', { now: num(lastPoint.active || 0), max: num(maxOf(points, (p) => p.active || 0)) }));

  // Admitted (and abandoned) per tick.
  const svg = view.charts.ticks;
  f = frame(svg, W, left, span, scales.ticks, true);
  if (!points.length) {
    empty(svg, f, t('noTicksYet'));
    svg.setAttribute('aria-label', t('noTicksLabel'));
    return;
  }
  drawWindows(svg, f, span, view.windows || []);
  const barW = Math.max(1, (f.plotW * slot) / (t1 - t0) * 0.8);
  const height = (v) => (v > 0 ? Math.max(MIN_BAR_PX, (v / scales.ticks.top) * scales.ticks.plotH) : 0);
  for (const p of points) {
    const words = { time: clock(new Date(p.at_ms)), admitted: num(p.admitted), abandoned: num(abandoned(p)) };
    const label = abandoned(p) > 0 ? t('barLabelAbandoned', words) : t('barLabel', words);
    const hA = height(p.admitted);
    const hB = abandoned(p) > 0 ? Math.max(MIN_BAR_PX, height(p.admitted + abandoned(p)) - hA) : 0;
    const x = f.x(p.at_ms) - barW;
    if (hA > 0) bar(svg, x, f.base - hA, barW, hA, 'admitted-bar', label);
    if (hB > 0) bar(svg, x, f.base - hA - hB, barW, hB, 'abandoned-bar', label);
  }
  // The refill in force in each interval (refill_effective): a step line
  // over the bars, so a controller holding the rate back shows.
  if (budgets.length) {
    const d = budgets.map((p, i) => (i ? 'H' + (f.x(p.at_ms) - barW).toFixed(1) + ' V' : 'M' + (f.x(p.at_ms) - barW).toFixed(1) + ' ') +
      f.y(p.refill_effective).toFixed(1) + ' H' + f.x(p.at_ms).toFixed(1)).join(' ');
    svg.append(el('path', { d: d, class: 'effective-line' }));
  }
  const last = { admitted: num(lastPoint.admitted), abandoned: num(abandoned(lastPoint)), max: num(maxOf(points, (p) => p.admitted)) };
  svg.setAttribute('aria-label', abandoned(lastPoint) > 0 ? t('ticksChartLabelAbandoned', last) : t('ticksChartLabel', last));
}

// drawWindows shades, behind the bars, the stretch of each of the
// schedule's windows that the time axis shows, titled with its
// times in UTC.
function drawWindows(svg, f, span, windows) {
  for (const w of windows) {
    const a = Math.max(Date.parse(w.start), span.t0);
    const b = Math.min(Date.parse(w.end), span.t1);
    if (!(b > a)) continue;
    const r = el('rect', { x: f.x(a).toFixed(1), y: PAD_TOP, width: Math.max(1, f.x(b) - f.x(a)).toFixed(1), height: f.base - PAD_TOP, class: 'window-band' });
    r.append(el('title', {}, t('windowBand', { from: utcClock(Date.parse(w.start)), to: utcClock(Date.parse(w.end)) })));
    svg.append(r);
  }
}

function utcClock(ms) {
  return new Date(ms).toISOString().slice(0, 16).replace('T', ' ') + ' UTC';
}

function minutes(span) {
  return Math.round((span.t1 - span.t0) / 60000 * 10) / 10;
}

// frame empties svg, sizes it and draws a panel's grid, its y axis and,
// under the last panel, the times; it returns the panel's coordinates.
function frame(svg, W, left, span, sc, timeAxis) {
  svg.replaceChildren();
  const H = PAD_TOP + sc.plotH + (timeAxis ? TIME_AXIS_H : PAD_BOTTOM);
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  svg.setAttribute('width', String(W));
  svg.setAttribute('height', String(H));
  const plotW = Math.max(10, W - left - PAD_RIGHT);
  const base = PAD_TOP + sc.plotH;
  const f = {
    left: left,
    plotW: plotW,
    base: base,
    x: (ms) => left + ((ms - span.t0) / (span.t1 - span.t0)) * plotW,
    y: (v) => base - (v / sc.top) * sc.plotH,
  };
  for (let i = 0; i <= sc.rows; i++) {
    const y = base - (i / sc.rows) * sc.plotH;
    svg.append(el('line', { x1: left, x2: left + plotW, y1: y, y2: y, class: 'chart-grid' }));
    svg.append(el('text', { x: left - 6, y: y + 4, 'text-anchor': 'end', class: 'chart-label' }, num(sc.step * i)));
  }
  const times = [span.t0, (span.t0 + span.t1) / 2, span.t1];
  times.forEach((at, i) => {
    svg.append(el('line', { x1: f.x(at), x2: f.x(at), y1: PAD_TOP, y2: base, class: 'chart-grid' }));
    if (!timeAxis) return;
    const anchor = i === 0 ? 'start' : i === times.length - 1 ? 'end' : 'middle';
    svg.append(el('text', { x: f.x(at), y: base + 16, 'text-anchor': anchor, class: 'chart-label' }, clock(new Date(at))));
  });
  svg.append(el('line', { x1: left, x2: left + plotW, y1: base, y2: base, class: 'chart-axis' }));
  return f;
}

// line draws [time, value] pairs as a line (a dot when there is one).
function line(svg, f, pairs, kind, emptyText) {
  if (!pairs.length) {
    empty(svg, f, emptyText);
    return;
  }
  const d = pairs.map((p, i) => (i ? 'L' : 'M') + f.x(p[0]).toFixed(1) + ' ' + f.y(p[1]).toFixed(1)).join(' ');
  svg.append(el('path', { d: d, class: kind + '-line' }));
  if (pairs.length === 1) {
    // A single point makes an invisible path; mark it with a dot.
    svg.append(el('circle', { cx: f.x(pairs[0][0]), cy: f.y(pairs[0][1]), r: 3, class: kind + '-dot' }));
  }
}

function bar(svg, x, y, w, h, cls, label) {
  const r = el('rect', { x: x.toFixed(1), y: y.toFixed(1), width: w.toFixed(1), height: h.toFixed(1), class: cls });
  r.append(el('title', {}, label));
  svg.append(r);
}

function empty(svg, f, text) {
  svg.append(el('text', { x: f.left + f.plotW / 2, y: (PAD_TOP + f.base) / 2 + 5, 'text-anchor': 'middle', class: 'chart-empty' }, text));
}
