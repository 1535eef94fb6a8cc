// Languages of the pages. Each page has one messages module
// (waiting-messages.js, admin-messages.js) holding its catalog: one object
// per language, all with the same keys (TestMessageCatalogs checks). A
// string that takes parameters or a plural is a function.
//
// The language is the one the user chose last (kept in localStorage, shared
// by both pages), else the browser's (navigator.language), else English.
// Markup carries its strings by key: data-i18n sets an element's text,
// data-i18n-label its aria-label; buttons with data-lang switch language.

import { local } from './storage.js';

const LANG_KEY = 'waitroom:lang';

// The locale each language formats numbers and times with.
const LOCALES = { en: 'en-US', ko: 'ko-KR' };

// createI18n returns the page's language state over catalog
// ({en: {...}, ko: {...}}); the first language is the default.
export function createI18n(catalog) {
  const langs = Object.keys(catalog);
  let lang = pick();

  function pick() {
    const saved = local.get(LANG_KEY);
    if (langs.includes(saved)) return saved;
    const tag = (navigator.language || '').toLowerCase();
    return langs.find((l) => tag === l || tag.startsWith(l + '-')) || langs[0];
  }

  // t is the string key in the current language (in the first language
  // when the current one lacks it, the key itself when both do); a
  // function is called with the rest of the arguments.
  function t(key, ...args) {
    let s = catalog[lang][key];
    if (s === undefined) s = catalog[langs[0]][key];
    if (s === undefined) return key;
    return typeof s === 'function' ? s(...args) : s;
  }

  // translate sets the text of root's data-i18n elements and the
  // aria-label of its data-i18n-label ones.
  function translate(root) {
    root.querySelectorAll('[data-i18n]').forEach((el) => {
      el.textContent = t(el.getAttribute('data-i18n'));
    });
    root.querySelectorAll('[data-i18n-label]').forEach((el) => {
      el.setAttribute('aria-label', t(el.getAttribute('data-i18n-label')));
    });
  }

  // apply puts the whole document in the current language.
  function apply() {
    document.documentElement.lang = lang;
    document.title = t('pageTitle');
    translate(document);
    document.querySelectorAll('button[data-lang]').forEach((b) => {
      b.setAttribute('aria-pressed', String(b.getAttribute('data-lang') === lang));
    });
  }

  // bindSwitch makes the data-lang buttons switch language (kept for next
  // time), then calls changed so the page draws its own text again.
  function bindSwitch(changed) {
    document.querySelectorAll('button[data-lang]').forEach((b) => {
      b.addEventListener('click', () => {
        lang = b.getAttribute('data-lang');
        local.set(LANG_KEY, lang);
        apply();
        changed();
      });
    });
  }

  return {
    t,
    translate,
    apply,
    bindSwitch,
    lang: () => lang,
    locale: () => LOCALES[lang] || lang,
  };
}
