// A queue's scheduled opening: where it stands, its draw's record, and
// the form that sets it (PATCH opens_at and prequeue_from together, RFC
// 3339; null clears).
//
// The times are typed and shown in UTC, each as a date and a time input
// labelled UTC, and sent as ...Z: what is saved is what the form shows
// after a reload, whatever this browser's time zone. Under each time the
// page says what it is in the operator's own zone.

import { uniqueId } from './dom.js';
import { t } from './admin-messages.js';
import { num, when, utcWhen, until, fromInputs, toInputs } from './admin-format.js';
import { patchQueue } from './admin-settings.js';

// The two times of an opening: the API's field and the form's class prefix.
const TIMES = [
  { field: 'prequeue_from', name: 'prequeue' },
  { field: 'opens_at', name: 'opens' },
];

// buildOpening wires view's opening form (root): two UTC times, Save and
// Clear.
export function buildOpening(view, root) {
  const q = (sel) => root.querySelector(sel);
  const id = uniqueId('opening');
  const o = {
    root: root,
    state: q('.opening-state'),
    draw: q('.draw-record'),
    sealed: q('.draw-sealed'), // the next draw's commitment (docs/DRAW.md); never its seed
    times: {}, // field -> {date, time, local, error}: the inputs of one time
    error: q('.opening-error'),
    ok: q('.opening-ok'),
    submit: q('.opening-submit'),
    clear: q('.opening-clear'),
    dirty: false, // the operator changed a time: stop syncing the inputs from the server
  };
  q('.opening-hint').id = id + '-hint';
  for (const { field, name } of TIMES) {
    const f = {
      date: q('.' + name + '-date'),
      time: q('.' + name + '-time'),
      local: q('.' + name + '-local'),
      error: q('.' + name + '-error'),
    };
    o.times[field] = f;
    const label = q('.' + name + '-label');
    f.date.id = id + '-' + name;
    f.time.id = f.date.id + '-time';
    f.error.id = f.date.id + '-error';
    f.local.id = f.date.id + '-local';
    label.id = f.date.id + '-label';
    label.setAttribute('for', f.date.id);
    q('.' + name + '-row').setAttribute('aria-labelledby', label.id);
    for (const input of [f.date, f.time]) {
      input.setAttribute('aria-describedby', f.error.id + ' ' + f.local.id + ' ' + id + '-hint');
      input.addEventListener('input', () => {
        o.dirty = true;
        o.ok.hidden = true;
        showLocal(f);
      });
    }
  }
  root.addEventListener('submit', (e) => {
    e.preventDefault();
    const body = {};
    for (const { field } of TIMES) {
      const f = o.times[field];
      const v = fromInputs(f.date.value, f.time.value);
      if (v.error) {
        clearMessages(o);
        showError(o, field, t(v.error));
        return;
      }
      body[field] = v.value;
    }
    saveOpening(view, o, body);
  });
  o.clear.addEventListener('click', () => {
    saveOpening(view, o, { prequeue_from: null, opens_at: null });
  });
  return o;
}

// updateOpening shows the opening of q (the queue as the server said).
export function updateOpening(o, q) {
  const opens = Date.parse(q.opens_at || '');
  const from = Date.parse(q.prequeue_from || '');
  o.state.textContent = openingText(opens, from);
  const drawn = Date.parse(q.draw_for || '');
  o.draw.hidden = !isFinite(drawn);
  if (isFinite(drawn)) {
    // The seed as digits, not grouped: it is copied to recompute the order.
    o.draw.textContent = t('drawRecord', { time: utcWhen(drawn), seed: String(q.draw_seed), n: num(q.draw_count), count: q.draw_count });
  }
  o.sealed.hidden = !q.draw_sealed;
  o.sealed.textContent = q.draw_sealed ? t('drawSealed', { commitment: q.draw_sealed }) : '';
  if (!o.dirty && !o.root.contains(document.activeElement)) {
    for (const { field } of TIMES) {
      const f = o.times[field];
      const ms = Date.parse(q[field] || '');
      const v = isFinite(ms) ? toInputs(ms) : { date: '', time: '' };
      f.date.value = v.date;
      f.time.value = v.time;
    }
  }
  for (const { field } of TIMES) showLocal(o.times[field]);
}

// openingText says where a scheduled opening stands, on this browser's
// clock.
function openingText(opens, from) {
  if (!isFinite(opens)) return t('noOpening');
  const now = Date.now();
  if (opens <= now) return t('openedAt', { time: utcWhen(opens) });
  if (isFinite(from) && from > now) return t('notOpenYet', { from: utcWhen(from), fromIn: until(from), opens: utcWhen(opens) });
  return t('prequeueOpen', { opens: utcWhen(opens), opensIn: until(opens) });
}

async function saveOpening(view, o, body) {
  clearMessages(o);
  const clearing = body.opens_at === null && body.prequeue_from === null;
  const q = await patchQueue(view, body, clearing ? o.clear : o.submit, (text, field) => showError(o, field, text));
  if (!q) return;
  o.dirty = false;
  if (o.root.contains(document.activeElement)) document.activeElement.blur(); // let the view sync the inputs
  view.update(q);
  const opens = Date.parse(q.opens_at || '');
  const from = Date.parse(q.prequeue_from || '');
  o.ok.textContent = !isFinite(opens) ? t('openingSavedNone')
    : isFinite(from) ? t('openingSaved', { opens: utcWhen(opens), from: utcWhen(from) })
      : t('openingSavedNow', { opens: utcWhen(opens) });
  o.ok.hidden = false;
}

function clearMessages(o) {
  [o.error, o.ok].forEach((p) => { p.hidden = true; });
  for (const { field } of TIMES) {
    const f = o.times[field];
    f.error.hidden = true;
    [f.date, f.time].forEach((i) => i.setAttribute('aria-invalid', 'false'));
  }
}

// showError shows text under the time the server named (field), or under
// the form.
function showError(o, field, text) {
  const f = o.times[field];
  const error = f ? f.error : o.error;
  error.textContent = text;
  error.hidden = false;
  if (f) {
    const input = f.date.value && !f.time.value ? f.time : f.date; // a date without a time wants the time
    [f.date, f.time].forEach((i) => i.setAttribute('aria-invalid', 'true'));
    input.focus();
  }
}

// showLocal says under a time what it is in this browser's zone, when the
// zone is not UTC itself.
function showLocal(f) {
  const v = fromInputs(f.date.value, f.time.value);
  const ms = v.value ? Date.parse(v.value) : NaN;
  const offset = isFinite(ms) ? new Date(ms).getTimezoneOffset() : 0;
  f.local.hidden = !isFinite(ms) || offset === 0;
  f.local.textContent = f.local.hidden ? '' : t('localEcho', { zone: zoneName(offset), time: when(ms) });
}

// zoneName is this browser's time zone (Europe/Berlin), or its offset
// from UTC (UTC+01:00) when the browser does not name it.
function zoneName(offset) {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (zone) return zone;
  const m = Math.abs(offset);
  return 'UTC' + (offset > 0 ? '-' : '+') + String(Math.floor(m / 60)).padStart(2, '0') + ':' + String(m % 60).padStart(2, '0');
}
