// A queue's settings, changed live: the forms (form[data-setting] in the
// queue's template) and the pause button. Every change is one
// PATCH /admin/v1/queues/{queue}. The server checks the ranges (the page
// only makes sure a field holds a number, so an empty field never reaches
// it as 0 = no cap) and its message is shown under the field it names
// (error.field).

import { uniqueId } from './dom.js';
import { t } from './admin-messages.js';
import { num, secs } from './admin-format.js';
import { api, currentSession, refused } from './admin-api.js';

// The settings the forms change: what the page says of a field that does
// not hold a number, and what a save did. A form with data-scale shows the
// setting divided by it (seconds for ms) and takes fractions; the others
// take whole numbers.
const SETTINGS = {
  refill_size: {
    invalid: 'refillInvalid',
    saved: (q) => t('refillSaved', { n: num(q.refill_size) }),
  },
  max_active: {
    invalid: 'capInvalid',
    saved: (q) => (q.max_active > 0 ? t('capSaved', { n: num(q.max_active) }) : t('capSavedNone')),
  },
  abandon_after_ms: {
    invalid: 'abandonInvalid',
    saved: (q) => (q.abandon_after_ms > 0 ? t('abandonSaved', { s: secs(q.abandon_after_ms / 1000) }) : t('abandonSavedNever')),
  },
  max_waiting: {
    invalid: 'maxWaitingInvalid',
    saved: (q) => (q.max_waiting > 0 ? t('maxWaitingSaved', { n: num(q.max_waiting) }) : t('maxWaitingSavedNone')),
  },
  challenge_difficulty: {
    invalid: 'powInvalid',
    saved: (q) => (q.challenge_difficulty > 0 ? t('powSaved', { d: num(q.challenge_difficulty) }) : t('powSavedOff')),
  },
  origin_target_p95_ms: {
    invalid: 'targetInvalid',
    saved: (q) => (q.origin_target_p95_ms > 0 ? t('targetSaved', { ms: num(q.origin_target_p95_ms) }) : t('targetSavedOff')),
  },
  origin_max_error_rate: {
    invalid: 'errorRateInvalid',
    saved: (q) => (q.origin_max_error_rate > 0 ? t('errorRateSaved', { p: percent(q.origin_max_error_rate) }) : t('errorRateSavedOff')),
  },
  min_refill_size: {
    invalid: 'floorInvalid',
    saved: (q) => t('floorSaved', { n: num(q.min_refill_size) }),
  },
  origin_probe_url: {
    invalid: 'probeInvalid',
    saved: (q) => (q.origin_probe_url ? t('probeSaved') : t('probeSavedNone')),
  },
};

// percent shows a 0..1 rate as a percentage, without float noise.
function percent(rate) {
  return String(Math.round(rate * 100 * 1e6) / 1e6);
}

// buildForm wires one setting's form of view (a queue's section): a
// number field and Save.
export function buildForm(view, root) {
  const q = (sel) => root.querySelector(sel);
  const id = uniqueId('setting-input');
  const form = {
    setting: root.getAttribute('data-setting'),
    scale: Number(root.getAttribute('data-scale')) || 1, // the API's unit per unit shown
    fraction: root.hasAttribute('data-fraction'), // the API takes a fraction, not a whole number
    url: root.getAttribute('data-kind') === 'url', // a text setting (the probe URL)
    input: q('.setting-input'),
    submit: q('.setting-submit'),
    error: q('.setting-error'),
    ok: q('.setting-ok'),
    dirty: false, // the operator typed something: stop syncing the input from the server
  };
  form.input.id = id;
  form.error.id = id + '-error';
  form.ok.id = id + '-ok';
  form.input.setAttribute('aria-describedby', form.error.id + ' ' + form.ok.id);
  q('.setting-label').setAttribute('for', id);
  form.input.addEventListener('input', () => {
    form.dirty = true;
    form.ok.hidden = true;
  });
  root.addEventListener('submit', (e) => {
    e.preventDefault();
    saveSetting(view, form);
  });
  return form;
}

// syncForm shows the server's value of the form's setting in q, unless
// the operator is typing in it.
export function syncForm(form, q) {
  if (form.dirty || document.activeElement === form.input) return;
  form.input.value = form.url ? (q[form.setting] || '') : String(Math.round((q[form.setting] / form.scale) * 1e6) / 1e6);
}

async function saveSetting(view, form) {
  form.error.hidden = true;
  form.ok.hidden = true;
  const raw = form.input.value.trim();
  const body = {};
  if (form.url) {
    body[form.setting] = raw; // the server checks it ("" is none)
  } else {
    const pattern = form.scale !== 1 ? /^-?[0-9]+(\.[0-9]+)?$/ : /^-?[0-9]+$/;
    const value = form.fraction ? Number(raw) * form.scale : Math.round(Number(raw) * form.scale);
    if (!pattern.test(raw) || !(form.fraction ? Number.isFinite(value) : Number.isSafeInteger(value))) {
      showFieldError(form, t(SETTINGS[form.setting].invalid));
      return;
    }
    body[form.setting] = value;
  }
  const q = await patchQueue(view, body, form.submit, (text) => showFieldError(form, text));
  if (!q) return;
  form.dirty = false;
  form.input.setAttribute('aria-invalid', 'false');
  view.update(q);
  form.ok.textContent = SETTINGS[form.setting].saved(q);
  form.ok.hidden = false;
}

// togglePause pauses a queue that admits, or resumes a paused one.
export async function togglePause(view) {
  view.pauseError.hidden = true;
  const q = await patchQueue(view, { paused: !view.paused }, view.pause, (text) => {
    view.pauseError.textContent = text;
    view.pauseError.hidden = false;
  });
  if (q) view.update(q);
}

// toggleAdapt switches the automatic rate on or off; off, the refill
// size is what each tick admits again at once.
export async function toggleAdapt(view) {
  view.adaptError.hidden = true;
  const q = await patchQueue(view, { adapt_enabled: !view.adapt }, view.adaptButton, (text) => {
    view.adaptError.textContent = text;
    view.adaptError.hidden = false;
  });
  if (q) view.update(q);
}

// patchQueue sends one PATCH of settings and returns the queue as the
// server answers it, or null: then it has reported why through
// report(text, field), field being the one the server named (or signed
// out, when the token is no longer accepted). button is disabled
// meanwhile, so a double click sends one request.
export async function patchQueue(view, body, button, report) {
  const mine = currentSession();
  button.disabled = true;
  try {
    const q = await api('PATCH', '/admin/v1/queues/' + encodeURIComponent(view.name), body);
    return mine === currentSession() ? q : null;
  } catch (err) {
    if (mine !== currentSession()) return null;
    if (err.status === 401 || err.status === 403) {
      refused(err);
      return null;
    }
    report(err.status === 0 ? t('patchUnreachable') : t('fieldError', { message: err.message, code: err.code }), err.field || '');
    return null;
  } finally {
    button.disabled = false;
  }
}

function showFieldError(form, text) {
  form.error.textContent = text;
  form.error.hidden = false;
  form.input.setAttribute('aria-invalid', 'true');
  form.input.focus();
}
