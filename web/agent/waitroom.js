// The waitroom agent: a site's page calls waitroom.wait({queue}) where an
// action is to wait its turn ("Book"), and the promise resolves with an
// entry pass ({pass, expiresAt}) once the turn comes. Meanwhile a dialog
// over the page shows the place as the waiting page does (/q/{queue}):
// position, people ahead, the wait, "about" far back, a paused line, a
// full one, one not open yet, the room away; and "Leave the line", which
// frees the place and rejects with code 'left'.
//
// The site's order API must check the pass (gate middleware, /gate/verify,
// the JWKS): whatever this script resolves, a page's script can fake, so
// the pass is the only proof.
//
// Cross-origin without cookies: waitroom lists the site's origin in
// WAITROOM_CORS_ORIGINS, and the place credential (place_token) is kept
// in the site's own localStorage, keyed by waitroom's origin and the
// queue, and sent as Authorization: Bearer. Every tab of the site shares
// it: one tab (the holder of a Web Lock) asks the API and tells the others
// through a BroadcastChannel, so a second tab or a reload shows the same
// place and never enters again.
//
// No dependencies: the words are the waiting page's catalogs, fetched from
// waitroom; the proof of work is the page's pow-worker.js, run from a blob
// (a worker must be same-origin), or on this thread when the site's CSP
// allows no blob worker. Styles are a constructed stylesheet in a shadow
// root, which CSP's style-src does not govern; the site's look comes in
// through the custom properties --waitroom-*.
//
// web/agent/waitroom.js is the module; internal/web/agent serves it at
// /agent/v1/waitroom.js and, without the lines after "---- module ----",
// wrapped as a classic script that sets window.waitroom, at
// /agent/v1/waitroom.classic.js.

