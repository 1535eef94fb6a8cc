// A queue's sale day: its lanes (each line's share and people,
// and the field that sets them: PATCH lanes), its schedule of windows
// (listed, drawn on the chart's time axis, edited in UTC and saved whole
// with PUT .../schedule) and the forecast of a refill size, asked while
// the operator types it in the refill field (GET .../forecast).

import { t } from './admin-messages.js';
import { num, secs, utcWhen, fromInputs, toInputs } from './admin-format.js';
import { api, currentSession, refused } from './admin-api.js';
import { patchQueue } from './admin-settings.js';

const FORECAST_DELAY_MS = 300; // typing pauses this long before a forecast is asked

// buildSaleDay wires view's sale-day part (root: the .saleday element).
export function buildSaleDay(view, root) {
  const q = (sel) => root.querySelector(sel);
  const o = {
    lines: q('.lines-list'),
    lanesForm: q('form.lanes-form'),
    lanesInput: q('.lanes-input'),
    lanesError: q('.lanes-error'),
    lanesOk: q('.lanes-ok'),
    lanesSubmit: q('.lanes-submit'),
    lanesDirty: false,
    windowState: q('.window-state'),
    rows: q('.windows-rows'),
    rowTemplate: q('template.window-row-template').content.firstElementChild,
    scheduleForm: q('form.schedule-form'),
    scheduleError: q('.schedule-error'),
    scheduleOk: q('.schedule-ok'),
    scheduleSubmit: q('.schedule-submit'),
    scheduleDirty: false,
    forecast: null, // the refill field's forecast line, made once the field is found
  };
  o.lanesInput.addEventListener('input', () => { o.lanesDirty = true; o.lanesOk.hidden = true; });
  o.lanesForm.addEventListener('submit', (e) => {
    e.preventDefault();
    saveLanes(view, o);
  });
  q('.window-add').addEventListener('click', () => {
    addRow(o, {});
    o.scheduleDirty = true;
  });
  o.scheduleForm.addEventListener('input', () => { o.scheduleDirty = true; o.scheduleOk.hidden = true; });
  o.scheduleForm.addEventListener('submit', (e) => {
    e.preventDefault();
    saveSchedule(view, o);
  });
  wireForecast(view, o);
  return o;
}

// updateSaleDay shows the lines and the window in force of q (the queue as
// the server said) in view's section, each lane with its time in line of
// the last ten minutes (view.laneStats, the history's), and its lanes in
// the field unless the operator is editing them.
export function updateSaleDay(view, q) {
  const o = view.saleDay;
  const lines = q.lines || [];
  const inLine = new Map((view.laneStats || []).map((l) => [l.lane, l.time_in_line]));
  if (!lines.length) {
    o.lines.textContent = t('lanesNone');
  } else {
    o.lines.replaceChildren(...lines.map((l) => {
      const li = document.createElement('li');
      li.className = 'line-row';
      li.setAttribute('data-lane', l.lane || '');
      const words = { lane: l.lane || t('generalLane'), share: num(Math.round(l.share * 1000) / 10), n: num(l.waiting) };
      const st = inLine.get(l.lane);
      li.textContent = st && st.count > 0
        ? t('lineRowWaited', { ...words, mid: t('seconds', { s: secs(st.p50_ms / 1000) }), high: t('seconds', { s: secs(st.p90_ms / 1000) }) })
        : t('lineRow', words);
      return li;
    }));
  }
  if (!o.lanesDirty && document.activeElement !== o.lanesInput) {
    o.lanesInput.value = lanesText(q.lanes);
  }
  const w = q.window;
  o.windowState.textContent = w ? t('windowInForce', { from: utcWhen(Date.parse(w.start)), to: utcWhen(Date.parse(w.end)), what: overrides(w) }) : t('windowNone');
}

// refreshSchedule reads the queue's windows (for the editor and the
// chart), for session mine.
export async function refreshSchedule(view, mine) {
  const data = await api('GET', '/admin/v1/queues/' + encodeURIComponent(view.name) + '/schedule');
  if (mine !== currentSession()) return;
  view.windows = data.windows || [];
  const o = view.saleDay;
  if (!o.scheduleDirty && !o.scheduleForm.contains(document.activeElement)) showRows(o, view.windows);
}

