// Closing a sale (sold out) and reopening it: the closed note every role
// sees (the message in the back office's language, when it reopens), and
// for an operator the form that closes the line with a message in each of
// the page's languages and an optional reopening (POST .../close), asked
// twice: the first click says how many people are waiting and will be
// told, the second closes. When closed, one button reopens (POST
// .../reopen). The server judges the message and the time; its error
// shows under the form.

import { html, uniqueId } from './dom.js';
import { LANGS } from './i18n.js';
import { i18n, t } from './admin-messages.js';
import { num, utcWhen, fromInputs } from './admin-format.js';
import { api, currentSession, refused } from './admin-api.js';

// buildSale wires view's closed note (note) and sale form (root).
export function buildSale(view, note, root) {
  const q = (sel) => root.querySelector(sel);
  const id = uniqueId('sale');
  const s = {
    root: root,
    note: note,
    noteText: note.querySelector('.closed-text'),
    noteMessage: note.querySelector('.closed-message'),
    closeFields: q('.sale-close-fields'),
    langs: {}, // lang -> the message's textarea
    date: q('.reopens-date'),
    time: q('.reopens-time'),
    close: q('.sale-close'),
    confirm: q('.sale-confirm'),
    confirmText: q('.sale-confirm-text'),
    confirmYes: q('.sale-confirm-yes'),
    confirmNo: q('.sale-confirm-no'),
    reopen: q('.sale-reopen'),
    error: q('.sale-error'),
    ok: q('.sale-ok'),
    dirty: false, // the operator typed: stop syncing the fields from the server
    closed: false, // as the server last said
    waiting: 0, // the people waiting, as the server last said
  };
  s.error.id = id + '-error';
  q('.reopens-label').htmlFor = s.date.id = id + '-reopens';
  for (const input of [s.date, s.time]) input.setAttribute('aria-describedby', s.error.id);
  for (const lang of LANGS) {
    const label = html('label', 'sale-lang-name', langName(lang));
    label.lang = lang;
    const text = html('textarea', 'sale-message');
    text.id = label.htmlFor = id + '-' + lang;
    text.lang = lang;
    text.rows = 2;
    text.maxLength = 280; // the server's bound (runes; a field counts UTF-16 units, never more)
    text.setAttribute('data-sale-lang', lang);
    text.setAttribute('aria-describedby', s.error.id);
    q('.sale-langs').append(label, text);
    s.langs[lang] = text;
  }
  root.addEventListener('input', () => {
    s.dirty = true;
    s.ok.hidden = true;
    s.confirm.hidden = true;
  });
  root.addEventListener('submit', (e) => {
    e.preventDefault();
    askClose(s);
  });
  s.confirmNo.addEventListener('click', () => {
    s.confirm.hidden = true;
    s.close.focus();
  });
  s.confirmYes.addEventListener('click', () => closeSale(view, s));
  s.reopen.addEventListener('click', () => send(view, s, 'reopen', null, s.reopen));
  return s;
}

// updateSale shows q's sale (the queue as the server said).
export function updateSale(s, q) {
  s.closed = q.closed === true;
  s.waiting = q.waiting || 0;
  s.note.hidden = !s.closed;
  if (s.closed) {
    const at = Date.parse(q.closed_at || '');
    const reopens = Date.parse(q.reopens_at || '');
    s.noteText.textContent = isFinite(reopens)
      ? t('saleClosedUntil', { time: utcWhen(at), reopens: utcWhen(reopens) })
      : t('saleClosedAt', { time: utcWhen(at) });
    s.noteMessage.textContent = messageIn(q.closed_message || {});
  }
  s.closeFields.hidden = s.closed;
  s.reopen.hidden = !s.closed;
  if (s.closed) s.confirm.hidden = true;
  if (s.dirty || s.root.contains(document.activeElement)) return;
  for (const lang of LANGS) s.langs[lang].value = (q.closed_message && q.closed_message[lang]) || '';
}

// askClose checks the form and asks again, naming who will be told.
function askClose(s) {
  clearMessages(s);
  const body = closeBody(s);
  if (body.error) {
    showError(s, t(body.error));
    return;
  }
  s.confirmText.textContent = t('saleConfirm', { n: num(s.waiting), count: s.waiting });
  s.confirm.hidden = false;
  s.confirmYes.focus();
}

async function closeSale(view, s) {
  const body = closeBody(s);
  if (body.error) {
    showError(s, t(body.error));
    return;
  }
  s.confirm.hidden = true;
  await send(view, s, 'close', body, s.confirmYes);
}

// closeBody is POST .../close's body from the form, or {error: key}.
function closeBody(s) {
  const message = {};
  for (const lang of LANGS) {
    const v = s.langs[lang].value.trim();
    if (v) message[lang] = v;
  }
  if (Object.keys(message).length === 0) return { error: 'saleNeedMessage' };
  const r = fromInputs(s.date.value, s.time.value);
  if (r.error) return { error: r.error };
  const body = { message: message };
  if (r.value) body.reopens_at = r.value;
  return body;
}

// send makes one close or reopen (op) and shows the queue as the server
// answers it; button is disabled meanwhile, so a double click sends one.
async function send(view, s, op, body, button) {
  clearMessages(s);
  const mine = currentSession();
  button.disabled = true;
  try {
    const q = await api('POST', '/admin/v1/queues/' + encodeURIComponent(view.name) + '/' + op, body);
    if (mine !== currentSession()) return;
    s.dirty = false;
    if (s.root.contains(document.activeElement)) document.activeElement.blur(); // let the view sync the fields
    view.update(q);
    s.ok.textContent = t(op === 'close' ? 'saleClosedOk' : 'saleReopenedOk');
    s.ok.hidden = false;
  } catch (err) {
    if (mine !== currentSession()) return;
    if (err.status === 401 || err.status === 403 && err.code !== 'forbidden_role' && err.code !== 'forbidden_queue') {
      refused(err);
      return;
    }
    showError(s, err.status === 0 ? t('patchUnreachable') : t('fieldError', { message: err.message, code: err.code }));
  } finally {
    button.disabled = false;
  }
}

function clearMessages(s) {
  s.error.hidden = true;
  s.ok.hidden = true;
}

function showError(s, text) {
  s.error.textContent = text;
  s.error.hidden = false;
}

// messageIn is the closing's message in the back office's language, else
// English, else the first one given.
function messageIn(m) {
  return m[i18n.lang()] || m.en || Object.values(m).find((v) => v) || '';
}

// langName is a language's own name, as the language switch shows it.
function langName(lang) {
  const b = document.querySelector('button[data-lang="' + lang + '"]');
  return (b && b.textContent.trim()) || lang;
}
