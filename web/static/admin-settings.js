// A queue's settings, changed live: one field per setting the server's
// catalog places in a group of the queue's section (GET
// /admin/v1/settings/catalog: its form, kind, bounds, English label and
// hint), and the pause button. Every change is one
// PATCH /admin/v1/queues/{queue}. The server checks the ranges (the page
// only makes sure a field holds a number, so an empty field never reaches
// it as 0 = no cap) and its message is shown under the field it names
// (error.field). A setting added to the catalog gets its field here
// without a line of this page changing.

import { uniqueId } from './dom.js';
import { i18n, t } from './admin-messages.js';
import { num, secs } from './admin-format.js';
import { api, currentSession, refused, isAdmin } from './admin-api.js';

let catalog = []; // the public settings, as the server last said

// loadCatalog reads the settings the forms are built from (token: as
// api takes it); call it before the first queue's section is built.
export async function loadCatalog(token) {
  const data = await api('GET', '/admin/v1/settings/catalog', null, token);
  catalog = (data && data.settings) || [];
}

// SAYINGS are the words some settings have of their own, richer than the
// generic ones (settingInvalid*, settingSaved): what the page says of a
// field that does not hold a valid value, and what a save did. A setting
// without an entry uses the generic words.
const SAYINGS = {
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

// round drops float noise from a value shown in the field's unit.
function round(x) {
  return Math.round(x * 1e6) / 1e6;
}

// buildForms builds the field of every catalog setting whose group root
// has (.settings[data-form]), for view (a queue's section).
export function buildForms(view, root) {
  const template = document.getElementById('setting-template').content.firstElementChild;
  const forms = [];
  for (const entry of catalog) {
    // A setting that reaches another host (a webhook, a probe) is an
    // admin's: other roles do not see its field.
    if (entry.role === 'admin' && !isAdmin()) continue;
    const group = entry.form && root.querySelector('.settings[data-form="' + entry.form + '"]');
    if (!group || !KINDS[entry.kind]) continue;
    const el = template.cloneNode(true);
    i18n.translate(el);
    group.append(el);
    forms.push(buildForm(view, el, entry));
  }
  return forms;
}

// KINDS are the kinds of setting a field can hold: its input's
// attributes (scale: the API's units per unit shown).
const KINDS = {
  int: (input, e, scale) => numberInput(input, e.min / scale, e.max / scale, scale !== 1),
  millis: (input, e, scale) => numberInput(input, e.min / scale, e.max / scale, scale !== 1),
  rate: (input, e, scale) => numberInput(input, 0, 1 / scale, true),
  bool: (input) => { input.type = 'checkbox'; input.required = false; },
  url: (input) => { input.type = 'url'; input.inputMode = 'url'; input.spellcheck = false; input.required = false; },
  string: (input, e) => { input.type = 'text'; input.required = false; if (e.max) input.maxLength = e.max; },
};

function numberInput(input, min, max, fraction) {
  input.type = 'number';
  input.min = String(round(min));
  if (Number.isFinite(max)) input.max = String(round(max));
  input.step = fraction ? 'any' : '1';
  input.inputMode = fraction ? 'decimal' : 'numeric';
}

// buildForm wires one setting's form (root) of view: a field and Save.
function buildForm(view, root, entry) {
  const q = (sel) => root.querySelector(sel);
  const id = uniqueId('setting-input');
  const form = {
    entry: entry,
    setting: entry.name,
    scale: entry.scale || 1, // the API's unit per unit shown
    input: q('.setting-input'),
    submit: q('.setting-submit'),
    error: q('.setting-error'),
    ok: q('.setting-ok'),
    name: q('.setting-name'),
    hint: q('.setting-hint'),
    dirty: false, // the operator typed something: stop syncing the input from the server
  };
  root.setAttribute('data-setting', entry.name);
  root.setAttribute('data-kind', entry.kind);
  KINDS[entry.kind](form.input, entry, form.scale);
  form.input.id = id;
  form.error.id = id + '-error';
  form.ok.id = id + '-ok';
  form.input.setAttribute('aria-describedby', form.error.id + ' ' + form.ok.id);
  q('.setting-label').setAttribute('for', id);
  labelForm(form);
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

// words is a setting's label or hint in the page's language: the
// catalog's ("setting.<name>", "setting.<name>.hint"), else the server's
// English (english: true).
function words(entry, suffix) {
  const key = 'setting.' + entry.name + suffix;
  if (i18n.has(key)) return { text: t(key), english: false };
  return { text: (suffix ? entry.hint : entry.label) || '', english: true };
}

// labelForm writes the form's label and hint in the page's language; an
// English fallback is marked lang="en", for screen readers to say it so.
function labelForm(form) {
  for (const [el, suffix] of [[form.name, ''], [form.hint, '.hint']]) {
    const w = words(form.entry, suffix);
    el.textContent = w.text;
    if (w.english) el.lang = 'en';
    else el.removeAttribute('lang');
  }
}

// syncForm shows the server's value of the form's setting in q, unless
// the operator is typing in it, and its words in the page's language
// (which may have changed).
export function syncForm(form, q) {
  labelForm(form);
  if (form.dirty || document.activeElement === form.input) return;
  const v = q[form.setting];
  switch (form.entry.kind) {
    case 'bool': form.input.checked = v === true; break;
    case 'url': case 'string': form.input.value = v || ''; break;
    default: form.input.value = String(round(v / form.scale));
  }
}

// fieldValue is the value of form's field as the API takes it, or
// undefined when it holds no valid number.
function fieldValue(form) {
  const raw = form.input.value.trim();
  switch (form.entry.kind) {
    case 'bool': return form.input.checked;
    case 'url': case 'string': return raw; // the server checks it ("" is none)
  }
  const fraction = form.entry.kind === 'rate';
  const pattern = form.scale !== 1 || fraction ? /^-?[0-9]+(\.[0-9]+)?$/ : /^-?[0-9]+$/;
  const value = fraction ? Number(raw) * form.scale : Math.round(Number(raw) * form.scale);
  if (!pattern.test(raw) || !(fraction ? Number.isFinite(value) : Number.isSafeInteger(value))) return undefined;
  return value;
}

// invalidText is what the page says of a field without a valid value.
function invalidText(form) {
  const own = SAYINGS[form.setting];
  if (own) return t(own.invalid);
  const e = form.entry;
  if (e.kind === 'rate') return t('settingInvalidNumber', { min: '0', max: num(1 / form.scale) });
  return t(form.scale !== 1 ? 'settingInvalidNumber' : 'settingInvalidWhole', { min: num(e.min / form.scale), max: num(e.max / form.scale) });
}

// savedText is what the page says of a save, q the queue after it.
function savedText(form, q) {
  const own = SAYINGS[form.setting];
  if (own) return own.saved(q);
  const v = q[form.setting];
  const shown = typeof v === 'number' ? num(round(v / form.scale)) : String(v === '' ? '–' : v);
  return t('settingSaved', { name: words(form.entry, '').text, value: shown });
}

async function saveSetting(view, form) {
  form.error.hidden = true;
  form.ok.hidden = true;
  const value = fieldValue(form);
  if (value === undefined) {
    showFieldError(form, invalidText(form));
    return;
  }
  const q = await patchQueue(view, { [form.setting]: value }, form.submit, (text) => showFieldError(form, text));
  if (!q) return;
  form.dirty = false;
  form.input.setAttribute('aria-invalid', 'false');
  view.update(q);
  form.ok.textContent = savedText(form, q);
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
// out, when the credential is no longer accepted; a role that may not make
// this change is told so, and stays signed in). button is disabled
// meanwhile, so a double click sends one request.
export async function patchQueue(view, body, button, report) {
  const mine = currentSession();
  button.disabled = true;
  try {
    const q = await api('PATCH', '/admin/v1/queues/' + encodeURIComponent(view.name), body);
    return mine === currentSession() ? q : null;
  } catch (err) {
    if (mine !== currentSession()) return null;
    if (err.status === 401 || err.status === 403 && err.code !== 'forbidden_role' && err.code !== 'forbidden_queue') {
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