// overrides says what a window changes ("refill 40, paused").
export function overrides(w) {
  const parts = [];
  if (w.refill_size !== undefined) parts.push(t('windowRefill', { n: num(w.refill_size) }));
  if (w.max_active !== undefined) parts.push(t('windowCap', { n: num(w.max_active) }));
  if (w.paused === true) parts.push(t('windowPaused'));
  if (w.paused === false) parts.push(t('windowAdmitting'));
  if (w.lanes) parts.push(t('windowLanes', { lanes: lanesShares(w.lanes) || '–' }));
  return parts.join(', ') || t('windowNothing');
}

// lanesShares is lanes as an operator reads them: "priority 30%,
// seniors 10%" ('' for none).
export function lanesShares(lanes) {
  return lanes.map((l) => l.name + ' ' + num(Math.round(l.share * 1000) / 10) + '%').join(', ');
}

// lanesText is lanes as parseLanes reads them, in any language
// ("priority 30, seniors 10"); '' for none.
function lanesText(lanes) {
  return (lanes || []).map((l) => l.name + ' ' + String(Math.round(l.share * 1000) / 10)).join(', ');
}

// parseLanes reads the lanes field: "priority 30, seniors 10" (a name and
// a percentage each; empty: none). null when it cannot be read; the
// server judges the names and shares.
export function parseLanes(text) {
  const out = [];
  for (const part of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^(\S+)\s+([0-9]+(?:\.[0-9]+)?)\s*%?$/.exec(part);
    if (!m) return null;
    out.push({ name: m[1], share: Math.round(Number(m[2]) * 1000) / 100000 });
  }
  return out;
}

async function saveLanes(view, o) {
  o.lanesError.hidden = true;
  o.lanesOk.hidden = true;
  const lanes = parseLanes(o.lanesInput.value);
  if (!lanes) {
    showError(o.lanesError, t('lanesInvalid'), o.lanesInput);
    return;
  }
  const q = await patchQueue(view, { lanes: lanes }, o.lanesSubmit, (text) => showError(o.lanesError, text, o.lanesInput));
  if (!q) return;
  o.lanesDirty = false;
  view.update(q);
  o.lanesOk.textContent = lanes.length ? t('lanesSaved', { n: num(lanes.length), count: lanes.length }) : t('lanesSavedNone');
  o.lanesOk.hidden = false;
}

// showRows fills the editor with windows (the server's).
function showRows(o, windows) {
  o.rows.replaceChildren();
  for (const w of windows) addRow(o, w);
}

// addRow adds a row for window w (empty: a new one). Its lanes read as
// the lanes field does ("priority 30, seniors 10"); empty leaves the
// lanes as they are, unless the window set none (kept as none).
function addRow(o, w) {
  const row = o.rowTemplate.cloneNode(true);
  const q = (sel) => row.querySelector(sel);
  for (const [side, at] of [['start', w.start], ['end', w.end]]) {
    const ms = Date.parse(at || '');
    const v = isFinite(ms) ? toInputs(ms) : { date: '', time: '' };
    q('.' + side + '-date').value = v.date;
    q('.' + side + '-time').value = v.time;
  }
  q('.w-refill').value = w.refill_size !== undefined ? String(w.refill_size) : '';
  q('.w-cap').value = w.max_active !== undefined ? String(w.max_active) : '';
  q('.w-paused').value = w.paused === true ? 'pause' : w.paused === false ? 'admit' : '';
  q('.w-lanes').value = lanesText(w.lanes);
  row.noLanes = Array.isArray(w.lanes) && w.lanes.length === 0;
  q('.window-remove').addEventListener('click', () => {
    row.remove();
    o.scheduleDirty = true;
  });
  o.rows.append(row);
}

// rowWindow is a row as the API takes it, or {error: key}.
function rowWindow(row) {
  const q = (sel) => row.querySelector(sel);
  const w = {};
  for (const side of ['start', 'end']) {
    const v = fromInputs(q('.' + side + '-date').value, q('.' + side + '-time').value);
    if (v.error || v.value === null) return { error: v.error || 'windowNeedsTimes' };
    w[side] = v.value;
  }
  for (const [sel, field] of [['.w-refill', 'refill_size'], ['.w-cap', 'max_active']]) {
    const raw = q(sel).value.trim();
    if (raw === '') continue;
    if (!/^[0-9]+$/.test(raw)) return { error: 'windowNumber' };
    w[field] = Number(raw);
  }
  const paused = q('.w-paused').value;
  if (paused) w.paused = paused === 'pause';
  const lanesRaw = q('.w-lanes').value.trim();
  if (lanesRaw !== '') {
    const lanes = parseLanes(lanesRaw);
    if (!lanes) return { error: 'lanesInvalid' };
    w.lanes = lanes;
  } else if (row.noLanes) {
    w.lanes = [];
  }
  return { window: w };
}

