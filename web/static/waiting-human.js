// Entering with a human check, when the room asks for one: an enter
// refused with human_check_required made no place, and its answer names
// the provider's widget (provider, sitekey, script_url). The page loads
// that script once, draws the widget in the visitor's language, and
// enters again with {human_token} once the visitor has solved it. An enter
// refused with human_check_failed (the token was refused, or used) says so
// and draws the widget afresh: a token is good once.
//
// The room asks a person here rather than a network's proof of work: a
// crowd behind one carrier address would otherwise pay for its
// neighbours' places.
//
// This module does not import the flow (waiting-flow.js): the flow passes
// in what to do next (enter with a token, or fail), so the imports go one
// way.

import { $ } from './dom.js';
import { t, i18n } from './waiting-messages.js';
import { page } from './waiting-state.js';
import { render, say } from './waiting-render.js';
import { attempt, stopTimer } from './waiting-attempt.js';

// Widgets drawn for one join before the page gives up and shows the
// error panel (its button joins again).
const HUMAN_ATTEMPTS = 5;
// How long the provider's script gets to load.
const SCRIPT_TIMEOUT_MS = 20000;
// The global each provider's script defines, and the render parameter
// that names its language.
const PROVIDERS = {
  turnstile: { global: 'turnstile', langParam: 'language' },
  hcaptcha: { global: 'hcaptcha', langParam: 'hl' },
  recaptcha: { global: 'grecaptcha', langParam: 'hl' },
};
// The page's languages in the providers' codes, where theirs differ.
const PROVIDER_LANGS = { 'zh-Hans': 'zh-CN', 'zh-Hant': 'zh-TW' };
const READY_CALLBACK = '__waitroomHumanReady';

let loading = null; // the script's promise of its API, for loadedFrom
let loadedFrom = '';
let widget = null; // {api, id}: the widget drawn last

// askHuman answers an enter refused with human_check_required (failed:
// false) or human_check_failed (failed: true). detail is the refusal's
// error body; then.enter(token) enters with the solved token, then.fail
// (text) shows the error panel.
export function askHuman(detail, failed, then) {
  stopTimer();
  const spec = widgetSpec(detail);
  if (!spec) {
    page.human = null;
    then.fail(t('errHuman'));
    return;
  }
  attempt.humanTries++;
  if (attempt.humanTries > HUMAN_ATTEMPTS) {
    page.human = null;
    then.fail(t('errHuman'));
    return;
  }
  const gen = attempt.generation;
  page.checking = false;
  page.human = { failed: failed };
  render();
  say(failed ? t('humanFailed') : t('humanCheck'));
  load(spec).then((api) => {
    if (gen !== attempt.generation || !page.human) return;
    draw(api, spec, (token) => {
      if (gen !== attempt.generation) return;
      page.human = null;
      render();
      then.enter(token);
    });
  }, () => {
    if (gen !== attempt.generation) return;
    page.human = null;
    then.fail(t('errHuman'));
  });
}

// stopHuman takes the widget away (a leave, a new join).
export function stopHuman() {
  removeWidget();
  page.human = null;
}

// widgetSpec is the refusal's widget, or null when it names none this
// page can draw.
function widgetSpec(d) {
  if (!d || !PROVIDERS[d.provider] || typeof d.sitekey !== 'string' || !d.sitekey || typeof d.script_url !== 'string') return null;
  let url;
  try {
    url = new URL(d.script_url, location.href);
  } catch (e) {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  return { provider: d.provider, sitekey: d.sitekey, url: url };
}

// lang is the page's language in the provider's code.
function lang() {
  const l = i18n.lang();
  return PROVIDER_LANGS[l] || l;
}

// load adds the provider's script once, asking it (as all three allow) to
// draw nothing by itself and to call READY_CALLBACK once its API works;
// it resolves to that API.
function load(spec) {
  const u = new URL(spec.url.href);
  u.searchParams.set('render', 'explicit');
  u.searchParams.set('onload', READY_CALLBACK);
  // hCaptcha and reCAPTCHA take the language on the script too.
  if (spec.provider !== 'turnstile') u.searchParams.set('hl', lang());
  if (loading && loadedFrom === spec.url.href) return loading;
  loadedFrom = spec.url.href;
  const global = PROVIDERS[spec.provider].global;
  loading = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('script timeout')), SCRIPT_TIMEOUT_MS);
    window[READY_CALLBACK] = () => {
      const api = window[global];
      clearTimeout(timer);
      if (api && typeof api.render === 'function') resolve(api);
      else reject(new Error('no ' + global + '.render'));
    };
    const s = document.createElement('script');
    s.src = u.href;
    s.async = true;
    s.onerror = () => {
      clearTimeout(timer);
      reject(new Error('script failed'));
    };
    document.head.appendChild(s);
  });
  // A script that failed is tried again at the next ask.
  loading.catch(() => { loading = null; loadedFrom = ''; });
  return loading;
}

// draw renders the widget afresh in the page's box (made when the page's
// template has none): each time in a new element, since not every
// provider can render twice into one.
function draw(api, spec, onToken) {
  removeWidget();
  const box = widgetBox();
  const el = document.createElement('div');
  box.appendChild(el);
  const params = {
    sitekey: spec.sitekey,
    callback: onToken,
    'error-callback': () => { say(t('humanFailed')); },
  };
  params[PROVIDERS[spec.provider].langParam] = lang();
  widget = { api: api, id: api.render(el, params) };
}

function removeWidget() {
  if (widget && typeof widget.api.remove === 'function') {
    try { widget.api.remove(widget.id); } catch (e) { /* already gone */ }
  }
  widget = null;
  const box = document.getElementById('human-check-widget');
  if (box) box.textContent = '';
}

// widgetBox is #human-check-widget, in #human-check (render shows it while
// page.human is set); an operator's template without them gets them
// after the status line.
function widgetBox() {
  let box = document.getElementById('human-check-widget');
  if (box) return box;
  let wrap = document.getElementById('human-check');
  if (!wrap) {
    wrap = document.createElement('div');
    wrap.id = 'human-check';
    wrap.className = 'human-check';
    const text = document.createElement('p');
    text.id = 'human-check-text';
    wrap.appendChild(text);
    const status = $('status-text');
    if (status.parentNode) status.parentNode.insertBefore(wrap, status.nextSibling);
    else document.body.appendChild(wrap);
  }
  box = document.createElement('div');
  box.id = 'human-check-widget';
  wrap.appendChild(box);
  return box;
}