function waitroomAgent(scriptURL) {
  const base = new URL(scriptURL).origin;
  const LANGS = ['en', 'ko', 'ja', 'zh-Hans', 'zh-Hant', 'es'];
  const LOCALES = { en: 'en-US', ko: 'ko-KR', ja: 'ja-JP', 'zh-Hans': 'zh-CN', 'zh-Hant': 'zh-TW', es: 'es-ES' };
  const QUEUE_RE = /^[A-Za-z0-9_-]{1,64}$/;
  const REQUEST_TIMEOUT_MS = 10000;
  const MIN_POLL_MS = 250;
  const FALLBACK_POLL_MS = 2000;
  const LIVE_EVERY_MS = 30000; // a position is announced at most this often
  const STATUS_EVERY_MS = 300000; // far back, the origin is asked at least this often
  const catalogs = {};
  const active = {}; // key -> the promise of the wait in progress
  let skew = 0; // the server's clock minus ours, from Date headers

  // ---- requests ----

  async function api(method, path, opts) {
    const o = opts || {};
    const headers = {};
    if (o.token) headers.Authorization = 'Bearer ' + o.token;
    if (o.body) headers['Content-Type'] = 'application/json';
    const ctrl = new AbortController();
    const timer = setTimeout(() => ctrl.abort(), REQUEST_TIMEOUT_MS);
    try {
      // No cache: 'no-store': the API's answers say no-store themselves,
      // and Chromium skips its preflight cache for such a fetch, which
      // doubled every status call with an OPTIONS.
      const res = await fetch(base + path, {
        method: method, headers: headers, body: o.body ? JSON.stringify(o.body) : undefined,
        credentials: 'omit', mode: 'cors', keepalive: method === 'DELETE', signal: ctrl.signal,
      });
      const d = Date.parse(res.headers.get('Date') || '');
      if (isFinite(d)) skew = Math.max(skew, d - Date.now());
      if (res.status === 204) return null;
      const data = await res.json().catch(() => null);
      if (!res.ok) {
        const e = (data && data.error) || {};
        const after = Number(res.headers.get('Retry-After'));
        throw fault(e.code || 'http_' + res.status, res.status, e, after > 0 ? after * 1000 : 0);
      }
      if (!data) throw fault('bad_response', 0);
      return data;
    } catch (err) {
      if (ctrl.signal.aborted) throw fault('timeout', 0);
      if (err.status === undefined) err.status = 0;
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  function fault(code, status, detail, retryAfterMs) {
    return Object.assign(new Error(code), { code: code, status: status, detail: detail || {}, retryAfterMs: retryAfterMs || 0 });
  }
  const serverNow = () => Date.now() + skew;
  const transient = (e) => e.status === 0 || e.status === 408 || e.status === 429 || e.status >= 500;
  const away = (e) => e.status >= 502 && e.status <= 504 && e.code !== 'queue_full';
  const jitter = (ms) => Math.round(ms * (0.8 + Math.random() * 0.4));
  const backoff = (n) => jitter(Math.min(30000, 1000 * Math.pow(2, n - 1)));
  const awayWait = (n, e) => Math.min(60000, Math.max(jitter(Math.min(60000, 4000 * Math.pow(2, n - 1))), e.retryAfterMs || 0));

  // ---- words ----

  function matchLang(tag) {
    if (typeof tag !== 'string' || !tag) return '';
    const lower = tag.toLowerCase();
    const exact = LANGS.find((l) => l.toLowerCase() === lower);
    if (exact) return exact;
    const parts = lower.split(/[-_]/);
    if (parts[0] === 'zh') {
      return parts.includes('hant') || parts.some((p) => p === 'tw' || p === 'hk' || p === 'mo') ? 'zh-Hant' : 'zh-Hans';
    }
    return LANGS.includes(parts[0]) ? parts[0] : '';
  }

  function pickLang(asked) {
    const tags = [asked, document.documentElement.lang].concat(navigator.languages || [navigator.language]);
    for (const tag of tags) {
      if (matchLang(tag)) return matchLang(tag);
    }
    return 'en';
  }

  async function catalog(lang) {
    if (!catalogs[lang]) {
      catalogs[lang] = fetch(base + '/_waitroom/static/i18n/waiting/' + lang + '.json', { credentials: 'omit' })
        .then((r) => (r.ok ? r.json() : Promise.reject(new Error('catalog ' + r.status))));
      catalogs[lang].catch(() => { delete catalogs[lang]; });
    }
    return catalogs[lang];
  }

  // The words of the states that need no catalog, for when waitroom
  // itself cannot be reached: it is away, and the place is kept.
  const FALLBACK = {
    title: "You're in line", joining: 'Joining the line…', resuming: 'Checking your place in line…',
    unavailableBanner: 'The waiting room is briefly unavailable. Your place is kept; this page tries again by itself in {s} s.',
    reconnecting: 'Connection lost. Reconnecting… (next try in {s} s)', leave: 'Leave the line', leaveTitle: 'Leave the line?',
    leaveBody: 'You will give up your place. If you come back later, you start again at the back of the line.',
    leaveCancel: 'Stay in line', leaveConfirm: 'Leave the line', errorTitle: 'Something went wrong', joinAgain: 'Join again',
  };

  async function words(lang) {
    let messages = FALLBACK;
    try {
      messages = await catalog(lang);
    } catch (e) {
      try { messages = await catalog('en'); } catch (e2) { /* the fallback's words */ }
      lang = 'en';
    }
    const locale = LOCALES[lang];
    const plural = new Intl.PluralRules(locale);
    const t = (key, p) => {
      let s = messages[key];
      if (s === undefined) return key;
      if (typeof s === 'object') s = s[plural.select(p ? p.count : 0)] ?? s.other;
      return p ? s.replace(/\{([A-Za-z]+)\}/g, (m, n) => (n in p ? String(p[n]) : m)) : s;
    };
    const fmt = (n) => new Intl.NumberFormat(locale).format(n);
    const time = (ms, seconds) => {
      const d = new Date(ms);
      const o = { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' };
      if (seconds) o.second = '2-digit';
      if (d.toDateString() !== new Date().toDateString()) Object.assign(o, { month: 'short', day: 'numeric' });
      return new Intl.DateTimeFormat(locale, o).format(d);
    };
    // The wait as the waiting page says it (waiting-format.js etaRange).
    const eta = (tk) => {
      const low = tk.eta_low_seconds;
      const high = tk.eta_high_seconds;
      if (!(high >= 60)) return t('etaSoon');
      let lo = Math.floor(Math.max(0, Math.min(low || 0, high)) / 60);
      let hi = Math.ceil(high / 60);
      let unit = 'minute';
      if (hi > 120) {
        unit = 'hour';
        lo = Math.floor(lo / 30) / 2;
        hi = Math.ceil(hi / 30) / 2;
      }
      const f = new Intl.NumberFormat(locale, { style: 'unit', unit: unit, unitDisplay: 'short', maximumFractionDigits: 1 });
      if (lo <= 0) return t('etaUpTo', { max: f.format(hi) });
      return t('etaAbout', { range: lo === hi ? f.format(hi) : f.formatRange(lo, hi) });
    };
    const countdown = (ms) => {
      const s = Math.max(0, Math.ceil(ms / 1000));
      const pad = (n) => String(n).padStart(2, '0');
      const h = Math.floor(s / 3600);
      return (h ? h + ':' + pad(Math.floor((s % 3600) / 60)) : String(Math.floor(s / 60))) + ':' + pad(s % 60);
    };
    return { lang: lang, t: t, fmt: fmt, time: time, eta: eta, countdown: countdown };
  }

  // ---- the line's document far back (line-math.js, the server's arithmetic) ----

  function placeFar(doc, seq, ageMs) {
    const s = doc.samples || [];
    const n = s.length;
    const age = Math.max(0, Math.floor(ageMs));
    const interval = Math.max(doc.refill_interval_ms, 1);
    const ticks = age >= doc.until_next_tick_ms ? 1 + Math.floor((age - doc.until_next_tick_ms) / interval) : 0;
    if (n < 2 || doc.in_draw || !doc.complete || seq < s[0][1] || seq > s[n - 1][1] || (doc.held_max > 0 && seq <= doc.held_max)) return null;
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (s[mid][1] > seq) hi = mid;
      else lo = mid + 1;
    }
    const i = lo - 1;
    const rank = s[i][0];
    const at = s[i][1];
    if (rank + 1 <= doc.near_head + ticks * doc.tick_reach) return null;
    const pos = at === seq || i === n - 1 ? rank + 1 : rank + 1 + Math.floor(((seq - at) * (s[i + 1][0] - rank)) / (s[i + 1][1] - at));
    const refill = doc.refill_size;
    let ahead = 0;
    let wait = 0;
    if (refill > 0) {
      ahead = Math.floor((pos - 1) / refill);
      wait = Math.max(0, doc.until_next_tick_ms - age) + ahead * doc.refill_interval_ms;
    }
    let low = wait;
    let high = wait;
    if (refill > 0 && doc.refill_interval_ms > 0) {
      const e = Math.ceil((0.05 * pos) / refill);
      high = wait + (ahead + 1) * 10 + e * doc.refill_interval_ms;
      low = Math.max(0, wait - (Math.ceil(0.25 * ahead) + e) * doc.refill_interval_ms);
    }
    return { position: pos, eta_seconds: Math.ceil(wait / 1000), eta_low_seconds: Math.floor(low / 1000), eta_high_seconds: Math.ceil(high / 1000) };
  }

  // ---- proof of work ----

  let workerURL = null; // a blob: URL of pow-worker.js, once fetched

  async function newWorker() {
    if (!workerURL) {
      const r = await fetch(base + '/_waitroom/static/pow-worker.js', { credentials: 'omit' });
      if (!r.ok) throw fault('no_worker', r.status);
      workerURL = URL.createObjectURL(new Blob([await r.text()], { type: 'text/javascript' }));
    }
    return new Worker(workerURL);
  }

  // solve finds the nonce of a challenge, reporting {pct, leftMs}: in a
  // worker, or, when the site's CSP refuses blob workers, here, a batch
  // of WebCrypto digests at a time (the same search as pow-worker.js).
  async function solve(ch, progress, stopped) {
    const expected = Math.pow(2, ch.difficulty);
    const started = performance.now();
    const report = (tried, ms) => progress(100 * (1 - Math.exp(-tried / expected)), (expected * ms) / Math.max(tried, 1) - (performance.now() - started));
    let worker = null;
    try { worker = await newWorker(); } catch (e) { worker = null; }
    if (worker) {
      const found = await new Promise((resolve) => {
        const end = (v) => { clearInterval(watch); worker.terminate(); resolve(v); };
        const watch = setInterval(() => { if (stopped()) end(null); }, 250);
        worker.onmessage = (e) => {
          const m = e.data || {};
          if (m.type === 'progress') report(m.tried, m.ms);
          else end(m.type === 'done' ? String(m.nonce) : undefined);
        };
        worker.onerror = (e) => { e.preventDefault(); end(undefined); };
        worker.postMessage({ challenge: ch.challenge, difficulty: ch.difficulty });
      });
      if (found !== undefined) return found;
    }
    if (stopped()) return null;
    const subtle = self.crypto && self.crypto.subtle;
    if (!subtle) throw fault('no_worker', -1);
    const enc = new TextEncoder();
    for (let next = 0; ; next += 256) {
      if (stopped()) return null;
      const sums = await Promise.all(Array.from({ length: 256 }, (_, i) => subtle.digest('SHA-256', enc.encode(ch.challenge + ':' + (next + i)))));
      for (let i = 0; i < 256; i++) {
        if (zeros(new Uint8Array(sums[i]), ch.difficulty)) return String(next + i);
      }
      report(next + 256, performance.now() - started);
    }
  }

  function zeros(b, bits) {
    let i = 0;
    for (; bits >= 8; bits -= 8) if (b[i++] !== 0) return false;
    return bits === 0 || b[i] >> (8 - bits) === 0;
  }

  // ---- the dialog ----

  const CSS = `
:host{all:initial}
dialog{box-sizing:border-box;width:min(28rem,calc(100vw - 2rem));padding:1.5rem;border:0;border-radius:var(--waitroom-radius,12px);
background:var(--waitroom-bg,#fff);color:var(--waitroom-fg,#1b1f24);font:var(--waitroom-font,16px/1.5 system-ui,sans-serif);
box-shadow:0 10px 40px rgba(0,0,0,.25)}
dialog::backdrop{background:var(--waitroom-backdrop,rgba(0,0,0,.45))}
h2{margin:0 0 .5rem;font-size:1.25em}
p{margin:.5rem 0}
.num{font-size:2.5em;font-weight:700;margin:0;color:var(--waitroom-accent,#0b5fff)}
.lbl,.muted{color:var(--waitroom-muted,#5b6570);font-size:.9em;margin:0}
dl{display:grid;grid-template-columns:1fr 1fr;gap:.5rem;margin:1rem 0}
dt{color:var(--waitroom-muted,#5b6570);font-size:.85em}dd{margin:0;font-weight:600}
.wide{grid-column:1/-1}
.banner{padding:.5rem .75rem;border-radius:8px;background:var(--waitroom-banner,#fff4d6)}
progress{width:100%;accent-color:var(--waitroom-accent,#0b5fff)}
.actions{display:flex;flex-wrap:wrap;gap:.5rem;justify-content:flex-end;margin-top:1rem}
button{font:inherit;padding:.5rem 1rem;border-radius:8px;cursor:pointer;border:1px solid var(--waitroom-accent,#0b5fff)}
.primary{background:var(--waitroom-accent,#0b5fff);color:var(--waitroom-on-accent,#fff)}
.secondary{background:transparent;color:var(--waitroom-fg,#1b1f24);border-color:var(--waitroom-muted,#5b6570)}
#move-qr{display:block;width:10rem;height:10rem;margin:.5rem auto}
input{font:inherit;padding:.4rem;margin:.25rem 0}
button:focus-visible,h2:focus-visible,input:focus-visible,summary:focus-visible{outline:3px solid var(--waitroom-focus,#0b5fff);outline-offset:2px}
[hidden]{display:none!important}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}`;

  let sheet = null;

  function styleRoot(root) {
    try {
      if (!sheet) {
        sheet = new CSSStyleSheet();
        sheet.replaceSync(CSS);
      }
      root.adoptedStyleSheets = [sheet];
    } catch (e) {
      const s = document.createElement('style'); // an older browser: subject to the site's style-src
      s.textContent = CSS;
      root.appendChild(s);
    }
  }

  const TEMPLATE = `<dialog part="dialog" role="dialog" aria-modal="true" aria-labelledby="title" aria-describedby="status">
<h2 id="title" tabindex="-1"></h2>
<p id="status" class="muted"></p>
<p id="notice" class="banner" hidden></p>
<p id="banner" class="banner" hidden></p>
<div id="check" hidden><progress id="check-bar" max="100" value="0" aria-labelledby="status"></progress></div>
<div id="human" hidden><slot name="human"></slot></div>
<section id="numbers" hidden>
<p class="lbl" id="pos-label"></p><p class="num" id="position"></p>
<dl><div><dt id="ahead-label"></dt><dd id="ahead"></dd></div><div><dt id="waiting-label"></dt><dd id="waiting"></dd></div>
<div class="wide"><dt id="eta-label"></dt><dd id="eta"></dd></div></dl>
</section>
<p id="countdown" class="num" role="timer" hidden></p>
<section id="move" hidden aria-labelledby="move-help"><p id="move-help"></p><img id="move-qr" hidden>
<p><span id="move-code-label" class="lbl"></span> <strong id="move-code"></strong></p><p id="move-expires" class="muted"></p>
<button type="button" id="move-close" class="secondary"></button></section>
<details id="move-use" hidden><summary id="move-use-summary"></summary><form id="move-use-form">
<label id="move-use-label" for="move-use-code"></label> <input id="move-use-code" autocomplete="off" spellcheck="false">
<button type="submit" id="move-use-btn" class="secondary"></button></form></details>
<div id="confirm" hidden><p id="confirm-body"></p></div>
<div class="actions">
<button type="button" id="again" class="primary" hidden></button>
<button type="button" id="stay" class="secondary" hidden></button>
<button type="button" id="move-btn" class="secondary" hidden></button>
<button type="button" id="leave" class="secondary"></button>
</div>
<div id="live" class="sr" role="status" aria-live="polite" aria-atomic="true"></div>
</dialog>
<div id="after" class="sr" role="status" aria-live="polite" aria-atomic="true"></div>`;

  // html passes the dialog's fixed markup through a Trusted Types policy
  // named waitroom where the site enforces them (its CSP's trusted-types
  // must allow that name).
  let policy = null;
  function html(markup) {
    if (!self.trustedTypes) return markup;
    if (!policy) policy = self.trustedTypes.createPolicy('waitroom', { createHTML: (m) => m });
    return policy.createHTML(markup);
  }

  // ---- wait ----

  async function wait(opts) {
    const o = opts || {};
    const queue = String(o.queue || '');
    if (!QUEUE_RE.test(queue)) throw fault('invalid_queue', -1);
    if (o.signal && o.signal.aborted) throw abortError();
    const w = await words(pickLang(o.lang));
    const key = 'waitroom:' + base + ':' + queue;
    const qpath = '/api/v1/queues/' + encodeURIComponent(queue);
    // A second call while one waits (a double click) waits with it.
    if (!active[key]) {
      active[key] = new Promise((resolve, reject) => run({ o: o, w: w, queue: queue, key: key, qpath: qpath, resolve: resolve, reject: reject }));
      const done = () => { delete active[key]; };
      active[key].then(done, done);
    }
    return active[key];
  }

  function abortError() {
    return Object.assign(new Error('aborted'), { name: 'AbortError', code: 'aborted' });
  }

  function run(c) {
    const { o, w, queue, key, qpath } = c;
    const t = w.t;
    const stored = {
      get() {
        try { return JSON.parse(localStorage.getItem(key) || 'null'); } catch (e) { return null; }
      },
      set(v) {
        try { localStorage.setItem(key, JSON.stringify(v)); } catch (e) { /* this page only */ }
      },
      clear() {
        try { localStorage.removeItem(key); } catch (e) { /* nothing kept */ }
      },
    };
    let joinToken = typeof o.joinToken === 'string' ? o.joinToken : '';
    // An invitation code the site took from its user: the first enter
    // sends it (invite_code), moving the place held, or a new one, into the
    // code's lane. Refused, wait rejects with the code's error and the
    // place, if any, is kept for a later wait.
    let inviteCode = typeof o.inviteCode === 'string' ? o.inviteCode : '';
    // A hand-over of a place from another device: its code or token.
    let handoff = typeof o.handoff === 'string' ? o.handoff : '';
    let moving = null; // the hand-over shown here: {code, expires} or {failed}
    let moveTimer = 0;
    let ended = false;
    let leading = false;
    let timer = 0;
    let tickTimer = 0;
    let gen = 0; // a leave or a join again drops what is in flight
    let failures = 0;
    let rejoined = false;
    let challenge = false;
    let fullAuto = false;
    let lastStatus = 0;
    let lastSaid = 0;
    let saidPos = 0;
    let confirming = false;
    // What the dialog shows; the leader tells the other tabs.
    let view = { state: 'loading', tk: null };
    const chan = typeof BroadcastChannel === 'function' ? new BroadcastChannel(key) : null;
    const opener = document.activeElement;

    // The dialog, in a shadow root of its own.
    const host = document.createElement('div');
    host.setAttribute('data-waitroom-agent', queue);
    const root = host.attachShadow({ mode: 'open' });
    styleRoot(root);
    const tpl = document.createElement('template');
    tpl.innerHTML = html(TEMPLATE);
    root.appendChild(tpl.content);
    const $ = (id) => root.getElementById(id);
    const dlg = root.querySelector('dialog');
    const humanBox = document.createElement('div');
    humanBox.slot = 'human';
    host.appendChild(humanBox);
    document.body.appendChild(host);
    dlg.lang = w.lang;
    if (typeof dlg.showModal === 'function') dlg.showModal();
    else dlg.setAttribute('open', '');
    $('title').focus();

    $('leave').onclick = () => (confirming ? leave() : confirmLeave(true));
    $('stay').onclick = () => confirmLeave(false);
    $('again').onclick = () => (leading ? again() : chan && chan.postMessage({ cmd: 'again' }));
    $('move-btn').onclick = showMove;
    $('move-close').onclick = hideMove;
    $('move-use-form').onsubmit = (e) => {
      e.preventDefault();
      const code = $('move-use-code').value.trim();
      if (!code) return;
      $('move-use-code').value = '';
      $('move-use').open = false;
      if (leading) useHandoff(code);
      else if (chan) chan.postMessage({ cmd: 'handoff', code: code });
    };
    // Escape asks before leaving, and a second one takes the question
    // back: from the key, or from the browser's cancel when the key did
    // not reach the dialog. The cancel of a press the key already took
    // comes before its keyup (told by events, not a timer: a page in a
    // background tab runs its timers once a second at most).
    let escHeld = false;
    dlg.addEventListener('cancel', (e) => {
      e.preventDefault();
      if (!escHeld) confirmLeave(!confirming);
    });
    dlg.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        if (!e.repeat) confirmLeave(!confirming);
        escHeld = true;
      } else if (e.key === 'Tab') {
        trapTab(e);
      }
    });
    dlg.addEventListener('keyup', (e) => {
      if (e.key === 'Escape') escHeld = false;
    });
    // A dialog closed behind the script's back (a browser's close request)
    // opens again while the wait goes on.
    dlg.addEventListener('close', () => {
      if (!ended && typeof dlg.showModal === 'function') dlg.showModal();
    });
    if (o.signal) o.signal.addEventListener('abort', () => finish(null, abortError()));

    function trapTab(e) {
      const f = Array.from(root.querySelectorAll('button,input,summary,[tabindex="-1"]')).filter((b) => !b.hidden && !b.closest('[hidden]') && (!b.closest('details:not([open])') || b.tagName === 'SUMMARY'));
      if (!f.length) return;
      const at = f.indexOf(root.activeElement);
      const next = e.shiftKey ? (at <= 0 ? f.length - 1 : at - 1) : (at + 1) % f.length;
      e.preventDefault();
      f[next].focus();
    }

    function confirmLeave(on) {
      confirming = on;
      draw();
      (on ? $('stay') : $('leave')).focus();
    }

    function say(text) {
      $('live').textContent = text;
      lastSaid = Date.now();
    }

    // ---- drawing ----

    function draw() {
      const s = view.state;
      const tk = view.tk;
      const waiting = s === 'waiting' && tk;
      const paused = waiting && tk.paused === true;
      $('title').textContent = confirming ? t('leaveTitle') : ({
        entered: t('turnTitle'), left: t('leftTitle'), full: t('fullTitle'), notopen: t('notOpenTitle'),
        released: t('releasedTitle'), moved: t('movedTitle'), error: t('errorTitle'),
      })[s] || t('title');
      $('status').textContent = statusText(s, tk, paused);
      $('notice').hidden = !view.notice || s !== 'waiting' && s !== 'loading';
      $('notice').textContent = view.notice ? t(view.notice) : '';
      const retry = view.retryAt > Date.now() && (s === 'waiting' || s === 'loading');
      $('banner').hidden = !(retry || paused);
      const left = { s: w.fmt(Math.max(1, Math.ceil((view.retryAt - Date.now()) / 1000))) };
      $('banner').textContent = retry ? t(view.unavailable ? 'unavailableBanner' : 'reconnecting', left) : paused ? t('paused') : '';
      $('check').hidden = !(view.checking >= 0);
      $('check-bar').value = Math.round(view.checking || 0);
      $('human').hidden = !view.human;
      $('numbers').hidden = !waiting || tk.position === 0;
      if (waiting) {
        const about = (n) => (tk.position_estimated ? t('about', { n: w.fmt(n) }) : w.fmt(n));
        $('pos-label').textContent = t('yourNumber');
        $('position').textContent = about(tk.position);
        $('ahead-label').textContent = t('ahead');
        $('ahead').textContent = about(Math.max(0, tk.position - 1));
        $('waiting-label').textContent = t('waitingTotal');
        $('waiting').textContent = w.fmt(tk.waiting);
        $('eta-label').textContent = t('eta');
        $('eta').textContent = paused ? t('etaPaused') : w.eta(tk);
      }
      const counting = s === 'notopen' && isFinite(view.from);
      $('countdown').hidden = !counting;
      if (counting) $('countdown').textContent = w.countdown(view.from - serverNow());
      $('confirm').hidden = !confirming;
      $('confirm-body').textContent = t('leaveBody');
      const canAgain = !confirming && (s === 'full' || s === 'released' || s === 'error' || s === 'moved');
      $('again').hidden = !canAgain;
      $('again').textContent = s === 'full' ? t('fullRetry') : s === 'released' ? t('rejoin') : t('joinAgain');
      $('stay').hidden = !confirming;
      $('stay').textContent = t('leaveCancel');
      $('leave').textContent = confirming ? t('leaveConfirm') : t('leave');
      $('leave').hidden = s === 'entered' || s === 'left';
      drawMove(waiting && !confirming);
      clearTimeout(tickTimer);
      if (counting || retry) tickTimer = setTimeout(draw, 1000);
    }

    // ---- another device (waiting-move.js) ----

    function drawMove(can) {
      $('move-btn').hidden = !can || !!moving;
      $('move-btn').textContent = t('moveButton');
      $('move').hidden = !can || !moving;
      $('move-help').textContent = moving && moving.failed ? t('moveFailed') : t('moveHelp');
      $('move-code-label').textContent = moving && moving.code ? t('moveCodeLabel') : '';
      $('move-code').textContent = (moving && moving.code) || '';
      $('move-expires').textContent = moving && isFinite(moving.expires) ? t('moveExpires', { time: w.time(moving.expires) }) : '';
      $('move-close').textContent = t('moveClose');
      $('move-use').hidden = !can;
      $('move-use-summary').textContent = t('moveUseSummary');
      $('move-use-label').textContent = t('moveUseLabel');
      $('move-use-btn').textContent = t('moveUse');
    }

    // showMove shows a hand-over's code, and its QR code as a blob: image
    // (fetched with the credential, which an <img> cannot send).
    async function showMove() {
      const held = stored.get();
      const token = held && held.token;
      let h;
      try {
        h = await api('POST', qpath + '/handoff', { token: token });
        moving = { code: h.code, expires: Date.parse(h.expires_at) };
      } catch (err) {
        moving = { failed: true };
      }
      draw();
      $('move-close').focus();
      clearTimeout(moveTimer);
      moveTimer = setTimeout(hideMove, moving.expires > Date.now() ? Math.min(moving.expires - Date.now(), 120000) : 120000);
      if (!h) return;
      try {
        const res = await fetch(base + qpath + '/handoff/qr?token=' + encodeURIComponent(h.token), { headers: { Authorization: 'Bearer ' + token }, credentials: 'omit', mode: 'cors' });
        const blob = res.ok && (await res.blob());
        if (!blob || !moving || moving.code !== h.code) return;
        const img = $('move-qr');
        img.onerror = () => { img.hidden = true; };
        img.alt = t('moveQrAlt');
        img.src = URL.createObjectURL(blob);
        img.hidden = false;
      } catch (e) { /* the code alone */ }
    }

    function hideMove() {
      const img = $('move-qr');
      clearTimeout(moveTimer);
      moving = null;
      if (img.src) URL.revokeObjectURL(img.src);
      img.removeAttribute('src');
      img.hidden = true;
      draw();
      if (!$('move-btn').hidden) $('move-btn').focus();
    }

    // useHandoff enters with another device's hand-over: its place
    // replaces this browser's.
    function useHandoff(code) {
      gen++;
      clearTimeout(timer);
      handoff = code;
      show({ state: 'loading' });
      step('enter');
    }

    function statusText(s, tk, paused) {
      if (view.checking >= 0) {
        const ms = view.checkLeft;
        if (!isFinite(ms)) return t('checking');
        if (ms < 0) return t('checkingLong');
        const sec = Math.ceil(ms / 1000);
        return sec <= 2 ? t('checkingFew') : sec < 90 ? t('checkingLeft', { s: w.fmt(sec) }) : t('checkingLeftMin', { m: w.fmt(Math.ceil(sec / 60)) });
      }
      if (view.human) return t(view.human === 'failed' ? 'humanFailed' : 'humanCheck');
      if (s === 'waiting' && tk) {
        const n = tk.waiting;
        if (paused) return t('summaryPaused', { n: w.fmt(n), count: n });
        if (tk.position === 0) return t('summaryDrawing', { n: w.fmt(n), count: n });
        return t('summary', { n: w.fmt(n), count: n, eta: w.eta(tk) });
      }
      if (s === 'notopen') return isFinite(view.from) ? t('notOpenStatus', { time: w.time(view.from, true) }) : t('joining');
      if (s === 'full') return t('fullBody', { time: w.time(view.fullAt) });
      if (s === 'entered') return t('turnBody');
      if (s === 'left') return t('leftBody');
      if (s === 'released') return t('releasedBody');
      if (s === 'moved') return t('movedBody');
      if (s === 'error') return view.error || t('errLost');
      return stored.get() ? t('resuming') : t('joining');
    }

    // show sets what the dialog shows, draws it, speaks what changed and
    // tells the other tabs.
    function show(v, tell) {
      view = Object.assign({ checking: -1 }, v);
      draw();
      speak();
      if (tell !== false && chan) chan.postMessage({ view: view });
    }

    // speak tells screen readers of a move up at most every 30 s, of a
    // pause, and of every other state at once.
    function speak() {
      const s = view.state;
      const tk = view.tk;
      if (s === 'waiting' && tk && tk.position > 0 && !tk.paused) {
        if (tk.position === saidPos || Date.now() - lastSaid < LIVE_EVERY_MS) return;
        saidPos = tk.position;
        say(t(tk.position_estimated ? 'liveAbout' : 'live', { n: w.fmt(tk.position) }));
      } else if (s !== 'loading' && s !== 'waiting' && view.said !== s) {
        view.said = s;
        say($('title').textContent + '. ' + $('status').textContent);
      } else if (tk && tk.paused && saidPos !== -1) {
        saidPos = -1;
        say(t('paused'));
      }
    }

    // ---- the end ----

    function finish(result, err) {
      if (ended) return;
      ended = true;
      gen++;
      clearTimeout(timer);
      clearTimeout(tickTimer);
      if (chan) chan.close();
      if (lockDone) lockDone();
      if (typeof dlg.close === 'function' && dlg.open) dlg.close();
      dlg.remove();
      if (opener && typeof opener.focus === 'function' && opener.isConnected) opener.focus();
      // The turn is told once the dialog is gone (a modal dialog makes
      // all else inert), from a live region outside it, kept a while.
      if (result) setTimeout(() => { $('after').textContent = t('turnTitle'); }, 100);
      setTimeout(() => host.remove(), result ? 10000 : 0);
      if (err) c.reject(err);
      else c.resolve(result);
    }

    function admitted(tk) {
      let exp = 0;
      try { exp = JSON.parse(atob(tk.pass.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))).exp; } catch (e) { exp = 0; }
      if (document.hidden) flashTitle();
      finish({ pass: tk.pass, expiresAt: exp > 0 ? new Date(exp * 1000) : null });
    }

    function flashTitle() {
      const was = document.title;
      const iv = setInterval(() => { document.title = document.title === was ? t('turnTitle') : was; }, 1000);
      document.addEventListener('visibilitychange', function back() {
        clearInterval(iv);
        document.title = was;
        document.removeEventListener('visibilitychange', back);
      });
    }

    async function leave() {
      const held = stored.get();
      stored.clear();
      gen++;
      clearTimeout(timer);
      if (chan) chan.postMessage({ left: true });
      confirming = false;
      show({ state: 'left' }, false);
      if (held && held.token) {
        try { await api('DELETE', qpath + '/place', { token: held.token }); } catch (e) { /* the place ends unheard */ }
      }
      finish(null, Object.assign(new Error('left'), { code: 'left' }));
    }

    // ---- the other tabs ----

    if (chan) {
      chan.onmessage = (e) => {
        const m = e.data || {};
        if (m.left) {
          finish(null, Object.assign(new Error('left'), { code: 'left' }));
        } else if (m.cmd === 'again' && leading) {
          again();
        } else if (m.cmd === 'handoff' && leading) {
          useHandoff(m.code);
        } else if (m.view && !leading) {
          view = m.view;
          draw();
          speak();
          if (m.view.state === 'entered' && m.view.tk && m.view.tk.pass) admitted(m.view.tk);
        } else if (m.hello && leading) {
          chan.postMessage({ view: view });
        }
      };
    }

    // One tab asks the API: the holder of the queue's Web Lock. The others
    // show what it tells until it goes, then one of them takes over with
    // the credential it left (a status, never an enter).
    let lockDone = null;
    if (navigator.locks && chan) {
      navigator.locks.request(key, () => new Promise((release) => {
        if (ended) return release();
        lockDone = release;
        leading = true;
        next();
      })).catch(() => { if (!ended) { leading = true; next(); } });
      chan.postMessage({ hello: true });
    } else {
      leading = true;
      next();
    }
    draw();

    // ---- the flow (waiting-flow.js's rules) ----
    //
    // A failed request never enters again: it asks the status, and only a
    // definite "no place" leads to an enter.

    function later(fn, ms) {
      clearTimeout(timer);
      timer = setTimeout(fn, Math.min(ms, 2147483647));
    }

    function next() {
      if (ended) return;
      if (stored.get() && !joinToken && !inviteCode && !handoff) step('status');
      else enter();
    }

    async function enter(solution) {
      if (challenge && !solution && !handoff) { // a hand-over proves the place
        solveThenEnter();
        return;
      }
      step('enter', solution);
    }

    async function step(action, solution) {
      clearTimeout(timer);
      const g = gen;
      const held = stored.get();
      let tk;
      try {
        if (action === 'enter') {
          const body = handoff ? { handoff: handoff } : joinToken ? { join_token: joinToken } : {};
          if (inviteCode && !handoff) body.invite_code = inviteCode;
          Object.assign(body, solution || {});
          tk = await api('POST', qpath + '/enter', { body: body, token: held && held.token });
        } else {
          tk = await api('GET', qpath + '/status', { token: held && held.token });
        }
      } catch (err) {
        if (g === gen && !ended) refused(action, solution, err);
        return;
      }
      if (g !== gen || ended) return;
      failures = 0;
      if (action === 'enter') {
        // A notice is a key of the words, or (here) a text already in them.
        if (handoff) view.notice = 'movedHere';
        else if (inviteCode && tk.lane) view.notice = t('codeAccepted', { lane: tk.lane });
        joinToken = handoff = inviteCode = '';
      }
      lastStatus = Date.now(); // the origin's word, an enter's too
      if (tk.place_token) stored.set({ token: tk.place_token, member: tk.user_id });
      ticket(tk, action);
    }

    function ticket(tk, action) {
      if (tk.status === 'ENTERED' && tk.pass) {
        show({ state: 'entered', tk: { status: 'ENTERED', pass: tk.pass } });
        admitted(tk);
      } else if (tk.status === 'WAITING') {
        waiting(tk, action === 'enter');
      } else if (tk.status === 'NOT_WAITING') {
        noPlace(action, tk.reason || '');
      } else {
        failed(fault('bad_response', 0));
      }
    }

    function waiting(tk, fresh) {
      show({ state: 'waiting', tk: tk, notice: view.notice });
      const poll = tk.poll_after_ms > 0 ? Math.max(MIN_POLL_MS, tk.poll_after_ms) : FALLBACK_POLL_MS;
      if (tk.arrival > 0 && tk.position > 0 && (tk.position_estimated || fresh)) later(() => look(tk), Math.min(60000, Math.max(2000, poll)));
      else later(() => step('status'), poll);
    }

    // look follows a place far back from the line's public document,
    // and asks the origin near the head, when the document cannot place
    // it, and every 5 minutes (waiting-line.js).
    async function look(tk) {
      const g = gen;
      if (Date.now() - lastStatus >= STATUS_EVERY_MS) return step('status');
      let doc;
      try { doc = await api('GET', qpath + '/line'); } catch (e) { return g === gen && step('status'); }
      if (g !== gen || ended) return;
      const age = Math.max(0, serverNow() - doc.at_ms);
      const p = placeFar(doc, tk.arrival, age);
      if (!p) return step('status');
      const interval = Math.max(doc.refill_interval_ms, 1);
      const ahead = Math.floor((p.position - 1) / Math.max(doc.refill_size, 1));
      let pause = Math.max(0, doc.until_next_tick_ms - age) + interval + 100;
      const skip = Math.floor(ahead / 10);
      if (skip > 0) {
        const extra = Math.min(skip * interval, 60000);
        pause += extra - Math.random() * (extra / 5);
      }
      pause = Math.round(Math.min(60000, Math.max(2000, pause)));
      if (p.position <= doc.near_head + doc.tick_reach * (Math.ceil(pause / interval) + 1)) return step('status');
      const low = view.tk && view.tk.position_estimated ? Math.min(view.tk.position, p.position) : p.position;
      const est = Object.assign({}, tk, p, { position: low, waiting: doc.waiting, paused: doc.paused, position_estimated: true });
      show({ state: 'waiting', tk: est, notice: view.notice });
      later(() => look(est), pause);
    }

    function noPlace(action, reason) {
      const had = !!(view.tk || stored.get());
      stored.clear();
      if (action === 'status' && reason === 'abandoned') {
        show({ state: 'released' });
        return;
      }
      if (action === 'enter' || rejoined) {
        failed(null, t('errLost'));
        return;
      }
      if (had) {
        rejoined = true;
        const notices = { expired: 'rejoinedExpired', done: 'rejoinedDone', removed: 'rejoinedRemoved', left: 'rejoinedLeft' };
        view.notice = notices[reason] || 'rejoined';
      }
      enter();
    }

    function refused(action, solution, err) {
      const entering = action === 'enter';
      if (err.code === 'rate_limited') {
        failures++;
        later(() => step(action, solution), Math.max(err.retryAfterMs, backoff(failures)) * (1 + Math.random() * 0.2));
      } else if (entering && (err.code === 'invalid_code' || err.code === 'too_many_code_attempts')) {
        finish(null, err); // the code changed nothing; the site tells its user
      } else if (entering && err.code === 'challenge_required') {
        challenge = true;
        solveThenEnter();
      } else if (entering && (err.code === 'human_check_required' || err.code === 'human_check_failed')) {
        askHuman(err, solution);
      } else if (entering && err.code === 'queue_full') {
        let ms = err.retryAfterMs || Date.parse(err.detail.retry_at || '') - serverNow();
        if (!(ms > 0)) ms = backoff(1);
        show({ state: 'full', fullAt: Date.now() + ms });
        if (!fullAuto) {
          fullAuto = true;
          later(() => { show({ state: 'loading' }); enter(); }, ms + Math.random() * Math.min(5000, Math.max(1000, ms / 10)));
        }
      } else if (entering && err.code === 'not_open') {
        joinToken = '';
        const from = Date.parse(err.detail.prequeue_from || '');
        show({ state: 'notopen', from: from });
        const ms = from - serverNow();
        failures = ms > 0 ? 0 : failures + 1;
        later(() => enter(), ms > 0 ? ms + Math.random() * 2000 : backoff(failures));
      } else if (entering && err.code === 'invalid_handoff') {
        handoff = '';
        failed(null, t('moveInvalid'));
      } else if (err.code === 'place_moved') {
        stored.clear();
        show({ state: 'moved' });
      } else if (!entering && err.code === 'invalid_place') {
        noPlace(action, '');
      } else {
        failed(err);
      }
    }

    function failed(err, text) {
      if (err && transient(err)) {
        failures++;
        const ms = away(err) ? awayWait(failures, err) : backoff(failures);
        show({ state: view.state === 'waiting' ? 'waiting' : 'loading', tk: view.tk, notice: view.notice, retryAt: Date.now() + ms, unavailable: away(err) });
        later(() => next(), ms); // a status when a place is held, never a blind enter
        return;
      }
      if (err) text = err.code === 'queue_not_found' ? t('errQueue') : err.code === 'invalid_join_token' ? t('errJoin') : t('errGeneric', { code: err.code });
      show({ state: 'error', error: text });
    }

    function again() {
      gen++;
      failures = 0;
      rejoined = false;
      fullAuto = view.state === 'full' ? false : fullAuto;
      show({ state: 'loading' });
      enter();
    }

    async function solveThenEnter() {
      const g = gen;
      show({ state: 'loading', checking: 0, checkLeft: NaN, notice: view.notice });
      let solution = null;
      try {
        const ch = await api('GET', qpath + '/challenge');
        if (typeof ch.challenge !== 'string' || !(ch.difficulty >= 0)) throw fault('bad_response', 0);
        const nonce = await solve(ch, (pct, leftMs) => {
          if (g === gen) show({ state: 'loading', checking: pct, checkLeft: leftMs, notice: view.notice });
        }, () => g !== gen || ended);
        if (nonce === null) return;
        solution = { challenge: ch.challenge, nonce: nonce };
      } catch (err) {
        if (g !== gen || ended) return;
        if (err.code === 'no_worker' || err.code === 'queue_not_found') failed(null, err.code === 'no_worker' ? t('errChallenge') : t('errQueue'));
        else failed(err.status === 0 || err.status >= 500 ? err : fault('timeout', 0));
        return;
      }
      if (g === gen && !ended) step('enter', solution);
    }

    // askHuman draws the provider's widget (in the page, slotted into the
    // dialog) and enters with its token (waiting-human.js).
    function askHuman(err, solution) {
      const d = err.detail;
      const globals = { turnstile: 'turnstile', hcaptcha: 'hcaptcha', recaptcha: 'grecaptcha' };
      const g = gen;
      if (!globals[d.provider] || typeof d.sitekey !== 'string' || typeof d.script_url !== 'string') {
        failed(null, t('errHuman'));
        return;
      }
      show({ state: 'loading', human: err.code === 'human_check_failed' ? 'failed' : 'ask', notice: view.notice });
      const drawWidget = () => {
        if (g !== gen || ended) return;
        const api2 = window[globals[d.provider]];
        humanBox.textContent = '';
        const el = document.createElement('div');
        humanBox.appendChild(el);
        const lang = { 'zh-Hans': 'zh-CN', 'zh-Hant': 'zh-TW' }[w.lang] || w.lang;
        api2.render(el, {
          sitekey: d.sitekey, language: lang, hl: lang,
          callback: (token) => {
            humanBox.textContent = '';
            const s = Object.assign({}, solution || {}, { human_token: token });
            show({ state: 'loading', notice: view.notice });
            step('enter', s);
          },
        });
      };
      if (window[globals[d.provider]] && window[globals[d.provider]].render) {
        drawWidget();
        return;
      }
      const u = new URL(d.script_url, base);
      u.searchParams.set('render', 'explicit');
      u.searchParams.set('onload', '__waitroomAgentHuman');
      window.__waitroomAgentHuman = drawWidget;
      const s = document.createElement('script');
      s.src = u.href;
      s.async = true;
      s.onerror = () => failed(null, t('errHuman'));
      document.head.appendChild(s);
    }
  }

  return { wait: wait, version: '1' };
}

// ---- module ----
const waitroom = waitroomAgent(import.meta.url);
globalThis.waitroom = waitroom;
export const wait = waitroom.wait;
export default waitroom;
