// Languages of the pages. Each page (waiting, admin) has one message
// catalog per language, i18n/{page}/{lang}.json, all with the same keys
// (TestMessageCatalogs and internal/web/i18n's tests check). A message is a
// string with named placeholders ("Try again at {time}"), or an object
// of plural forms ({"one": ..., "other": ...}) chosen by the count
// parameter with Intl.PluralRules; the server renders the same catalogs
// (internal/web/i18n).
//
// The language is ?lang= when it names one, else the one the user chose
// last (localStorage, shared by both pages, and the wr_lang cookie the
// server reads), else the one the server picked from Accept-Language (the
// waiting page's #wr-page data), else the browser's, else English.
// Markup carries its strings by key: data-i18n sets an element's text,
// data-i18n-label its aria-label; buttons with data-lang switch language.

import { local } from './storage.js';

const LANG_KEY = 'waitroom:lang';
const LANG_COOKIE = 'wr_lang';

// LANGS are the languages the pages speak, English first (the fallback).
export const LANGS = ['en', 'ko', 'ja', 'zh-Hans', 'zh-Hant', 'es'];

// The locale each language formats numbers and times with.
const LOCALES = { en: 'en-US', ko: 'ko-KR', ja: 'ja-JP', 'zh-Hans': 'zh-CN', 'zh-Hant': 'zh-TW', es: 'es-ES' };

// matchLang is the language of LANGS a BCP 47 tag asks for, or '': the
// tag itself in any case, else its script (zh-Hant), else Chinese by
// region (Taiwan, Hong Kong and Macao write Traditional), else its
// language. internal/web/i18n matches the same way (golang.org/x/text).
export function matchLang(tag) {
  if (typeof tag !== 'string' || !tag) return '';
  const lower = tag.toLowerCase();
  const exact = LANGS.find((l) => l.toLowerCase() === lower);
  if (exact) return exact;
  const parts = lower.split(/[-_]/);
  if (parts[0] === 'zh') {
    if (parts.includes('hant') || parts.some((p) => p === 'tw' || p === 'hk' || p === 'mo')) return 'zh-Hant';
    return 'zh-Hans';
  }
  return LANGS.includes(parts[0]) ? parts[0] : '';
}

// pageData is what the server put in the page for its script (#wr-page:
// the language it picked, that language's messages, the queue's title
// and message), or {} on a page without it.
export function pageData() {
  const el = typeof document !== 'undefined' && document.getElementById('wr-page');
  if (!el) return {};
  try { return JSON.parse(el.textContent) || {}; } catch (e) { return {}; }
}

// fetchCatalog loads one language's catalog of a page.
async function fetchCatalog(area, lang) {
  const r = await fetch('/_waitroom/static/i18n/' + area + '/' + lang + '.json');
  if (!r.ok) throw new Error('catalog ' + area + '/' + lang + ': ' + r.status);
  return r.json();
}

// createI18n resolves to the page's language state: area is the page's
// catalogs (waiting, admin), given the server's page data (pageData()).
export async function createI18n(area, data = {}) {
  const loaded = {}; // lang -> catalog
  if (data.lang && data.messages) loaded[data.lang] = data.messages;
  const params = new URLSearchParams(typeof location !== 'undefined' ? location.search : '');
  let lang = pick();
  let messages = await load(lang);
  let plural = new Intl.PluralRules(LOCALES[lang]);

  function pick() {
    const asked = matchLang(params.get('lang'));
    if (asked) return asked;
    const saved = matchLang(local.get(LANG_KEY));
    if (saved) return saved;
    if (matchLang(data.lang)) return matchLang(data.lang);
    const browser = (typeof navigator !== 'undefined' && (navigator.languages || [navigator.language])) || [];
    for (const tag of browser) {
      if (matchLang(tag)) return matchLang(tag);
    }
    return LANGS[0];
  }

  async function load(l) {
    if (!loaded[l]) loaded[l] = await fetchCatalog(area, l);
    return loaded[l];
  }

  // t is the message key in the current language with its {placeholders}
  // filled from params (a plural message picks its form by params.count);
  // the key itself when the catalog lacks it.
  function t(key, params) {
    let s = messages[key];
    if (s === undefined) return key;
    if (typeof s === 'object') s = s[plural.select(params ? params.count : 0)] ?? s.other;
    if (!params) return s;
    return s.replace(/\{([A-Za-z]+)\}/g, (m, name) => (name in params ? String(params[name]) : m));
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

  // use makes l the language (kept for next time: here, and in a cookie
  // for the server's next rendering of the waiting page).
  async function use(l) {
    messages = await load(l);
    lang = l;
    plural = new Intl.PluralRules(LOCALES[lang]);
    local.set(LANG_KEY, lang);
    document.cookie = LANG_COOKIE + '=' + lang + '; path=/; max-age=31536000; SameSite=Lax';
    // ?lang= would win over the choice at the next reload.
    if (params.has('lang')) {
      params.delete('lang');
      const q = params.toString();
      history.replaceState(history.state, '', location.pathname + (q ? '?' + q : '') + location.hash);
    }
  }

  // bindSwitch makes the data-lang buttons switch language, then calls
  // changed so the page draws its own text again.
  function bindSwitch(changed) {
    document.querySelectorAll('button[data-lang]').forEach((b) => {
      b.addEventListener('click', async () => {
        const l = matchLang(b.getAttribute('data-lang'));
        if (!l) return;
        try {
          await use(l);
        } catch (e) {
          return; // the catalog did not load: the page stays as it is
        }
        apply();
        changed();
      });
    });
  }

  return {
    t,
    has: (key) => key in messages,
    translate,
    apply,
    bindSwitch,
    lang: () => lang,
    locale: () => LOCALES[lang] || lang,
  };
}
