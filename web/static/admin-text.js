// A queue's own words on its waiting page: a title and a message in each
// of the page's languages, saved together with one PATCH {"title": {...},
// "message": {...}} (each replaces the last; a language left empty is
// left out, and the page shows English there). The fields show what the
// admin queue view says, unless the operator is editing them.

import { html, uniqueId } from './dom.js';
import { LANGS } from './i18n.js';
import { t } from './admin-messages.js';
import { patchQueue } from './admin-settings.js';

// buildText wires view's text form (root): per language a title and a
// message field, then Save.
export function buildText(view, root) {
  const q = (sel) => root.querySelector(sel);
  const id = uniqueId('text');
  const f = {
    root: root,
    langs: {}, // lang -> {title, message}: the inputs of one language
    error: q('.text-error'),
    ok: q('.text-ok'),
    submit: q('.text-submit'),
    dirty: false, // the operator typed: stop syncing the fields from the server
  };
  q('.text-hint').id = id + '-hint';
  f.error.id = id + '-error';
  const described = f.error.id + ' ' + id + '-hint';
  for (const lang of LANGS) {
    const box = html('fieldset', 'text-lang');
    const legend = html('legend', 'text-lang-name', langName(lang));
    legend.lang = lang;
    const title = html('input', 'text-title');
    title.type = 'text';
    title.maxLength = 120; // the server's bound (runes; a field counts UTF-16 units, never more)
    const message = html('textarea', 'text-message');
    message.rows = 2;
    message.maxLength = 600;
    const fields = [[title, 'titleLabel'], [message, 'messageLabel']];
    box.append(legend);
    for (const [input, key] of fields) {
      input.id = id + '-' + lang + '-' + (input === title ? 'title' : 'message');
      input.lang = lang; // spelling and input methods for the language typed
      input.setAttribute('data-text-lang', lang);
      input.setAttribute('aria-describedby', described);
      input.addEventListener('input', () => {
        f.dirty = true;
        f.ok.hidden = true;
      });
      const label = html('label', 'text-label', t(key));
      label.setAttribute('data-i18n', key);
      label.htmlFor = input.id;
      box.append(label, input);
    }
    q('.text-langs').append(box);
    f.langs[lang] = { title: title, message: message };
  }
  root.addEventListener('submit', (e) => {
    e.preventDefault();
    saveText(view, f);
  });
  return f;
}

// updateText shows q's title and message (the queue as the server said).
export function updateText(f, q) {
  if (f.dirty || f.root.contains(document.activeElement)) return;
  for (const lang of LANGS) {
    f.langs[lang].title.value = (q.title && q.title[lang]) || '';
    f.langs[lang].message.value = (q.message && q.message[lang]) || '';
  }
}

async function saveText(view, f) {
  f.error.hidden = true;
  f.ok.hidden = true;
  const body = { title: {}, message: {} };
  for (const lang of LANGS) {
    const title = f.langs[lang].title.value.trim();
    const message = f.langs[lang].message.value.trim();
    if (title) body.title[lang] = title;
    if (message) body.message[lang] = message;
  }
  const q = await patchQueue(view, body, f.submit, (text) => {
    f.error.textContent = text;
    f.error.hidden = false;
  });
  if (!q) return;
  f.dirty = false;
  if (f.root.contains(document.activeElement)) document.activeElement.blur(); // let the view sync the fields
  view.update(q);
  f.ok.textContent = t('textSaved');
  f.ok.hidden = false;
}

// langName is a language's own name, as the language switch shows it.
function langName(lang) {
  const b = document.querySelector('button[data-lang="' + lang + '"]');
  return (b && b.textContent.trim()) || lang;
}
