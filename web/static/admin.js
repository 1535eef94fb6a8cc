// Back office at /admin: sign in with the admin token, watch every queue,
// change a queue's refill size, its cap on active users and how long a
// waiting place may go unheard before it is dropped, pause and resume it,
// schedule an opening (and read its draw's seed), and see a chart of its
// recent ticks.
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
  };

  const sections = new Map(); // queue name -> per-queue view (see buildSection)
  let timer = 0;
  let session = 0; // bumped on sign-in/out so answers for an old session are dropped
  let nextId = 0;

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
      const data = await res.json().catch(() => null);
      if (!res.ok) {
        const e = (data && data.error) || {};
        throw Object.assign(new Error(e.message || res.statusText || 'HTTP ' + res.status),
          { status: res.status, code: e.code || 'http_' + res.status, field: e.field || '' });
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

  function authMessage(err) {
    if (err.status === 401) return 'That token was not accepted. Check it and try again.';
    if (err.code === 'admin_disabled') {
      return 'The admin API is turned off on this server. Start it with WAITROOM_ADMIN_TOKEN set to enable it.';
    }
    if (err.status === 0) return 'Could not reach the server. Try again in a moment.';
    return 'The server answered with an error (' + err.code + '): ' + err.message;
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

  async function refreshHistories(mine) {
    await Promise.all(Array.from(sections.keys(), async (name) => {
      const h = await api('GET', '/admin/v1/queues/' + encodeURIComponent(name) + '/history');
      const view = sections.get(name);
      if (mine === session && view) drawChart(view.chart, h.points || [], h.refill_interval_ms);
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
      chart: q('svg.chart'),
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
    return view;
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
    const set = (sel, text) => { view.root.querySelector(sel).textContent = text; };
    set('.waiting', num.format(q.waiting));
    set('.active', activeText(q));
    view.root.querySelector('.active').classList.toggle('at-cap', q.max_active > 0 && q.active >= q.max_active);
    set('.tokens', num.format(q.tokens));
    set('.refill-size', num.format(q.refill_size));
    set('.interval', secs.format(q.refill_interval_ms / 1000));
    set('.per-minute', num.format(q.admitted_last_minute));
    set('.abandoned', num.format(q.abandoned_last_interval || 0));
    set('.abandon-after', q.abandon_after_ms > 0 ? secs.format(q.abandon_after_ms / 1000) + ' s' : 'never');
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

  const W = 640;
  const H = 260;
  const M = { top: 40, right: 52, bottom: 30, left: 64 };

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

  // drawChart redraws the whole chart: people waiting as a line on the left
  // axis, people admitted per tick as bars on the right axis, with the
  // places dropped as abandoned stacked on them. The two scales differ by
  // orders of magnitude, hence two axes sharing one grid.
  function drawChart(svg, allPoints, intervalMs) {
    svg.replaceChildren();
    const plotW = W - M.left - M.right;
    const plotH = H - M.top - M.bottom;
    const last = allPoints.length ? allPoints[allPoints.length - 1].at_ms : 0;
    const points = allPoints.filter((p) => p.at_ms > last - CHART_WINDOW_MS);

    const abandoned = (p) => p.abandoned || 0;
    legend(svg, points.some((p) => abandoned(p) > 0));
    if (!points.length) {
      svg.setAttribute('aria-label', 'No ticks recorded yet.');
      svg.append(el('text', { x: W / 2, y: M.top + plotH / 2, 'text-anchor': 'middle', class: 'chart-empty' }, 'No ticks yet'));
      return;
    }

    // Each tick's bar covers the interval that ended at the tick.
    const slot = intervalMs > 0 ? intervalMs : 1000;
    const t0 = points[0].at_ms - slot;
    const t1 = last;
    const x = (t) => M.left + ((t - t0) / (t1 - t0)) * plotW;

    const maxWaiting = Math.max.apply(null, points.map((p) => p.waiting));
    const maxAdmitted = Math.max.apply(null, points.map((p) => p.admitted + abandoned(p)));
    const stepW = niceStep(maxWaiting / 4);
    const rows = Math.max(1, Math.ceil(maxWaiting / stepW));
    const topW = stepW * rows;
    const topA = niceStep(maxAdmitted / rows) * rows; // same rows, so both axes share the grid lines
    const yW = (v) => M.top + plotH - (v / topW) * plotH;
    const yA = (v) => M.top + plotH - (v / topA) * plotH;

    for (let i = 0; i <= rows; i++) {
      const y = M.top + plotH - (i / rows) * plotH;
      svg.append(el('line', { x1: M.left, x2: M.left + plotW, y1: y, y2: y, class: 'chart-grid' }));
      svg.append(el('text', { x: M.left - 6, y: y + 5, 'text-anchor': 'end', class: 'chart-label' }, num.format(stepW * i)));
      svg.append(el('text', { x: M.left + plotW + 6, y: y + 5, 'text-anchor': 'start', class: 'chart-label' }, num.format((topA / rows) * i)));
    }
    const xTicks = [t0, (t0 + t1) / 2, t1];
    xTicks.forEach((t, i) => {
      const anchor = i === 0 ? 'start' : i === xTicks.length - 1 ? 'end' : 'middle';
      svg.append(el('text', { x: x(t), y: H - 9, 'text-anchor': anchor, class: 'chart-label' }, clock.format(new Date(t))));
    });

    const barW = Math.max(0.5, (plotW * slot) / (t1 - t0) * 0.8);
    for (const p of points) {
      const label = clock.format(new Date(p.at_ms)) + ': ' + num.format(p.admitted) + ' admitted' +
        (abandoned(p) > 0 ? ', ' + num.format(abandoned(p)) + ' dropped as abandoned' : '');
      if (p.admitted > 0) {
        const y = yA(p.admitted);
        const bar = el('rect', { x: x(p.at_ms) - barW, y: y, width: barW, height: M.top + plotH - y, class: 'admitted-bar' });
        bar.append(el('title', {}, label));
        svg.append(bar);
      }
      if (abandoned(p) > 0) {
        const y = yA(p.admitted + abandoned(p));
        const bar = el('rect', { x: x(p.at_ms) - barW, y: y, width: barW, height: yA(p.admitted) - y, class: 'abandoned-bar' });
        bar.append(el('title', {}, label));
        svg.append(bar);
      }
    }

    const d = points.map((p, i) => (i ? 'L' : 'M') + x(p.at_ms).toFixed(1) + ' ' + yW(p.waiting).toFixed(1)).join(' ');
    svg.append(el('path', { d: d, class: 'waiting-line' }));
    if (points.length === 1) {
      // A single point makes an invisible path; mark it with a dot.
      svg.append(el('circle', { cx: x(points[0].at_ms), cy: yW(points[0].waiting), r: 3, class: 'waiting-dot' }));
    }

    svg.append(el('line', { x1: M.left, x2: M.left + plotW, y1: M.top + plotH, y2: M.top + plotH, class: 'chart-axis' }));
    const now = points[points.length - 1];
    svg.setAttribute('aria-label', 'Last ' + Math.round((t1 - t0) / 60000 * 10) / 10 + ' minutes: ' +
      num.format(now.waiting) + ' people waiting now, ' + num.format(now.admitted) + ' admitted in the last tick, ' +
      (abandoned(now) > 0 ? num.format(abandoned(now)) + ' dropped as abandoned in it, ' : '') +
      'at most ' + num.format(maxWaiting) + ' waiting.');
  }

  function legend(svg, withAbandoned) {
    const g = el('g', { class: 'chart-legend', transform: 'translate(' + M.left + ',18)' });
    g.append(el('line', { x1: 0, x2: 20, y1: 0, y2: 0, class: 'legend-line' }));
    g.append(el('text', { x: 26, y: 5, class: 'chart-label' }, 'Waiting (left axis)'));
    g.append(el('rect', { x: 200, y: -7, width: 14, height: 14, class: 'legend-bar' }));
    g.append(el('text', { x: 220, y: 5, class: 'chart-label' }, 'Admitted per tick (right axis)'));
    if (withAbandoned) {
      g.append(el('rect', { x: 455, y: -7, width: 14, height: 14, class: 'legend-abandoned' }));
      g.append(el('text', { x: 475, y: 5, class: 'chart-label' }, 'Abandoned'));
    }
    svg.append(g);
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
