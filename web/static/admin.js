// Back office at /admin: sign in with the admin token, watch every queue,
// change a queue's refill size, its cap on active users and how long a
// waiting place may go unheard before it is dropped, its defences (a cap
// on the line, proof of work before entering), pause and resume it,
// schedule an opening (and read its draw's seed), see a chart of its
// recent ticks and of its active users, and read its audit log (who changed
// what, from which address).
//
// The token lives in sessionStorage only (gone when the tab closes) and is
// sent as a Bearer header, never in a URL. All text is set with textContent,
// so queue names and server messages cannot inject markup.
//
// Every change is one PATCH /admin/v1/queues/{queue}. The server checks the
// ranges (the page only makes sure a field holds a number, so an empty
// field never reaches it as 0 = no cap) and its message is shown under the
// field it names (error.field).
'use strict';

(function () {
  const REFRESH_MS = 2000;
  const REQUEST_TIMEOUT_MS = 10000;
  const CHART_WINDOW_MS = 10 * 60 * 1000; // the chart shows the last 10 minutes of ticks
  const AUDIT_SHOWN = 20; // the newest audit entries each queue shows
  const TOKEN_KEY = 'waitroom:admin-token';
  const SVG_NS = 'http://www.w3.org/2000/svg';

  const $ = (id) => document.getElementById(id);
  const num = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });
  const secs = new Intl.NumberFormat('en-US', { maximumFractionDigits: 3 });
  const clock = new Intl.DateTimeFormat('en-GB', {
    hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
  });
  const dateClock = new Intl.DateTimeFormat('en-GB', {
    day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
  });

  // The settings the forms change (form[data-setting]): the hint of a
  // field that does not hold a number, and what a save did. A form with
  // data-scale shows the setting divided by it (seconds for ms) and takes
  // fractions; the others take whole numbers.
  const SETTINGS = {
    refill_size: {
      range: 'from 1 to 100,000',
      saved: (q) => 'Saved: ' + num.format(q.refill_size) + ' per tick from the next tick on.',
    },
    max_active: {
      range: 'from 0 (no cap) to 10,000,000',
      saved: (q) => q.max_active > 0
        ? 'Saved: at most ' + num.format(q.max_active) + ' active users at a time.'
        : 'Saved: no cap on active users.',
    },
    abandon_after_ms: {
      range: 'of seconds from 0 (never) to 86,400',
      saved: (q) => q.abandon_after_ms > 0
        ? 'Saved: a waiting place unheard for ' + secs.format(q.abandon_after_ms / 1000) +
          ' s is dropped when the line reaches it.'
        : 'Saved: waiting places are never dropped as abandoned.',
    },
    max_waiting: {
      range: 'from 0 (no cap) to 100,000,000',
      saved: (q) => q.max_waiting > 0
        ? 'Saved: at most ' + num.format(q.max_waiting) + ' people waiting; newcomers beyond are told the line is full.'
        : 'Saved: no cap on the line.',
    },
    challenge_difficulty: {
      range: 'from 0 (off) to 32',
      saved: (q) => q.challenge_difficulty > 0
        ? 'Saved: pages solve a proof of work of difficulty ' + q.challenge_difficulty + ' before entering.'
        : 'Saved: no proof of work before entering.',
    },
  };

  const sections = new Map(); // queue name -> per-queue view (see buildSection)
  let timer = 0;
  let session = 0; // bumped on sign-in/out so answers for an old session are dropped
  let nextId = 0;
  let skew = 0; // the server's clock minus ours (ms), from the Date header of its answers

  // ---- token ----

  function getToken() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; }
  }
  function setToken(v) {
    try { sessionStorage.setItem(TOKEN_KEY, v); } catch (e) { /* signed in for this page view only */ }
  }
  function clearToken() {
    try { sessionStorage.removeItem(TOKEN_KEY); } catch (e) { /* nothing stored */ }
  }

  // ---- network ----

  async function api(method, path, body, token) {
    const ctrl = new AbortController();
    const timeout = setTimeout(() => ctrl.abort(), REQUEST_TIMEOUT_MS);
    const headers = { Authorization: 'Bearer ' + (token || getToken()) };
    if (body) headers['Content-Type'] = 'application/json';
    try {
      const res = await fetch(path, {
        method: method,
        headers: headers,
        body: body ? JSON.stringify(body) : undefined,
        cache: 'no-store',
        signal: ctrl.signal,
      });
      noteServerTime(res.headers.get('Date'));
      const data = await res.json().catch(() => null);
      if (!res.ok) {
        const e = (data && data.error) || {};
        throw Object.assign(new Error(e.message || res.statusText || 'HTTP ' + res.status),
          { status: res.status, code: e.code || 'http_' + res.status, field: e.field || '',
            retryAfter: Number(res.headers.get('Retry-After')) || 0 });
      }
      return data;
    } catch (err) {
      if (err.status === undefined) {
        err.status = 0;
        err.code = 'network';
      }
      throw err;
    } finally {
      clearTimeout(timeout);
    }
  }

  // noteServerTime keeps the offset of the server's clock, so the active
  // users this page samples sit on the time axis of the server's ticks. The
  // Date header has whole seconds: its middle is the best guess.
  function noteServerTime(header) {
    const at = Date.parse(header || '');
    if (isFinite(at)) skew = at + 500 - Date.now();
  }

  function serverNow() {
    return Date.now() + skew;
  }

  function authMessage(err) {
    if (err.status === 401) return 'That token was not accepted. Check it and try again.';
    if (err.code === 'too_many_attempts') {
      return 'Too many failed sign-ins from this address. Try again in ' + waitText(err.retryAfter) + '.';
    }
    if (err.code === 'admin_disabled') {
      return 'The admin API is turned off on this server. Start it with WAITROOM_ADMIN_TOKEN set to enable it.';
    }
    if (err.status === 0) return 'Could not reach the server. Try again in a moment.';
    return 'The server answered with an error (' + err.code + '): ' + err.message;
  }

  function waitText(seconds) {
    if (!(seconds > 0)) return 'a while';
    if (seconds < 90) return seconds + ' s';
    return Math.ceil(seconds / 60) + ' min';
  }

  // ---- sign in / out ----

  async function signIn(token, quiet) {
    const mine = ++session;
    const btn = $('login-btn');
    btn.disabled = true;
    try {
      const data = await api('GET', '/admin/v1/queues', null, token);
      if (mine !== session) return;
      setToken(token);
      showDashboard();
      renderQueues(data);
      refreshHistories(mine).catch(() => { /* the next refresh reports it */ });
      schedule(mine);
    } catch (err) {
      if (mine !== session) return;
      clearToken();
      showLogin(quiet && err.status === 401 ? 'Your session has ended. Sign in again.' : authMessage(err));
    } finally {
      btn.disabled = false;
    }
  }

  function signOut(message) {
    session++;
    clearTimeout(timer);
    clearToken();
    sections.clear();
    $('queues').replaceChildren();
    showLogin(message || '');
  }

  function showLogin(message) {
    document.body.setAttribute('data-state', 'signed-out');
    $('dashboard').hidden = true;
    $('signout').hidden = true;
    $('login').hidden = false;
    const err = $('login-error');
    err.textContent = message;
    err.hidden = !message;
    $('token').setAttribute('aria-invalid', String(!!message));
    $('token').value = '';
    $('token').focus();
  }

  function showDashboard() {
    document.body.setAttribute('data-state', 'signed-in');
    $('login').hidden = true;
    $('login-error').hidden = true;
    $('dashboard').hidden = false;
    $('signout').hidden = false;
  }

  // ---- refresh loop ----

  function schedule(mine) {
    clearTimeout(timer);
    timer = setTimeout(() => refresh(mine), REFRESH_MS);
  }

  // A new request starts only after the previous one finished, so a slow
  // server never piles requests up.
  async function refresh(mine) {
    try {
      const data = await api('GET', '/admin/v1/queues');
      if (mine !== session) return;
      renderQueues(data);
      await refreshHistories(mine);
      setStatus('');
    } catch (err) {
      if (mine !== session) return;
      if (err.status === 401 || err.status === 403) {
        signOut(authMessage(err));
        return;
      }
      setStatus('Could not refresh (' + err.code + '). Showing the last data; retrying every 2 s.');
    }
    if (mine === session) schedule(mine);
  }

  // refreshHistories reads each queue's ticks (the chart) and audit log.
  async function refreshHistories(mine) {
    await Promise.all(Array.from(sections.keys(), async (name) => {
      const path = '/admin/v1/queues/' + encodeURIComponent(name);
      const [h, log] = await Promise.all([
        api('GET', path + '/history'),
        api('GET', path + '/audit?limit=' + AUDIT_SHOWN),
      ]);
      const view = sections.get(name);
      if (mine !== session || !view) return;
      view.points = h.points || [];
      view.intervalMs = h.refill_interval_ms;
      drawChart(view);
      renderAudit(view, log.entries || []);
    }));
  }

  function setStatus(text) {
    const el = $('admin-status');
    el.textContent = text;
    el.hidden = !text;
    if (!text) $('refreshed').textContent = 'updated ' + clock.format(new Date());
  }

  // ---- queue sections ----

  function renderQueues(data) {
    const list = (data && data.queues) || [];
    const seen = new Set();
    for (const q of list) {
      seen.add(q.queue);
      let view = sections.get(q.queue);
      if (!view) {
        view = buildSection(q.queue);
        sections.set(q.queue, view);
        $('queues').append(view.root);
      }
      updateSection(view, q);
    }
    for (const [name, view] of sections) {
      if (!seen.has(name)) {
        view.root.remove();
        sections.delete(name);
      }
    }
    $('no-queues').hidden = list.length > 0;
  }

  function buildSection(name) {
    const root = $('queue-template').content.firstElementChild.cloneNode(true);
    root.setAttribute('data-queue', name);
    const q = (sel) => root.querySelector(sel);
    const view = {
      name: name,
      root: root,
      charts: { waiting: q('svg.chart-waiting'), active: q('svg.chart-active'), ticks: q('svg.chart-ticks') },
      nows: { waiting: q('.now-waiting'), active: q('.now-active'), admitted: q('.now-admitted') },
      abandonedKey: q('.abandoned-key'),
      points: [], // the history of ticks, as the server last said
      intervalMs: 0,
      samples: [], // {at_ms, active}: what this page saw at each refresh (the server keeps no history)
      last: null, // the queue as the server last said
      drawnWidth: 0,
      state: q('.queue-state'),
      pause: q('.pause-btn'),
      pauseError: q('.pause-error'),
      pausedNote: q('.paused-note'),
      paused: false, // as the server last said
      forms: [],
    };
    view.forms = Array.from(root.querySelectorAll('form.setting-form'), (form) => buildForm(view, form));
    view.opening = buildOpening(view, q('form.opening-form'));
    q('.queue-name').textContent = name;
    root.setAttribute('aria-label', 'Queue ' + name);
    view.pauseError.id = 'pause-error-' + (++nextId);
    view.pause.setAttribute('aria-describedby', view.pauseError.id);
    view.pause.addEventListener('click', () => togglePause(view));
    // The chart is drawn at its width in CSS pixels: draw again when that
    // changes (a phone turned, a window resized).
    if (typeof ResizeObserver === 'function') {
      new ResizeObserver(() => {
        if (chartWidth(view) !== view.drawnWidth) drawChart(view);
      }).observe(view.charts.waiting);
    }
    return view;
  }

  // ---- audit log ----

  const ACTIONS = {
    settings: 'Settings changed',
    refill_size: 'Refill size set',
    remove_user: 'User removed:',
  };

  // renderAudit shows a queue's newest audit entries, redrawn only when
  // they changed (entries are never edited: the count and the newest tell).
  function renderAudit(view, entries) {
    const key = entries.length + ':' + (entries.length ? entries[0].at_ms + ':' + entries[0].request_id : '');
    if (view.auditKey === key) return;
    view.auditKey = key;
    const list = view.root.querySelector('.audit-list');
    list.replaceChildren(...entries.map(auditEntry));
    list.hidden = entries.length === 0;
    view.root.querySelector('.audit-empty').hidden = entries.length > 0;
  }

  function auditEntry(e) {
    const at = new Date(e.at_ms);
    let what = ACTIONS[e.action] || e.action;
    if (e.target) what += ' ' + e.target;
    const meta = html('p', 'audit-meta');
    const when = html('time', 'audit-when', dateClock.format(at));
    when.dateTime = at.toISOString();
    meta.append(when, ' · ', html('span', 'audit-what', what), ' · from ' + (e.client_ip || 'an unknown address'));
    const li = html('li', 'audit-entry');
    li.append(meta);
    const changes = html('ul', 'audit-changes');
    for (const c of e.changes || []) {
      changes.append(html('li', 'audit-change', c.field + ': ' + auditValue(c.old) + ' → ' + auditValue(c.new)));
    }
    if (changes.childElementCount) li.append(changes);
    return li;
  }

  // auditValue is one old or new value as an operator reads it.
  function auditValue(v) {
    if (v === null || v === undefined || v === '') return 'none';
    if (typeof v === 'object') {
      if (v.status) return v.status.toLowerCase().replace('_', ' ') + (v.position ? ' at position ' + num.format(v.position) : '');
      return JSON.stringify(v);
    }
    if (typeof v === 'number') return num.format(v);
    return String(v);
  }

  // html makes an HTML element with a class and, optionally, its text.
  function html(name, cls, text) {
    const node = document.createElement(name);
    node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // buildForm wires one setting's form: a whole-number field and Save.
  function buildForm(view, root) {
    const q = (sel) => root.querySelector(sel);
    const id = 'setting-input-' + (++nextId);
    const form = {
      setting: root.getAttribute('data-setting'),
      scale: Number(root.getAttribute('data-scale')) || 1, // the API's unit per unit shown
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

  function updateSection(view, q) {
    view.last = q;
    const at = serverNow();
    view.samples = view.samples.filter((p) => p.at_ms > at - CHART_WINDOW_MS && p.at_ms < at);
    view.samples.push({ at_ms: at, active: q.active });
    const set = (sel, text) => { view.root.querySelector(sel).textContent = text; };
    set('.waiting', waitingText(q));
    view.root.querySelector('.waiting').classList.toggle('at-cap', q.max_waiting > 0 && q.waiting >= q.max_waiting);
    set('.active', activeText(q));
    view.root.querySelector('.active').classList.toggle('at-cap', q.max_active > 0 && q.active >= q.max_active);
    set('.tokens', num.format(q.tokens));
    set('.refill-size', num.format(q.refill_size));
    set('.interval', secs.format(q.refill_interval_ms / 1000));
    set('.per-minute', num.format(q.admitted_last_minute));
    set('.abandoned', num.format(q.abandoned_last_interval || 0));
    set('.abandon-after', q.abandon_after_ms > 0 ? secs.format(q.abandon_after_ms / 1000) + ' s' : 'never');
    set('.pow', q.challenge_difficulty > 0 ? 'difficulty ' + q.challenge_difficulty : 'off');
    set('.last-tick', q.last_tick_at_ms ? clock.format(new Date(q.last_tick_at_ms)) + ' (' + ago(q.last_tick_at_ms) + ')' : 'never');

    view.paused = q.paused === true;
    view.root.setAttribute('data-paused', String(view.paused));
    view.state.textContent = view.paused ? 'Paused' : 'Admitting';
    view.state.classList.toggle('badge-paused', view.paused);
    view.pausedNote.hidden = !view.paused;
    view.pause.textContent = view.paused ? 'Resume admissions' : 'Pause admissions';
    view.pause.classList.toggle('btn-primary', view.paused);
    view.pause.classList.toggle('btn-secondary', !view.paused);

    for (const form of view.forms) {
      if (!form.dirty && document.activeElement !== form.input) form.input.value = String(q[form.setting] / form.scale);
    }
    updateOpening(view.opening, q);
  }

  // activeText is "3 / 50" under a cap ("(full)" at it: nobody more gets
  // in until someone leaves or their session ends), "3 (no cap)" without.
  function activeText(q) {
    if (!(q.max_active > 0)) return num.format(q.active) + ' (no cap)';
    return num.format(q.active) + ' / ' + num.format(q.max_active) + (q.active >= q.max_active ? ' (full)' : '');
  }

  // waitingText is the line's length, with its cap when it has one
  // ("(full)" at it: newcomers are told to come back later).
  function waitingText(q) {
    if (!(q.max_waiting > 0)) return num.format(q.waiting) + ' (no cap)';
    return num.format(q.waiting) + ' / ' + num.format(q.max_waiting) + (q.waiting >= q.max_waiting ? ' (full)' : '');
  }

  function ago(ms) {
    const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    return s < 120 ? s + ' s ago' : Math.round(s / 60) + ' min ago';
  }

  async function saveSetting(view, form) {
    form.error.hidden = true;
    form.ok.hidden = true;
    const raw = form.input.value.trim();
    const pattern = form.scale > 1 ? /^-?[0-9]+(\.[0-9]+)?$/ : /^-?[0-9]+$/;
    const value = Math.round(Number(raw) * form.scale);
    if (!pattern.test(raw) || !Number.isSafeInteger(value)) {
      showFieldError(form, 'Enter a ' + (form.scale > 1 ? 'number ' : 'whole number ') + SETTINGS[form.setting].range + '.');
      return;
    }
    const body = {};
    body[form.setting] = value;
    const q = await patchQueue(view, body, form.submit, (text) => showFieldError(form, text));
    if (!q) return;
    form.dirty = false;
    form.input.setAttribute('aria-invalid', 'false');
    updateSection(view, q);
    form.ok.textContent = SETTINGS[form.setting].saved(q);
    form.ok.hidden = false;
  }

  async function togglePause(view) {
    view.pauseError.hidden = true;
    const q = await patchQueue(view, { paused: !view.paused }, view.pause, (text) => {
      view.pauseError.textContent = text;
      view.pauseError.hidden = false;
    });
    if (q) updateSection(view, q);
  }

  // patchQueue sends one PATCH of settings and returns the queue as the
  // server answers it, or null: then it has reported why through
  // report(text, field), field being the one the server named (or signed
  // out, when the token is no longer accepted). button is disabled
  // meanwhile, so a double click sends one request.
  async function patchQueue(view, body, button, report) {
    const mine = session;
    button.disabled = true;
    try {
      const q = await api('PATCH', '/admin/v1/queues/' + encodeURIComponent(view.name), body);
      return mine === session ? q : null;
    } catch (err) {
      if (mine !== session) return null;
      if (err.status === 401 || err.status === 403) {
        signOut(authMessage(err));
        return null;
      }
      report(err.status === 0 ? 'Could not reach the server. Try again.' : err.message + ' (' + err.code + ')', err.field || '');
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

  // ---- scheduled opening ----

  // buildOpening wires the opening form: two local times (this browser's
  // time zone) sent as RFC 3339, Save and Clear.
  function buildOpening(view, root) {
    const q = (sel) => root.querySelector(sel);
    const o = {
      root: root,
      state: q('.opening-state'),
      draw: q('.draw-record'),
      prequeue: q('.prequeue-input'),
      opens: q('.opens-input'),
      prequeueError: q('.prequeue-error'),
      opensError: q('.opens-error'),
      error: q('.opening-error'),
      ok: q('.opening-ok'),
      submit: q('.opening-submit'),
      clear: q('.opening-clear'),
      dirty: false, // the operator changed a time: stop syncing the inputs from the server
    };
    const id = 'opening-' + (++nextId);
    [['prequeue', o.prequeue, o.prequeueError, '.prequeue-label'], ['opens', o.opens, o.opensError, '.opens-label']]
      .forEach(([name, input, error, label]) => {
        input.id = id + '-' + name;
        error.id = input.id + '-error';
        input.setAttribute('aria-describedby', error.id + ' ' + id + '-hint');
        q(label).setAttribute('for', input.id);
        input.addEventListener('input', () => {
          o.dirty = true;
          o.ok.hidden = true;
        });
      });
    q('.opening-hint').id = id + '-hint';
    q('.opening-hint').textContent += ' Times are in ' + (Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time') + '.';
    root.addEventListener('submit', (e) => {
      e.preventDefault();
      saveOpening(view, o, {
        prequeue_from: rfc3339(o.prequeue.value),
        opens_at: rfc3339(o.opens.value),
      });
    });
    o.clear.addEventListener('click', () => {
      saveOpening(view, o, { prequeue_from: null, opens_at: null });
    });
    return o;
  }

  function updateOpening(o, q) {
    const opens = Date.parse(q.opens_at || '');
    const from = Date.parse(q.prequeue_from || '');
    o.state.textContent = openingText(opens, from);
    const drawn = Date.parse(q.draw_for || '');
    o.draw.hidden = !isFinite(drawn);
    if (isFinite(drawn)) {
      // The seed as digits, not grouped: it is copied to recompute the order.
      o.draw.textContent = 'Draw at ' + when(drawn) + ': seed ' + String(q.draw_seed) + ', ' +
        num.format(q.draw_count) + (q.draw_count === 1 ? ' participant' : ' participants');
    }
    if (!o.dirty && !o.root.contains(document.activeElement)) {
      o.prequeue.value = isFinite(from) ? localInput(from) : '';
      o.opens.value = isFinite(opens) ? localInput(opens) : '';
    }
  }

  // openingText says where a scheduled opening stands, on this browser's
  // clock.
  function openingText(opens, from) {
    if (!isFinite(opens)) return 'No opening scheduled: people join the line as they arrive.';
    const now = Date.now();
    if (opens <= now) return 'Opened at ' + when(opens) + '.';
    if (isFinite(from) && from > now) {
      return 'Not open yet: joining opens at ' + when(from) + ' (in ' + until(from) + '); the draw and the opening at ' +
        when(opens) + '.';
    }
    return 'Pre-queue open: everyone joining is in the draw at ' + when(opens) + ' (in ' + until(opens) + ').';
  }

  async function saveOpening(view, o, body) {
    [o.error, o.prequeueError, o.opensError, o.ok].forEach((p) => { p.hidden = true; });
    [o.prequeue, o.opens].forEach((i) => i.setAttribute('aria-invalid', 'false'));
    const q = await patchQueue(view, body, body.opens_at === null && body.prequeue_from === null ? o.clear : o.submit, (text, field) => {
      const [error, input] = field === 'prequeue_from' ? [o.prequeueError, o.prequeue]
        : field === 'opens_at' ? [o.opensError, o.opens] : [o.error, null];
      error.textContent = text;
      error.hidden = false;
      if (input) {
        input.setAttribute('aria-invalid', 'true');
        input.focus();
      }
    });
    if (!q) return;
    o.dirty = false;
    if (o.root.contains(document.activeElement)) document.activeElement.blur(); // let the view sync the inputs
    updateSection(view, q);
    o.ok.textContent = q.opens_at
      ? 'Saved: the line opens at ' + when(Date.parse(q.opens_at)) +
        (q.prequeue_from ? ', joining from ' + when(Date.parse(q.prequeue_from)) + '.' : '; joining is open now.')
      : 'Saved: no opening scheduled.';
    o.ok.hidden = false;
  }

  // rfc3339 turns a datetime-local value (this browser's time zone) into
  // the API's RFC 3339, or null for an empty field.
  function rfc3339(local) {
    if (!local) return null;
    const d = new Date(local);
    return isFinite(d.getTime()) ? d.toISOString().replace(/\.\d{3}Z$/, 'Z') : local;
  }

  // localInput is a time (ms) as a datetime-local value.
  function localInput(ms) {
    const d = new Date(ms);
    const p = (n) => String(n).padStart(2, '0');
    return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) +
      'T' + p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
  }

  // when is a time of day, with the date when it is not today.
  function when(ms) {
    const d = new Date(ms);
    return (d.toDateString() === new Date().toDateString() ? clock : dateClock).format(d);
  }

  function until(ms) {
    const s = Math.max(0, Math.ceil((ms - Date.now()) / 1000));
    if (s < 120) return s + ' s';
    if (s < 7200) return Math.round(s / 60) + ' min';
    return Math.round(s / 360) / 10 + ' h';
  }

  // ---- chart ----
  //
  // Three panels on one time axis, each on its own scale: people waiting
  // (a line), active users (a line, from this page's own samples: the
  // server keeps no history of them) and people admitted per tick (bars,
  // with those dropped as abandoned stacked on them). A tick admitting 1
  // beside a line of 10,000 is a bar of its own panel's height, never a
  // sliver under the line.
  //
  // Each SVG is drawn at its width in CSS pixels (viewBox = width × height),
  // so one unit is one pixel and the 12px labels (style.css) stay 12px on a
  // phone and on a wide screen; a ResizeObserver draws again when the width
  // changes.

  const PLOT_H = { waiting: 96, active: 56, ticks: 72 }; // px of each panel's plot
  const PAD_TOP = 8; // room for the top row's label
  const PAD_BOTTOM = 6;
  const TIME_AXIS_H = 20; // the times under the last panel
  const PAD_RIGHT = 10;
  const CHAR_PX = 7.2; // about the width of a digit of a 12px label
  const ROW_PX = 24; // the least room between two labels of a y axis
  const MIN_BAR_PX = 2; // a nonzero count is never thinner than this
  const MIN_SPAN_MS = 10000; // the shortest time axis, when there is hardly any data

  function el(name, attrs, text) {
    const node = document.createElementNS(SVG_NS, name);
    for (const k in attrs) node.setAttribute(k, attrs[k]);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // niceStep picks 1, 2 or 5 × 10^k so axis labels are round numbers.
  function niceStep(raw) {
    if (!(raw > 0)) return 1;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / mag;
    const step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
    return Math.max(1, step); // counts of people are whole numbers
  }

  // scale is a y axis from 0 covering max, in round steps, with at most as
  // many rows as fit plotH.
  function scale(max, plotH) {
    const step = niceStep(max / Math.max(1, Math.floor(plotH / ROW_PX)));
    const rows = Math.max(1, Math.ceil(max / step));
    return { step: step, rows: rows, top: step * rows, plotH: plotH };
  }

  function chartWidth(view) {
    return Math.floor(view.charts.waiting.getBoundingClientRect().width);
  }

  // drawChart redraws the three panels from the view's history and samples.
  function drawChart(view) {
    const width = chartWidth(view);
    view.drawnWidth = width;
    const W = width > 0 ? width : 640; // not laid out: any width, drawn again when it is

    const lastTick = view.points.length ? view.points[view.points.length - 1].at_ms : 0;
    const lastSample = view.samples.length ? view.samples[view.samples.length - 1].at_ms : 0;
    const t1 = Math.max(lastTick, lastSample);
    const points = view.points.filter((p) => p.at_ms > t1 - CHART_WINDOW_MS);
    const samples = view.samples.filter((p) => p.at_ms > t1 - CHART_WINDOW_MS);
    // Each tick's bar covers the interval that ended at the tick.
    const slot = view.intervalMs > 0 ? view.intervalMs : 1000;
    let t0 = Math.min(points.length ? points[0].at_ms - slot : Infinity, samples.length ? samples[0].at_ms : Infinity);
    if (!(t1 - t0 >= MIN_SPAN_MS)) t0 = t1 - MIN_SPAN_MS;
    const span = { t0: t0, t1: t1 };

    const abandoned = (p) => p.abandoned || 0;
    const maxOf = (list, f) => list.reduce((m, p) => Math.max(m, f(p)), 0);
    const scales = {
      waiting: scale(maxOf(points, (p) => p.waiting), PLOT_H.waiting),
      active: scale(maxOf(samples, (p) => p.active), PLOT_H.active),
      ticks: scale(maxOf(points, (p) => p.admitted + abandoned(p)), PLOT_H.ticks),
    };
    // One left margin for all three, so their time axes line up.
    let chars = 1;
    for (const k in scales) chars = Math.max(chars, num.format(scales[k].top).length);
    const left = Math.ceil(chars * CHAR_PX) + 10;

    const now = view.last;
    const lastPoint = points[points.length - 1];
    view.nows.waiting.textContent = now ? '· ' + num.format(now.waiting) + ' now' : '';
    view.nows.active.textContent = now ? '· ' + num.format(now.active) + ' now' : '';
    view.nows.admitted.textContent = lastPoint ? '· ' + num.format(lastPoint.admitted) + ' in the last tick' : '';
    view.abandonedKey.hidden = !points.some((p) => abandoned(p) > 0);

    // People waiting.
    let f = frame(view.charts.waiting, W, left, span, scales.waiting, false);
    line(view.charts.waiting, f, points.map((p) => [p.at_ms, p.waiting]), 'waiting', 'No ticks yet');
    view.charts.waiting.setAttribute('aria-label', !points.length ? 'No ticks recorded yet.'
      : 'People waiting over the last ' + minutes(span) + ' minutes: ' + num.format(lastPoint.waiting) +
        ' at the last tick, at most ' + num.format(maxOf(points, (p) => p.waiting)) + '.');

    // Active users, as sampled by this page.
    f = frame(view.charts.active, W, left, span, scales.active, false);
    line(view.charts.active, f, samples.map((p) => [p.at_ms, p.active]), 'active', 'No samples yet');
    view.charts.active.setAttribute('aria-label', !samples.length ? 'No samples yet.'
      : 'Active users, sampled by this page every 2 s: ' + num.format(samples[samples.length - 1].active) +
        ' now, at most ' + num.format(maxOf(samples, (p) => p.active)) + '.');

    // Admitted (and abandoned) per tick.
    const svg = view.charts.ticks;
    f = frame(svg, W, left, span, scales.ticks, true);
    if (!points.length) {
      empty(svg, f, 'No ticks yet');
      svg.setAttribute('aria-label', 'No ticks recorded yet.');
      return;
    }
    const barW = Math.max(1, (f.plotW * slot) / (t1 - t0) * 0.8);
    const height = (v) => (v > 0 ? Math.max(MIN_BAR_PX, (v / scales.ticks.top) * scales.ticks.plotH) : 0);
    for (const p of points) {
      const label = clock.format(new Date(p.at_ms)) + ': ' + num.format(p.admitted) + ' admitted' +
        (abandoned(p) > 0 ? ', ' + num.format(abandoned(p)) + ' dropped as abandoned' : '');
      const hA = height(p.admitted);
      const hB = abandoned(p) > 0 ? Math.max(MIN_BAR_PX, height(p.admitted + abandoned(p)) - hA) : 0;
      const x = f.x(p.at_ms) - barW;
      if (hA > 0) bar(svg, x, f.base - hA, barW, hA, 'admitted-bar', label);
      if (hB > 0) bar(svg, x, f.base - hA - hB, barW, hB, 'abandoned-bar', label);
    }
    svg.setAttribute('aria-label', num.format(lastPoint.admitted) + ' admitted in the last tick, ' +
      (abandoned(lastPoint) > 0 ? num.format(abandoned(lastPoint)) + ' dropped as abandoned in it, ' : '') +
      'at most ' + num.format(maxOf(points, (p) => p.admitted)) + ' per tick.');
  }

  function minutes(span) {
    return Math.round((span.t1 - span.t0) / 60000 * 10) / 10;
  }

  // frame empties svg, sizes it and draws a panel's grid, its y axis and,
  // under the last panel, the times; it returns the panel's coordinates.
  function frame(svg, W, left, span, sc, timeAxis) {
    svg.replaceChildren();
    const H = PAD_TOP + sc.plotH + (timeAxis ? TIME_AXIS_H : PAD_BOTTOM);
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    svg.setAttribute('width', String(W));
    svg.setAttribute('height', String(H));
    const plotW = Math.max(10, W - left - PAD_RIGHT);
    const base = PAD_TOP + sc.plotH;
    const f = {
      left: left,
      plotW: plotW,
      base: base,
      x: (t) => left + ((t - span.t0) / (span.t1 - span.t0)) * plotW,
      y: (v) => base - (v / sc.top) * sc.plotH,
    };
    for (let i = 0; i <= sc.rows; i++) {
      const y = base - (i / sc.rows) * sc.plotH;
      svg.append(el('line', { x1: left, x2: left + plotW, y1: y, y2: y, class: 'chart-grid' }));
      svg.append(el('text', { x: left - 6, y: y + 4, 'text-anchor': 'end', class: 'chart-label' }, num.format(sc.step * i)));
    }
    const times = [span.t0, (span.t0 + span.t1) / 2, span.t1];
    times.forEach((t, i) => {
      svg.append(el('line', { x1: f.x(t), x2: f.x(t), y1: PAD_TOP, y2: base, class: 'chart-grid' }));
      if (!timeAxis) return;
      const anchor = i === 0 ? 'start' : i === times.length - 1 ? 'end' : 'middle';
      svg.append(el('text', { x: f.x(t), y: base + 16, 'text-anchor': anchor, class: 'chart-label' }, clock.format(new Date(t))));
    });
    svg.append(el('line', { x1: left, x2: left + plotW, y1: base, y2: base, class: 'chart-axis' }));
    return f;
  }

  // line draws [time, value] pairs as a line (a dot when there is one).
  function line(svg, f, pairs, kind, emptyText) {
    if (!pairs.length) {
      empty(svg, f, emptyText);
      return;
    }
    const d = pairs.map((p, i) => (i ? 'L' : 'M') + f.x(p[0]).toFixed(1) + ' ' + f.y(p[1]).toFixed(1)).join(' ');
    svg.append(el('path', { d: d, class: kind + '-line' }));
    if (pairs.length === 1) {
      // A single point makes an invisible path; mark it with a dot.
      svg.append(el('circle', { cx: f.x(pairs[0][0]), cy: f.y(pairs[0][1]), r: 3, class: kind + '-dot' }));
    }
  }

  function bar(svg, x, y, w, h, cls, label) {
    const r = el('rect', { x: x.toFixed(1), y: y.toFixed(1), width: w.toFixed(1), height: h.toFixed(1), class: cls });
    r.append(el('title', {}, label));
    svg.append(r);
  }

  function empty(svg, f, text) {
    svg.append(el('text', { x: f.left + f.plotW / 2, y: (PAD_TOP + f.base) / 2 + 5, 'text-anchor': 'middle', class: 'chart-empty' }, text));
  }

  // ---- wiring ----

  $('login-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const token = $('token').value.trim();
    if (!token) {
      showLogin('Enter the admin token.');
      return;
    }
    signIn(token, false);
  });
  $('signout').addEventListener('click', () => signOut(''));

  const saved = getToken();
  if (saved) signIn(saved, true);
  else $('token').focus();
})();