async function saveSchedule(view, o) {
  o.scheduleError.hidden = true;
  o.scheduleOk.hidden = true;
  const windows = [];
  for (const row of o.rows.children) {
    const v = rowWindow(row);
    if (v.error) {
      showError(o.scheduleError, t(v.error), row.querySelector('input'));
      return;
    }
    windows.push(v.window);
  }
  const mine = currentSession();
  o.scheduleSubmit.disabled = true;
  try {
    const data = await api('PUT', '/admin/v1/queues/' + encodeURIComponent(view.name) + '/schedule', { windows: windows });
    if (mine !== currentSession()) return;
    o.scheduleDirty = false;
    view.windows = data.windows || [];
    showRows(o, view.windows);
    o.scheduleOk.textContent = view.windows.length ? t('scheduleSaved', { n: num(view.windows.length), count: view.windows.length }) : t('scheduleSavedNone');
    o.scheduleOk.hidden = false;
    view.redraw();
  } catch (err) {
    if (mine !== currentSession()) return;
    if (err.status === 401 || err.status === 403 && err.code !== 'forbidden_role' && err.code !== 'forbidden_queue') {
      refused(err);
      return;
    }
    showError(o.scheduleError, err.status === 0 ? t('patchUnreachable') : t('fieldError', { message: err.message, code: err.code }));
  } finally {
    o.scheduleSubmit.disabled = false;
  }
}

function showError(el, text, input) {
  el.textContent = text;
  el.hidden = false;
  if (input) input.focus();
}

// wireForecast shows, under the refill field, what the refill typed would
// do to the people waiting now, beside what the refill in force does.
// Asked once typing pauses; an answer overtaken by a later one is
// dropped.
function wireForecast(view, o) {
  const form = view.forms.find((f) => f.setting === 'refill_size');
  if (!form) return;
  o.forecast = document.createElement('p');
  o.forecast.className = 'forecast hint';
  o.forecast.setAttribute('role', 'status');
  o.forecast.hidden = true;
  form.input.closest('form').append(o.forecast);
  let timer = 0;
  let asked = 0;
  form.input.addEventListener('input', () => {
    clearTimeout(timer);
    const n = Number(form.input.value.trim());
    if (!Number.isSafeInteger(n) || n < 1 || !view.last) {
      o.forecast.hidden = true;
      return;
    }
    timer = setTimeout(async () => {
      const mine = ++asked;
      const path = '/admin/v1/queues/' + encodeURIComponent(view.name) + '/forecast?refill_size=';
      try {
        const [typed, now] = await Promise.all([api('GET', path + n), api('GET', path + view.last.refill_size)]);
        if (mine !== asked) return;
        o.forecast.textContent = forecastText(view, typed, now);
        o.forecast.hidden = false;
      } catch (err) {
        if (mine === asked) o.forecast.hidden = true;
      }
    }, FORECAST_DELAY_MS);
  });
}

// forecastText is "with 40 per 5 s the last of 12,400 people waits ~26
// min; now ~52 min".
function forecastText(view, typed, now) {
  const words = { refill: num(typed.refill_size), interval: num(view.last.refill_interval_ms / 1000), n: num(typed.waiting), count: typed.waiting };
  if (typed.waiting === 0) return t('forecastEmpty', words);
  words.with = about(typed.last_wait_seconds);
  words.now = about(now.last_wait_seconds);
  return t('forecastText', words);
}

// about is a forecast's wait: "~26 min", "~2.5 h", or never (null).
function about(s) {
  if (s === null || s === undefined) return t('forecastNever');
  if (s < 120) return t('aboutSeconds', { s: num(s) });
  if (s < 7200) return t('aboutMinutes', { m: num(Math.round(s / 60)) });
  return t('aboutHours', { h: num(Math.round(s / 360) / 10) });
}
